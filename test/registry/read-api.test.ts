import { readFileSync } from 'node:fs'
import type { AddressInfo } from 'node:net'
import { Ajv } from 'ajv'
import addFormats from 'ajv-formats'
import { sql } from 'drizzle-orm'
import type { FastifyInstance, LightMyRequestResponse } from 'fastify'
import semver from 'semver'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { isRoutePolicy, policy } from '../../src/auth/policies.js'
import { newId } from '../../src/db/ids.js'
import { parseVersion } from '../../src/modules/catalogue/semver-key.js'
import { OFFICIAL_META } from '../../src/modules/registry/server-json.js'
import { namespaceOf } from '../../src/modules/registry/server-json-export.js'
import { createTestContext, type TestContext } from '../helpers/app.js'
import { addVersion, createServer, insertTeamServer, type ServerBody } from '../helpers/catalogue.js'
import { manualClock } from '../helpers/clock.js'
import { DIALECTS } from '../helpers/database.js'
import { bearer, issueTokens } from '../helpers/oauth.js'
import { operationsOf, servedDocument } from '../helpers/openapi-document.js'
import { rawRows } from '../helpers/sql.js'
import { client, createTeam, ROOMY_LIMITS, signUp, type Account, type Call } from '../helpers/teams.js'

/**
 * The catalogue as an MCP sub-registry (/api/registry/v0.1 and /v0): the generic registry API's
 * shapes, a cursor that visits every item once, its filters, the lookups by URL-encoded name and
 * version, the 404 bodies, that team servers never show, and who may read it (anonymous callers
 * only while the operator makes it public). Every `server` answered is checked against the
 * official 2025-12-11 server.json schema.
 */

const V01 = '/api/registry/v0.1'
const V0 = '/api/registry/v0'

interface Official {
  status: 'active' | 'deprecated' | 'deleted'
  publishedAt: string
  updatedAt: string
  isLatest: boolean
}
interface Item {
  server: { name: string; version: string; title?: string; description: string; [key: string]: unknown }
  _meta: { [OFFICIAL_META]: Official }
}
interface List {
  servers: Item[]
  metadata: { nextCursor?: string; count: number }
}

const official = (item: Item): Official => item._meta[OFFICIAL_META]
const keyOf = (item: Item): string => `${item.server.name}@${item.server.version}`

function officialSchemaValidator() {
  const schema = JSON.parse(readFileSync(new URL('../fixtures/registry/server.schema.2025-12-11.json', import.meta.url), 'utf8')) as Record<string, unknown>
  // The official schema is draft-07 (Ajv's default dialect); its `$schema` is only a marker here.
  const ajv = addFormats.default(new Ajv({ strict: false, allErrors: true }))
  return ajv.compile(schema)
}

