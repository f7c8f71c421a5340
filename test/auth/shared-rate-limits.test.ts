import { randomUUID } from 'node:crypto'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createTestContext, type TestContext } from '../helpers/app.js'

const REDIS_URL = process.env.TEST_REDIS_URL ?? 'redis://127.0.0.1:6379'

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

  it('an unreachable Redis lets requests through instead of failing them', async () => {
    const { app } = await ctx.build({ env: { REDIS_URL: 'redis://127.0.0.1:1' }, limits: { loginOrRegister: { max: 2, windowMs: 60_000 } } })
    expect((await attempt(app)).statusCode).toBe(401)
  })
})
