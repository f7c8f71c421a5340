import { sql } from 'drizzle-orm'
import type { FastifyInstance, LightMyRequestResponse } from 'fastify'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createTestContext, type TestContext } from '../helpers/app.js'
import { manualClock } from '../helpers/clock.js'
import { DIALECTS } from '../helpers/database.js'
import {
  createToken, expectRefused, expectValidationError, heartbeat, jwtOf, pair, registerWith, SATELLITE_LIMITS, SYSTEM_INFO, type SatelliteBody,
} from '../helpers/satellites.js'
import { rawRows } from '../helpers/sql.js'
import { client, createTeam, ROOMY_LIMITS, signUp, type Account, type Call } from '../helpers/teams.js'

interface AuditEvent { id: string; type: string; actor_id: string | null; target: string | null; details: Record<string, unknown> }

const API_KEY = /^service_satkey_[A-Za-z0-9_-]{43}$/
const TOKENS = '/api/satellites/registration-tokens'

function expectConflict(response: LightMyRequestResponse, code: string): void {
  expect(response.statusCode, response.body).toBe(409)
  expect(response.json()).toMatchObject({ success: false, code })
}

describe.each(DIALECTS)('POST /api/satellites/register: bodies, names and limits, on %s', (dialect) => {
  let ctx: TestContext
  let app: FastifyInstance
  let call: Call
  const clock = manualClock(Date.now())
  /** The first account: global_admin. */
  let admin: Account
  /** Owner (team_admin) of team A. */
  let adminA: Account
  /** Owner (team_admin) of team B. */
  let adminB: Account
  let teamA: string
  let teamB: string
  let seq = 0

  const name = (prefix = 'sat') => `${prefix}-${dialect.slice(0, 2)}-${++seq}`
  const register = (token: string, payload: object = { name: name(), system_info: SYSTEM_INFO }) => registerWith(app, `Bearer ${token}`, payload)
  const globalToken = () => createToken(call, admin)
  const teamToken = (teamId: string = teamA) => createToken(call, admin, { teamId })
  const auditEvents = async (type: string): Promise<AuditEvent[]> => {
    const response = await call('GET', `/api/admin/audit-log?type=${type}&limit=100`, admin)
    expect(response.statusCode, response.body).toBe(200)
    return response.json().data.events
  }
  const tokenStatus = async (id: string) => {
    const response = await call('GET', `${TOKENS}?limit=100`, admin)
    expect(response.statusCode, response.body).toBe(200)
    return (response.json().data.tokens as Array<{ id: string; status: string; used_by_satellite_id: string | null }>).find((token) => token.id === id)
  }
  const satelliteCount = async (): Promise<number> =>
    Number((await rawRows(app.services.database, sql`select count(*) from satellites`))[0]![0])
  const satellite = async (id: string): Promise<SatelliteBody> => {
    const response = await call('GET', `/api/satellites/${id}`, admin)
    expect(response.statusCode, response.body).toBe(200)
    return response.json().data.satellite
  }

  beforeAll(async () => {
    // SQLite in a file: the rate-limit test builds a second app that must share the database.
    ctx = await createTestContext(dialect, { file: true })
    app = (await ctx.build({ clock, limits: SATELLITE_LIMITS })).app
    call = client(app)
    admin = await signUp(app, 'reg_admin')
    adminA = await signUp(app, 'reg_admin_a')
    adminB = await signUp(app, 'reg_admin_b')
    teamA = (await createTeam(call, adminA, 'Register Team A')).id
    teamB = (await createTeam(call, adminB, 'Register Team B')).id
  })
  afterAll(() => ctx.close())

  describe('the body', () => {
    const long = (n: number) => 'a'.repeat(n)
    it.each([
      ['no name', { system_info: SYSTEM_INFO }],
      ['a name of 2 characters', { name: 'ab' }],
      ['a name of 65 characters', { name: long(65) }],
      ['an uppercase name', { name: 'Satellite-1' }],
      ['a name starting with -', { name: '-satellite' }],
      ['a name starting with _', { name: '_satellite' }],
      ['a name with a dot', { name: 'sat.one' }],
      ['a name with a space', { name: 'sat one' }],
      ['a name with a non-ASCII letter', { name: 'satéllite' }],
      ['a numeric name', { name: 12345 }],
      ['capabilities not an array', { name: 'valid-name', capabilities: 'mcp' }],
      ['51 capabilities', { name: 'valid-name', capabilities: Array.from({ length: 51 }, (_, i) => `cap-${i}`) }],
      ['duplicate capabilities', { name: 'valid-name', capabilities: ['mcp', 'mcp'] }],
      ['an empty capability', { name: 'valid-name', capabilities: [''] }],
      ['a capability of 65 characters', { name: 'valid-name', capabilities: [long(65)] }],
      ['a numeric capability', { name: 'valid-name', capabilities: [1] }],
      ['an ftp satellite_url', { name: 'valid-name', satellite_url: 'ftp://satellite.example' }],
      ['a javascript: satellite_url', { name: 'valid-name', satellite_url: 'javascript:alert(1)' }],
      ['a relative satellite_url', { name: 'valid-name', satellite_url: '/satellite' }],
      ['a satellite_url that is not a URL', { name: 'valid-name', satellite_url: 'not a url' }],
      ['system_info without os', { name: 'valid-name', system_info: { arch: 'x64', node_version: 'v20', memory_mb: 1 } }],
      ['system_info with an extra property', { name: 'valid-name', system_info: { ...SYSTEM_INFO, kernel: '6.1' } }],
      ['a negative memory_mb', { name: 'valid-name', system_info: { ...SYSTEM_INFO, memory_mb: -1 } }],
      ['a fractional memory_mb', { name: 'valid-name', system_info: { ...SYSTEM_INFO, memory_mb: 1.5 } }],
      ['memory_mb as a string', { name: 'valid-name', system_info: { ...SYSTEM_INFO, memory_mb: '4096' } }],
      ['an empty os', { name: 'valid-name', system_info: { ...SYSTEM_INFO, os: '' } }],
      ['system_info as a string', { name: 'valid-name', system_info: 'linux' }],
      ['satellite_type in the body', { name: 'valid-name', satellite_type: 'team' }],
      ['team_id in the body', { name: 'valid-name', team_id: 'some-team' }],
      ['an unknown property', { name: 'valid-name', status: 'active' }],
      ['an array body', [{ name: 'valid-name' }]],
    ])('%s → 400 VALIDATION_ERROR; the token is not spent and then registers', async (_label, payload) => {
      const created = await globalToken()
      const before = await satelliteCount()
      expectValidationError(await registerWith(app, `Bearer ${created.token}`, payload))
      expect(await satelliteCount()).toBe(before)
      expect((await tokenStatus(created.id))?.status).toBe('active')
      expect((await register(created.token)).statusCode).toBe(201)
    })

    it('accepts the bounds: names of 3 and 64 characters, 50 capabilities of 64 characters, http and https URLs, no optional field', async () => {
      const cases = [
        { name: `a${seq++}${dialect.slice(0, 1)}`.slice(0, 3) },
        { name: `${dialect.slice(0, 2)}${seq++}`.padEnd(64, '9'), capabilities: Array.from({ length: 50 }, (_, i) => `${i}`.padStart(64, 'c')) },
        { name: name('0digit'), satellite_url: 'http://127.0.0.1:3001' },
        { name: name('loopback6'), satellite_url: 'http://[::1]:3001/', public_key: 'q2tfxy5jKzH1hJ0VJfBkDxeu0nvdFw4KyjRzlwZGGwE' },
        { name: name('under_score'), satellite_url: 'https://satellite.example/base/path', capabilities: [] },
      ]
      for (const payload of cases) {
        const response = await registerWith(app, `Bearer ${(await globalToken()).token}`, payload)
        expect(response.statusCode, `${JSON.stringify(payload).slice(0, 80)}: ${response.body}`).toBe(201)
      }
    })
  })

  it('refuses plain http away from loopback, credentials in the URL and a public key that is not 32 bytes of base64url', async () => {
    const cases = [
      { satellite_url: 'http://10.0.0.5:3001' },
      { satellite_url: 'http://satellite.example' },
      { satellite_url: 'https://user:pass@satellite.example' },
      { satellite_url: 'https://satellite.example/mcp?x=1' },
      { public_key: 'q2tfxy5jKzH1hJ0VJfBkDxeu0nvdFw4KyjRzlwZGGw' },
      { public_key: 'q2tfxy5jKzH1hJ0VJfBkDxeu0nvdFw4KyjRzlwZGGwE=' },
    ]
    for (const extra of cases) {
      const created = await globalToken()
      const response = await registerWith(app, `Bearer ${created.token}`, { name: name('refused'), ...extra })
      expect(response.statusCode, `${JSON.stringify(extra)}: ${response.body}`).toBe(400)
      expect(response.json().code).toBe('VALIDATION_ERROR')
      expect((await tokenStatus(created.id))?.status).toBe('active')
    }
  })

  describe('success', () => {
    it('answers 201 with the satellite and a service_satkey_ API key, storing only its digest, and spends the token', async () => {
      const created = await globalToken()
      const payload = { name: name('ok'), capabilities: ['mcp', 'stdio'], satellite_url: 'https://sat.example:8443', system_info: SYSTEM_INFO }
      const response = await register(created.token, payload)
      expect(response.statusCode, response.body).toBe(201)
      const body = response.json()
      expect(body.success).toBe(true)
      expect(typeof body.message).toBe('string')
      expect(Object.keys(body.data).sort()).toEqual(['api_key', 'satellite'])
      expect(Object.keys(body.data.satellite).sort()).toEqual(['id', 'name', 'satellite_type', 'status', 'team_id'])
      expect(body.data.satellite).toMatchObject({ name: payload.name, satellite_type: 'global', team_id: null, status: 'inactive' })
      const apiKey: string = body.data.api_key
      expect(apiKey).toMatch(API_KEY)
      const id: string = body.data.satellite.id

      // Stored: the details, and a digest of the key, never the key or its secret.
      const secret = apiKey.slice('service_satkey_'.length)
      const [row] = await rawRows(app.services.database, sql`select * from satellites where id = ${id}`)
      expect(row).toBeDefined()
      for (const cell of row!) {
        expect(String(cell)).not.toContain(secret)
        expect(String(cell)).not.toContain(apiKey)
      }
      const [[digest]] = await rawRows(app.services.database, sql`select key_digest from satellites where id = ${id}`) as [[string]]
      expect(typeof digest).toBe('string')
      expect(digest.length).toBeGreaterThan(0)
      expect(digest).not.toBe(secret)
      expect(await satellite(id)).toMatchObject({
        id, name: payload.name, satellite_type: 'global', team_id: null, status: 'inactive',
        capabilities: ['mcp', 'stdio'], satellite_url: 'https://sat.example:8443', system_info: SYSTEM_INFO,
        system_metrics: null, version: null, last_heartbeat_at: null, registered_at: new Date(clock.now()).toISOString(),
      })

      const token = await tokenStatus(created.id)
      expect(token).toMatchObject({ status: 'used', used_by_satellite_id: id })
      expect((await heartbeat(app, id, apiKey)).statusCode).toBe(200)

      const event = (await auditEvents('satellite.registered')).find((candidate) => candidate.target === id)
      expect(event).toMatchObject({ type: 'satellite.registered', target: id })
      expect(event!.details).toMatchObject({ name: payload.name, satellite_type: 'global', team_id: null, token_id: created.id, re_registered: false })
      expect(JSON.stringify(event)).not.toContain(secret)
      expect(JSON.stringify(event)).not.toContain(jwtOf(created.token))
    })

    it("takes satellite_type and team_id from a team token; the team's admin sees it", async () => {
      const created = await createToken(call, adminA, { teamId: teamA })
      const response = await register(created.token, { name: name('team') })
      expect(response.statusCode, response.body).toBe(201)
      const { satellite: made, api_key: apiKey } = response.json().data
      expect(made).toMatchObject({ satellite_type: 'team', team_id: teamA, status: 'inactive' })
      expect(apiKey).toMatch(API_KEY)
      expect((await call('GET', `/api/satellites/${made.id}`, adminA)).statusCode).toBe(200)
      expect((await call('GET', `/api/satellites/${made.id}`, adminB)).statusCode).toBe(404)
      expect(await satellite(made.id)).toMatchObject({ capabilities: [], satellite_url: null, system_info: null })
      const event = (await auditEvents('satellite.registered')).find((candidate) => candidate.target === made.id)
      expect(event!.details).toMatchObject({ satellite_type: 'team', team_id: teamA, token_id: created.id, re_registered: false })
    })

    it('gives each satellite its own key', async () => {
      const keys = new Set<string>()
      for (let i = 0; i < 3; i++) keys.add((await pair(app, (await globalToken()).token, name('key'))).apiKey)
      expect(keys.size).toBe(3)
    })
  })

  describe('re-registration and names', () => {
    it('the same name in the same scope re-registers the same satellite with a new key; the old key stops working', async () => {
      const satName = name('again')
      const first = await pair(app, (await globalToken()).token, satName, { capabilities: ['old'] })
      expect((await heartbeat(app, first.id, first.apiKey)).statusCode).toBe(200)
      const count = await satelliteCount()

      const created = await globalToken()
      const response = await register(created.token, { name: satName, capabilities: ['new'], system_info: SYSTEM_INFO })
      expect(response.statusCode, response.body).toBe(201)
      const { satellite: again, api_key: newKey } = response.json().data
      expect(again).toMatchObject({ id: first.id, name: satName, satellite_type: 'global', team_id: null, status: 'inactive' })
      expect(newKey).toMatch(API_KEY)
      expect(newKey).not.toBe(first.apiKey)
      expect(await satelliteCount()).toBe(count)

      const old = await heartbeat(app, first.id, first.apiKey)
      expect(old.statusCode, old.body).toBe(401)
      expect((await heartbeat(app, first.id, newKey)).statusCode).toBe(200)
      expect((await satellite(first.id)).capabilities).toEqual(['new'])
      expect(await tokenStatus(created.id)).toMatchObject({ status: 'used', used_by_satellite_id: first.id })

      const events = (await auditEvents('satellite.registered')).filter((event) => event.target === first.id)
      expect(events.map((event) => event.details.re_registered)).toEqual([true, false])
      expect(events[0]!.details).toMatchObject({ name: satName, token_id: created.id })
    })

    it('the same name in the same team re-registers, with a token of that team', async () => {
      const satName = name('team-again')
      const first = await pair(app, (await teamToken(teamA)).token, satName)
      const second = await pair(app, (await createToken(call, adminA, { teamId: teamA })).token, satName)
      expect(second.id).toBe(first.id)
      expect((await heartbeat(app, first.id, first.apiKey)).statusCode).toBe(401)
      expect((await heartbeat(app, first.id, second.apiKey)).statusCode).toBe(200)
    })

    it.each([
      ['a global name with a team token', 'global', 'teamA'],
      ["team A's name with a global token", 'teamA', 'global'],
      ["team A's name with team B's token", 'teamA', 'teamB'],
    ] as const)('%s → 409 SATELLITE_NAME_TAKEN; nothing is created and the token is not spent', async (_label, holder, taker) => {
      const tokenFor = (who: 'global' | 'teamA' | 'teamB') => (who === 'global' ? globalToken() : teamToken(who === 'teamA' ? teamA : teamB))
      const satName = name('taken')
      const held = await pair(app, (await tokenFor(holder)).token, satName)
      const count = await satelliteCount()

      const created = await tokenFor(taker)
      expectConflict(await register(created.token, { name: satName }), 'SATELLITE_NAME_TAKEN')
      expect(await satelliteCount()).toBe(count)
      expect((await tokenStatus(created.id))?.status).toBe('active')
      // The holder is untouched: its key still works.
      expect((await heartbeat(app, held.id, held.apiKey)).statusCode).toBe(200)

      const other = await register(created.token, { name: name('free') })
      expect(other.statusCode, other.body).toBe(201)
      expect(other.json().data.satellite.id).not.toBe(held.id)
      expect(await satelliteCount()).toBe(count + 1)
    })

    it('a disabled satellite cannot re-register (409 SATELLITE_DISABLED, token unspent) until enabled again', async () => {
      const satName = name('disabled')
      const first = await pair(app, (await globalToken()).token, satName)
      const disabled = await call('PUT', `/api/satellites/${first.id}`, admin, { status: 'disabled' })
      expect(disabled.statusCode, disabled.body).toBe(200)

      const created = await globalToken()
      expectConflict(await register(created.token, { name: satName }), 'SATELLITE_DISABLED')
      expect((await tokenStatus(created.id))?.status).toBe('active')
      expect((await satellite(first.id)).status).toBe('disabled')
      expect((await heartbeat(app, first.id, first.apiKey)).statusCode).toBe(403)

      expect((await call('PUT', `/api/satellites/${first.id}`, admin, { status: 'active' })).statusCode).toBe(200)
      const again = await pair(app, created.token, satName)
      expect(again.id).toBe(first.id)
      expect((await heartbeat(app, first.id, again.apiKey)).statusCode).toBe(200)
    })
  })

  describe('login switched off', () => {
    it('answers 403 LOGIN_DISABLED without spending the token; it registers once login is back', async () => {
      const created = await globalToken()
      const off = await call('PUT', '/api/settings/global.enable_login', admin, { value: false })
      expect(off.statusCode, off.body).toBe(200)
      try {
        const response = await register(created.token)
        expect(response.statusCode, response.body).toBe(403)
        expect(response.json()).toMatchObject({ success: false, code: 'LOGIN_DISABLED' })
        expect((await tokenStatus(created.id))?.status).toBe('active')
      } finally {
        const on = await call('PUT', '/api/settings/global.enable_login', admin, { value: true })
        expect(on.statusCode, on.body).toBe(200)
      }
      expect((await register(created.token)).statusCode).toBe(201)
    })
  })

  describe('rate limit', () => {
    it('counts every attempt per IP before authentication: the 4th of 3 is 429 RATE_LIMITED, another IP is unaffected', async () => {
      const limited = (await ctx.build({ clock, limits: { ...ROOMY_LIMITS, satelliteRegistration: { max: 3, windowMs: 60_000 } } })).app
      const created = await globalToken()
      const payload = { name: name('limited'), system_info: SYSTEM_INFO }
      for (const garbage of ['garbage', 'a.b.c', 'x']) {
        expectRefused(await registerWith(limited, `Bearer service_satellite_global_${garbage}`, payload, '203.0.113.7'), 'malformed')
      }
      const fourth = await registerWith(limited, `Bearer ${created.token}`, payload, '203.0.113.7')
      expect(fourth.statusCode, fourth.body).toBe(429)
      expect(fourth.json()).toMatchObject({ success: false, code: 'RATE_LIMITED' })
      expect(Number(fourth.headers['retry-after'])).toBeGreaterThan(0)
      expect((await tokenStatus(created.id))?.status).toBe('active')
      // Without credentials too: the limit comes first.
      expect((await registerWith(limited, undefined, payload, '203.0.113.7')).statusCode).toBe(429)

      const elsewhere = await registerWith(limited, `Bearer ${created.token}`, payload, '203.0.113.8')
      expect(elsewhere.statusCode, elsewhere.body).toBe(201)
    })
  })
})
