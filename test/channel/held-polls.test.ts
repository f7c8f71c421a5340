import type { FastifyInstance, LightMyRequestResponse } from 'fastify'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createTestContext, type TestContext } from '../helpers/app.js'
import { DIALECTS } from '../helpers/database.js'
import { createToken, pair, SATELLITE_LIMITS, type Paired } from '../helpers/satellites.js'
import { client, signUp, type Account, type Call } from '../helpers/teams.js'

/** A held long-poll ends at once when its satellite is disabled (403) or deleted (401), not when its wait runs out. */
describe.each(DIALECTS)('held long-polls of a satellite that goes away, on %s', (dialect) => {
  let ctx: TestContext
  let app: FastifyInstance
  let call: Call
  let admin: Account
  let seq = 0

  const held = async (satellite: Paired): Promise<() => Promise<LightMyRequestResponse>> => {
    const headers = { authorization: `Bearer ${satellite.apiKey}` }
    const first = await app.inject({ method: 'GET', url: `/api/satellites/${satellite.id}/desired-state`, headers })
    expect(first.statusCode, first.body).toBe(200)
    const pending = app.inject({ method: 'GET', url: `/api/satellites/${satellite.id}/desired-state?wait=30`, headers: { ...headers, 'if-none-match': first.headers.etag as string } })
    await new Promise((resolve) => setTimeout(resolve, 200))
    return () => pending
  }
  const fresh = async (): Promise<Paired> => pair(app, (await createToken(call, admin)).token, `held-${dialect}-${++seq}`)

  beforeAll(async () => {
    ctx = await createTestContext(dialect)
    app = (await ctx.build({ limits: SATELLITE_LIMITS })).app
    call = client(app)
    admin = await signUp(app, 'held_admin')
  })
  afterAll(() => ctx.close())

  it('disabling answers the held request 403 SATELLITE_DISABLED at once', async () => {
    const satellite = await fresh()
    const answer = await held(satellite)
    const started = Date.now()
    expect((await call('PUT', `/api/satellites/${satellite.id}`, admin, { status: 'disabled' })).statusCode).toBe(200)
    const response = await answer()
    expect(response.statusCode, response.body).toBe(403)
    expect(response.json().code).toBe('SATELLITE_DISABLED')
    expect(Date.now() - started).toBeLessThan(15_000)
  })

  it('deleting answers the held request 401 at once', async () => {
    const satellite = await fresh()
    const answer = await held(satellite)
    const started = Date.now()
    expect((await call('DELETE', `/api/satellites/${satellite.id}`, admin)).statusCode).toBe(200)
    const response = await answer()
    expect(response.statusCode, response.body).toBe(401)
    expect(Date.now() - started).toBeLessThan(15_000)
  })

  it('holds at most 4 requests of one satellite: a fifth answers the oldest 304 at once with its ETag, the other four stay held', async () => {
    const satellite = await fresh()
    const headers = { authorization: `Bearer ${satellite.apiKey}` }
    const first = await app.inject({ method: 'GET', url: `/api/satellites/${satellite.id}/desired-state`, headers })
    const etag = first.headers.etag as string
    const settled = new Map<number, LightMyRequestResponse>()
    const poll = (index: number) => {
      const pending = app.inject({ method: 'GET', url: `/api/satellites/${satellite.id}/desired-state?wait=30`, headers: { ...headers, 'if-none-match': etag } })
      void pending.then((response) => settled.set(index, response))
      return pending
    }
    const pause = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))
    const polls: Array<Promise<LightMyRequestResponse>> = []
    for (let index = 0; index < 4; index++) {
      polls.push(poll(index))
      await pause(100)
    }
    await pause(300)
    expect([...settled.keys()]).toEqual([])
    const started = Date.now()
    polls.push(poll(4))
    const oldest = await polls[0]!
    expect(Date.now() - started).toBeLessThan(1_000)
    expect(oldest.statusCode).toBe(304)
    expect(oldest.headers.etag).toBe(etag)
    await pause(500)
    expect([...settled.keys()]).toEqual([0])
    // A sixth pushes out the next oldest.
    polls.push(poll(5))
    expect((await polls[1]!).statusCode).toBe(304)
    await pause(500)
    expect([...settled.keys()].sort()).toEqual([0, 1])
    // The four still held answer when their satellite changes (here: disabled, 403 at once).
    expect((await call('PUT', `/api/satellites/${satellite.id}`, admin, { status: 'disabled' })).statusCode).toBe(200)
    const rest = await Promise.all(polls.slice(2))
    expect(rest.map((response) => response.statusCode)).toEqual([403, 403, 403, 403])
    expect(Date.now() - started).toBeLessThan(15_000)
  })
})
