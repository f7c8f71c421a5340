import { readFileSync } from 'node:fs'
import { createServer, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { sql } from 'drizzle-orm'
import type { FastifyInstance } from 'fastify'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { OFFICIAL_META } from '../../src/modules/registry/server-json.js'
import { UPSTREAM_URL_SETTING } from '../../src/modules/registry/sync.js'
import { createTestContext, type TestContext } from '../helpers/app.js'
import { DIALECTS } from '../helpers/database.js'
import { rawRows } from '../helpers/sql.js'
import { client, ROOMY_LIMITS, signUp, type Account, type Call } from '../helpers/teams.js'
import { officialProblems } from './official-schema.js'

/**
 * The MCP Registry's own seed file of May 2025 (a fixture, see test/fixtures/registry/README.md),
 * loaded whole as real catalogues receive it: every non-blank entry through the import API, then
 * the same entries through the sync from an upstream registry serving them page by page. Real
 * data holds what hand-written documents seldom do — placeholders in remote URLs, packages of
 * registry type `unknown`, empty or long descriptions, empty package versions — and none of it
 * may cost an entry. The entry whose remote URL holds a placeholder is read back from the
 * catalogue and from the export exactly as the file gives it. Then every imported server is
 * exported (in the 2025-12-11 format, its `unknown` packages still in it) and the exports go into
 * a second, empty catalogue — through the import API, then through a sync from this catalogue's
 * own sub-registry — where each must be taken and read back as it was.
 */

type Json = Record<string, unknown>

const SEED: unknown[] = JSON.parse(readFileSync(new URL('../fixtures/registry/registry-seed-2025-05-16.json', import.meta.url), 'utf8'))
const isEntry = (item: unknown): item is Json => typeof item === 'object' && item !== null && typeof (item as Json).name === 'string' && (item as Json).name !== ''
/** The real entries; the file's blank ones (every field empty) are no server at all. */
const ENTRIES = SEED.filter(isEntry)
const NAMES = ENTRIES.map((entry) => String(entry.name))

/** The entry whose remote URL carries a placeholder for the user's key. */
const PLACEHOLDER_URL = 'https://mcp.amap.com/sse?key=<YOUR_TOKEN>'
const placeholderEntry = ENTRIES.find((entry) => (entry.remotes as Json[] | undefined)?.some((remote) => remote.url === PLACEHOLDER_URL))

/** A seed remote (`transport_type`, `url`, …) in the 2025-12-11 spelling (`type`), its other members as they are. */
const remoteAsFormat = ({ transport_type: type, ...rest }: Json): Json => ({ type, ...rest })

/** Some 470 documents, each in its own transaction: seconds on an idle machine, more on a busy one. */
const IMPORT_TIMEOUT_MS = 120_000

interface Problem { field: string; message: string }
interface ImportResult { index: number; name: string | null; status: string; server_id?: string; warnings?: Problem[] }

/** The package positions a result's warnings name (`packages[3].registryType` → 3). */
const warnedPackages = (result: ImportResult): Set<number> =>
  new Set((result.warnings ?? []).flatMap((warning) => /^packages\[(\d+)\]/.exec(warning.field)?.[1] ?? []).map(Number))

/** Every server of a catalogue as its list shows it, by registry name (pages of 100). */
async function catalogueServers(call: Call, account: Account): Promise<Map<string, Json>> {
  const servers = new Map<string, Json>()
  for (let offset = 0; ; offset += 100) {
    const response = await call('GET', `/api/mcp/servers?limit=100&offset=${offset}`, account)
    expect(response.statusCode, response.body).toBe(200)
    const page = response.json().data.servers as Json[]
    for (const server of page) servers.set(String(server.registry_name), server)
    if (page.length < 100) return servers
  }
}

/** An upstream registry on loopback serving `items` at /v0.1/servers, `limit` per page, the cursor being the last index served. */
async function startUpstream(items: Json[]): Promise<{ origin: string; port: number; pages: number; close(): Promise<void> }> {
  const state = { pages: 0 }
  const server: Server = createServer((request, response) => {
    const url = new URL(request.url ?? '/', 'http://upstream.test')
    if (url.pathname !== '/v0.1/servers') {
      response.writeHead(404, { 'content-type': 'application/json' }).end('{"error":"Not Found"}')
      return
    }
    state.pages += 1
    const start = Number(url.searchParams.get('cursor') ?? 0)
    const limit = Number(url.searchParams.get('limit') ?? 30)
    const page = items.slice(start, start + limit)
    const next = start + limit < items.length ? String(start + limit) : undefined
    response.writeHead(200, { 'content-type': 'application/json' })
    response.end(JSON.stringify({ servers: page, metadata: { count: page.length, ...(next === undefined ? {} : { nextCursor: next }) } }))
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const { port } = server.address() as AddressInfo
  return {
    origin: `http://127.0.0.1:${port}`,
    port,
    get pages() {
      return state.pages
    },
    async close() {
      server.closeAllConnections()
      await new Promise<void>((resolve) => server.close(() => resolve()))
    },
  }
}

describe('the fixture', () => {
  it('holds real entries and the placeholder-URL remote this file is about', () => {
    expect(ENTRIES.length).toBeGreaterThan(0)
    expect(new Set(NAMES).size).toBe(NAMES.length)
    expect(placeholderEntry).toBeDefined()
  })
})

describe.each(DIALECTS)('the MCP Registry seed file on %s', (dialect) => {
  let ctx: TestContext
  let app: FastifyInstance
  let call: Call
  let admin: Account
  let upstream: Awaited<ReturnType<typeof startUpstream>>
  /** Registry name → catalogue server id, from the import. */
  const serverIds = new Map<string, string>()
  /** Registry name → the import's result. */
  const imported = new Map<string, ImportResult>()
  /** An empty catalogue of its own, for the exports of this one. */
  let second: TestContext
  let secondApp: FastifyInstance
  let secondCall: Call
  let secondAdmin: Account

  beforeAll(async () => {
    const meta = { [OFFICIAL_META]: { status: 'active', publishedAt: '2025-05-16T18:56:49Z', updatedAt: '2025-05-16T18:56:49Z', isLatest: true } }
    upstream = await startUpstream(ENTRIES.map((entry) => ({ server: entry, _meta: meta })))
    ctx = await createTestContext(dialect)
    app = (await ctx.build({ limits: ROOMY_LIMITS, env: { OUTBOUND_ALLOWED_HOSTS: `127.0.0.1:${upstream.port}` } })).app
    call = client(app)
    admin = await signUp(app, `seed_admin_${dialect}`)
    // Listening, so that the second catalogue can sync from this one's sub-registry.
    await app.listen({ port: 0, host: '127.0.0.1' })
    const { port } = app.server.address() as AddressInfo
    second = await createTestContext(dialect)
    secondApp = (await second.build({ limits: ROOMY_LIMITS, env: { OUTBOUND_ALLOWED_HOSTS: `127.0.0.1:${port}` } })).app
    secondCall = client(secondApp)
    secondAdmin = await signUp(secondApp, `seed_admin_2_${dialect}`)
  })
  afterAll(async () => {
    await Promise.all([ctx.close(), second.close()])
    await upstream.close()
  })

  it('the import API takes the file as published: every non-blank entry created, the blank ones reported invalid', async () => {
    const response = await call('POST', '/api/mcp/servers/import', admin, SEED)
    expect(response.statusCode, response.body.slice(0, 2000)).toBe(200)
    const { results, counts } = response.json().data as { results: ImportResult[]; counts: Record<string, number> }
    const refused = results.filter((result, index) => isEntry(SEED[index]) && result.status !== 'created')
    expect(refused, JSON.stringify(refused.slice(0, 5))).toEqual([])
    expect(counts).toEqual({ created: ENTRIES.length, updated: 0, unchanged: 0, invalid: SEED.length - ENTRIES.length })
    results.forEach((result, index) => {
      if (isEntry(SEED[index])) {
        serverIds.set(String(result.name), result.server_id!)
        imported.set(String(result.name), result)
      } else expect(result).toMatchObject({ index, status: 'invalid' })
    })
    // Packages of registry type `unknown` (some 300 of them) are kept, and reported as not catalogued.
    const unknownTypes = results.flatMap((result) => result.warnings ?? []).filter((warning) => warning.message.startsWith('registry type "unknown"'))
    expect(unknownTypes.length).toBe(ENTRIES.flatMap((entry) => (entry.packages as Json[] | undefined) ?? []).filter((item) => item.registry_name === 'unknown').length)
    expect(unknownTypes.length).toBeGreaterThan(0)
    expect([...serverIds.keys()]).toEqual(NAMES)

    const [row] = await rawRows(app.services.database, sql`select count(*) from mcp_servers where source = 'registry'`)
    expect(Number(row![0])).toBe(ENTRIES.length)
  }, IMPORT_TIMEOUT_MS)

  it('the placeholder-URL remote reads back unchanged from the catalogue, its version and the export', async () => {
    const entry = placeholderEntry!
    const expected = (entry.remotes as Json[]).map(remoteAsFormat)
    expect(expected).toContainEqual(expect.objectContaining({ url: PLACEHOLDER_URL }))
    const id = serverIds.get(String(entry.name))!

    const server = await call('GET', `/api/mcp/servers/${id}`, admin)
    expect(server.statusCode, server.body).toBe(200)
    // Headers and variables: exactly what the file gives (here none), nothing added.
    expect(server.json().data.server.remotes).toEqual(expected)
    expect(server.json().data.server.registry_name).toBe(entry.name)
    const versions = await call('GET', `/api/mcp/servers/${id}/versions`, admin)
    expect(versions.json().data.versions.map((version: Json) => version.remotes)).toEqual([expected])

    const exported = await call('GET', `/api/mcp/servers/${id}/server.json`, admin)
    expect(exported.statusCode, exported.body).toBe(200)
    const document = exported.json()
    expect(document.remotes).toEqual(expected)
    // The package the catalogue cannot hold (an identifier npm would not take) is still exported as published.
    expect(document.packages.map((item: Json) => item.identifier)).toEqual((entry.packages as Json[]).map((item) => item.name))
  })

  it('every remote of the file is held by the catalogue and exported with the URL it was published with', async () => {
    const withRemotes = ENTRIES.filter((entry) => Array.isArray(entry.remotes) && entry.remotes.length > 0)
    expect(withRemotes.length).toBeGreaterThan(0)
    for (const entry of withRemotes) {
      const id = serverIds.get(String(entry.name))!
      const held = (await call('GET', `/api/mcp/servers/${id}`, admin)).json().data.server.remotes as Json[]
      const exported = (await call('GET', `/api/mcp/servers/${id}/server.json`, admin)).json().remotes as Json[]
      const urls = (entry.remotes as Json[]).map((remote) => remote.url)
      expect(held.map((remote) => remote.url), String(entry.name)).toEqual(urls)
      expect(exported, String(entry.name)).toEqual(held)
    }
  })

  it('the sync from an upstream registry serving the same entries accepts every one of them', async () => {
    const setting = await call('PUT', `/api/settings/${UPSTREAM_URL_SETTING}`, admin, { value: upstream.origin })
    expect(setting.statusCode, setting.body).toBe(200)
    const response = await call('POST', '/api/mcp/registry/sync', admin)
    expect(response.statusCode, response.body).toBe(200)
    const pages = Math.ceil(ENTRIES.length / 100)
    // Imported above already: the sync reads each the same way, so each is unchanged and none invalid.
    expect(response.json().data).toMatchObject({ counts: { created: 0, updated: 0, unchanged: ENTRIES.length, invalid: 0 }, pages })
    expect(upstream.pages).toBe(pages)
  }, IMPORT_TIMEOUT_MS)

  /** Registry name → the server as the catalogue shows it, and its export; filled by the first test below. */
  const held = new Map<string, Json>()
  const exports = new Map<string, Json>()

  it('every server exports a document that keeps the packages the catalogue left out, and the official schema accepts, placeholder URLs aside', async () => {
    for (const [name, server] of await catalogueServers(call, admin)) held.set(name, server)
    expect(held.size).toBe(ENTRIES.length)
    for (const [name, id] of serverIds) {
      const exported = await call('GET', `/api/mcp/servers/${id}/server.json`, admin)
      expect(exported.statusCode, exported.body).toBe(200)
      exports.set(name, exported.json())
    }
    expect([...exports.keys()]).toEqual(NAMES)
    for (const entry of ENTRIES) {
      const name = String(entry.name)
      const document = exports.get(name)!
      const packages = (document.packages as Json[] | undefined) ?? []
      // As published, in the 2025-12-11 spelling (the seed's `docker` is that format's `oci`).
      const published = ((entry.packages as Json[] | undefined) ?? []).map((item) => [item.registry_name === 'docker' ? 'oci' : item.registry_name, item.name])
      expect(packages.map((item) => [item.registryType, item.identifier]), name).toEqual(published)
      // What the catalogue lists and what the import reported left out make up the whole.
      expect((held.get(name)!.packages as Json[]).length + warnedPackages(imported.get(name)!).size, name).toBe(packages.length)
    }
    // The published schema gives remote URLs the `uri-template` format (RFC 6570), which a
    // placeholder such as `<YOUR_TOKEN>` breaks: `<` and `>` may not appear in a URI template. The
    // registry keeps such URLs as published, and so does this service. A document holding one is
    // checked with each placeholder written as a template variable instead; nothing else is set aside.
    const hasPlaceholder = (document: Json) => ((document.remotes as Json[] | undefined) ?? []).some((remote) => /<[^<>]*>/.test(String(remote.url)))
    const asTemplate = (url: string) => url.replace(/<([^<>]*)>/g, (_, name: string) => `{${name.replace(/\W/g, '_')}}`)
    let setAside = 0
    for (const [name, document] of exports) {
      if (!hasPlaceholder(document)) {
        expect(officialProblems(document), name).toEqual([])
        continue
      }
      setAside += 1
      expect(officialProblems(document), name).toContain('/remotes/0/url must match format "uri-template"')
      const remotes = (document.remotes as Json[]).map((remote) => ({ ...remote, url: asTemplate(String(remote.url)) }))
      expect(officialProblems({ ...document, remotes }), name).toEqual([])
    }
    expect(setAside).toBe(ENTRIES.filter((entry) => (entry.remotes as Json[] | undefined)?.some((remote) => /<[^<>]*>/.test(String(remote.url)))).length)
    expect(setAside).toBeGreaterThan(0)
  }, IMPORT_TIMEOUT_MS)

  it('the exports import into an empty catalogue: every one created, reported alike, and read back with equal packages, remotes, headers and variables', async () => {
    const response = await secondCall('POST', '/api/mcp/servers/import', secondAdmin, [...exports.values()])
    expect(response.statusCode, response.body.slice(0, 2000)).toBe(200)
    const { results, counts } = response.json().data as { results: ImportResult[]; counts: Record<string, number> }
    const refused = results.filter((result) => result.status !== 'created')
    expect(refused, JSON.stringify(refused.slice(0, 5))).toEqual([])
    expect(counts).toEqual({ created: ENTRIES.length, updated: 0, unchanged: 0, invalid: 0 })
    const secondServers = await catalogueServers(secondCall, secondAdmin)
    expect(secondServers.size).toBe(ENTRIES.length)
    for (const result of results) {
      const name = String(result.name)
      expect(result.warnings, name).toEqual(imported.get(name)!.warnings)
      const again = secondServers.get(name)!
      expect(again.id).toBe(result.server_id)
      expect({ packages: again.packages, remotes: again.remotes, transport_type: again.transport_type }, name)
        .toEqual({ packages: held.get(name)!.packages, remotes: held.get(name)!.remotes, transport_type: held.get(name)!.transport_type })
      const exported = await secondCall('GET', `/api/mcp/servers/${result.server_id!}/server.json`, secondAdmin)
      expect(exported.statusCode, exported.body).toBe(200)
      const document = exported.json() as Json
      expect({ packages: document.packages, remotes: document.remotes }, name).toEqual({ packages: exports.get(name)!.packages, remotes: exports.get(name)!.remotes })
    }
  }, IMPORT_TIMEOUT_MS)

  it('a catalogue syncing from this one\'s sub-registry takes every server: each the same document as the export it already holds', async () => {
    const open = await call('PUT', '/api/settings/catalogue.registry_api_public', admin, { value: true })
    expect(open.statusCode, open.body).toBe(200)
    const { port } = app.server.address() as AddressInfo
    const setting = await secondCall('PUT', `/api/settings/${UPSTREAM_URL_SETTING}`, secondAdmin, { value: `http://127.0.0.1:${port}/api/registry` })
    expect(setting.statusCode, setting.body).toBe(200)
    const response = await secondCall('POST', '/api/mcp/registry/sync', secondAdmin)
    expect(response.statusCode, response.body).toBe(200)
    expect(response.json().data).toMatchObject({ counts: { created: 0, updated: 0, unchanged: ENTRIES.length, invalid: 0 } })
  }, IMPORT_TIMEOUT_MS)
})
