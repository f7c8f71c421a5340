import { randomBytes } from 'node:crypto'
import { sql } from 'drizzle-orm'
import type { FastifyInstance, LightMyRequestResponse } from 'fastify'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createTestContext, type TestContext } from '../helpers/app.js'
import { manualClock } from '../helpers/clock.js'
import { DIALECTS } from '../helpers/database.js'
import { CLI_CLIENT_ID, introspect, issueTokens } from '../helpers/oauth.js'
import { createToken, expectValidationError, heartbeat, METRICS, pair, type Paired, type SatelliteBody } from '../helpers/satellites.js'
import { rawRows } from '../helpers/sql.js'
import { client, ROOMY_LIMITS, signUp, type Account, type Call } from '../helpers/teams.js'

const SECOND = 1_000
const LIMITS = {
  ...ROOMY_LIMITS,
  satelliteRegistration: { max: 10_000, windowMs: 60_000 },
  token: { max: 10_000, windowMs: 60_000 },
}

function expectUnauthorized(response: LightMyRequestResponse): void {
  expect(response.statusCode, response.body).toBe(401)
  expect(response.json()).toMatchObject({ success: false, code: 'UNAUTHORIZED' })
}

function expectDisabled(response: LightMyRequestResponse): void {
  expect(response.statusCode, response.body).toBe(403)
  expect(response.json()).toMatchObject({ success: false, code: 'SATELLITE_DISABLED' })
}

/** A key of the right shape that no satellite holds. */
const unknownKey = () => `service_satkey_${randomBytes(32).toString('base64url')}`

