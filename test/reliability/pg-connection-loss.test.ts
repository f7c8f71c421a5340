import http from 'node:http'
import type { FastifyInstance } from 'fastify'
import pg from 'pg'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { DEFAULT_PASSWORD } from '../helpers/accounts.js'
import { createTestContext, type TestContext } from '../helpers/app.js'
import { send, sessionCookieOf, sleep, tally, type Outcome, type RequestOptions } from '../helpers/http-load.js'

const ADMIN_URL = process.env.TEST_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres'

const TERMINATE_EVERY_MS = 200
const TERMINATE_FOR_MS = 3_000
/** No request may take longer than this, terminations or not. */
const REQUEST_BOUND_MS = 10_000

/**
 * PostgreSQL dropping the service's connections under load (what a server restart or a failover
 * does to the pool): every backend of the service's own database is terminated again and again
 * while requests flow. Restarting the shared cluster would disturb the test files running beside
 * this one; `scripts/pg-restart-soak.sh` does a real restart by hand.
 *
 * Meanwhile, routes that need the database answer 2xx or 503 DATABASE_UNAVAILABLE (never a 500,
 * never another code), nothing hangs, and /api/health (no database) answers 200 throughout.
 * Afterwards the same service serves everything again without being restarted.
 */
describe('PostgreSQL connections terminated under load', () => {
  let ctx: TestContext
  let app: FastifyInstance
  let url: string

  beforeAll(async () => {
    ctx = await createTestContext('postgresql')
    ;({ app } = await ctx.build({ env: { RATE_LIMIT_ENABLED: 'false' } }))
    url = await app.listen({ port: 0, host: '127.0.0.1' })
  })
  afterAll(() => ctx.close())

  it('answers 2xx or 503 DATABASE_UNAVAILABLE meanwhile, never hangs, and recovers without a restart', async () => {
    const setupAgent = new http.Agent({ keepAlive: false })
    const call = (options: Omit<RequestOptions, 'label'>) => send(url, setupAgent, { label: 'setup', ...options })

    const registered = await call({ method: 'POST', path: '/api/auth/email/register', body: { username: 'admin', email: 'admin@example.com', password: DEFAULT_PASSWORD } })
    expect(registered.status).toBe(201)
    const cookie = sessionCookieOf(registered)!
    expect((await call({ method: 'PUT', path: '/api/settings/team.creation_limit', body: { value: 10_000 }, cookie })).status).toBe(200)
    const created = await call({ method: 'POST', path: '/api/teams', body: { name: 'Readers' }, cookie })
    expect(created.status).toBe(201)
    const teamId = (created.body as { data: { team: { id: string } } }).data.team.id

    const workers: Array<(n: number) => RequestOptions> = [
      () => ({ label: 'health', method: 'GET', path: '/api/health' }),
      () => ({ label: 'ready', method: 'GET', path: '/api/health/ready' }),
      () => ({ label: 'login', method: 'POST', path: '/api/auth/email/login', body: { login: 'admin', password: DEFAULT_PASSWORD } }),
      () => ({ label: 'me', method: 'GET', path: '/api/users/me', cookie }),
      () => ({ label: 'me', method: 'GET', path: '/api/users/me', cookie }),
      () => ({ label: 'team read', method: 'GET', path: `/api/teams/${teamId}`, cookie }),
      (n) => ({ label: 'team update', method: 'PUT', path: `/api/teams/${teamId}`, body: { description: `d${n}` }, cookie }),
      // Writes in a transaction, so that connections are lost while checked out of the pool.
      (n) => ({ label: 'team create', method: 'POST', path: '/api/teams', body: { name: `Load ${n}` }, cookie }),
      (n) => ({ label: 'register', method: 'POST', path: '/api/auth/email/register', body: { username: `load_${n}`, email: `load_${n}@example.com`, password: DEFAULT_PASSWORD } }),
    ]

    const outcomes: Outcome[] = []
    let stop = false
    const running = Promise.all(workers.map(async (next) => {
      const agent = new http.Agent({ keepAlive: true, maxSockets: 1 })
      try {
        for (let n = 0; !stop; n++) outcomes.push(await send(url, agent, { ...next(n), timeoutMs: REQUEST_BOUND_MS }))
      } finally {
        agent.destroy()
      }
    }))

    // The test database's name; the admin connection is to another database, so it is spared.
    const name = new URL(ctx.database.url).pathname.slice(1)
    const admin = new pg.Client({ connectionString: ADMIN_URL })
    await admin.connect()
    const terminated: number[] = []
    let firstTermination = 0
    let lastTermination = 0
    try {
      await sleep(300)
      firstTermination = Date.now()
      while (Date.now() - firstTermination < TERMINATE_FOR_MS) {
        const result = await admin.query('select pg_terminate_backend(pid) from pg_stat_activity where datname = $1 and pid <> pg_backend_pid()', [name])
        terminated.push(result.rowCount ?? 0)
        await sleep(TERMINATE_EVERY_MS)
      }
      lastTermination = Date.now()
    } finally {
      await admin.end()
    }
    await sleep(300)
    stop = true
    await running

    const during = outcomes.filter((o) => o.endedAt >= firstTermination && o.startedAt <= lastTermination)
    const describe = (o: Outcome) => `${o.label} ${o.kind}${o.status === undefined ? '' : ` ${o.status}`}${o.code === undefined ? '' : ` ${o.code}`}`
    const maxMs = Math.max(...outcomes.map((o) => o.endedAt - o.startedAt))
    console.info(`terminations: ${terminated.length} rounds, ${terminated.reduce((a, b) => a + b, 0)} backends (${terminated.join(' ')}); ` +
      `outcomes during them: ${JSON.stringify(tally(during, describe))}; all: ${outcomes.length}, max latency ${maxMs} ms`)

    // Connections were really there to lose, and requests were running while they were lost.
    expect(terminated.reduce((a, b) => a + b, 0)).toBeGreaterThan(0)
    expect(during.filter((o) => o.label !== 'health').length).toBeGreaterThan(20)
    // Every request got an answer in time (no reset, no timeout).
    expect(outcomes.filter((o) => o.kind !== 'ok' && o.kind !== 'answered').map(describe)).toEqual([])
    expect(maxMs).toBeLessThan(REQUEST_BOUND_MS)
    // The process never stopped answering.
    expect(outcomes.filter((o) => o.label === 'health' && o.status !== 200).map(describe)).toEqual([])
    // A database route answers 2xx, or 503 DATABASE_UNAVAILABLE in the error envelope.
    const wrong = outcomes.filter((o) => o.kind === 'answered' && !(o.status === 503 && o.code === 'DATABASE_UNAVAILABLE' && (o.body as { success?: unknown }).success === false))
    expect(wrong.map((o) => `${describe(o)} ${JSON.stringify(o.body)}`)).toEqual([])

    // Recovery, same service: ready, login, an authenticated call, a write that persists.
    let ready: Outcome | undefined
    for (const started = Date.now(); Date.now() - started < 10_000; await sleep(100)) {
      ready = await call({ method: 'GET', path: '/api/health/ready' })
      if (ready.status === 200) break
    }
    expect(ready?.status).toBe(200)
    const login = await call({ method: 'POST', path: '/api/auth/email/login', body: { login: 'admin', password: DEFAULT_PASSWORD } })
    expect(login.status).toBe(200)
    const fresh = sessionCookieOf(login)!
    expect((await call({ method: 'GET', path: '/api/users/me', cookie: fresh })).status).toBe(200)
    expect((await call({ method: 'GET', path: '/api/users/me', cookie })).status).toBe(200)
    expect((await call({ method: 'PUT', path: `/api/teams/${teamId}`, body: { description: 'after the storm' }, cookie: fresh })).status).toBe(200)
    const team = await call({ method: 'GET', path: `/api/teams/${teamId}`, cookie: fresh })
    expect((team.body as { data: { team: { description: string } } }).data.team.description).toBe('after the storm')

    // Every connection went back to the pool: closing it does not wait for one that leaked.
    const closing = Date.now()
    await Promise.race([app.close(), sleep(5_000)])
    expect(Date.now() - closing).toBeLessThan(5_000)
  }, 45_000)
})
