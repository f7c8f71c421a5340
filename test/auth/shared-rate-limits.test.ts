import { spawn, type ChildProcess } from 'node:child_process'
import { randomUUID } from 'node:crypto'
import { once } from 'node:events'
import { createServer, type AddressInfo } from 'node:net'
import { Redis } from 'ioredis'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createTestContext, type TestContext } from '../helpers/app.js'
import { until } from '../helpers/until.js'

const REDIS_URL = process.env.TEST_REDIS_URL ?? 'redis://127.0.0.1:6379'

/** A Redis server of this test's own (Debian's redis-server), on a free port, keeping nothing on disk. */
async function startRedis(): Promise<{ url: string; start(): Promise<void>; stop(): Promise<void> }> {
  const port = await freePort()
  let child: ChildProcess | null = null
  const start = async () => {
    child = spawn('redis-server', ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'], { stdio: 'ignore' })
    const client = new Redis({ port, host: '127.0.0.1', lazyConnect: true, maxRetriesPerRequest: 0, retryStrategy: () => 20 })
    try {
      await until(async () => (await client.ping().catch(() => null)) === 'PONG', { what: 'redis-server' })
    } finally {
      client.disconnect()
    }
  }
  await start()
  return {
    url: `redis://127.0.0.1:${port}`,
    start,
    async stop() {
      const running = child
      child = null
      if (running === null || running.exitCode !== null) return
      running.kill('SIGKILL')
      await once(running, 'exit')
    },
  }
}

async function freePort(): Promise<number> {
  const server = createServer()
  server.listen(0, '127.0.0.1')
  await once(server, 'listening')
  const { port } = server.address() as AddressInfo
  server.close()
  return port
}

/** With REDIS_URL, per-IP counters are shared by every instance. */
describe('per-IP limits shared through Redis', () => {
  let ctx: TestContext
  beforeAll(async () => {
    ctx = await createTestContext('postgresql')
  })
  afterAll(() => ctx.close())

  const attempt = (app: Awaited<ReturnType<TestContext['build']>>['app']) =>
    app.inject({ method: 'POST', url: '/api/auth/email/login', payload: { login: 'nobody', password: 'whatever it is' }, remoteAddress: '10.9.8.7' })

  it('two instances count one budget: the third attempt, on either, is refused', async () => {
    const options = {
      env: { REDIS_URL },
      rateLimitNamespace: `test-${randomUUID()}-`,
      limits: { loginOrRegister: { max: 2, windowMs: 60_000 } },
    }
    const [first, second] = await Promise.all([ctx.build(options), ctx.build(options)])
    expect((await attempt(first.app)).statusCode).toBe(401)
    expect((await attempt(second.app)).statusCode).toBe(401)
    const refused = await attempt(first.app)
    expect(refused.statusCode).toBe(429)
    expect(refused.json().code).toBe('RATE_LIMITED')
    expect(Number(refused.headers['retry-after'])).toBeGreaterThan(0)
    expect((await attempt(second.app)).statusCode).toBe(429)
  })

  it('without Redis each instance counts on its own', async () => {
    const options = { limits: { loginOrRegister: { max: 2, windowMs: 60_000 } } }
    const [first, second] = await Promise.all([ctx.build(options), ctx.build(options)])
    await attempt(first.app)
    await attempt(first.app)
    expect((await attempt(first.app)).statusCode).toBe(429)
    expect((await attempt(second.app)).statusCode).toBe(401)
  })

  it('login and register draw on one per-IP budget; forgot-password has its own', async () => {
    const { app } = await ctx.build({ limits: { loginOrRegister: { max: 3, windowMs: 60_000 }, forgotPassword: { max: 1, windowMs: 60_000 } } })
    const registerAs = (username: string) => app.inject({
      method: 'POST', url: '/api/auth/email/register', remoteAddress: '10.9.8.7',
      payload: { username, email: `${username}@example.test`, password: 'long enough password' },
    })
    expect((await attempt(app)).statusCode).toBe(401)
    expect((await attempt(app)).statusCode).toBe(401)
    expect((await registerAs('first')).statusCode).toBe(201)
    expect((await registerAs('second')).statusCode).toBe(429)
    expect((await attempt(app)).statusCode).toBe(429)
    const forgot = () => app.inject({ method: 'POST', url: '/api/auth/email/forgot-password', remoteAddress: '10.9.8.7', payload: { email: 'first@example.test' } })
    expect((await forgot()).statusCode).toBe(503)
    expect((await forgot()).statusCode).toBe(429)
  })

  it('an unreachable Redis: each instance counts in its own memory, so the limit still holds per instance', async () => {
    const { app } = await ctx.build({ env: { REDIS_URL: 'redis://127.0.0.1:1' }, limits: { loginOrRegister: { max: 2, windowMs: 60_000 } } })
    expect((await attempt(app)).statusCode).toBe(401)
    expect((await attempt(app)).statusCode).toBe(401)
    const refused = await attempt(app)
    expect(refused.statusCode).toBe(429)
    expect(Number(refused.headers['retry-after'])).toBeGreaterThan(0)
  })

  it('Redis lost and restarted under two instances: every request answered, counted locally meanwhile, shared again after', async () => {
    const redis = await startRedis()
    try {
      const options = {
        env: { REDIS_URL: redis.url },
        rateLimitNamespace: `test-${randomUUID()}-`,
        limits: { loginOrRegister: { max: 3, windowMs: 60_000 } },
      }
      const [first, second] = await Promise.all([ctx.build(options), ctx.build(options)])
      const from = (ip: string) => (app: typeof first.app) => app.inject({ method: 'POST', url: '/api/auth/email/login', payload: { login: 'nobody', password: 'whatever it is' }, remoteAddress: ip })
      // Shared: three attempts in all, across both.
      const shared = from('10.1.1.1')
      expect([(await shared(first.app)).statusCode, (await shared(second.app)).statusCode, (await shared(first.app)).statusCode]).toEqual([401, 401, 401])
      expect((await shared(second.app)).statusCode).toBe(429)

      await redis.stop()
      // Away: each instance counts on its own, three each; nothing fails with a 5xx.
      const local = from('10.2.2.2')
      const whileAway = []
      for (const app of [first.app, first.app, first.app, first.app, second.app, second.app, second.app, second.app]) whileAway.push((await local(app)).statusCode)
      expect(whileAway).toEqual([401, 401, 401, 429, 401, 401, 401, 429])

      await redis.start()
      // Each instance reconnects on its own schedule: a probe from a fresh address counted in
      // Redis shows it is back on the shared counters.
      const probe = new Redis(redis.url)
      try {
        let probes = 0
        for (const { app } of [first, second]) {
          await until(async () => {
            const before = await probe.dbsize()
            await from(`10.4.4.${++probes}`)(app)
            return (await probe.dbsize()) > before
          }, { what: 'an instance back on Redis' })
        }
      } finally {
        probe.disconnect()
      }
      // Back: one budget again.
      const again = from('10.3.3.3')
      expect([(await again(first.app)).statusCode, (await again(second.app)).statusCode, (await again(first.app)).statusCode]).toEqual([401, 401, 401])
      expect((await again(second.app)).statusCode).toBe(429)
    } finally {
      await redis.stop()
    }
  })
})
