import { randomUUID } from 'node:crypto'
import type { FastifyInstance } from 'fastify'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createTestContext, type TestContext } from '../helpers/app.js'
import { manualClock, type ManualClock } from '../helpers/clock.js'
import { DIALECTS } from '../helpers/database.js'
import { importDocuments, install, installationOf, weatherDocument } from '../helpers/installations.js'
import { createToken, heartbeat, pair, SATELLITE_LIMITS, type Paired } from '../helpers/satellites.js'
import { client, crew as makeCrew, signUp, type Account, type Call, type Crew } from '../helpers/teams.js'

interface CallBody { at: string; user_id: string | null; client_id: string | null; tool: string; outcome: 'ok' | 'error' | 'refused'; duration_ms: number }
interface UsageRow { key: string | null; calls: number; ok: number; error: number; refused: number; avg_duration_ms: number }

const HOUR = 3600_000

/** How a batch is written: whole or not at all, its text as sent, and its hours added to those before. */
describe.each(DIALECTS)('tool-call batches on %s', (dialect) => {
  let app: FastifyInstance
  let ctx: TestContext
  let call: Call
  let clock: ManualClock
  let crew: Crew
  let satellite: Paired
  let admin: Account
  let seq = 0

  beforeAll(async () => {
    ctx = await createTestContext(dialect)
    clock = manualClock(Math.floor(Date.now() / HOUR) * HOUR + 60_000)
    app = (await ctx.build({ limits: SATELLITE_LIMITS, clock })).app
    call = client(app)
    admin = await signUp(app, 'tcb_admin')
    crew = await makeCrew(call, () => signUp(app, `tcb_${++seq}`), 'Batch Team')
    satellite = await pair(app, (await createToken(call, crew.teamAdmin, { teamId: crew.team.id })).token, `tcb-sat-${dialect}`)
    expect((await heartbeat(app, satellite.id, satellite.apiKey)).statusCode).toBe(200)
  })
  afterAll(() => ctx.close())

  /** A fresh installation of the team, so that each test counts its own calls. */
  const installation = async (name: string): Promise<string> => {
    const serverId = (await importDocuments(call, admin, [weatherDocument(`io.github.example/batch-${name}`)]))[0]!
    return (await install(call, crew.team.id, crew.teamAdmin, { server_id: serverId, target: { kind: 'package', index: 1 } })).id
  }
  const post = (instanceId: string, calls: CallBody[], batchId: string = randomUUID()) =>
    app.inject({ method: 'POST', url: `/api/satellites/${satellite.id}/instances/${instanceId}/calls`, headers: { authorization: `Bearer ${satellite.apiKey}` }, payload: { batch_id: batchId, calls } })
  const at = (offsetMs = 0) => new Date(clock.now() + offsetMs).toISOString()
  const usage = async (query: string): Promise<UsageRow[]> => {
    const response = await call('GET', `/api/teams/${crew.team.id}/mcp/usage${query}`, crew.teamAdmin)
    expect(response.statusCode, response.body).toBe(200)
    return response.json().data.rows
  }
  const byInstallation = async (id: string): Promise<UsageRow | undefined> => (await usage('?group_by=installation')).find((row) => row.key === id)
  const listed = async (id: string): Promise<Array<CallBody & { id: string }>> => {
    const response = await call('GET', `${installationOf(crew.team.id, id)}/calls?limit=100`, crew.teamAdmin)
    expect(response.statusCode, response.body).toBe(200)
    return response.json().data.calls
  }

  it('text is kept as sent: quotes, backslashes, JSON-like text, other scripts and emoji, nulls', async () => {
    const id = await installation('texts')
    const tools = ['say "hi"', 'back\\slash', "it's", '{"tool":[1,2]}', 'línea\nnueva\ttab', '天气预报', 'weather 🌦️', '\\u0000 spelled out']
    const calls: CallBody[] = tools.map((tool, i) => ({ at: at(i), user_id: i % 2 === 0 ? `user "${i}"` : null, client_id: i % 3 === 0 ? null : `client\\${i}`, tool, outcome: 'ok', duration_ms: i }))
    expect((await post(id, calls)).json().data).toEqual({ accepted: tools.length, duplicate: false })
    const kept = await listed(id)
    expect(kept.map(({ at, user_id, client_id, tool, outcome, duration_ms }) => ({ at, user_id, client_id, tool, outcome, duration_ms })).sort((a, b) => a.duration_ms - b.duration_ms)).toEqual(calls)
    expect(new Set(kept.map((each) => each.id)).size).toBe(tools.length)
    const rows = await usage('?group_by=tool')
    for (const tool of tools) expect(rows.find((row) => row.key === tool), tool).toMatchObject({ calls: 1 })
    const users = (await usage('?group_by=user')).map((row) => row.key)
    expect(users).toEqual(expect.arrayContaining(['user "0"', 'user "2"', null]))
  })

  it('a batch over many hours: each hour, user and tool summed once, and later batches add to the same hours', async () => {
    const id = await installation('hours')
    // 1000 calls over 100 hours, 5 tools and 2 users (and none): 300 distinct hourly rows.
    const calls: CallBody[] = Array.from({ length: 1000 }, (_, i) => ({
      at: at(-(i % 100) * HOUR - 1000 * (i % 7)), user_id: i % 3 === 0 ? null : `u${i % 3}`, client_id: 'c', tool: `t${i % 5}`,
      outcome: i % 10 === 0 ? 'error' : i % 15 === 0 ? 'refused' : 'ok', duration_ms: i,
    }))
    expect((await post(id, calls)).json().data.accepted).toBe(1000)
    expect((await post(id, calls.slice(0, 10))).json().data.accepted).toBe(10)
    const all = [...calls, ...calls.slice(0, 10)]
    const count = (keep: (each: CallBody) => boolean) => all.filter(keep).length
    expect(await byInstallation(id)).toEqual({
      key: id, calls: 1010, ok: count((each) => each.outcome === 'ok'), error: count((each) => each.outcome === 'error'), refused: count((each) => each.outcome === 'refused'),
      avg_duration_ms: Math.round((all.reduce((sum, each) => sum + each.duration_ms, 0) / 1010) * 10) / 10,
    })
    // One hour's figures, read alone: the first batch's calls of that hour and the second's.
    const from = new Date(Math.floor((clock.now() - 50 * HOUR) / HOUR) * HOUR)
    const hourly = await usage(`?group_by=installation&from=${encodeURIComponent(from.toISOString())}&to=${encodeURIComponent(new Date(from.getTime() + HOUR).toISOString())}`)
    const inHour = all.filter((each) => Math.floor(Date.parse(each.at) / HOUR) * HOUR === from.getTime())
    expect(hourly.find((row) => row.key === id)?.calls).toBe(inHour.length)
  })

  it('a batch the database refuses part-way writes nothing: its id, its calls and its hours are not kept', async () => {
    const id = await installation('refused')
    const batchId = randomUUID()
    const good = { at: new Date(clock.now()), userId: 'u', clientId: null, outcome: 'ok' as const, durationMs: 1 }
    // A call without a tool gets past no validation; here it reaches the database, which refuses
    // the row after the batch id and the calls before it.
    const calls = [{ ...good, tool: 'first' }, { ...good, tool: null as unknown as string }]
    await expect(app.services.toolUsage.ingest(satellite.id, id, batchId, calls)).rejects.toThrow()
    expect(await byInstallation(id)).toBeUndefined()
    expect(await listed(id)).toEqual([])
    // The same batch id, sent whole this time, is a new batch.
    const again = await post(id, [{ at: at(), user_id: 'u', client_id: null, tool: 'first', outcome: 'ok', duration_ms: 1 }], batchId)
    expect(again.json().data).toEqual({ accepted: 1, duplicate: false })
    expect(await byInstallation(id)).toMatchObject({ calls: 1 })
  })
})
