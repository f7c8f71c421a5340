import { randomUUID } from 'node:crypto'
import type { FastifyInstance, LightMyRequestResponse } from 'fastify'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createTestContext, type TestContext } from '../helpers/app.js'
import { manualClock, type ManualClock } from '../helpers/clock.js'
import { DIALECTS } from '../helpers/database.js'
import { importDocuments, install, installationOf, weatherDocument } from '../helpers/installations.js'
import { bearer, issueTokens } from '../helpers/oauth.js'
import { parseExposition, valueOf } from '../helpers/prometheus.js'
import { createToken, heartbeat, pair, SATELLITE_LIMITS, type Paired } from '../helpers/satellites.js'
import { client, crew as makeCrew, signUp, type Account, type Call, type Crew } from '../helpers/teams.js'

interface CallBody { at: string; user_id: string | null; client_id: string | null; tool: string; outcome: 'ok' | 'error' | 'refused'; duration_ms: number }
interface UsageRow { key: string | null; calls: number; ok: number; error: number; refused: number; avg_duration_ms: number }

const HOUR = 3600_000
const DAY = 24 * HOUR

/** Tool calls reported by satellites, and the usage teams read, through the HTTP API. */
describe.each(DIALECTS)('tool calls and usage on %s', (dialect) => {
  let ctx: TestContext
  let app: FastifyInstance
  let call: Call
  let clock: ManualClock
  let admin: Account
  let a: Crew
  let satellite: Paired
  let other: Paired
  let installationId: string
  let secondId: string
  let seq = 0
  const fresh = () => signUp(app, `tc_${++seq}`)

  const as = (sat: Paired, method: 'GET' | 'POST', url: string, payload?: unknown): Promise<LightMyRequestResponse> =>
    app.inject({ method, url, headers: { authorization: `Bearer ${sat.apiKey}` }, ...(payload === undefined ? {} : { payload: payload as object }) })
  const callsUrl = (sat: Paired, instanceId: string) => `/api/satellites/${sat.id}/instances/${instanceId}/calls`
  const post = (instanceId: string, calls: CallBody[], batchId: string = randomUUID(), sat: Paired = satellite) =>
    as(sat, 'POST', callsUrl(sat, instanceId), { batch_id: batchId, calls })
  const at = (offsetMs = 0) => new Date(clock.now() + offsetMs).toISOString()
  const one = (tool: string, user: string | null, outcome: CallBody['outcome'] = 'ok', duration = 10, offsetMs = 0): CallBody =>
    ({ at: at(offsetMs), user_id: user, client_id: 'cli', tool, outcome, duration_ms: duration })
  const usage = async (account: Account, query: string, teamId = a.team.id): Promise<{ from: string; to: string; group_by: string; rows: UsageRow[] }> => {
    const response = await call('GET', `/api/teams/${teamId}/mcp/usage${query}`, account)
    expect(response.statusCode, response.body).toBe(200)
    return response.json().data
  }
  const counter = async (outcome: string): Promise<number> => {
    const response = await call('GET', '/api/metrics', admin)
    expect(response.statusCode).toBe(200)
    return valueOf(parseExposition(response.body), 'mcp_tool_calls_total', { outcome }) ?? 0
  }

  beforeAll(async () => {
    ctx = await createTestContext(dialect)
    // An hour's start, so that calls made "now" and a few minutes later share their hour.
    clock = manualClock(Math.floor(Date.now() / HOUR) * HOUR + 60_000)
    app = (await ctx.build({ limits: SATELLITE_LIMITS, clock })).app
    call = client(app)
    admin = await signUp(app, 'tc_admin')
    a = await makeCrew(call, fresh, 'Calls Team')
    const token = await createToken(call, a.teamAdmin, { teamId: a.team.id })
    satellite = await pair(app, token.token, `tc-sat-${dialect}`)
    other = await pair(app, (await createToken(call, admin)).token, `tc-other-${dialect}`)
    expect((await heartbeat(app, satellite.id, satellite.apiKey)).statusCode).toBe(200)
    const serverId = (await importDocuments(call, admin, [weatherDocument('io.github.example/calls-weather')]))[0]!
    installationId = (await install(call, a.team.id, a.teamAdmin, { server_id: serverId, target: { kind: 'package', index: 1 } })).id
    secondId = (await install(call, a.team.id, a.teamAdmin, { server_id: serverId, target: { kind: 'package', index: 1 }, name: 'second-weather' })).id
  })
  afterAll(() => ctx.close())

  it('a batch is accepted and counted; the same batch again is counted once; the counter moves for new batches only', async () => {
    const before = { ok: await counter('ok'), error: await counter('error'), refused: await counter('refused') }
    const batchId = randomUUID()
    const calls = [one('forecast', a.teamUser.id), one('forecast', a.teamUser.id, 'error', 30), one('alerts', a.teamAdmin.id, 'refused', 0)]
    const first = await post(installationId, calls, batchId)
    expect(first.statusCode, first.body).toBe(200)
    expect(first.json().data).toEqual({ accepted: 3, duplicate: false })
    const again = await post(installationId, calls, batchId)
    expect(again.json().data).toEqual({ accepted: 0, duplicate: true })
    expect(await counter('ok')).toBe(before.ok + 1)
    expect(await counter('error')).toBe(before.error + 1)
    expect(await counter('refused')).toBe(before.refused + 1)
    const rows = (await usage(a.teamAdmin, '?group_by=tool')).rows
    expect(rows).toEqual([
      { key: 'forecast', calls: 2, ok: 1, error: 1, refused: 0, avg_duration_ms: 20 },
      { key: 'alerts', calls: 1, ok: 0, error: 0, refused: 1, avg_duration_ms: 0 },
    ])
    // The same batch id from another satellite is its own batch (here refused: not its instance).
    expect((await post(installationId, calls, batchId, other)).statusCode).toBe(404)
  })

  it('two identical posts at once are counted once', async () => {
    const batchId = randomUUID()
    const calls = Array.from({ length: 50 }, (_, i) => one('race', a.teamUser.id, 'ok', i))
    const answers = await Promise.all([post(installationId, calls, batchId), post(installationId, calls, batchId), post(installationId, calls, batchId)])
    expect(answers.map((answer) => answer.statusCode)).toEqual([200, 200, 200])
    const taken = answers.map((answer) => answer.json().data)
    expect(taken.filter((each) => !each.duplicate)).toEqual([{ accepted: 50, duplicate: false }])
    expect(taken.filter((each) => each.duplicate)).toHaveLength(2)
    const race = (await usage(a.teamAdmin, '')).rows.find((row) => row.key === 'race')
    expect(race).toMatchObject({ calls: 50 })
  })

  it("another satellite's instance, and an unknown one, are refused with 404; another satellite's id with 403", async () => {
    expect((await post(installationId, [one('x', null)], randomUUID(), other)).statusCode).toBe(404)
    expect((await post('no-such-instance', [one('x', null)])).statusCode).toBe(404)
    const foreign = await as(other, 'POST', callsUrl(satellite, installationId), { batch_id: randomUUID(), calls: [one('x', null)] })
    expect(foreign.statusCode).toBe(403)
    expect((await app.inject({ method: 'POST', url: callsUrl(satellite, installationId), payload: { batch_id: randomUUID(), calls: [one('x', null)] } })).statusCode).toBe(401)
  })

  it.each([
    ['a batch of 1001 calls', (c: CallBody) => ({ batch_id: randomUUID(), calls: Array.from({ length: 1001 }, () => c) }), 'calls'],
    ['an empty batch', () => ({ batch_id: randomUUID(), calls: [] }), 'calls'],
    ['a tool name of 201 characters', (c: CallBody) => ({ batch_id: randomUUID(), calls: [{ ...c, tool: 't'.repeat(201) }] }), 'tool'],
    ['an empty tool name', (c: CallBody) => ({ batch_id: randomUUID(), calls: [{ ...c, tool: '' }] }), 'tool'],
    ['a bad outcome', (c: CallBody) => ({ batch_id: randomUUID(), calls: [{ ...c, outcome: 'maybe' }] }), 'outcome'],
    ['a negative duration', (c: CallBody) => ({ batch_id: randomUUID(), calls: [{ ...c, duration_ms: -1 }] }), 'duration_ms'],
    ['a duration over a day', (c: CallBody) => ({ batch_id: randomUUID(), calls: [{ ...c, duration_ms: 86_400_001 }] }), 'duration_ms'],
    ['a bad uuid', (c: CallBody) => ({ batch_id: 'not-a-uuid', calls: [c] }), 'batch_id'],
    ['a bad time', (c: CallBody) => ({ batch_id: randomUUID(), calls: [{ ...c, at: 'yesterday' }] }), 'at'],
    ['arguments', (c: CallBody) => ({ batch_id: randomUUID(), calls: [{ ...c, arguments: { q: 1 } }] }), 'arguments'],
    ['a call dated two hours ahead', () => ({ batch_id: randomUUID(), calls: [one('bound', null), one('bound', null, 'ok', 10, 2 * HOUR)] }), 'calls[1].at'],
    ['a call older than the retention', () => ({ batch_id: randomUUID(), calls: [one('bound', null, 'ok', 10, -91 * DAY)] }), 'calls[0].at'],
  ])('%s → 400', async (_label, body, field) => {
    const response = await as(satellite, 'POST', callsUrl(satellite, installationId), body(one('bound', null)))
    expect(response.statusCode, response.body).toBe(400)
    expect(response.json()).toMatchObject({ success: false, code: 'VALIDATION_ERROR' })
    expect(JSON.stringify(response.json().details)).toContain(field)
  })

  it('a body over 1 MiB → 413', async () => {
    const calls = Array.from({ length: 1000 }, () => ({ ...one('big', 'u'.repeat(200)), client_id: 'c'.repeat(500), tool: 't'.repeat(200) }))
    const response = await as(satellite, 'POST', callsUrl(satellite, installationId), { batch_id: randomUUID(), calls: [...calls, ...calls.slice(0, 0)], pad: 'x'.repeat(300_000) })
    expect(response.statusCode).toBe(413)
  })

  it('usage by tool, user, installation and day: each member sees their own, the admin everyone', async () => {
    const crew2 = await makeCrew(call, fresh, 'Usage Team')
    // Two members of a second team, whose calls nothing else touches.
    const token = await createToken(call, crew2.teamAdmin, { teamId: crew2.team.id })
    const sat2 = await pair(app, token.token, `tc-sat2-${dialect}`)
    expect((await heartbeat(app, sat2.id, sat2.apiKey)).statusCode).toBe(200)
    const serverId = (await importDocuments(call, admin, [weatherDocument('io.github.example/usage-weather')]))[0]!
    const i1 = (await install(call, crew2.team.id, crew2.teamAdmin, { server_id: serverId, target: { kind: 'package', index: 1 } })).id
    const i2 = (await install(call, crew2.team.id, crew2.teamAdmin, { server_id: serverId, target: { kind: 'package', index: 1 }, name: 'usage-two' })).id
    const u = crew2.teamUser.id
    const ad = crew2.teamAdmin.id
    const yesterday = -DAY
    expect((await post(i1, [one('search', u, 'ok', 10), one('search', u, 'ok', 20), one('fetch', ad, 'error', 40), one('search', null, 'ok', 5)], randomUUID(), sat2)).statusCode).toBe(200)
    expect((await post(i2, [one('fetch', u, 'refused', 0, yesterday), one('fetch', ad, 'ok', 60, yesterday)], randomUUID(), sat2)).statusCode).toBe(200)

    const byTool = await usage(crew2.teamAdmin, '?group_by=tool', crew2.team.id)
    expect(byTool.group_by).toBe('tool')
    expect(byTool.rows).toEqual([
      { key: 'fetch', calls: 3, ok: 1, error: 1, refused: 1, avg_duration_ms: 33.3 },
      { key: 'search', calls: 3, ok: 3, error: 0, refused: 0, avg_duration_ms: 11.7 },
    ])
    const byUser = await usage(crew2.teamAdmin, '?group_by=user', crew2.team.id)
    expect(byUser.rows.map((row) => [row.key, row.calls]).sort()).toEqual([[ad, 2], [u, 3], [null, 1]].sort())
    const byInstallation = await usage(crew2.teamAdmin, '?group_by=installation', crew2.team.id)
    expect(byInstallation.rows.map((row) => [row.key, row.calls])).toEqual([[i1, 4], [i2, 2]])
    const byDay = await usage(crew2.teamAdmin, '?group_by=day', crew2.team.id)
    const today = at().slice(0, 10)
    const dayBefore = at(yesterday).slice(0, 10)
    expect(byDay.rows.map((row) => [row.key, row.calls])).toEqual([[dayBefore, 2], [today, 4]])

    // A member who is not an admin: their own calls only, whatever the grouping.
    const own = await usage(crew2.teamUser, '?group_by=tool', crew2.team.id)
    expect(own.rows).toEqual([
      { key: 'search', calls: 2, ok: 2, error: 0, refused: 0, avg_duration_ms: 15 },
      { key: 'fetch', calls: 1, ok: 0, error: 0, refused: 1, avg_duration_ms: 0 },
    ])
    expect((await usage(crew2.teamUser, '?group_by=user', crew2.team.id)).rows.map((row) => row.key)).toEqual([u])
    // The team admin, a member too, sees everyone's — and a global admin too.
    expect((await usage(admin, '?group_by=installation', crew2.team.id)).rows).toEqual(byInstallation.rows)
    // A period: yesterday's hour only.
    const from = new Date(clock.now() + yesterday - HOUR).toISOString()
    const to = new Date(clock.now() + yesterday + HOUR).toISOString()
    const period = await usage(crew2.teamAdmin, `?group_by=tool&from=${encodeURIComponent(from)}&to=${encodeURIComponent(to)}`, crew2.team.id)
    expect(period.rows).toEqual([{ key: 'fetch', calls: 2, ok: 1, error: 0, refused: 1, avg_duration_ms: 30 }])
    expect(Date.parse(period.from) % HOUR).toBe(0)
    expect(Date.parse(period.to) % HOUR).toBe(0)
    // The default: the last 7 days.
    const defaults = await usage(crew2.teamAdmin, '', crew2.team.id)
    expect(Date.parse(defaults.to) - Date.parse(defaults.from)).toBeGreaterThanOrEqual(7 * DAY)
    expect(defaults.group_by).toBe('tool')
  })

  it.each([
    ['from after to', `?from=2026-03-02T00:00:00Z&to=2026-03-01T00:00:00Z`],
    ['from equal to to', `?from=2026-03-01T00:00:00Z&to=2026-03-01T00:00:00Z`],
    ['a span over 366 days', `?from=2024-01-01T00:00:00Z&to=2026-01-01T00:00:00Z`],
    ['a bad date', `?from=yesterday`],
    ['a bad grouping', `?group_by=tenant`],
    ['an unknown parameter', `?team=1`],
  ])('usage with %s → 400', async (_label, query) => {
    const response = await call('GET', `/api/teams/${a.team.id}/mcp/usage${query}`, a.teamAdmin)
    expect(response.statusCode, response.body).toBe(400)
    expect(response.json().code).toBe('VALIDATION_ERROR')
  })

  it("an installation's calls: newest first, paginated; members see their own", async () => {
    const base = -2 * HOUR
    const calls = Array.from({ length: 25 }, (_, i) => one(`list-${i}`, i % 2 === 0 ? a.teamUser.id : a.teamAdmin.id, 'ok', i, base + i * 1000))
    expect((await post(secondId, calls)).statusCode).toBe(200)
    const url = `${installationOf(a.team.id, secondId)}/calls`
    const page1 = await call('GET', `${url}?limit=10`, a.teamAdmin)
    expect(page1.statusCode, page1.body).toBe(200)
    const data = page1.json().data
    expect(data.pagination).toEqual({ total: 25, limit: 10, offset: 0, has_more: true })
    expect(data.calls.map((each: { tool: string }) => each.tool)).toEqual(Array.from({ length: 10 }, (_, i) => `list-${24 - i}`))
    expect(data.calls[0]).toEqual({
      id: expect.any(String), at: calls[24]!.at, instance_id: secondId, user_id: a.teamUser.id, client_id: 'cli', tool: 'list-24', outcome: 'ok', duration_ms: 24,
    })
    const page3 = (await call('GET', `${url}?limit=10&offset=20`, a.teamAdmin)).json().data
    expect(page3.calls.map((each: { tool: string }) => each.tool)).toEqual(['list-4', 'list-3', 'list-2', 'list-1', 'list-0'])
    expect(page3.pagination.has_more).toBe(false)
    const own = (await call('GET', `${url}?limit=100`, a.teamUser)).json().data
    expect(own.pagination.total).toBe(13)
    expect(own.calls.every((each: { user_id: string }) => each.user_id === a.teamUser.id)).toBe(true)
    // Another team's installation, or none: 404.
    const elsewhere = await makeCrew(call, fresh, 'Elsewhere')
    expect((await call('GET', `${installationOf(elsewhere.team.id, secondId)}/calls`, elsewhere.teamAdmin)).statusCode).toBe(404)
    expect((await call('GET', `${installationOf(a.team.id, 'nope')}/calls`, a.teamAdmin)).statusCode).toBe(404)
    expect((await call('GET', `${url}?limit=101`, a.teamAdmin)).statusCode).toBe(400)
  })

  it.each([
    ['team admin', 'teamAdmin', 200],
    ['team user', 'teamUser', 200],
    ['outsider', 'outsider', 404],
    ['global admin', 'admin', 200],
    ['nobody', null, 401],
  ] as const)('permissions: %s', async (_label, who, status) => {
    const account = who === null ? undefined : who === 'admin' ? admin : a[who]
    for (const url of [`/api/teams/${a.team.id}/mcp/usage`, `${installationOf(a.team.id, installationId)}/calls`]) {
      const response = await call('GET', url, account)
      expect(response.statusCode, `${url}: ${response.body}`).toBe(status)
    }
  })

  it('bearer tokens with mcp:read read as their user; without it → 403', async () => {
    const forTeam = { teamId: a.team.id }
    const asUser = await issueTokens(app, a.teamUser.cookie, 'mcp:read', forTeam)
    const asAdmin = await issueTokens(app, a.teamAdmin.cookie, 'mcp:read', forTeam)
    const noRead = await issueTokens(app, a.teamUser.cookie, 'user:read account:read teams:read', forTeam)
    const read = (token: string, url: string) => app.inject({ method: 'GET', url, headers: bearer(token) })
    const usageUrl = `/api/teams/${a.team.id}/mcp/usage?group_by=user`
    const users = async (token: string) => {
      const response = await read(token, usageUrl)
      expect(response.statusCode, response.body).toBe(200)
      return (response.json().data.rows as UsageRow[]).map((row) => row.key).sort()
    }
    expect(await users(asUser.access_token)).toEqual([a.teamUser.id])
    expect(await users(asAdmin.access_token)).toEqual([a.teamAdmin.id, a.teamUser.id].sort())
    const calls = await read(asUser.access_token, `${installationOf(a.team.id, installationId)}/calls?limit=100`)
    expect(calls.statusCode).toBe(200)
    expect((calls.json().data.calls as CallBody[]).every((each) => each.user_id === a.teamUser.id)).toBe(true)
    expect((await read(noRead.access_token, usageUrl)).statusCode).toBe(403)
  })

  it('retention: raw calls and batch ids after 7 days, hourly figures after USAGE_RETENTION_DAYS', async () => {
    const crew3 = await makeCrew(call, fresh, 'Retention Team')
    const token = await createToken(call, crew3.teamAdmin, { teamId: crew3.team.id })
    const sat3 = await pair(app, token.token, `tc-sat3-${dialect}`)
    expect((await heartbeat(app, sat3.id, sat3.apiKey)).statusCode).toBe(200)
    const serverId = (await importDocuments(call, admin, [weatherDocument('io.github.example/retention-weather')]))[0]!
    const id = (await install(call, crew3.team.id, crew3.teamAdmin, { server_id: serverId, target: { kind: 'package', index: 1 } })).id
    const batchId = randomUUID()
    const calls = [one('kept', crew3.teamUser.id)]
    expect((await post(id, calls, batchId, sat3)).json().data).toEqual({ accepted: 1, duplicate: false })
    const list = async () => (await call('GET', `${installationOf(crew3.team.id, id)}/calls`, crew3.teamAdmin)).json().data.pagination.total
    const counted = async () => (await usage(crew3.teamAdmin, `?from=${encodeURIComponent(new Date(clock.now() - 100 * DAY).toISOString())}&to=${encodeURIComponent(new Date(clock.now()).toISOString())}`, crew3.team.id)).rows

    clock.advance(6 * DAY)
    await app.services.purgeExpired()
    expect(await list()).toBe(1)
    expect((await post(id, calls, batchId, sat3)).json().data.duplicate).toBe(true)
    clock.advance(DAY + HOUR)
    await app.services.purgeExpired()
    expect(await list()).toBe(0)
    expect(await counted()).toEqual([expect.objectContaining({ key: 'kept', calls: 1 })])
    // Renewing the session on the way (it would expire after 30 days idle).
    for (let days = 0; days < 83; days += 10) {
      clock.advance(Math.min(10, 83 - days) * DAY)
      expect((await call('GET', '/api/users/me', crew3.teamAdmin)).statusCode).toBe(200)
    }
    await app.services.purgeExpired()
    expect(await counted()).toEqual([])
    // The batch id is forgotten with its calls: the same id is a new batch now (its calls, dated
    // before the retention, would be refused: the batch carries a call of today).
    expect((await heartbeat(app, sat3.id, sat3.apiKey)).statusCode).toBe(200)
    expect((await post(id, [one('kept', crew3.teamUser.id)], batchId, sat3)).json().data).toEqual({ accepted: 1, duplicate: false })
  })
})