describe.each(DIALECTS)('satellite heartbeats and keys on %s', (dialect) => {
  let ctx: TestContext
  let app: FastifyInstance
  let call: Call
  const clock = manualClock(Date.now())
  /** The first account: global_admin. */
  let admin: Account
  /** A global_user. */
  let user: Account
  let seq = 0

  const nowIso = () => new Date(clock.now()).toISOString()

  /** A freshly paired global satellite. */
  const fresh = async (extra: object = {}): Promise<Paired> => pair(app, (await createToken(call, admin)).token, `hb-${dialect}-${++seq}`, extra)
  /** A satellite that serves MCP clients at `url`, and a user's token for it (the only kind its introspection answers active). */
  const servingWithToken = async (url: string) => {
    const satellite = await fresh({ satellite_url: url })
    return { satellite, tokens: await issueTokens(app, user.cookie, 'mcp:read', { resource: `${url}/mcp` }) }
  }

  /** The satellite as the admin sees it. */
  const satelliteOf = async (id: string): Promise<SatelliteBody> => {
    const response = await call('GET', `/api/satellites/${id}`, admin)
    expect(response.statusCode, response.body).toBe(200)
    return response.json().data.satellite
  }
  const statusOf = async (id: string) => (await satelliteOf(id)).status

  /** The ids the admin's list shows with `status=…` (every page of 100 the filter needs). */
  const listedWith = async (status: string): Promise<string[]> => {
    const ids: string[] = []
    for (let offset = 0; ; offset += 100) {
      const response = await call('GET', `/api/satellites?status=${status}&limit=100&offset=${offset}`, admin)
      expect(response.statusCode, response.body).toBe(200)
      const { satellites, pagination } = response.json().data
      ids.push(...satellites.map((satellite: SatelliteBody) => satellite.id))
      for (const satellite of satellites as SatelliteBody[]) expect(satellite.status).toBe(status)
      if (!pagination.has_more) return ids
    }
  }

  /** Status, as the single view and each list filter show it: the list holding it must agree. */
  const expectStatus = async (id: string, status: SatelliteBody['status']) => {
    expect(await statusOf(id)).toBe(status)
    for (const filter of ['inactive', 'active', 'degraded', 'error', 'offline', 'disabled']) {
      expect(await listedWith(filter), `status=${filter}`).toEqual(filter === status ? expect.arrayContaining([id]) : expect.not.arrayContaining([id]))
    }
  }

  const storedRow = async (id: string): Promise<{ status: string; hasHeartbeat: boolean } | undefined> => {
    const rows = await rawRows(app.services.database, sql`select status, last_heartbeat_at from satellites where id = ${id}`)
    return rows[0] === undefined ? undefined : { status: String(rows[0][0]), hasHeartbeat: rows[0][1] !== null }
  }

  const setStatus = async (id: string, status: 'disabled' | 'active') => {
    const response = await call('PUT', `/api/satellites/${id}`, admin, { status })
    expect(response.statusCode, response.body).toBe(200)
    return response.json().data.satellite as SatelliteBody
  }

  const introspectJson = (token: string, headers: Record<string, string>) =>
    app.inject({ method: 'POST', url: '/api/oauth2/introspect', headers, payload: { token } })

  const keyHeader = (satellite: Paired) => ({ authorization: `Bearer ${satellite.apiKey}` })

  beforeAll(async () => {
    ctx = await createTestContext(dialect)
    app = (await ctx.build({ clock, limits: LIMITS })).app
    call = client(app)
    admin = await signUp(app, `hb_admin_${dialect}`)
    user = await signUp(app, `hb_user_${dialect}`)
  })
  afterAll(() => ctx.close())

  describe('POST /api/satellites/:id/heartbeat', () => {
    it('the first heartbeat: 200 with the status, the time and the interval; metrics, version and time are stored, inactive ends', async () => {
      const satellite = await fresh()
      expect(await statusOf(satellite.id)).toBe('inactive')
      clock.advance(5 * SECOND)
      const response = await heartbeat(app, satellite.id, satellite.apiKey, { status: 'active', system_metrics: METRICS, version: '1.4.2' })
      expect(response.statusCode, response.body).toBe(200)
      expect(response.headers['content-type']).toMatch(/^application\/json/)
      expect(response.json()).toEqual({
        success: true,
        data: { satellite: { id: satellite.id, satellite_type: 'global', status: 'active', last_heartbeat_at: nowIso() }, heartbeat_interval_seconds: 30 },
      })

      const shown = await satelliteOf(satellite.id)
      expect(shown).toMatchObject({ id: satellite.id, status: 'active', system_metrics: METRICS, version: '1.4.2', last_heartbeat_at: nowIso(), updated_at: nowIso() })
      expect(await storedRow(satellite.id)).toEqual({ status: 'active', hasHeartbeat: true })
    })

    it('a later heartbeat replaces the status and the metrics; a missing version keeps the last one; uptime is optional', async () => {
      const satellite = await fresh()
      expect((await heartbeat(app, satellite.id, satellite.apiKey, { status: 'active', system_metrics: METRICS, version: '2.0.0' })).statusCode).toBe(200)

      clock.advance(30 * SECOND)
      const metrics = { cpu_usage_percent: 97, memory_usage_mb: 2048 }
      const degraded = await heartbeat(app, satellite.id, satellite.apiKey, { status: 'degraded', system_metrics: metrics })
      expect(degraded.statusCode, degraded.body).toBe(200)
      expect(degraded.json().data.satellite).toEqual({ id: satellite.id, satellite_type: 'global', status: 'degraded', last_heartbeat_at: nowIso() })
      expect(await satelliteOf(satellite.id)).toMatchObject({ status: 'degraded', system_metrics: metrics, version: '2.0.0', last_heartbeat_at: nowIso() })
      expect(await storedRow(satellite.id)).toEqual({ status: 'degraded', hasHeartbeat: true })

      clock.advance(30 * SECOND)
      const edges = { cpu_usage_percent: 0, memory_usage_mb: 0, uptime_seconds: 0 }
      const failing = await heartbeat(app, satellite.id, satellite.apiKey, { status: 'error', system_metrics: edges, version: 'v'.repeat(64) })
      expect(failing.statusCode, failing.body).toBe(200)
      expect(await satelliteOf(satellite.id)).toMatchObject({ status: 'error', system_metrics: edges, version: 'v'.repeat(64), last_heartbeat_at: nowIso() })

      clock.advance(30 * SECOND)
      const full = { cpu_usage_percent: 100, memory_usage_mb: 1.5, uptime_seconds: 12.25 }
      expect((await heartbeat(app, satellite.id, satellite.apiKey, { status: 'active', system_metrics: full })).statusCode).toBe(200)
      expect(await satelliteOf(satellite.id)).toMatchObject({ status: 'active', system_metrics: full, version: 'v'.repeat(64) })
    })

    it('a heartbeat changes nothing but its own satellite', async () => {
      const [reporting, quiet] = [await fresh(), await fresh()]
      const before = await satelliteOf(quiet.id)
      clock.advance(SECOND)
      expect((await heartbeat(app, reporting.id, reporting.apiKey)).statusCode).toBe(200)
      expect(await satelliteOf(quiet.id)).toEqual(before)
    })
  })

  describe('offline is derived when read', () => {
    it('89 s and exactly 90 s after the last heartbeat: still the reported status; 91 s: offline; the next heartbeat brings it back', async () => {
      const satellite = await fresh()
      expect((await heartbeat(app, satellite.id, satellite.apiKey)).statusCode).toBe(200)
      const sentAt = nowIso()

      clock.advance(89 * SECOND)
      await expectStatus(satellite.id, 'active')
      clock.advance(SECOND)
      await expectStatus(satellite.id, 'active')
      clock.advance(SECOND)
      await expectStatus(satellite.id, 'offline')
      // Nothing was written: offline is computed, the stored status stays what was reported.
      expect(await storedRow(satellite.id)).toEqual({ status: 'active', hasHeartbeat: true })
      expect((await satelliteOf(satellite.id)).last_heartbeat_at).toBe(sentAt)

      const back = await heartbeat(app, satellite.id, satellite.apiKey)
      expect(back.statusCode, back.body).toBe(200)
      expect(back.json().data.satellite).toEqual({ id: satellite.id, satellite_type: 'global', status: 'active', last_heartbeat_at: nowIso() })
      await expectStatus(satellite.id, 'active')
    })

    it('degraded and error satellites go offline too, and come back as what they report', async () => {
      const [degraded, failing] = [await fresh(), await fresh()]
      expect((await heartbeat(app, degraded.id, degraded.apiKey, { status: 'degraded', system_metrics: METRICS })).statusCode).toBe(200)
      expect((await heartbeat(app, failing.id, failing.apiKey, { status: 'error', system_metrics: METRICS })).statusCode).toBe(200)
      await expectStatus(degraded.id, 'degraded')
      await expectStatus(failing.id, 'error')

      clock.advance(91 * SECOND)
      await expectStatus(degraded.id, 'offline')
      await expectStatus(failing.id, 'offline')

      expect((await heartbeat(app, degraded.id, degraded.apiKey, { status: 'degraded', system_metrics: METRICS })).statusCode).toBe(200)
      expect((await heartbeat(app, failing.id, failing.apiKey, { status: 'active', system_metrics: METRICS })).statusCode).toBe(200)
      await expectStatus(degraded.id, 'degraded')
      await expectStatus(failing.id, 'active')
    })

    it('a satellite that never sent a heartbeat stays inactive, however long it is silent', async () => {
      const satellite = await fresh()
      await expectStatus(satellite.id, 'inactive')
      clock.advance(3600 * SECOND)
      await expectStatus(satellite.id, 'inactive')
      expect(await satelliteOf(satellite.id)).toMatchObject({ last_heartbeat_at: null, system_metrics: null, version: null })
    })
  })

  describe('which key acts where', () => {
    it("a key on another satellite's heartbeat: 403 FORBIDDEN, also with a malformed body, and nothing is recorded", async () => {
      const [own, other] = [await fresh(), await fresh()]
      const bodies: Array<{ payload: string | object; contentType: string }> = [
        { payload: { status: 'active', system_metrics: METRICS }, contentType: 'application/json' },
        { payload: { status: 'bogus', extra: true }, contentType: 'application/json' },
        { payload: '{not json', contentType: 'application/json' },
        { payload: 'status=active', contentType: 'application/x-www-form-urlencoded' },
      ]
      for (const { payload, contentType } of bodies) {
        const response = await app.inject({
          method: 'POST', url: `/api/satellites/${other.id}/heartbeat`,
          headers: { authorization: `Bearer ${own.apiKey}`, 'content-type': contentType },
          payload: typeof payload === 'string' ? payload : JSON.stringify(payload),
        })
        expect(response.statusCode, `${JSON.stringify(payload)}: ${response.body}`).toBe(403)
        expect(response.json()).toMatchObject({ success: false, code: 'FORBIDDEN' })
      }
      // An id that names no satellite is not the key's own either.
      const unknown = await heartbeat(app, 'no-such-satellite', own.apiKey)
      expect(unknown.statusCode).toBe(403)
      expect(unknown.json().code).toBe('FORBIDDEN')

      expect(await satelliteOf(other.id)).toMatchObject({ status: 'inactive', last_heartbeat_at: null, system_metrics: null })
      expect(await storedRow(other.id)).toEqual({ status: 'inactive', hasHeartbeat: false })
    })

    it('a satellite key on user routes: 401', async () => {
      const satellite = await fresh()
      for (const url of ['/api/users/me', '/api/teams/me', '/api/satellites', `/api/satellites/${satellite.id}`, '/api/admin/audit-log']) {
        const response = await app.inject({ method: 'GET', url, headers: keyHeader(satellite) })
        expect(response.statusCode, `${url}: ${response.body}`).toBe(401)
        expect(response.json()).toMatchObject({ success: false, code: 'UNAUTHORIZED' })
      }
      const disabling = await app.inject({ method: 'PUT', url: `/api/satellites/${satellite.id}`, headers: keyHeader(satellite), payload: { status: 'disabled' } })
      expect(disabling.statusCode).toBe(401)
      expect(await statusOf(satellite.id)).toBe('inactive')
    })

    it('an unknown key: 401 with WWW-Authenticate invalid_token; no credential or a session: 401', async () => {
      const satellite = await fresh()
      const unknown = await heartbeat(app, satellite.id, unknownKey())
      expectUnauthorized(unknown)
      expect(unknown.headers['www-authenticate']).toBe('Bearer error="invalid_token"')

      const unknownIntrospect = await introspect(app, 'some-token', { authorization: `Bearer ${unknownKey()}` })
      expect(unknownIntrospect.statusCode).toBe(401)
      expect(unknownIntrospect.headers['www-authenticate']).toBe('Bearer error="invalid_token"')

      const anonymous = await app.inject({ method: 'POST', url: `/api/satellites/${satellite.id}/heartbeat`, payload: { status: 'active', system_metrics: METRICS } })
      expectUnauthorized(anonymous)
      // Heartbeats are for the satellite's key alone, not even for a global admin's session.
      const asAdmin = await call('POST', `/api/satellites/${satellite.id}/heartbeat`, admin, { status: 'active', system_metrics: METRICS })
      expectUnauthorized(asAdmin)
      expect(await storedRow(satellite.id)).toEqual({ status: 'inactive', hasHeartbeat: false })
    })

    const invalidBodies: Array<[string, unknown]> = [
      ['cpu above 100', { status: 'active', system_metrics: { ...METRICS, cpu_usage_percent: 101 } }],
      ['negative cpu', { status: 'active', system_metrics: { ...METRICS, cpu_usage_percent: -1 } }],
      ['negative memory', { status: 'active', system_metrics: { ...METRICS, memory_usage_mb: -1 } }],
      ['negative uptime', { status: 'active', system_metrics: { ...METRICS, uptime_seconds: -5 } }],
      ['cpu as a string', { status: 'active', system_metrics: { ...METRICS, cpu_usage_percent: '12' } }],
      ['status offline', { status: 'offline', system_metrics: METRICS }],
      ['status disabled', { status: 'disabled', system_metrics: METRICS }],
      ['status inactive', { status: 'inactive', system_metrics: METRICS }],
      ['no status', { system_metrics: METRICS }],
      ['no system_metrics', { status: 'active' }],
      ['system_metrics null', { status: 'active', system_metrics: null }],
      ['no memory', { status: 'active', system_metrics: { cpu_usage_percent: 1 } }],
      ['an extra field', { status: 'active', system_metrics: METRICS, name: 'renamed' }],
      ['an extra metric', { status: 'active', system_metrics: { ...METRICS, disk_usage_percent: 5 } }],
      ['an empty version', { status: 'active', system_metrics: METRICS, version: '' }],
      ['a version of 65 characters', { status: 'active', system_metrics: METRICS, version: 'v'.repeat(65) }],
      ['an array', [{ status: 'active', system_metrics: METRICS }]],
    ]

    it.each(invalidBodies)('a body with %s: 400 VALIDATION_ERROR, nothing recorded', async (_label, payload) => {
      const satellite = await fresh()
      const response = await app.inject({
        method: 'POST', url: `/api/satellites/${satellite.id}/heartbeat`,
        headers: { ...keyHeader(satellite), 'content-type': 'application/json' }, payload: JSON.stringify(payload),
      })
      expectValidationError(response)
      expect(await satelliteOf(satellite.id)).toMatchObject({ status: 'inactive', last_heartbeat_at: null, system_metrics: null, version: null })
    })
  })

  describe('disabled and deleted satellites', () => {
    it('disabled: 403 SATELLITE_DISABLED on heartbeats (any body) and introspection (form and JSON); enabled again: works, offline when its last heartbeat is over 90 s old', async () => {
      const { satellite, tokens } = await servingWithToken('https://hb-disabled.example.com')
      expect((await heartbeat(app, satellite.id, satellite.apiKey, { status: 'degraded', system_metrics: METRICS, version: '3.1.0' })).statusCode).toBe(200)
      const lastBeat = nowIso()
      clock.advance(10 * SECOND)

      expect((await setStatus(satellite.id, 'disabled')).status).toBe('disabled')
      clock.advance(SECOND)
      expectDisabled(await heartbeat(app, satellite.id, satellite.apiKey))
      expectDisabled(await heartbeat(app, satellite.id, satellite.apiKey, { status: 'nonsense' }))
      expectDisabled(await introspect(app, 'any-token', keyHeader(satellite)))
      expectDisabled(await introspectJson('any-token', keyHeader(satellite)))
      const oauthStyle = await introspect(app, 'any-token', keyHeader(satellite))
      expect(oauthStyle.json()).toMatchObject({ error: expect.any(String), error_description: expect.any(String) })
      // The refused heartbeats wrote nothing.
      expect(await satelliteOf(satellite.id)).toMatchObject({ status: 'disabled', last_heartbeat_at: lastBeat, version: '3.1.0' })
      expect(await storedRow(satellite.id)).toEqual({ status: 'degraded', hasHeartbeat: true })
      await expectStatus(satellite.id, 'disabled')
      // However long it stays disabled, it is not shown offline.
      clock.advance(600 * SECOND)
      await expectStatus(satellite.id, 'disabled')

      expect((await setStatus(satellite.id, 'active')).status).toBe('offline')
      await expectStatus(satellite.id, 'offline')
      const answer = await introspect(app, tokens.access_token, keyHeader(satellite))
      expect(answer.statusCode, answer.body).toBe(200)
      expect(answer.json().active).toBe(true)

      const back = await heartbeat(app, satellite.id, satellite.apiKey)
      expect(back.statusCode, back.body).toBe(200)
      await expectStatus(satellite.id, 'active')
    })

    it('enabled again soon after being disabled: its last reported status until that heartbeat is 90 s old, then offline', async () => {
      const satellite = await fresh()
      expect((await heartbeat(app, satellite.id, satellite.apiKey, { status: 'degraded', system_metrics: METRICS })).statusCode).toBe(200)
      clock.advance(5 * SECOND)
      await setStatus(satellite.id, 'disabled')
      clock.advance(5 * SECOND)
      expect((await setStatus(satellite.id, 'active')).status).toBe('degraded')
      await expectStatus(satellite.id, 'degraded')
      clock.advance(81 * SECOND) // 91 s after the heartbeat
      await expectStatus(satellite.id, 'offline')
      expect((await heartbeat(app, satellite.id, satellite.apiKey)).statusCode).toBe(200)
      await expectStatus(satellite.id, 'active')
    })

    it('a satellite that never sent a heartbeat: inactive again once enabled', async () => {
      const satellite = await fresh()
      await setStatus(satellite.id, 'disabled')
      expectDisabled(await heartbeat(app, satellite.id, satellite.apiKey))
      expect((await setStatus(satellite.id, 'active')).status).toBe('inactive')
      await expectStatus(satellite.id, 'inactive')
      expect(await storedRow(satellite.id)).toEqual({ status: 'inactive', hasHeartbeat: false })
      expect((await heartbeat(app, satellite.id, satellite.apiKey)).statusCode).toBe(200)
      await expectStatus(satellite.id, 'active')
    })

    it("deleted: its key gets 401 on heartbeats and introspection; other satellites' keys keep working", async () => {
      const [doomed, survivor] = [await fresh(), await fresh()]
      expect((await heartbeat(app, doomed.id, doomed.apiKey)).statusCode).toBe(200)
      const removed = await call('DELETE', `/api/satellites/${doomed.id}`, admin)
      expect(removed.statusCode, removed.body).toBe(200)
      expect(await storedRow(doomed.id)).toBeUndefined()

      const beat = await heartbeat(app, doomed.id, doomed.apiKey)
      expectUnauthorized(beat)
      expect(beat.headers['www-authenticate']).toBe('Bearer error="invalid_token"')
      const form = await introspect(app, 'any-token', keyHeader(doomed))
      expect(form.statusCode, form.body).toBe(401)
      expect(form.json()).toMatchObject({ success: false, error: 'invalid_token' })
      expect((await introspectJson('any-token', keyHeader(doomed))).statusCode).toBe(401)

      expect((await heartbeat(app, survivor.id, survivor.apiKey)).statusCode).toBe(200)
      expect((await introspect(app, 'any-token', keyHeader(survivor))).statusCode).toBe(200)
    })
  })

  describe('introspection with a satellite key', () => {
    it("a user's access token for its resource: active with its subject and client; unknown, revoked or junk tokens: {active: false}", async () => {
      const { satellite, tokens } = await servingWithToken('https://hb-introspect.example.com')
      const form = await introspect(app, tokens.access_token, keyHeader(satellite))
      expect(form.statusCode, form.body).toBe(200)
      expect(form.json()).toMatchObject({ success: true, active: true, sub: user.id, username: user.username, client_id: CLI_CLIENT_ID, scope: 'mcp:read' })
      const json = await introspectJson(tokens.access_token, keyHeader(satellite))
      expect(json.statusCode, json.body).toBe(200)
      expect(json.json()).toMatchObject({ success: true, active: true, sub: user.id })

      expect((await introspect(app, `unknown-${randomBytes(16).toString('hex')}`, keyHeader(satellite))).json()).toEqual({ success: true, active: false })
      // A satellite key is not a token the introspection knows.
      expect((await introspect(app, satellite.apiKey, keyHeader(satellite))).json()).toEqual({ success: true, active: false })
      const revoked = await app.inject({
        method: 'POST', url: '/api/oauth2/revoke', headers: { 'content-type': 'application/x-www-form-urlencoded' },
        payload: new URLSearchParams({ token: tokens.access_token, client_id: CLI_CLIENT_ID }).toString(),
      })
      expect(revoked.statusCode).toBe(200)
      expect((await introspect(app, tokens.access_token, keyHeader(satellite))).json()).toEqual({ success: true, active: false })
    })

    it('introspection does not count as a heartbeat', async () => {
      const satellite = await fresh()
      expect((await introspect(app, 'any-token', keyHeader(satellite))).statusCode).toBe(200)
      expect(await satelliteOf(satellite.id)).toMatchObject({ status: 'inactive', last_heartbeat_at: null })
    })
  })
})
