import type { FastifyInstance, LightMyRequestResponse } from 'fastify'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { DEFAULT_PASSWORD, login, register, registerAndLogin, sessionSetCookie } from '../helpers/accounts.js'
import { createTestContext, type TestContext } from '../helpers/app.js'
import { manualClock } from '../helpers/clock.js'
import { DIALECTS } from '../helpers/database.js'

const NO_IP_LIMIT = { RATE_LIMIT_ENABLED: 'false' }
const LOCKOUT = { maxFailures: 3, windowMs: 900_000, lockMs: 900_000 }

const me = (app: FastifyInstance, cookie: string) => app.inject({ method: 'GET', url: '/api/users/me', headers: { cookie } })

function expectRateLimited(response: LightMyRequestResponse): void {
  expect(response.statusCode).toBe(429)
  expect(response.json()).toMatchObject({ success: false, code: 'RATE_LIMITED', error: expect.any(String) })
  expect(response.headers['retry-after']).toMatch(/^[1-9][0-9]*$/)
}

describe.each(DIALECTS)('login on %s', (dialect) => {
  let ctx: TestContext
  let app: FastifyInstance
  let admin: { cookie: string }
  let seq = 0
  const unique = (prefix = 'user') => {
    seq += 1
    return { username: `${prefix}_${seq}`, email: `${prefix}.${seq}@example.com` }
  }

  beforeAll(async () => {
    ctx = await createTestContext(dialect)
    app = (await ctx.build({ env: NO_IP_LIMIT })).app
    // The database's first user is its global admin.
    admin = await registerAndLogin(app, unique('admin'))
  })
  afterAll(() => ctx.close())

  describe('credentials', () => {
    it('logs in by email and by username, in any case, each time with a new session', async () => {
      const account = { username: 'Mixed_Case', email: 'mixed.case@example.com' }
      expect((await register(app, account)).statusCode).toBe(201)
      const cookies: string[] = []
      for (const name of ['mixed.case@example.com', 'MIXED.Case@EXAMPLE.com', 'Mixed_Case', 'mixed_case', 'MIXED_CASE']) {
        const { response, cookie } = await login(app, name, DEFAULT_PASSWORD)
        expect(response.statusCode).toBe(200)
        expect(response.json()).toMatchObject({ success: true, message: 'Logged in successfully.', data: { user: { username: 'Mixed_Case' } } })
        expect(cookie).toMatch(/^auth_session=.+/)
        expect(new Set(sessionSetCookie(response)!.split('; ').slice(1))).toEqual(new Set(['Max-Age=2592000', 'Path=/', 'HttpOnly', 'SameSite=Lax']))
        cookies.push(cookie!)
      }
      expect(new Set(cookies).size).toBe(cookies.length)
      for (const cookie of cookies) expect((await me(app, cookie)).json().data.username).toBe('Mixed_Case')
    })

    it('stores only a digest of the session id: no sessions row holds the cookie value', async () => {
      const { cookie } = await registerAndLogin(app, unique())
      const value = cookie.slice('auth_session='.length)
      expect(value.length).toBeGreaterThanOrEqual(43)
      const { db, t } = app.services.database
      const rows = await db.select().from(t.sessions)
      expect(rows.length).toBeGreaterThan(0)
      for (const row of rows) {
        for (const column of Object.values(row)) expect(String(column instanceof Date ? column.toISOString() : column)).not.toContain(value)
      }
    })

    it('a wrong password and an unknown login get the same 401 INVALID_CREDENTIALS body', async () => {
      const account = unique()
      expect((await register(app, account)).statusCode).toBe(201)
      const wrongPassword = await login(app, account.email, 'not the password')
      const unknownEmail = await login(app, 'nobody@example.com', 'not the password')
      const unknownUsername = await login(app, 'nobody_at_all', 'not the password')
      for (const { response, cookie } of [wrongPassword, unknownEmail, unknownUsername]) {
        expect(response.statusCode).toBe(401)
        expect(cookie).toBeUndefined()
      }
      expect(wrongPassword.response.json()).toMatchObject({ success: false, code: 'INVALID_CREDENTIALS' })
      expect(unknownEmail.response.json()).toEqual(wrongPassword.response.json())
      expect(unknownUsername.response.json()).toEqual(wrongPassword.response.json())
    })
  })

  describe('Enable Login switched off', () => {
    it('login answers 403 LOGIN_DISABLED; non-admin sessions are refused, admin sessions keep working', async () => {
      const account = unique()
      const { cookie: userCookie } = await registerAndLogin(app, account)
      await app.services.settings.update([{ key: 'global.enable_login', value: false }])
      try {
        const refused = await login(app, account.email, DEFAULT_PASSWORD)
        expect(refused.response.statusCode).toBe(403)
        expect(refused.response.json()).toMatchObject({ success: false, code: 'LOGIN_DISABLED' })
        expect(refused.cookie).toBeUndefined()

        const userMe = await me(app, userCookie)
        expect(userMe.statusCode).toBe(403)
        expect(userMe.json().code).toBe('LOGIN_DISABLED')
        expect((await me(app, admin.cookie)).statusCode).toBe(200)
      } finally {
        await app.services.settings.update([{ key: 'global.enable_login', value: true }])
      }
      expect((await me(app, userCookie)).statusCode).toBe(200)
      expect((await login(app, account.email, DEFAULT_PASSWORD)).response.statusCode).toBe(200)
    })
  })

  describe('per-account lockout', () => {
    let locking: FastifyInstance
    const clock = manualClock()
    beforeAll(async () => {
      locking = (await ctx.build({ clock, env: NO_IP_LIMIT, limits: { lockout: LOCKOUT } })).app
    })

    it('locks the account after 3 failures from different addresses, refuses even the right password, unlocks after lockMs', async () => {
      const account = unique('locked')
      expect((await register(locking, account)).statusCode).toBe(201)
      const attempts: LightMyRequestResponse[] = []
      for (const [index, name] of [account.email, account.username, account.email.toUpperCase()].entries()) {
        attempts.push((await login(locking, name, 'wrong password', { remoteAddress: `10.1.0.${index + 1}` })).response)
      }
      expect(attempts.slice(0, 2).map((response) => response.json().code)).toEqual(['INVALID_CREDENTIALS', 'INVALID_CREDENTIALS'])
      expect([401, 429]).toContain(attempts[2]!.statusCode)
      const next = attempts[2]!.statusCode === 429 ? attempts[2]! : (await login(locking, account.email, 'wrong password', { remoteAddress: '10.1.0.4' })).response
      expectRateLimited(next)

      const right = await login(locking, account.username, DEFAULT_PASSWORD, { remoteAddress: '10.1.0.5' })
      expectRateLimited(right.response)
      expect(right.cookie).toBeUndefined()
      expect(Number(right.response.headers['retry-after'])).toBeLessThanOrEqual(LOCKOUT.lockMs / 1000)

      clock.advance(LOCKOUT.lockMs - 1000)
      expectRateLimited((await login(locking, account.email, DEFAULT_PASSWORD, { remoteAddress: '10.1.0.6' })).response)
      clock.advance(1001)
      const unlocked = await login(locking, account.email, DEFAULT_PASSWORD, { remoteAddress: '10.1.0.7' })
      expect(unlocked.response.statusCode).toBe(200)
      expect(unlocked.cookie).toBeDefined()
    })

    it('a successful login resets the count: two failures, a success, two failures leave the account open', async () => {
      const account = unique('reset')
      expect((await register(locking, account)).statusCode).toBe(201)
      const fail = async () => expect((await login(locking, account.email, 'wrong password')).response.json().code).toBe('INVALID_CREDENTIALS')
      await fail()
      await fail()
      expect((await login(locking, account.email, DEFAULT_PASSWORD)).response.statusCode).toBe(200)
      await fail()
      await fail()
      expect((await login(locking, account.email, DEFAULT_PASSWORD)).response.statusCode).toBe(200)
    })

    it('failures outside the window do not add up', async () => {
      const account = unique('window')
      expect((await register(locking, account)).statusCode).toBe(201)
      for (let i = 0; i < 2; i++) expect((await login(locking, account.email, 'wrong password')).response.statusCode).toBe(401)
      clock.advance(LOCKOUT.windowMs + 1000)
      for (let i = 0; i < 2; i++) expect((await login(locking, account.email, 'wrong password')).response.statusCode).toBe(401)
      expect((await login(locking, account.email, DEFAULT_PASSWORD)).response.statusCode).toBe(200)
    })
  })

  describe('per-IP limit on login and register', () => {
    const limits = { loginOrRegister: { max: 3, windowMs: 60_000 } }

    it('the 4th attempt from one address answers 429 RATE_LIMITED with Retry-After; another address gets through', async () => {
      const { app: limited } = await ctx.build({ limits })
      const account = unique('ip')
      expect((await register(limited, account, { remoteAddress: '10.0.0.9' })).statusCode).toBe(201)
      for (let i = 0; i < 3; i++) {
        expect((await login(limited, account.email, DEFAULT_PASSWORD, { remoteAddress: '10.0.0.1' })).response.statusCode).toBe(200)
      }
      const fourth = await login(limited, account.email, DEFAULT_PASSWORD, { remoteAddress: '10.0.0.1' })
      expectRateLimited(fourth.response)
      expect(fourth.cookie).toBeUndefined()
      expect((await login(limited, account.email, DEFAULT_PASSWORD, { remoteAddress: '10.0.0.2' })).response.statusCode).toBe(200)
    })

    it('RATE_LIMIT_ENABLED=false turns the per-IP limit off', async () => {
      const { app: unlimited } = await ctx.build({ limits, env: NO_IP_LIMIT })
      const account = unique('ip')
      expect((await register(unlimited, account, { remoteAddress: '10.0.0.1' })).statusCode).toBe(201)
      for (let i = 0; i < 6; i++) {
        expect((await login(unlimited, account.email, DEFAULT_PASSWORD, { remoteAddress: '10.0.0.1' })).response.statusCode).toBe(200)
      }
    })
  })
})
