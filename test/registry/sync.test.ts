import { createServer, type IncomingMessage, type ServerResponse } from 'node:http'
import type { AddressInfo } from 'node:net'
import { eq, sql } from 'drizzle-orm'
import type { FastifyInstance, LightMyRequestResponse } from 'fastify'
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest'
import type { ResolvedAddress } from '../../src/lib/outbound-fetch.js'
import { OFFICIAL_META, SERVER_SCHEMA_URL } from '../../src/modules/registry/server-json.js'
import { SYNC_LEASE_MS, UPSTREAM_URL_SETTING } from '../../src/modules/registry/sync.js'
import { createTestContext, type TestContext } from '../helpers/app.js'
import { manualClock, type ManualClock } from '../helpers/clock.js'
import { DIALECTS } from '../helpers/database.js'
import { startDocumentServer } from '../helpers/document-server.js'
import { rawRows } from '../helpers/sql.js'
import { client, ROOMY_LIMITS, signUp, type Account, type Call } from '../helpers/teams.js'
import { until } from '../helpers/until.js'

/**
 * The sync from an upstream MCP registry, against a fake registry on loopback that serves the
 * generic read API (cursor pages, updated_since) and records what it was asked: the first run
 * imports every page, later runs ask only for changes, failures leave the position where it was,
 * one run at a time (the lease), the outbound rules on saving the URL and at sync time, and the
 * interval's timer.
 */

const SYNC = '/api/mcp/registry/sync'
const NAMESPACE = 'io.example.sync'
const INTERVAL_SETTING = 'catalogue.registry_sync_interval_minutes'
const DAY_MS = 24 * 3600_000

type Mode = 'ok' | 'v0-only' | 'status-500' | 'not-json' | 'not-a-list' | 'fail-second-page'

interface UpstreamItem {
  server: Record<string, unknown>
  _meta: { [OFFICIAL_META]: { status: string; publishedAt: string; updatedAt: string; isLatest: boolean } }
}

/** A registry serving /v0.1/servers (and /v0/servers) from memory, ordered by name, cursor = the last name served. */
interface FakeRegistry {
  origin: string
  port: number
  mode: Mode
  /** Serves at most this many items a page, whatever `limit` asks (a registry may serve fewer). */
  pageCap: number
  /** Requests received, in order. */
  requests: URL[]
  /** While set, requests wait for it. */
  gate: Promise<void> | null
  publish(name: string, fields: { version: string; updatedAt: string; status?: string; document?: Record<string, unknown> }): void
  close(): Promise<void>
}

function validDocument(name: string, version: string): Record<string, unknown> {
  return {
    $schema: SERVER_SCHEMA_URL,
    name: `${NAMESPACE}/${name}`,
    description: `The ${name} server.`,
    version,
    packages: [{ registryType: 'npm', identifier: `@example/${name}`, version, transport: { type: 'stdio' } }],
  }
}