describe.each(DIALECTS)('MCP sub-registry read API on %s', (dialect) => {
  let ctx: TestContext
  let app: FastifyInstance
  let call: Call
  let admin: Account
  let user: Account
  let namespace: string
  let validateServer: ReturnType<typeof officialSchemaValidator>
  const clock = manualClock(Date.parse('2026-03-01T00:00:00Z'))

  /** Hand-made servers, by a short label. */
  const made: Record<string, ServerBody> = {}
  /** Instants between the seeds and the later changes (updated_since). */
  let sinceChanges = ''
  let teamSlug = ''

  const registryNameOf = (server: ServerBody) => `${namespace}/${server.slug}`
  const encode = (name: string) => encodeURIComponent(name)

  /** A GET that must answer 200; its body, every `server` checked against the official schema. */
  async function ok<T = List>(url: string, as: Account | undefined = admin): Promise<T> {
    const response = await call('GET', url, as)
    expect(response.statusCode, `${url}: ${response.body}`).toBe(200)
    expect(response.headers['content-type']).toMatch(/^application\/json/)
    const body = response.json()
    for (const item of 'servers' in body ? (body as List).servers : [body as Item]) {
      const valid = validateServer(item.server)
      expect(validateServer.errors ?? [], `${keyOf(item)} against the official schema`).toEqual([])
      expect(valid).toBe(true)
    }
    return body as T
  }

  /** Follows nextCursor to the end with pages of `limit`; checks each page's count. */
  async function walk(query: Record<string, string>, limit: number): Promise<Item[]> {
    const items: Item[] = []
    let cursor: string | undefined
    for (let page = 0; ; page++) {
      expect(page).toBeLessThan(500)
      const params = new URLSearchParams({ ...query, limit: String(limit), ...(cursor === undefined ? {} : { cursor }) })
      const body = await ok(`${V01}/servers?${params}`)
      expect(body.metadata.count).toBe(body.servers.length)
      expect(body.servers.length).toBeLessThanOrEqual(limit)
      items.push(...body.servers)
      cursor = body.metadata.nextCursor
      if (cursor === undefined) return items
      // A page that announces more is full.
      expect(body.servers).toHaveLength(limit)
    }
  }

  async function importDocuments(body: unknown): Promise<void> {
    const response = await call('POST', '/api/mcp/servers/import', admin, body)
    expect(response.statusCode, response.body).toBe(200)
    const results = response.json().data.results as Array<{ status: string; errors?: unknown }>
    for (const result of results) expect(result.status, JSON.stringify(result)).not.toBe('invalid')
  }

  const weather = (version: string, extra: Record<string, unknown> = {}) => ({
    $schema: 'https://static.modelcontextprotocol.io/schemas/2025-12-11/server.schema.json',
    name: 'com.example/weather',
    title: 'Weather Station',
    description: 'Forecasts for any city.',
    version,
    packages: [{ registryType: 'npm', identifier: '@example/weather-mcp', version, transport: { type: 'stdio' } }],
    ...extra,
  })

  /** Global versions the listing shows by default (yanked ones left out), counted in SQL. */
  async function listedVersionCount(): Promise<number> {
    const [row] = await rawRows(app.services.database, sql`
      select count(*) from mcp_server_versions v join mcp_servers s on s.id = v.server_id
      where s.visibility = 'global' and v.status <> 'yanked'`)
    return Number(row![0])
  }

  beforeAll(async () => {
    validateServer = officialSchemaValidator()
    ctx = await createTestContext(dialect)
    const built = await ctx.build({ limits: ROOMY_LIMITS, clock })
    app = built.app
    namespace = namespaceOf(built.config.publicUrl)
    call = client(app)
    admin = await signUp(app, `registry_admin_${dialect}`)
    user = await signUp(app, `registry_user_${dialect}`)

    const tick = () => clock.advance(1000)
    const server = async (label: string, body: Record<string, unknown>, versions: string[]) => {
      made[label] = await createServer(call, admin, body)
      for (const version of versions) {
        tick()
        await addVersion(call, admin, made[label]!.id, { version })
      }
    }
    await server('alpha', {
      name: 'Alpha Tool', description: 'The first tool.',
      packages: [{ registry_type: 'npm', identifier: '@example/alpha' }],
    }, ['1.0.0', '1.2.0', '1.10.0', '1.9.0', '2.0.0-beta.1'])
    await server('beta', { name: 'Beta Tool', description: 'Reads TIDAL charts.' }, ['0.1.0'])
    await server('gamma', { name: 'Gamma', description: 'Tested to 100% coverage.' }, ['1.0.0'])
    await server('apples', { name: 'Apples', description: 'Counts 10 apples.' }, ['3.0.0'])
    await server('zephyr', { name: 'Zephyr Gadget', slug: 'zg-one', description: 'Nothing to see.' }, ['1.0.0'])
    await server('cat', { name: 'Cat Nap', description: 'Where the cat sleeps.' }, ['0.0.1'])
    // More items than the default page of 30.
    await server('many', { name: 'Many Releases', description: 'Released often.' }, Array.from({ length: 20 }, (_, index) => `0.${index + 1}.0`))
    await server('deprecated', { name: 'Old Thing', description: 'Only deprecated versions.' }, [])
    tick()
    await addVersion(call, admin, made.deprecated!.id, { version: '1.0.0', status: 'deprecated' })
    // Not listed: a server is in the registry through its versions.
    await server('empty', { name: 'No Versions Yet', description: 'Nothing released.' }, [])

    for (const version of ['1.0.0', '1.1.0', '2.0.0+build.1']) {
      tick()
      await importDocuments(weather(version))
    }
    tick()
    await importDocuments({
      $schema: 'https://static.modelcontextprotocol.io/schemas/2025-12-11/server.schema.json',
      name: 'io.github.someone/snake_case',
      description: 'Underscores in the name.',
      version: '0.3.0',
      remotes: [{ type: 'streamable-http', url: 'https://mcp.example.net/snake' }],
    })

    // A team's server with a version: never part of the registry.
    const team = await createTeam(call, user, `Registry team ${dialect}`)
    const teamServerId = await insertTeamServer(app.services.database, team.id, 'Team Secret Weather', { description: 'Forecasts for a team.' })
    const { db, t } = app.services.database
    const now = new Date(clock.now())
    await db.insert(t.mcpServerVersions).values({
      id: newId(), serverId: teamServerId, version: '1.0.0', precedence: parseVersion('1.0.0')!.key, prerelease: false, status: 'active',
      changelog: null, releaseDate: null, packages: null, remotes: null, isLatest: true, serverJson: null, createdAt: now, updatedAt: now,
    })
    teamSlug = (await rawRows(app.services.database, sql`select slug from mcp_servers where id = ${teamServerId}`))[0]![0] as string
  })
  afterAll(() => ctx.close())

  describe('listing', () => {
    it('a client following nextCursor to the end sees every item exactly once, whatever the page size', async () => {
      const expected = await listedVersionCount()
      expect(expected).toBeGreaterThan(30)
      const whole = await ok(`${V01}/servers?limit=100`)
      expect(whole.metadata).toEqual({ count: expected })
      for (const limit of [1, 2, 3, 7]) {
        const walked = await walk({}, limit)
        expect(walked.map(keyOf)).toEqual(whole.servers.map(keyOf))
        expect(new Set(walked.map(keyOf)).size).toBe(expected)
      }
    })

    it('orders by registry name, then each server\'s versions newest first; the default page is 30', async () => {
      const { servers } = await ok(`${V01}/servers?limit=100`)
      for (let index = 1; index < servers.length; index++) {
        const [a, b] = [servers[index - 1]!.server, servers[index]!.server]
        if (a.name === b.name) expect(semver.gt(a.version, b.version), `${a.version} before ${b.version}`).toBe(true)
        else expect(a.name < b.name, `${a.name} before ${b.name}`).toBe(true)
      }
      const alpha = servers.filter((item) => item.server.name === registryNameOf(made.alpha!)).map((item) => item.server.version)
      expect(alpha).toEqual(['2.0.0-beta.1', '1.10.0', '1.9.0', '1.2.0', '1.0.0'])
      expect(servers.length).toBeGreaterThan(30)
      const firstPage = await ok(`${V01}/servers`)
      expect(firstPage.servers.map(keyOf)).toEqual(servers.slice(0, 30).map(keyOf))
      expect(firstPage.metadata.nextCursor).toEqual(expect.any(String))
    })

    it('lists hand-made servers as <namespace>/<slug> and imported ones by their registry name; servers without versions are left out', async () => {
      const names = new Set((await ok(`${V01}/servers?limit=100`)).servers.map((item) => item.server.name))
      expect(names).toContain(registryNameOf(made.beta!))
      expect(names).toContain('com.example/weather')
      expect(names).toContain('io.github.someone/snake_case')
      expect(names).not.toContain(registryNameOf(made.empty!))
    })

    it('carries the official metadata: status, publishedAt, updatedAt, isLatest', async () => {
      const { servers } = await ok(`${V01}/servers?limit=100`)
      for (const item of servers) {
        const meta = official(item)
        expect(meta.status).toMatch(/^(active|deprecated)$/)
        expect(Date.parse(meta.publishedAt)).not.toBeNaN()
        expect(Date.parse(meta.updatedAt)).toBeGreaterThanOrEqual(Date.parse(meta.publishedAt))
      }
      const latest = servers.filter((item) => item.server.name === registryNameOf(made.alpha!) && official(item).isLatest).map((item) => item.server.version)
      expect(latest).toEqual(['1.10.0'])
      const old = servers.find((item) => item.server.name === registryNameOf(made.deprecated!))!
      expect(official(old)).toMatchObject({ status: 'deprecated', isLatest: false })
    })

    it('version=latest: one item per server, the one marked latest', async () => {
      const { servers } = await ok(`${V01}/servers?version=latest&limit=100`)
      const names = servers.map((item) => item.server.name)
      expect(new Set(names).size).toBe(names.length)
      for (const item of servers) expect(official(item).isLatest).toBe(true)
      const versionOf = (name: string) => servers.find((item) => item.server.name === name)?.server.version
      expect(versionOf(registryNameOf(made.alpha!))).toBe('1.10.0')
      expect(versionOf(registryNameOf(made.many!))).toBe('0.20.0')
      expect(versionOf('com.example/weather')).toBe('2.0.0+build.1')
      // Only deprecated versions: none is the latest.
      expect(versionOf(registryNameOf(made.deprecated!))).toBeUndefined()
    })

    it('version=<exact>: that version of every server that has it', async () => {
      const { servers } = await ok(`${V01}/servers?version=1.0.0&limit=100`)
      expect(servers.map((item) => item.server.name).sort()).toEqual(
        [made.alpha!, made.gamma!, made.zephyr!, made.deprecated!].map(registryNameOf).concat('com.example/weather').sort(),
      )
      for (const item of servers) expect(item.server.version).toBe('1.0.0')
    })
  })

  describe('search', () => {
    const names = async (search: string) =>
      [...new Set((await ok(`${V01}/servers?limit=100&search=${encodeURIComponent(search)}`)).servers.map((item) => item.server.name))].sort()

    it('matches the registry name, the display name and the description, case-insensitively', async () => {
      expect(await names('COM.EXAMPLE/WEA')).toEqual(['com.example/weather'])
      expect(await names('zephyr GAD')).toEqual([registryNameOf(made.zephyr!)])
      expect(await names('tidal CH')).toEqual([registryNameOf(made.beta!)])
      expect(await names(`${namespace}/ALPHA-`)).toEqual([registryNameOf(made.alpha!)])
      expect(await names('no such text anywhere')).toEqual([])
    })

    it('takes % and _ literally', async () => {
      // As wildcards, `0%` would match "10 apples" and `e_c` "the cat".
      expect(await names('0%')).toEqual([registryNameOf(made.gamma!)])
      expect(await names('e_c')).toEqual(['io.github.someone/snake_case'])
      expect(await names('\\')).toEqual([])
    })

    it('pages through a search like through the whole list', async () => {
      const whole = await ok(`${V01}/servers?limit=100&search=tool`)
      expect(whole.servers.length).toBe(6)
      expect((await walk({ search: 'tool' }, 2)).map(keyOf)).toEqual(whole.servers.map(keyOf))
    })
  })

  describe('single server', () => {
    it("lists a server's versions newest first by precedence, in both API versions", async () => {
      const url = `/servers/${encode(registryNameOf(made.alpha!))}/versions`
      const body = await ok(`${V01}${url}`)
      expect(body.servers.map((item) => item.server.version)).toEqual(['2.0.0-beta.1', '1.10.0', '1.9.0', '1.2.0', '1.0.0'])
      expect(body.metadata).toEqual({ count: 5 })
      expect(await ok(`${V0}${url}`)).toEqual(body)
    })

    it('reaches a URL-encoded name (com.example%2Fweather) and a version with build metadata (2.0.0%2Bbuild.1)', async () => {
      const versions = await ok(`${V01}/servers/com.example%2Fweather/versions`)
      expect(versions.servers.map((item) => item.server.version)).toEqual(['2.0.0+build.1', '1.1.0', '1.0.0'])
      for (const item of versions.servers) expect(item.server.name).toBe('com.example/weather')
      const encoded = await ok<Item>(`${V01}/servers/com.example%2Fweather/versions/2.0.0%2Bbuild.1`)
      expect(encoded.server).toMatchObject({ name: 'com.example/weather', version: '2.0.0+build.1', title: 'Weather Station' })
      expect(await ok<Item>(`${V01}/servers/com.example%2fweather/versions/2.0.0+build.1`)).toEqual(encoded)
    })

    it('versions/latest answers the version marked latest; an exact version answers that one', async () => {
      const latest = await ok<Item>(`${V01}/servers/${encode(registryNameOf(made.alpha!))}/versions/latest`)
      expect(latest.server.version).toBe('1.10.0')
      expect(official(latest).isLatest).toBe(true)
      const exact = await ok<Item>(`${V0}/servers/${encode(registryNameOf(made.alpha!))}/versions/1.9.0`)
      expect(exact.server.version).toBe('1.9.0')
      expect(official(exact).isLatest).toBe(false)
      expect((await ok<Item>(`${V01}/servers/com.example%2Fweather/versions/latest`)).server.version).toBe('2.0.0+build.1')
    })

    it('404 {error, status}: an unknown server, a server without versions, an unknown version, or a version string that is not exact', async () => {
      const cases: Array<[string, string]> = [
        [`/servers/${encode('com.example/nothing')}/versions`, 'Server not found'],
        [`/servers/${encode('com.example/nothing')}/versions/latest`, 'Server not found'],
        [`/servers/${encode(registryNameOf(made.empty!))}/versions`, 'Server not found'],
        [`/servers/${encode(registryNameOf(made.empty!))}/versions/latest`, 'Version not found'],
        [`/servers/${encode(registryNameOf(made.alpha!))}/versions/9.9.9`, 'Version not found'],
        [`/servers/com.example%2Fweather/versions/2.0.0`, 'Version not found'],
        // Only deprecated versions: none is the latest.
        [`/servers/${encode(registryNameOf(made.deprecated!))}/versions/latest`, 'Version not found'],
        // A hand-made server is not found under its slug alone, nor under another namespace.
        [`/servers/${made.alpha!.slug}/versions`, 'Server not found'],
        [`/servers/${encode(`com.elsewhere/${made.alpha!.slug}`)}/versions`, 'Server not found'],
      ]
      for (const prefix of [V01, V0]) {
        for (const [url, error] of cases) {
          const response = await call('GET', `${prefix}${url}`, admin)
          expect(response.statusCode, `${prefix}${url}`).toBe(404)
          expect(response.json(), `${prefix}${url}`).toEqual({ success: false, error, code: 'NOT_FOUND', status: 404 })
        }
      }
    })
  })

  describe('team servers', () => {
    it('never appear: not listed, not searchable, not found by name', async () => {
      const listed = (await ok(`${V01}/servers?limit=100&include_deleted=true`)).servers.map((item) => item.server.name)
      expect(listed).not.toContain(`${namespace}/${teamSlug}`)
      expect((await ok(`${V01}/servers?search=team%20secret`)).servers).toEqual([])
      expect((await ok(`${V01}/servers?search=for%20a%20team`)).servers).toEqual([])
      const response = await call('GET', `${V01}/servers/${encode(`${namespace}/${teamSlug}`)}/versions`, admin)
      expect(response.statusCode).toBe(404)
      expect(response.json()).toEqual({ success: false, error: 'Server not found', code: 'NOT_FOUND', status: 404 })
    })
  })

  describe('changes: yanked versions and updated_since', () => {
    let yankedVersion = ''

    beforeAll(async () => {
      clock.advance(60_000)
      sinceChanges = new Date(clock.now()).toISOString()
      clock.advance(1000)
      // Yank one of alpha's older versions: the latest mark, and so the server, stay as they were.
      const versions = (await call('GET', `/api/mcp/servers/${made.alpha!.id}/versions?limit=100`, admin)).json().data.versions as Array<{ id: string; version: string }>
      const target = versions.find((version) => version.version === '1.2.0')!
      yankedVersion = target.version
      const yanked = await call('PUT', `/api/mcp/servers/${made.alpha!.id}/versions/${target.id}`, admin, { status: 'yanked' })
      expect(yanked.statusCode, yanked.body).toBe(200)
      clock.advance(1000)
      made.late = await createServer(call, admin, { name: 'Late Arrival', description: 'Created after the others.' })
      await addVersion(call, admin, made.late.id, { version: '0.9.0' })
    })

    it('leaves yanked versions out unless include_deleted=true, where they are deleted', async () => {
      const alpha = registryNameOf(made.alpha!)
      const plain = (await ok(`${V01}/servers?limit=100`)).servers.filter((item) => item.server.name === alpha)
      expect(plain.map((item) => item.server.version)).toEqual(['2.0.0-beta.1', '1.10.0', '1.9.0', '1.0.0'])
      const all = (await ok(`${V01}/servers?limit=100&include_deleted=true`)).servers.filter((item) => item.server.name === alpha)
      expect(all.map((item) => item.server.version)).toEqual(['2.0.0-beta.1', '1.10.0', '1.9.0', '1.2.0', '1.0.0'])
      expect(official(all.find((item) => item.server.version === yankedVersion)!).status).toBe('deleted')

      const versions = await ok(`${V01}/servers/${encode(alpha)}/versions`)
      expect(versions.servers.map((item) => item.server.version)).not.toContain(yankedVersion)
      const withDeleted = await ok(`${V01}/servers/${encode(alpha)}/versions?include_deleted=true`)
      expect(withDeleted.servers.map((item) => item.server.version)).toContain(yankedVersion)

      const one = await call('GET', `${V01}/servers/${encode(alpha)}/versions/${yankedVersion}`, admin)
      expect(one.statusCode).toBe(404)
      expect(one.json()).toEqual({ success: false, error: 'Version not found', code: 'NOT_FOUND', status: 404 })
      const oneWithDeleted = await ok<Item>(`${V01}/servers/${encode(alpha)}/versions/${yankedVersion}?include_deleted=true`)
      expect(official(oneWithDeleted).status).toBe('deleted')
    })

    it('a page read again after a catalogue change shows the change (pages are cached by catalogue revision)', async () => {
      const url = `${V01}/servers?limit=100&search=${encodeURIComponent('late arrival')}`
      const before = await ok(url)
      expect(before.servers.map((item) => item.server.description)).toEqual(['Created after the others.'])
      expect((await ok(url)).servers.map((item) => item.server.description)).toEqual(['Created after the others.'])
      const changed = await call('PUT', `/api/mcp/servers/global/${made.late!.id}`, admin, { description: 'Late Arrival, described anew.' })
      expect(changed.statusCode, changed.body).toBe(200)
      expect((await ok(url)).servers.map((item) => item.server.description)).toEqual(['Late Arrival, described anew.'])
      const restored = await call('PUT', `/api/mcp/servers/global/${made.late!.id}`, admin, { description: 'Created after the others.' })
      expect(restored.statusCode, restored.body).toBe(200)
    })

    it('updated_since: only what changed at or after the instant, yanked versions included', async () => {
      const changed = await ok(`${V01}/servers?limit=100&updated_since=${encodeURIComponent(sinceChanges)}`)
      expect(changed.servers.map(keyOf).sort()).toEqual([`${registryNameOf(made.alpha!)}@1.2.0`, `${registryNameOf(made.late!)}@0.9.0`].sort())
      expect(official(changed.servers.find((item) => item.server.version === '1.2.0')!).status).toBe('deleted')
      for (const item of changed.servers) expect(Date.parse(official(item).updatedAt)).toBeGreaterThanOrEqual(Date.parse(sinceChanges))

      // At the instant of the last change: still included (≥); a millisecond later: nothing.
      const newest = Math.max(...changed.servers.map((item) => Date.parse(official(item).updatedAt)))
      const atNewest = await ok(`${V01}/servers?updated_since=${encodeURIComponent(new Date(newest).toISOString())}`)
      expect(atNewest.servers.length).toBeGreaterThanOrEqual(1)
      expect((await ok(`${V01}/servers?updated_since=${encodeURIComponent(new Date(newest + 1).toISOString())}`)).servers).toEqual([])

      // An offset other than Z is the same instant.
      const offset = new Date(Date.parse(sinceChanges) + 2 * 3600_000).toISOString().replace('Z', '+02:00')
      expect((await ok(`${V01}/servers?limit=100&updated_since=${encodeURIComponent(offset)}`)).servers.map(keyOf).sort()).toEqual(changed.servers.map(keyOf).sort())
    })
  })

  describe('query validation stays in the envelope', () => {
    it.each([
      ['limit=0', 'limit'],
      ['limit=101', 'limit'],
      ['limit=abc', 'limit'],
      ['updated_since=yesterday', 'updated_since'],
      ['updated_since=2026-01-01', 'updated_since'],
      ['include_deleted=perhaps', 'include_deleted'],
      ['sort=name', 'sort'],
      ['search=a%00b', 'search'],
      ['version=', 'version'],
      ['cursor=', 'cursor'],
    ])('%s → 400 VALIDATION_ERROR naming %s', async (query, field) => {
      const response = await call('GET', `${V01}/servers?${query}`, admin)
      expect(response.statusCode, response.body).toBe(400)
      expect(response.json()).toMatchObject({ success: false, code: 'VALIDATION_ERROR', details: [expect.objectContaining({ field })] })
    })

    it.each([
      ['not base64url', 'not a cursor!'],
      ['base64url of something else', Buffer.from('hello').toString('base64url')],
      ['JSON of the wrong shape', Buffer.from(JSON.stringify({ name: 'x' })).toString('base64url')],
      ['an array of the wrong format', Buffer.from(JSON.stringify([2, 'a', 'b', 'c'])).toString('base64url')],
      ['a NUL inside', Buffer.from(JSON.stringify([1, 'a\u0000', 'b', 'c'])).toString('base64url')],
      ['padding added', `${Buffer.from(JSON.stringify([1, 'a', 'b', 'c'])).toString('base64url')}=`],
    ])('a malformed cursor (%s) → 400 naming cursor', async (_label, cursor) => {
      const response = await call('GET', `${V01}/servers?cursor=${encodeURIComponent(cursor)}`, admin)
      expect(response.statusCode, response.body).toBe(400)
      expect(response.json()).toMatchObject({ success: false, code: 'VALIDATION_ERROR', details: [{ field: 'cursor', in: 'querystring' }] })
    })

    it('a cursor from v0.1 works on v0', async () => {
      const first = await ok(`${V01}/servers?limit=4`)
      const second = await ok(`${V0}/servers?limit=4&cursor=${first.metadata.nextCursor!}`)
      const whole = await ok(`${V01}/servers?limit=8`)
      expect([...first.servers, ...second.servers].map(keyOf)).toEqual(whole.servers.map(keyOf))
    })
  })

  describe('a real listening server', () => {
    it('decodes %2F in the name and %2B in the version (find-my-way behind node:http)', async () => {
      await app.listen({ port: 0, host: '127.0.0.1' })
      const { port } = app.server.address() as AddressInfo
      const get = async (path: string) => fetch(`http://127.0.0.1:${port}${path}`, { headers: { cookie: admin.cookie } })
      const versions = await get(`${V01}/servers/com.example%2Fweather/versions`)
      expect(versions.status).toBe(200)
      expect(((await versions.json()) as List).servers.map((item) => item.server.version)).toEqual(['2.0.0+build.1', '1.1.0', '1.0.0'])
      const one = await get(`${V0}/servers/com.example%2Fweather/versions/2.0.0%2Bbuild.1`)
      expect(one.status).toBe(200)
      expect(((await one.json()) as Item).server).toMatchObject({ name: 'com.example/weather', version: '2.0.0+build.1' })
      const missing = await get(`${V01}/servers/com.example%2Fnothing/versions/latest`)
      expect(missing.status).toBe(404)
      expect(await missing.json()).toEqual({ success: false, error: 'Server not found', code: 'NOT_FOUND', status: 404 })
    })
  })

  describe('who may read', () => {
    const setPublic = async (value: boolean) => {
      const response = await call('PUT', '/api/settings/catalogue.registry_api_public', admin, { value })
      expect(response.statusCode, response.body).toBe(200)
    }
    const anonymous = (url: string, headers: Record<string, string> = {}): Promise<LightMyRequestResponse> => app.inject({ method: 'GET', url, headers })
    const urls = [`${V01}/servers`, `${V0}/servers`, `${V01}/servers/com.example%2Fweather/versions`, `${V0}/servers/com.example%2Fweather/versions/latest`]

    it('anonymous: 401 in the envelope while the setting is off, 200 after PUT /api/settings turns it on, 401 again when off', async () => {
      for (const url of urls) {
        const response = await anonymous(url)
        expect(response.statusCode, url).toBe(401)
        expect(response.json()).toMatchObject({ success: false, code: 'UNAUTHORIZED' })
        expect(response.headers['www-authenticate']).toMatch(/^Bearer/)
      }
      await setPublic(true)
      try {
        for (const url of urls) expect((await anonymous(url)).statusCode, url).toBe(200)
        const listed = (await anonymous(`${V01}/servers?limit=100`)).json() as List
        expect(listed.servers.length).toBe(await listedVersionCount())
      } finally {
        await setPublic(false)
      }
      for (const url of urls) expect((await anonymous(url)).statusCode, url).toBe(401)
    })

    it('while public, a credential that is presented is still checked: a bad one → 401, a token without mcp:read → 403', async () => {
      const tokens = await issueTokens(app, user.cookie, 'account:read')
      await setPublic(true)
      try {
        for (const headers of [bearer('not-a-real-token'), { authorization: 'Basic abc' }, { cookie: 'auth_session=not-a-session' }]) {
          const response = await anonymous(`${V01}/servers`, headers)
          expect(response.statusCode, JSON.stringify(headers)).toBe(401)
          expect(response.json()).toMatchObject({ success: false, code: 'UNAUTHORIZED' })
        }
        const scopeless = await anonymous(`${V01}/servers`, bearer(tokens.access_token))
        expect(scopeless.statusCode).toBe(403)
        expect(scopeless.json()).toMatchObject({ code: 'FORBIDDEN', details: { required_scope: 'mcp:read' } })
      } finally {
        await setPublic(false)
      }
    })

    it('a session of any user, and a bearer token with mcp:read, read it while it is not public', async () => {
      expect((await call('GET', `${V01}/servers`, user)).statusCode).toBe(200)
      const tokens = await issueTokens(app, user.cookie, 'mcp:read')
      for (const url of urls) {
        const response = await anonymous(url, bearer(tokens.access_token))
        expect(response.statusCode, url).toBe(200)
      }
      const withoutScope = await issueTokens(app, user.cookie, 'account:read')
      const refused = await anonymous(`${V01}/servers`, bearer(withoutScope.access_token))
      expect(refused.statusCode).toBe(403)
      expect(refused.json()).toMatchObject({ code: 'FORBIDDEN', details: { required_scope: 'mcp:read' } })
    })
  })

  describe('OpenAPI', () => {
    it('documents the six operations under the MCP Registry tag, with explicit ids and the optional security', async () => {
      const document = await servedDocument(app)
      const registry = operationsOf(document).filter((operation) => operation.path.startsWith('/api/registry/'))
      const byId = Object.fromEntries(registry.map((operation) => [(operation.operation as { operationId: string }).operationId, `${operation.method} ${operation.path}`]))
      expect(byId).toEqual({
        registryListServers: 'GET /api/registry/v0.1/servers',
        registryListServerVersions: 'GET /api/registry/v0.1/servers/{serverName}/versions',
        registryGetServerVersion: 'GET /api/registry/v0.1/servers/{serverName}/versions/{version}',
        registryListServersV0: 'GET /api/registry/v0/servers',
        registryListServerVersionsV0: 'GET /api/registry/v0/servers/{serverName}/versions',
        registryGetServerVersionV0: 'GET /api/registry/v0/servers/{serverName}/versions/{version}',
      })
      for (const { operation } of registry) {
        const described = operation as { tags: string[]; security: unknown; description: string }
        expect(described.tags).toEqual(['MCP Registry'])
        expect(described.security).toEqual([{ cookieAuth: [] }, { bearerAuth: ['mcp:read'] }, {}])
        expect(described.description).toContain('catalogue.registry_api_public')
        expect(described.description).toContain('generic API v0.1')
      }
      expect(document.components.schemas?.ServerList).toBeDefined()
      expect(document.components.schemas?.ServerResponse).toBeDefined()
    })
  })
})

describe('the route policy option publicWhen', () => {
  it('is part of a dual policy only, as plugins must declare it', () => {
    expect(isRoutePolicy(policy.dual('mcp:read', { publicWhen: 'catalogue.registry_api_public' }))).toBe(true)
    expect(isRoutePolicy({ kind: 'dual', scope: 'mcp:read', publicWhen: 'plugin.notes.open' })).toBe(true)
    expect(isRoutePolicy({ kind: 'session', publicWhen: 'catalogue.registry_api_public' })).toBe(false)
    expect(isRoutePolicy({ kind: 'dual', scope: 'mcp:read', publicWhen: 1 })).toBe(false)
    expect(isRoutePolicy({ kind: 'dual', scope: 'mcp:read', publicWhen: '' })).toBe(false)
  })
})
