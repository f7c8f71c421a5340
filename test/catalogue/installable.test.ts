import type { FastifyInstance } from 'fastify'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createTestContext, type TestContext } from '../helpers/app.js'
import { addVersion, createServer, type ServerBody } from '../helpers/catalogue.js'
import { DIALECTS } from '../helpers/database.js'
import { client, ROOMY_LIMITS, signUp, type Account, type Call } from '../helpers/teams.js'

const LIST = '/api/mcp/servers'
const SEARCH = '/api/mcp/servers/search'

/** Setup makes dozens of requests (and hashes passwords): room for a loaded machine. */
const SETUP_TIMEOUT = 90_000

type Query = Record<string, string | number | boolean>
interface Page { servers: ServerBody[]; pagination: { total: number; limit: number; offset: number; has_more: boolean } }

const npm = { registry_type: 'npm', identifier: '@example/relay', version: '1.0.0' }
const pypi = { registry_type: 'pypi', identifier: 'mcp-relay' }
const oci = { registry_type: 'oci', identifier: 'ghcr.io/example/relay:1.0.0' }
const docker = { registry_type: 'docker', identifier: 'example/relay:1.0.0' }
const mcpb = { registry_type: 'mcpb', identifier: 'https://github.com/example/relay/releases/download/v1.0.0/relay.mcpb' }
const nuget = { registry_type: 'nuget', identifier: 'Example.Relay' }
const remote = { type: 'streamable-http', url: 'https://mcp.example.com/mcp' }

interface Case {
  name: string
  server: Record<string, unknown>
  /** Added in order; a version without packages or remotes of its own runs the server's. */
  versions: Array<Record<string, unknown>>
  /** Versions yanked after they were added. */
  yank?: string[]
  installable: boolean
}

/** `Relay` in every name but one, for the search; featured on both sides of the filter. */
const CASES: Case[] = [
  { name: 'Npm Relay', server: { packages: [npm], featured: true }, versions: [{ version: '1.0.0' }], installable: true },
  { name: 'Pypi Relay', server: { packages: [pypi] }, versions: [{ version: '1.0.0' }], installable: true },
  { name: 'Oci Relay', server: { packages: [oci] }, versions: [{ version: '1.0.0' }], installable: true },
  { name: 'Docker Relay', server: { packages: [docker], featured: true }, versions: [{ version: '0.1.0' }], installable: true },
  { name: 'Remote Relay', server: { remotes: [remote], transport_type: 'http' }, versions: [{ version: '1.0.0' }], installable: true },
  { name: 'Mixed Relay', server: { packages: [mcpb, npm] }, versions: [{ version: '1.0.0' }], installable: true },
  { name: 'Bundle Relay', server: { packages: [mcpb], featured: true }, versions: [{ version: '1.0.0' }], installable: false },
  { name: 'Nuget Relay', server: { packages: [nuget] }, versions: [{ version: '1.0.0' }], installable: false },
  { name: 'Empty Relay', server: {}, versions: [{ version: '1.0.0' }], installable: false },
  { name: 'Unversioned Relay', server: { packages: [npm], featured: true }, versions: [], installable: false },
  { name: 'Yanked Relay', server: { packages: [npm] }, versions: [{ version: '1.0.0' }], yank: ['1.0.0'], installable: false },
  // The latest version decides, not an older one, nor the server's entry when the version has its own.
  { name: 'Gained Relay', server: {}, versions: [{ version: '1.0.0' }, { version: '2.0.0', packages: [npm] }], installable: true },
  { name: 'Lost Relay', server: { packages: [npm] }, versions: [{ version: '1.0.0' }, { version: '2.0.0', packages: [mcpb] }], installable: false },
  { name: 'Dropped Remote Relay', server: { remotes: [remote], transport_type: 'http' }, versions: [{ version: '1.0.0' }, { version: '2.0.0', remotes: [] }], installable: false },
  { name: 'Own Remote Relay', server: { packages: [nuget] }, versions: [{ version: '1.0.0' }, { version: '1.1.0', remotes: [remote] }], installable: true },
  // A newer pre-release is not the latest while a release is active.
  { name: 'Prerelease Relay', server: {}, versions: [{ version: '1.0.0' }, { version: '2.0.0-rc.1', packages: [npm] }], installable: false },
  { name: 'Unrelated Tool', server: { packages: [pypi], featured: true }, versions: [{ version: '1.0.0' }], installable: true },
]