async function startFakeRegistry(): Promise<FakeRegistry> {
  const items = new Map<string, UpstreamItem>()
  const requests: URL[] = []
  const json = (response: ServerResponse, status: number, body: unknown) => {
    response.writeHead(status, { 'content-type': 'application/json' })
    response.end(JSON.stringify(body))
  }
  const handle = (request: IncomingMessage, response: ServerResponse) => {
    const url = new URL(request.url ?? '/', registry.origin)
    const list = url.pathname === '/v0/servers' || (url.pathname === '/v0.1/servers' && registry.mode !== 'v0-only')
    if (!list) return json(response, 404, { error: 'Not Found' })
    if (registry.mode === 'status-500') return json(response, 500, { error: 'boom' })
    if (registry.mode === 'not-json') {
      response.writeHead(200, { 'content-type': 'text/html' })
      return response.end('<html>maintenance</html>')
    }
    if (registry.mode === 'not-a-list') return json(response, 200, { items: [] })
    const cursor = url.searchParams.get('cursor')
    if (registry.mode === 'fail-second-page' && cursor !== null) return json(response, 500, { error: 'boom' })
    const since = url.searchParams.get('updated_since')
    const size = Math.min(Number(url.searchParams.get('limit') ?? 30), registry.pageCap)
    const after = cursor === null ? null : Buffer.from(cursor, 'base64url').toString()
    const matching = [...items.values()]
      .filter((item) => since === null || Date.parse(item._meta[OFFICIAL_META].updatedAt) >= Date.parse(since))
      .filter((item) => after === null || String(item.server.name) > after)
      .sort((a, b) => (String(a.server.name) < String(b.server.name) ? -1 : 1))
    const page = matching.slice(0, size)
    const more = matching.length > size
    json(response, 200, {
      servers: page,
      metadata: { count: page.length, ...(more ? { nextCursor: Buffer.from(String(page.at(-1)!.server.name)).toString('base64url') } : {}) },
    })
  }
  const server = createServer((request, response) => {
    requests.push(new URL(request.url ?? '/', registry.origin))
    if (registry.gate === null) return handle(request, response)
    void registry.gate.then(() => handle(request, response))
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const { port } = server.address() as AddressInfo
  const registry: FakeRegistry = {
    origin: `http://127.0.0.1:${port}`,
    port,
    mode: 'ok',
    pageCap: 100,
    requests,
    gate: null,
    publish(name, { version, updatedAt, status = 'active', document }) {
      items.set(name, {
        server: document ?? validDocument(name, version),
        _meta: { [OFFICIAL_META]: { status, publishedAt: '2026-01-01T00:00:00Z', updatedAt, isLatest: true } },
      })
    },
    async close() {
      server.closeAllConnections()
      await new Promise<void>((resolve) => server.close(() => resolve()))
    },
  }
  return registry
}

describe.each(DIALECTS)('sync from an upstream registry on %s', (dialect) => {
  let ctx: TestContext
  let upstream: FakeRegistry
  let clock: ManualClock
  /** OUTBOUND_ALLOWED_HOSTS = 127.0.0.1:<the fake's port>. */
  let app: FastifyInstance
  /** No OUTBOUND_ALLOWED_HOSTS: loopback and private addresses are refused. */
  let strict: FastifyInstance
  let call: Call
  let callStrict: Call
  /** A second instance like `app`. */
  let callPeer: Call
  let admin: Account
  let user: Account

  /** Names only the test resolver knows: one public, one private. */
  const resolveHost = async (hostname: string): Promise<ResolvedAddress[]> => {
    if (hostname === 'registry.test') return [{ address: '93.184.216.34', family: 4 }]
    if (hostname === 'inside.test') return [{ address: '10.20.30.40', family: 4 }]
    throw Object.assign(new Error('not found'), { code: 'ENOTFOUND' })
  }

  const sync = (on: Call = call, as: Account = admin) => on('POST', SYNC, as)
  const putSetting = (key: string, value: unknown, on: Call = call) => on('PUT', `/api/settings/${key}`, admin, { value })
  const setUpstream = async (url: string) => {
    const response = await putSetting(UPSTREAM_URL_SETTING, url)
    expect(response.statusCode, response.body).toBe(200)
  }
  const expectOk = (response: LightMyRequestResponse) => {
    expect(response.statusCode, response.body).toBe(200)
    return response.json().data as { counts: Record<string, number>; pages: number; next_since: string | null }
  }

  /** Writes the setting behind the API's back (as an older version or a hand edit could have), then lets every instance see it. */
  async function forceUpstream(url: string): Promise<void> {
    const { db, t } = app.services.database
    await db.update(t.settings).set({ value: JSON.stringify(url), setAt: new Date(clock.now()) }).where(eq(t.settings.key, UPSTREAM_URL_SETTING))
    await db.update(t.settingsRevision).set({ revision: sql`${t.settingsRevision.revision} + 1` })
    // Written past the settings service: each instance sees it at its next read on SQLite (the
    // file's change stamp), once the database's notification arrives on PostgreSQL.
    for (const instance of [app, strict]) {
      await until(async () => (await instance.services.settings.value(UPSTREAM_URL_SETTING)) === url, { what: 'the forced upstream URL' })
    }
  }

  async function syncState() {
    const { db, t } = app.services.database
    const [row] = await db.select().from(t.registrySyncState).where(eq(t.registrySyncState.id, 1))
    return row!
  }

  async function setLease(token: string | null, lockedUntil: Date | null): Promise<void> {
    const { db, t } = app.services.database
    // The row exists once a sync ran on the database; a lease is forced into it either way.
    await db.insert(t.registrySyncState).values({ id: 1, lockToken: token, lockedUntil }).onConflictDoUpdate({ target: t.registrySyncState.id, set: { lockToken: token, lockedUntil } })
  }

  /** name → the server's latest version, for the servers the sync created. */
  async function importedServers(): Promise<Record<string, string | null>> {
    const rows = await rawRows(app.services.database, sql`select registry_name, latest_version from mcp_servers where source = 'registry' order by registry_name`)
    return Object.fromEntries(rows.map(([name, latest]) => [String(name), latest === null ? null : String(latest)]))
  }

  const requestsSince = (count: number) => upstream.requests.slice(count).map((url) => `${url.pathname}${url.search}`)

  beforeAll(async () => {
    upstream = await startFakeRegistry()
    clock = manualClock()
    // In a file: every instance of the test shares the SQLite database, as they would in production.
    ctx = await createTestContext(dialect, { file: true })
    // The timers of these instances never fire during the file: the interval tests look by hand.
    const options = { clock, limits: ROOMY_LIMITS, outbound: { resolveHost }, registrySyncCheckMs: DAY_MS }
    app = (await ctx.build({ ...options, env: { OUTBOUND_ALLOWED_HOSTS: `127.0.0.1:${upstream.port}` } })).app
    strict = (await ctx.build(options)).app
    call = client(app)
    callStrict = client(strict)
    callPeer = client((await ctx.build({ ...options, env: { OUTBOUND_ALLOWED_HOSTS: `127.0.0.1:${upstream.port}` } })).app)
    admin = await signUp(app, `sync_admin_${dialect}`)
    user = await signUp(app, `sync_user_${dialect}`)
  })
  afterAll(async () => {
    await ctx.close()
    await upstream.close()
  })

  describe('before it is set up, and who may ask', () => {
    it('an empty upstream URL → 409 SYNC_NOT_CONFIGURED naming the setting', async () => {
      const response = await sync()
      expect(response.statusCode, response.body).toBe(409)
      expect(response.json()).toMatchObject({ success: false, code: 'SYNC_NOT_CONFIGURED', error: expect.stringContaining(UPSTREAM_URL_SETTING) })
      expect(upstream.requests).toHaveLength(0)
    })

    it('needs a session with mcp.servers.manage: a global_user gets 403, nobody 401', async () => {
      await setUpstream(upstream.origin)
      const asUser = await sync(call, user)
      expect(asUser.statusCode, asUser.body).toBe(403)
      expect(asUser.json().code).toBe('FORBIDDEN')
      const anonymous = await app.inject({ method: 'POST', url: SYNC })
      expect(anonymous.statusCode).toBe(401)
      expect(upstream.requests).toHaveLength(0)
    })
  })

  describe('the URL setting: refused on save when the sync could not use it', () => {
    const refusedOnSave = async (url: string, on: Call = callStrict) => {
      const response = await putSetting(UPSTREAM_URL_SETTING, url, on)
      expect(response.statusCode, response.body).toBe(400)
      const body = response.json()
      expect(body.code).toBe('VALIDATION_ERROR')
      expect(body.details).toHaveLength(1)
      expect(body.details[0].field).toBe(UPSTREAM_URL_SETTING)
      return body.details[0].message as string
    }

    it('loopback and private addresses, unless allowed; http to a host that is not allowed', async () => {
      expect(await refusedOnSave(`https://127.0.0.1:${upstream.port}`)).toMatch(/non-public address \(loopback\).*OUTBOUND_ALLOWED_HOSTS/)
      expect(await refusedOnSave('https://10.0.0.1')).toMatch(/non-public address \(private\)/)
      expect(await refusedOnSave('https://inside.test')).toMatch(/resolves to a non-public address \(private\)/)
      expect(await refusedOnSave('http://10.0.0.1')).toMatch(/plain http is used only for hosts in OUTBOUND_ALLOWED_HOSTS/)
      expect(await refusedOnSave('http://registry.test')).toMatch(/plain http is used only for hosts in OUTBOUND_ALLOWED_HOSTS/)
      expect(await refusedOnSave('https://nowhere.test')).toMatch(/does not resolve/)
    })

    it('what the URL itself may not be: relative, another scheme, credentials, a query, a fragment', async () => {
      expect(await refusedOnSave('registry.example.com')).toMatch(/absolute URL/)
      expect(await refusedOnSave('ftp://registry.test')).toMatch(/https URL \(it uses ftp\)/)
      expect(await refusedOnSave('https://user:secret@registry.test')).toMatch(/user name or password/)
      expect(await refusedOnSave('https://registry.test/?page=1')).toMatch(/query or a fragment/)
      expect(await refusedOnSave('https://registry.test/#top')).toMatch(/query or a fragment/)
    })

    it('`host:port` in OUTBOUND_ALLOWED_HOSTS admits that port only; a public https host and empty are fine', async () => {
      expect(await refusedOnSave(`http://127.0.0.1:${upstream.port + 1}`, call)).toMatch(/plain http/)
      expect(await refusedOnSave(`https://127.0.0.1:${upstream.port + 1}`, call)).toMatch(/loopback/)
      for (const url of ['https://registry.test', 'https://registry.test/mirror/', '', upstream.origin]) {
        const response = await putSetting(UPSTREAM_URL_SETTING, url, url === upstream.origin ? call : callStrict)
        expect(response.statusCode, `${url}: ${response.body}`).toBe(200)
      }
      // Saving checked the URL without fetching anything.
      expect(upstream.requests).toHaveLength(0)
    })
  })

  describe('the outbound rules at sync time, for a URL stored without the check', () => {
    afterAll(() => forceUpstream(upstream.origin))

    it('a loopback URL where it is not allowed → 400 UPSTREAM_URL_REFUSED naming the reason; nothing is fetched', async () => {
      await forceUpstream(`https://127.0.0.1:${upstream.port}`)
      const response = await sync(callStrict)
      expect(response.statusCode, response.body).toBe(400)
      expect(response.json()).toMatchObject({ code: 'UPSTREAM_URL_REFUSED', error: expect.stringMatching(/non-public address \(loopback\)/) })
      await forceUpstream('http://10.0.0.1')
      const plain = await sync(callStrict)
      expect(plain.statusCode, plain.body).toBe(400)
      expect(plain.json()).toMatchObject({ code: 'UPSTREAM_URL_REFUSED', error: expect.stringMatching(/plain http is used only for hosts in OUTBOUND_ALLOWED_HOSTS/) })
      await forceUpstream('https://user:secret@registry.test')
      expect((await sync(callStrict)).json()).toMatchObject({ code: 'UPSTREAM_URL_REFUSED', error: expect.stringMatching(/user name or password/) })
      expect(upstream.requests).toHaveLength(0)
    })

    it('the allowed `host:port` opens that port only: another port of the same host is refused', async () => {
      await forceUpstream(`http://127.0.0.1:${upstream.port + 1}`)
      const response = await sync()
      expect(response.statusCode, response.body).toBe(400)
      expect(response.json().code).toBe('UPSTREAM_URL_REFUSED')
      // The lease was given back: the refusal did not leave the sync blocked.
      expect((await syncState()).lockToken).toBeNull()
    })
  })

  describe('reading the upstream', () => {
    beforeAll(() => {
      upstream.pageCap = 2
      upstream.publish('alpha', { version: '1.0.0', updatedAt: '2026-02-01T10:00:00Z' })
      upstream.publish('bravo', { version: '2.1.0', updatedAt: '2026-02-03T10:00:00.123456Z' })
      upstream.publish('charlie', { version: '0.3.0', updatedAt: '2026-02-02T10:00:00Z' })
      upstream.publish('delta', { version: '1.0.0', updatedAt: '2026-01-15T08:30:00Z', status: 'deprecated' })
      upstream.publish('echo', { version: '5.0.0', updatedAt: '2026-01-20T00:00:00Z' })
    })

    it('the first run reads every page and imports every item; the position is the newest updatedAt as the upstream wrote it', async () => {
      const before = upstream.requests.length
      const data = expectOk(await sync())
      expect(data).toEqual({ counts: { created: 5, updated: 0, unchanged: 0, invalid: 0 }, pages: 3, next_since: '2026-02-03T10:00:00.123456Z' })
      // limit=100 asked, the cursor followed, no updated_since on the first run.
      expect(requestsSince(before)).toEqual([
        '/v0.1/servers?limit=100',
        `/v0.1/servers?limit=100&cursor=${Buffer.from(`${NAMESPACE}/bravo`).toString('base64url')}`,
        `/v0.1/servers?limit=100&cursor=${Buffer.from(`${NAMESPACE}/delta`).toString('base64url')}`,
      ])
      expect(await importedServers()).toEqual({
        [`${NAMESPACE}/alpha`]: '1.0.0', [`${NAMESPACE}/bravo`]: '2.1.0', [`${NAMESPACE}/charlie`]: '0.3.0',
        [`${NAMESPACE}/delta`]: null, [`${NAMESPACE}/echo`]: '5.0.0',
      })
      const [[deltaStatus]] = await rawRows(app.services.database, sql`select v.status from mcp_server_versions v join mcp_servers s on s.id = v.server_id where s.registry_name = ${`${NAMESPACE}/delta`}`) as [[string]]
      expect(deltaStatus).toBe('deprecated')
      const state = await syncState()
      expect(state).toMatchObject({ nextSince: '2026-02-03T10:00:00.123456Z', lockToken: null, lockedUntil: null })
      expect(state.lastSyncedAt?.getTime()).toBe(clock.now())
    })

    it('the run is audit-logged with who asked, the counts, the pages and the upstream', async () => {
      const { rows } = await app.services.auditEvents.list({ type: 'catalogue.registry_synced', limit: 10, offset: 0 })
      expect(rows).toHaveLength(1)
      expect(rows[0]).toMatchObject({
        actorId: admin.id,
        target: `${upstream.origin}/`,
        details: { upstream_url: `${upstream.origin}/`, counts: { created: 5, updated: 0, unchanged: 0, invalid: 0 }, pages: 3, next_since: '2026-02-03T10:00:00.123456Z', scheduled: false },
      })
    })

    it('the next run asks for changes since then: nothing changed → only the newest item again, unchanged', async () => {
      const before = upstream.requests.length
      const data = expectOk(await sync())
      expect(data).toEqual({ counts: { created: 0, updated: 0, unchanged: 1, invalid: 0 }, pages: 1, next_since: '2026-02-03T10:00:00.123456Z' })
      expect(requestsSince(before)).toEqual([`/v0.1/servers?limit=100&updated_since=${encodeURIComponent('2026-02-03T10:00:00.123456Z')}`])
    })

    it('a server updated upstream gets its new version; the position moves to its updatedAt', async () => {
      upstream.publish('alpha', { version: '1.1.0', updatedAt: '2026-02-10T12:00:00Z' })
      const data = expectOk(await sync())
      expect(data).toEqual({ counts: { created: 0, updated: 1, unchanged: 1, invalid: 0 }, pages: 1, next_since: '2026-02-10T12:00:00Z' })
      expect((await importedServers())[`${NAMESPACE}/alpha`]).toBe('1.1.0')
      const [[versions]] = await rawRows(app.services.database, sql`select count(*) from mcp_server_versions v join mcp_servers s on s.id = v.server_id where s.registry_name = ${`${NAMESPACE}/alpha`}`) as [[unknown]]
      expect(Number(versions)).toBe(2)
    })

    it('invalid items are counted invalid while the rest import', async () => {
      upstream.publish('foxtrot', { version: '1.0.0', updatedAt: '2026-02-11T00:00:00Z' })
      upstream.publish('golf', { version: '1.0.0', updatedAt: '2026-02-12T00:00:00Z', document: { name: 'not a registry name', version: '1.0.0' } })
      upstream.publish('hotel', { version: 'soon', updatedAt: '2026-02-11T06:00:00Z', document: { ...validDocument('hotel', '1.0.0'), version: 'next release' } })
      const data = expectOk(await sync())
      expect(data).toEqual({ counts: { created: 1, updated: 0, unchanged: 1, invalid: 2 }, pages: 2, next_since: '2026-02-12T00:00:00Z' })
      const servers = await importedServers()
      expect(servers[`${NAMESPACE}/foxtrot`]).toBe('1.0.0')
      expect(Object.keys(servers)).not.toContain(`${NAMESPACE}/hotel`)
    })

    it('an upstream without /v0.1 (404 there) is read through /v0 for the whole run', async () => {
      upstream.mode = 'v0-only'
      upstream.publish('india', { version: '1.0.0', updatedAt: '2026-02-13T00:00:00Z' })
      upstream.publish('juliett', { version: '1.0.0', updatedAt: '2026-02-13T01:00:00Z' })
      upstream.publish('kilo', { version: '1.0.0', updatedAt: '2026-02-13T02:00:00Z' })
      const before = upstream.requests.length
      try {
        const data = expectOk(await sync())
        // golf (invalid, updatedAt = the position) comes again, last by name.
        expect(data).toEqual({ counts: { created: 3, updated: 0, unchanged: 0, invalid: 1 }, pages: 2, next_since: '2026-02-13T02:00:00Z' })
        const since = encodeURIComponent('2026-02-12T00:00:00Z')
        expect(requestsSince(before)).toEqual([
          `/v0.1/servers?limit=100&updated_since=${since}`,
          `/v0/servers?limit=100&updated_since=${since}`,
          `/v0/servers?limit=100&updated_since=${since}&cursor=${Buffer.from(`${NAMESPACE}/juliett`).toString('base64url')}`,
        ])
      } finally {
        upstream.mode = 'ok'
      }
    })

    it('an upstream failure → 502 UPSTREAM_REGISTRY_FAILED naming the URL and the reason; the position stays', async () => {
      const stateBefore = await syncState()
      const url = `${upstream.origin}/v0.1/servers?limit=100&updated_since=${encodeURIComponent('2026-02-13T02:00:00Z')}`
      const cases: Array<[Mode, RegExp]> = [
        ['status-500', /answered HTTP 500/],
        ['not-json', /not JSON/],
        ['not-a-list', /not a server list/],
      ]
      for (const [mode, reason] of cases) {
        upstream.mode = mode
        const response = await sync()
        expect(response.statusCode, response.body).toBe(502)
        const body = response.json()
        expect(body.code).toBe('UPSTREAM_REGISTRY_FAILED')
        expect(body.error).toContain(url)
        expect(body.error).toMatch(reason)
      }
      upstream.mode = 'ok'
      expect(await syncState()).toEqual({ ...stateBefore, lockToken: null, lockedUntil: null })
    })

    it('a failure on a later page keeps what the earlier pages imported but not the position; the re-run is idempotent', async () => {
      upstream.publish('lima', { version: '1.0.0', updatedAt: '2026-02-14T00:00:00Z' })
      upstream.publish('mike', { version: '1.0.0', updatedAt: '2026-02-14T01:00:00Z' })
      upstream.publish('november', { version: '1.0.0', updatedAt: '2026-02-14T02:00:00Z' })
      upstream.mode = 'fail-second-page'
      const failed = await sync()
      upstream.mode = 'ok'
      expect(failed.statusCode, failed.body).toBe(502)
      expect(failed.json().error).toContain('cursor=')
      expect(Object.keys(await importedServers())).toEqual(expect.arrayContaining([`${NAMESPACE}/kilo`, `${NAMESPACE}/lima`]))
      expect((await syncState()).nextSince).toBe('2026-02-13T02:00:00Z')
      const data = expectOk(await sync())
      expect(data).toEqual({ counts: { created: 2, updated: 0, unchanged: 2, invalid: 0 }, pages: 2, next_since: '2026-02-14T02:00:00Z' })
    })
  })

  describe('one run at a time', () => {
    it('two syncs at once: exactly one 200, the other 409 SYNC_IN_PROGRESS', async () => {
      let open!: () => void
      upstream.gate = new Promise<void>((resolve) => {
        open = resolve
      })
      const before = upstream.requests.length
      const first = sync()
      // The first holds the lease once its request has reached the upstream.
      await vi.waitFor(() => expect(upstream.requests.length).toBeGreaterThan(before))
      const second = await sync()
      upstream.gate = null
      open()
      expect(second.statusCode, second.body).toBe(409)
      expect(second.json()).toMatchObject({ code: 'SYNC_IN_PROGRESS' })
      expectOk(await first)
      expect(upstream.requests.length).toBe(before + 1)
    })

    it('two instances asked at the same moment: the loser answers 409 at once, the winner 200 once the upstream answers', async () => {
      let open!: () => void
      upstream.gate = new Promise<void>((resolve) => {
        open = resolve
      })
      const responses = [sync(), sync(callPeer)]
      // The upstream is held: whichever answers first did not get the lease.
      const loser = await Promise.race(responses)
      expect(loser.statusCode, loser.body).toBe(409)
      expect(loser.json().code).toBe('SYNC_IN_PROGRESS')
      upstream.gate = null
      open()
      expect((await Promise.all(responses)).map((response) => response.statusCode).sort()).toEqual([200, 409])
    })

    it('a lease still running elsewhere blocks; one left by a crashed instance (locked_until past) does not', async () => {
      await setLease('held-elsewhere', new Date(clock.now() + 60_000))
      const blocked = await sync()
      expect(blocked.statusCode, blocked.body).toBe(409)
      expect(blocked.json().code).toBe('SYNC_IN_PROGRESS')
      expect((await syncState()).lockToken).toBe('held-elsewhere')

      await setLease('crashed', new Date(clock.now() - 1))
      expectOk(await sync())
      expect(await syncState()).toMatchObject({ lockToken: null, lockedUntil: null })
    })
  })

  describe('the position belongs to the upstream it was read from', () => {
    it('after the URL changes to another registry, the first run reads it all (no updated_since); https with the trusted CA', async () => {
      const other = await startDocumentServer()
      try {
        other.serve('/v0.1/servers?limit=100', {
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify({
            servers: [{ server: validDocument('oscar', '1.0.0'), _meta: { [OFFICIAL_META]: { status: 'active', publishedAt: '2025-06-01T00:00:00Z', updatedAt: '2025-06-01T00:00:00Z', isLatest: true } } }],
            metadata: { count: 1 },
          }),
        })
        const secure = (await ctx.build({ clock, limits: ROOMY_LIMITS, outbound: { ca: [other.ca], resolveHost }, registrySyncCheckMs: DAY_MS, env: { OUTBOUND_ALLOWED_HOSTS: `127.0.0.1:${other.port}` } })).app
        const saved = await client(secure)('PUT', `/api/settings/${UPSTREAM_URL_SETTING}`, admin, { value: other.origin })
        expect(saved.statusCode, saved.body).toBe(200)
        const response = await client(secure)('POST', SYNC, admin)
        expect(response.statusCode, response.body).toBe(200)
        // An older updatedAt than the previous upstream's position: it is this upstream's position now.
        expect(response.json().data).toEqual({ counts: { created: 1, updated: 0, unchanged: 0, invalid: 0 }, pages: 1, next_since: '2025-06-01T00:00:00Z' })
        expect(other.requests).toEqual(['/v0.1/servers?limit=100'])
        await secure.close()
      } finally {
        await other.close()
        await forceUpstream(upstream.origin)
      }
    })
  })

  describe('the interval', () => {
    afterAll(async () => {
      const response = await putSetting(INTERVAL_SETTING, 0)
      expect(response.statusCode, response.body).toBe(200)
    })

    it('off at 0; when set, a look runs the sync once the last run is older than the interval, as nobody', async () => {
      const schedule = app.services.registrySyncSchedule
      // The upstream changed; the position is the other registry's, so this run reads everything from here.
      expectOk(await sync())
      expect(await schedule.tick()).toBe('off')
      expect((await putSetting(INTERVAL_SETTING, 60)).statusCode).toBe(200)
      const before = upstream.requests.length
      expect(await schedule.tick()).toBe('not_due')
      clock.advance(59 * 60_000)
      expect(await schedule.tick()).toBe('not_due')
      expect(upstream.requests.length).toBe(before)

      clock.advance(60_000)
      expect(await schedule.tick()).toBe('synced')
      expect(upstream.requests.length).toBe(before + 1)
      expect((await syncState()).lastSyncedAt?.getTime()).toBe(clock.now())
      const { rows } = await app.services.auditEvents.list({ type: 'catalogue.registry_synced', limit: 1, offset: 0 })
      expect(rows[0]).toMatchObject({ actorId: null, ip: null, details: { scheduled: true } })
      expect(await schedule.tick()).toBe('not_due')
    })

    it('a run held elsewhere and a failing upstream are reported, never thrown; the position stays', async () => {
      const schedule = app.services.registrySyncSchedule
      clock.advance(61 * 60_000)
      await setLease('held-elsewhere', new Date(clock.now() + SYNC_LEASE_MS))
      expect(await schedule.tick()).toBe('busy')
      await setLease(null, null)
      const position = (await syncState()).nextSince
      upstream.mode = 'status-500'
      try {
        expect(await schedule.tick()).toBe('failed')
        // This instance waits before trying again (the interval, at most 10 minutes).
        expect(await schedule.tick()).toBe('not_due')
      } finally {
        upstream.mode = 'ok'
      }
      expect((await syncState()).nextSince).toBe(position)
      clock.advance(10 * 60_000)
      expect(await schedule.tick()).toBe('synced')
    })

    it("the timer looks by itself (the check period is injectable) and runs a due sync", async () => {
      const timed = (await ctx.build({ clock, limits: ROOMY_LIMITS, outbound: { resolveHost }, env: { OUTBOUND_ALLOWED_HOSTS: `127.0.0.1:${upstream.port}` }, registrySyncCheckMs: 10 })).app
      try {
        const before = upstream.requests.length
        clock.advance(61 * 60_000)
        const due = clock.now()
        await vi.waitFor(async () => expect((await syncState()).lastSyncedAt?.getTime()).toBe(due), { timeout: 5000, interval: 20 })
        expect(upstream.requests.length).toBeGreaterThan(before)
      } finally {
        await timed.close()
      }
    })
  })
})
