/**
 * PUT /api/auth/email/change-password checks the current password, so with a stolen session it is a
 * password-guessing oracle (and each guess is an Argon2 verification on the shared queue). Failed
 * checks count like failed logins: against the per-account lockout (the database counter that login
 * uses, so either route's failures lock both, on every instance) and against a per-IP limit.
 */
import { sql } from 'drizzle-orm'
import type { FastifyInstance, LightMyRequestResponse } from 'fastify'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { DEFAULT_PASSWORD, login } from '../helpers/accounts.js'
import { createTestContext, type TestContext } from '../helpers/app.js'
import { DIALECTS } from '../helpers/database.js'
import { rawRows } from '../helpers/sql.js'
import { signUp, type Account } from '../helpers/teams.js'

const WRONG = 'not the password'
const LOCKOUT = { maxFailures: 3, windowMs: 15 * 60_000, lockMs: 15 * 60_000 }

function change(app: FastifyInstance, account: Account, current: string, next = 'another good password', remoteAddress = '127.0.0.1'): Promise<LightMyRequestResponse> {
  return app.inject({
    method: 'PUT', url: '/api/auth/email/change-password', headers: { cookie: account.cookie }, remoteAddress,
    payload: { current_password: current, new_password: next },
  })
}

function expectLocked(response: LightMyRequestResponse) {
  expect(response.statusCode, response.body).toBe(429)
  expect(response.json()).toMatchObject({ success: false, code: 'RATE_LIMITED' })
  expect(Number(response.headers['retry-after'])).toBeGreaterThan(0)
}

function expectWrongPassword(response: LightMyRequestResponse) {
  expect(response.statusCode, response.body).toBe(400)
  expect(response.json()).toMatchObject({ success: false, code: 'INVALID_PASSWORD' })
}

describe.each(DIALECTS)('change-password throttling on %s', (dialect) => {
  describe('the per-account lockout, shared with login and held in the database', () => {
    let ctx: TestContext
    let first: FastifyInstance
    let second: FastifyInstance
    let seq = 0
    const fresh = () => signUp(first, `throttled_${(seq += 1)}`)

    async function counter(userId: string): Promise<{ failures: number; locked: boolean }> {
      const [row] = await rawRows(first.services.database, sql`select failed_logins, locked_until from users where id = ${userId}`)
      return { failures: Number(row![0]), locked: row![1] !== null }
    }

    beforeAll(async () => {
      // Two instances on one database, as behind a load balancer.
      ctx = await createTestContext(dialect, { file: true })
      const options = { limits: { lockout: LOCKOUT }, env: { RATE_LIMIT_ENABLED: 'false' } }
      first = (await ctx.build(options)).app
      second = (await ctx.build(options)).app
      await signUp(first, 'throttle_admin')
    })
    afterAll(() => ctx.close())

    it('wrong current passwords lock the account: change-password and login both answer 429 with Retry-After', async () => {
      const user = await fresh()
      expectWrongPassword(await change(first, user, WRONG))
      expectWrongPassword(await change(second, user, WRONG))
      expect(await counter(user.id)).toEqual({ failures: 2, locked: false })
      expectLocked(await change(first, user, WRONG))
      expect(await counter(user.id)).toEqual({ failures: 3, locked: true })

      // Locked: even the right password is refused, on either instance, by either route.
      expectLocked(await change(second, user, DEFAULT_PASSWORD))
      expectLocked((await login(second, user.email, DEFAULT_PASSWORD)).response)
      expectLocked((await login(first, user.email, DEFAULT_PASSWORD)).response)
    })

    it('failed logins lock change-password too', async () => {
      const user = await fresh()
      expect((await login(first, user.email, WRONG)).response.statusCode).toBe(401)
      expect((await login(second, user.email, WRONG)).response.statusCode).toBe(401)
      expectLocked(await change(first, user, WRONG))
      expectLocked(await change(second, user, DEFAULT_PASSWORD))
    })

    it('failures of both routes add up; a successful change resets the counter', async () => {
      const user = await fresh()
      expect((await login(first, user.email, WRONG)).response.statusCode).toBe(401)
      expectWrongPassword(await change(second, user, WRONG))
      expect(await counter(user.id)).toEqual({ failures: 2, locked: false })
      expect((await change(first, user, DEFAULT_PASSWORD, 'the next password')).statusCode).toBe(200)
      expect(await counter(user.id)).toEqual({ failures: 0, locked: false })
      expectWrongPassword(await change(first, user, WRONG))
      expectWrongPassword(await change(first, user, WRONG))
      expect((await login(second, user.email, 'the next password')).response.statusCode).toBe(200)
    })

    it('a failed check is audited like a failed login, without the password', async () => {
      const user = await fresh()
      expectWrongPassword(await change(first, user, WRONG))
      const rows = await rawRows(first.services.database, sql`select details from audit_events where type = 'user.login_failed' and target = ${user.id}`)
      expect(rows).toHaveLength(1)
      const details = String(typeof rows[0]![0] === 'string' ? rows[0]![0] : JSON.stringify(rows[0]![0]))
      expect(JSON.parse(details)).toEqual({ reason: 'wrong_password', method: 'change_password' })
      expect(details).not.toContain(WRONG)
    })
  })

  describe('the per-IP limit', () => {
    let ctx: TestContext
    let app: FastifyInstance

    beforeAll(async () => {
      ctx = await createTestContext(dialect)
      // The lockout out of the way: this is about the per-IP budget (20 a minute by default).
      app = (await ctx.build({ limits: { lockout: { ...LOCKOUT, maxFailures: 1_000 } } })).app
      await signUp(app, 'ip_admin')
    })
    afterAll(() => ctx.close())

    it('the 21st attempt in a minute from one IP answers 429 with Retry-After; another IP is not affected', async () => {
      const user = await signUp(app, 'ip_user')
      for (let attempt = 1; attempt <= 20; attempt++) expectWrongPassword(await change(app, user, WRONG, undefined, '203.0.113.7'))
      const refused = await change(app, user, DEFAULT_PASSWORD, undefined, '203.0.113.7')
      expect(refused.statusCode, refused.body).toBe(429)
      expect(refused.json()).toMatchObject({ success: false, code: 'RATE_LIMITED' })
      expect(Number(refused.headers['retry-after'])).toBeGreaterThan(0)
      expectWrongPassword(await change(app, user, WRONG, undefined, '203.0.113.8'))
    })
  })
})