const withQuery = (path: string, query: Query) => {
  const params = new URLSearchParams(Object.entries(query).map(([key, value]): [string, string] => [key, String(value)]))
  return `${path}?${params.toString()}`
}
/** The list's default order: the lowercased name, byte by byte. */
const sorted = (names: string[]) => [...names].sort((a, b) => Buffer.compare(Buffer.from(a.toLowerCase()), Buffer.from(b.toLowerCase())))

describe.each(DIALECTS)('the installable filter on %s', (dialect) => {
  let ctx: TestContext
  let app: FastifyInstance
  let call: Call
  let admin: Account
  const servers = new Map<string, ServerBody>()

  async function page(path: string, query: Query): Promise<Page> {
    const response = await app.inject({ method: 'GET', url: withQuery(path, query), headers: { cookie: admin.cookie } })
    expect(response.statusCode, response.body).toBe(200)
    return response.json().data
  }
  const names = (result: Page) => result.servers.map((server) => server.name)
  const casesWhere = (keep: (entry: Case) => boolean) => sorted(CASES.filter(keep).map((entry) => entry.name))
  const featured = (entry: Case) => entry.server.featured === true
  const relay = (entry: Case) => entry.name.includes('Relay')

  beforeAll(async () => {
    ctx = await createTestContext(dialect)
    app = (await ctx.build({ limits: ROOMY_LIMITS })).app
    call = client(app)
    admin = await signUp(app, 'installable_admin')
    for (const entry of CASES) {
      const server = await createServer(call, admin, { name: entry.name, ...entry.server })
      for (const version of entry.versions) await addVersion(call, admin, server.id, version)
      for (const version of entry.yank ?? []) {
        const { versions } = (await call('GET', `/api/mcp/servers/${server.id}/versions`, admin)).json().data as { versions: Array<{ id: string; version: string }> }
        const response = await call('PUT', `/api/mcp/servers/${server.id}/versions/${versions.find((row) => row.version === version)!.id}`, admin, { status: 'yanked' })
        expect(response.statusCode, response.body).toBe(200)
      }
      servers.set(entry.name, server)
    }
  }, SETUP_TIMEOUT)
  afterAll(() => ctx.close())

  it('the fixture is what the cases need: the latest versions are the ones described', async () => {
    const latest = Object.fromEntries((await page(LIST, { limit: 100 })).servers.map((server) => [server.name, server.latest_version]))
    expect(latest).toMatchObject({ 'Gained Relay': '2.0.0', 'Lost Relay': '2.0.0', 'Dropped Remote Relay': '2.0.0', 'Own Remote Relay': '1.1.0', 'Prerelease Relay': '1.0.0', 'Unversioned Relay': null, 'Yanked Relay': null })
  })

  it.each([true, false])('installable=%s lists exactly those servers, with their total', async (installable) => {
    const want = casesWhere((entry) => entry.installable === installable)
    // The same page unfiltered is answered (and cached) first: the filter must not share its entry.
    expect((await page(LIST, { limit: 100 })).pagination.total).toBe(CASES.length)
    const result = await page(LIST, { installable, limit: 100 })
    expect(names(result)).toEqual(want)
    expect(result.pagination).toEqual({ total: want.length, limit: 100, offset: 0, has_more: false })
  })

  it('the two sides split the catalogue: every server is on exactly one', async () => {
    const yes = names(await page(LIST, { installable: true, limit: 100 }))
    const no = names(await page(LIST, { installable: false, limit: 100 }))
    expect(sorted([...yes, ...no])).toEqual(sorted(CASES.map((entry) => entry.name)))
    expect(yes.filter((name) => no.includes(name))).toEqual([])
  })

  it('pages of the filtered list count the filtered servers and walk them once', async () => {
    const want = casesWhere((entry) => entry.installable)
    const seen: string[] = []
    for (let offset = 0; offset < want.length; offset += 3) {
      const result = await page(LIST, { installable: true, limit: 3, offset })
      expect(result.pagination).toEqual({ total: want.length, limit: 3, offset, has_more: offset + 3 < want.length })
      seen.push(...names(result))
    }
    expect(seen).toEqual(want)
  })

  it.each([true, false])('installable=%s combines with featured=true', async (installable) => {
    const want = casesWhere((entry) => entry.installable === installable && featured(entry))
    expect(want.length).toBeGreaterThan(0)
    const result = await page(LIST, { installable, featured: true, limit: 100 })
    expect(names(result)).toEqual(want)
    expect(result.pagination.total).toBe(want.length)
  })

  it('combines with transport_type and another sort', async () => {
    expect(names(await page(LIST, { installable: true, transport_type: 'http', sort: '-created_at' }))).toEqual(['Remote Relay'])
    expect(names(await page(LIST, { installable: false, transport_type: 'http', sort: '-updated_at' }))).toEqual(['Dropped Remote Relay'])
  })

  it.each([true, false])('search with installable=%s finds only the matching servers of that side, with their total', async (installable) => {
    const want = casesWhere((entry) => entry.installable === installable && relay(entry))
    const result = await page(SEARCH, { q: 'relay', installable, limit: 100 })
    expect(sorted(names(result))).toEqual(want)
    expect(result.pagination).toEqual({ total: want.length, limit: 100, offset: 0, has_more: false })
    const first = await page(SEARCH, { q: 'relay', installable, limit: 2 })
    expect(first.pagination).toEqual({ total: want.length, limit: 2, offset: 0, has_more: want.length > 2 })
  })

  it('search combines installable with featured', async () => {
    const want = casesWhere((entry) => entry.installable && featured(entry) && relay(entry))
    const result = await page(SEARCH, { q: 'relay', installable: true, featured: true })
    expect(sorted(names(result))).toEqual(want)
    expect(result.pagination.total).toBe(want.length)
    expect(names(await page(SEARCH, { q: 'unrelated', installable: false }))).toEqual([])
  })

  const invalid = ['maybe', 'yes', '1', '0', '', 'TRUE', 'null']
  it.each(invalid.flatMap((value) => [[LIST, value], [SEARCH, value]]))('%s with installable=%j: 400 VALIDATION_ERROR naming it', async (path, value) => {
    const query = path === SEARCH ? `q=relay&installable=${encodeURIComponent(value!)}` : `installable=${encodeURIComponent(value!)}`
    const response = await app.inject({ method: 'GET', url: `${path}?${query}`, headers: { cookie: admin.cookie } })
    expect(response.statusCode, response.body).toBe(400)
    const body = response.json()
    expect(body).toMatchObject({ success: false, code: 'VALIDATION_ERROR' })
    expect(body.details).toEqual(expect.arrayContaining([expect.objectContaining({ field: 'installable', in: 'querystring' })]))
  })

  // Last: it changes the fixture.
  it('a new latest version moves a server from one side to the other (no stale cached page)', async () => {
    const before = await page(LIST, { installable: true, limit: 100 })
    expect(names(before)).not.toContain('Lost Relay')
    await addVersion(call, admin, servers.get('Lost Relay')!.id, { version: '3.0.0', packages: [oci] })
    await addVersion(call, admin, servers.get('Gained Relay')!.id, { version: '3.0.0', packages: [nuget], remotes: [] })
    const yes = await page(LIST, { installable: true, limit: 100 })
    expect(names(yes)).toContain('Lost Relay')
    expect(names(yes)).not.toContain('Gained Relay')
    expect(yes.pagination.total).toBe(before.pagination.total)
    expect(names(await page(LIST, { installable: false, limit: 100 }))).toContain('Gained Relay')
  })
})
