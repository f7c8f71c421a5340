import { eq } from 'drizzle-orm'
import type { FastifyInstance } from 'fastify'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { DEFAULT_PASSWORD, sessionSetCookie } from '../helpers/accounts.js'
import { createTestContext, type TestContext } from '../helpers/app.js'
import { manualClock, type ManualClock } from '../helpers/clock.js'
import { DIALECTS } from '../helpers/database.js'
import { expectNoServerError, fire, warmUp, winners } from '../helpers/races.js'
import { signUp, type Account } from '../helpers/teams.js'
import { challengeCookie, codeAt, enrol, passwordStep, post, sessionCookie, STEP_MS, verify, wrongCodeAt } from './helpers.js'

/**
 * Two-factor sign-in through the JSON API: setup, enable, the password step that answers
 * `two_factor_required` with a challenge cookie and no session, and the second step. Time is the
 * app's manual clock; codes are computed with otpauth from the secret the setup answer gave.
 */
describe.each(DIALECTS)('two-factor sign-in on %s', (dialect) => {
  let ctx: TestContext
  let app: FastifyInstance
  let clock: ManualClock
  let n = 0
  const fresh = () => signUp(app, `tf_${dialect.slice(0, 2)}_${++n}`)
  const me = (cookie: string | undefined) => app.inject({ method: 'GET', url: '/api/users/me', headers: cookie === undefined ? {} : { cookie } })
  const auditOf = async (type: string, userId: string) =>
    (await app.services.auditEvents.list({ type, limit: 100, offset: 0 })).rows.filter((row) => row.target === userId)

  beforeAll(async () => {
    ctx = await createTestContext(dialect)
    clock = manualClock()
    ;({ app } = await ctx.build({ clock, env: { RATE_LIMIT_ENABLED: 'false' } }))
    await signUp(app, `tf_${dialect.slice(0, 2)}_admin`)
  })
  afterAll(() => ctx.close())

  it('setup → enable → login asks for the second factor → verify starts a session', async () => {
    const account = await fresh()
    const setup = await post(app, '/api/auth/2fa/setup', account.cookie)
    expect(setup.statusCode, setup.body).toBe(200)
    const { secret, otpauth_uri: uri } = setup.json().data
    expect(secret).toMatch(/^[A-Z2-7]{32}$/)
    const parsed = new URL(uri)
    expect(parsed.protocol).toBe('otpauth:')
    expect(parsed.searchParams.get('secret')).toBe(secret)
    expect(parsed.searchParams.get('issuer')).toContain('localhost')
    expect(decodeURIComponent(parsed.pathname)).toContain(account.email)
    expect((await app.inject({ method: 'GET', url: '/api/users/me/account', headers: { cookie: account.cookie } })).json().data.two_factor_enabled).toBe(false)

    const enabled = await post(app, '/api/auth/2fa/enable', account.cookie, { code: codeAt(secret, clock.now()) })
    expect(enabled.statusCode, enabled.body).toBe(200)
    const codes: string[] = enabled.json().data.recovery_codes
    expect(codes).toHaveLength(10)
    expect(new Set(codes).size).toBe(10)
    for (const code of codes) expect(code).toMatch(/^[0-9a-z]{4}-[0-9a-z]{4}-[0-9a-z]{4}$/)
    expect((await app.inject({ method: 'GET', url: '/api/users/me/account', headers: { cookie: account.cookie } })).json().data.two_factor_enabled).toBe(true)
    expect(await auditOf('user.two_factor_enabled', account.id)).toHaveLength(1)

    const login = await app.inject({ method: 'POST', url: '/api/auth/email/login', payload: { login: account.email, password: DEFAULT_PASSWORD } })
    expect(login.statusCode, login.body).toBe(200)
    expect(login.json()).toEqual({ success: true, message: expect.any(String), data: { two_factor_required: true } })
    expect(sessionSetCookie(login)).toBeUndefined()
    const challenge = challengeCookie(login)!
    const line = (login.headers['set-cookie'] as string[] | string).toString()
    expect(line).toMatch(/two_factor_challenge=[^;]+; Max-Age=300; Path=\/api\/auth; HttpOnly; SameSite=Lax/)

    clock.advance(STEP_MS)
    const verified = await verify(app, challenge, { code: codeAt(secret, clock.now()) })
    expect(verified.statusCode, verified.body).toBe(200)
    expect(verified.json().data.user.id).toBe(account.id)
    const session = sessionCookie(verified)
    expect(session).toBeDefined()
    expect(verified.headers['set-cookie']!.toString()).toMatch(/two_factor_challenge=; Max-Age=0/)
    expect((await me(session)).statusCode).toBe(200)
    const logins = await auditOf('user.login', account.id)
    expect(logins.at(0)?.details).toMatchObject({ method: 'email', two_factor: true })
  })

  it('setup again before enabling replaces the pending secret; setup while enabled is a conflict', async () => {
    const account = await fresh()
    const first = (await post(app, '/api/auth/2fa/setup', account.cookie)).json().data.secret
    const second = (await post(app, '/api/auth/2fa/setup', account.cookie)).json().data.secret
    expect(second).not.toBe(first)
    const stale = await post(app, '/api/auth/2fa/enable', account.cookie, { code: codeAt(first, clock.now()) })
    expect(stale.statusCode).toBe(400)
    expect(stale.json().code).toBe('INVALID_TWO_FACTOR_CODE')
    expect((await post(app, '/api/auth/2fa/enable', account.cookie, { code: codeAt(second, clock.now()) })).statusCode).toBe(200)
    const again = await post(app, '/api/auth/2fa/setup', account.cookie)
    expect(again.statusCode).toBe(409)
    expect(again.json().code).toBe('TWO_FACTOR_ALREADY_ENABLED')
    const enableAgain = await post(app, '/api/auth/2fa/enable', account.cookie, { code: codeAt(second, clock.now() + STEP_MS) })
    expect(enableAgain.json().code).toBe('TWO_FACTOR_ALREADY_ENABLED')
  })

  it('enable without a pending setup is refused', async () => {
    const account = await fresh()
    const response = await post(app, '/api/auth/2fa/enable', account.cookie, { code: '123456' })
    expect(response.statusCode).toBe(409)
    expect(response.json().code).toBe('TWO_FACTOR_SETUP_REQUIRED')
  })

  it('refuses a wrong code, a code used already in its window, and a replayed or expired challenge', async () => {
    const account = await fresh()
    const { secret } = await enrol(app, account, clock.now())
    const challenge = await passwordStep(app, account.email)
    const wrong = await verify(app, challenge, { code: wrongCodeAt(secret, clock.now()) })
    expect(wrong.statusCode).toBe(401)
    expect(wrong.json().code).toBe('INVALID_TWO_FACTOR_CODE')
    expect(sessionSetCookie(wrong)).toBeUndefined()
    // The code that enabled it, in the same step: used already.
    const reused = await verify(app, challenge, { code: codeAt(secret, clock.now()) })
    expect(reused.statusCode).toBe(401)
    expect(reused.json().code).toBe('INVALID_TWO_FACTOR_CODE')
    expect((await auditOf('user.two_factor_failed', account.id)).map((row) => row.details)).toEqual(expect.arrayContaining([
      expect.objectContaining({ reason: 'reused_code' }), expect.objectContaining({ reason: 'wrong_code' }),
    ]))

    clock.advance(STEP_MS)
    const code = codeAt(secret, clock.now())
    expect((await verify(app, challenge, { code })).statusCode).toBe(200)
    // The challenge is spent: replaying it (with any code) is refused, and so is the code in another challenge.
    const replayed = await verify(app, challenge, { code: codeAt(secret, clock.now() + STEP_MS) })
    expect(replayed.statusCode).toBe(401)
    expect(replayed.json().code).toBe('UNAUTHORIZED')
    const other = await passwordStep(app, account.email)
    expect((await verify(app, other, { code })).json().code).toBe('INVALID_TWO_FACTOR_CODE')

    clock.advance(5 * 60_000 + 1_000)
    const late = await verify(app, other, { code: codeAt(secret, clock.now()) })
    expect(late.statusCode).toBe(401)
    expect(late.json().code).toBe('UNAUTHORIZED')
    expect((await verify(app, undefined, { code: codeAt(secret, clock.now()) })).json().code).toBe('UNAUTHORIZED')
    // Successful sign-ins reset the failure count only with the second factor.
    clock.advance(STEP_MS)
    const fine = await verify(app, await passwordStep(app, account.email), { code: codeAt(secret, clock.now()) })
    expect(fine.statusCode).toBe(200)
    const [row] = await app.services.database.db.select().from(app.services.database.t.users).where(eqId(app, account.id))
    expect(row!.failedLogins).toBe(0)
  })

  it('two concurrent verifies of one challenge start at most one session; one code raced on two challenges works once', async () => {
    const account = await fresh()
    const { secret } = await enrol(app, account, clock.now())
    clock.advance(STEP_MS)
    const challenge = await passwordStep(app, account.email)
    await warmUp(app, 6)
    const code = codeAt(secret, clock.now())
    const raced = await fire(6, () => verify(app, challenge, { code }))
    expectNoServerError(raced)
    expect(winners(raced)).toHaveLength(1)
    expect(raced.filter((response) => sessionCookie(response) !== undefined)).toHaveLength(1)

    clock.advance(STEP_MS)
    const challenges = await Promise.all([passwordStep(app, account.email), passwordStep(app, account.email), passwordStep(app, account.email)])
    const next = codeAt(secret, clock.now())
    const crossed = await Promise.all(challenges.map((each) => verify(app, each, { code: next })))
    expectNoServerError(crossed)
    expect(winners(crossed)).toHaveLength(1)
  })

  it('10 wrong codes lock the account like failed logins (429), across challenges', async () => {
    const account = await fresh()
    const { secret } = await enrol(app, account, clock.now())
    const wrong = wrongCodeAt(secret, clock.now())
    let challenge = await passwordStep(app, account.email)
    const answers: Array<[number, string]> = []
    for (let attempt = 1; attempt <= 10; attempt++) {
      const response = await verify(app, challenge, { code: wrong })
      answers.push([response.statusCode, response.json().code])
      // Five wrong codes end a challenge: the password is asked again.
      if (attempt === 5) challenge = await passwordStep(app, account.email)
    }
    expect(answers.slice(0, 4)).toEqual(Array(4).fill([401, 'INVALID_TWO_FACTOR_CODE']))
    expect(answers[4]).toEqual([401, 'UNAUTHORIZED'])
    expect(answers.slice(5, 9)).toEqual(Array(4).fill([401, 'INVALID_TWO_FACTOR_CODE']))
    expect(answers[9]).toEqual([429, 'RATE_LIMITED'])
    // Locked like failed logins: the password step is refused, whatever the password.
    const login = await app.inject({ method: 'POST', url: '/api/auth/email/login', payload: { login: account.email, password: DEFAULT_PASSWORD } })
    expect(login.statusCode).toBe(429)
    expect(login.headers['retry-after']).toEqual(expect.any(String))
    expect(await auditOf('user.two_factor_failed', account.id)).toHaveLength(10)
    clock.advance(15 * 60_000 + 1_000)
    const open = await passwordStep(app, account.email)
    expect((await verify(app, open, { code: codeAt(secret, clock.now()) })).statusCode).toBe(200)
  })

  it('a recovery code signs in once, in any case and spacing', async () => {
    const account = await fresh()
    const { recoveryCodes } = await enrol(app, account, clock.now())
    const [first, second] = recoveryCodes as [string, string]
    const used = await verify(app, await passwordStep(app, account.email), { recovery_code: first.toUpperCase().replace(/-/g, ' ') })
    expect(used.statusCode, used.body).toBe(200)
    expect(sessionCookie(used)).toBeDefined()
    const [event] = await auditOf('user.recovery_code_used', account.id)
    expect(event?.details).toEqual({ recovery_codes_left: 9 })
    const again = await verify(app, await passwordStep(app, account.email), { recovery_code: first })
    expect(again.statusCode).toBe(401)
    expect(again.json().code).toBe('INVALID_TWO_FACTOR_CODE')
    const racedChallenges = await Promise.all([passwordStep(app, account.email), passwordStep(app, account.email)])
    const raced = await Promise.all(racedChallenges.map((each) => verify(app, each, { recovery_code: second })))
    expect(winners(raced)).toHaveLength(1)
  })

  it('disable needs the password and a code (or a recovery code); then a login needs the password only', async () => {
    const account = await fresh()
    const { secret, recoveryCodes } = await enrol(app, account, clock.now())
    clock.advance(STEP_MS)
    const code = codeAt(secret, clock.now())
    const noPassword = await post(app, '/api/auth/2fa/disable', account.cookie, { code })
    expect([noPassword.statusCode, noPassword.json().code]).toEqual([400, 'INVALID_PASSWORD'])
    const badPassword = await post(app, '/api/auth/2fa/disable', account.cookie, { password: 'not the password', code })
    expect([badPassword.statusCode, badPassword.json().code]).toEqual([400, 'INVALID_PASSWORD'])
    const badCode = await post(app, '/api/auth/2fa/disable', account.cookie, { password: DEFAULT_PASSWORD, code: wrongCodeAt(secret, clock.now()) })
    expect([badCode.statusCode, badCode.json().code]).toEqual([400, 'INVALID_TWO_FACTOR_CODE'])
    const badRecovery = await post(app, '/api/auth/2fa/disable', account.cookie, { password: DEFAULT_PASSWORD, code: 'zzzz-zzzz-zzzz' })
    expect(badRecovery.json().code).toBe('INVALID_TWO_FACTOR_CODE')
    const done = await post(app, '/api/auth/2fa/disable', account.cookie, { password: DEFAULT_PASSWORD, code: recoveryCodes[3]! })
    expect(done.statusCode, done.body).toBe(200)
    expect(await auditOf('user.two_factor_disabled', account.id)).toHaveLength(1)
    expect((await post(app, '/api/auth/2fa/disable', account.cookie, { password: DEFAULT_PASSWORD, code })).json().code).toBe('TWO_FACTOR_NOT_ENABLED')
    const { db, t } = app.services.database
    expect(await db.select().from(t.twoFactorSecrets).where(eqUser(app, account.id))).toEqual([])
    expect(await db.select().from(t.recoveryCodes).where(eqRecoveryUser(app, account.id))).toEqual([])
    const login = await app.inject({ method: 'POST', url: '/api/auth/email/login', payload: { login: account.email, password: DEFAULT_PASSWORD } })
    expect(sessionCookie(login)).toBeDefined()
    expect(login.json().data.user.id).toBe(account.id)
  })

  it('a global admin switches off another user\'s two-factor; the user signs in with the password', async () => {
    const admin = await signInAdmin()
    const account = await fresh()
    await enrol(app, account, clock.now())
    const reset = await app.inject({ method: 'DELETE', url: `/api/admin/users/${account.id}/two-factor`, headers: { cookie: admin.cookie } })
    expect(reset.statusCode, reset.body).toBe(200)
    const [event] = await auditOf('user.two_factor_disabled', account.id)
    expect(event).toMatchObject({ actorId: admin.id, details: { method: 'admin' } })
    expect((await app.inject({ method: 'DELETE', url: `/api/admin/users/${account.id}/two-factor`, headers: { cookie: admin.cookie } })).json().code).toBe('TWO_FACTOR_NOT_ENABLED')
    expect((await app.inject({ method: 'DELETE', url: `/api/admin/users/${account.id}/two-factor`, headers: { cookie: account.cookie } })).statusCode).toBe(403)
    const login = await app.inject({ method: 'POST', url: '/api/auth/email/login', payload: { login: account.email, password: DEFAULT_PASSWORD } })
    expect(sessionCookie(login)).toBeDefined()
  })

  async function signInAdmin(): Promise<Account> {
    const email = `tf_${dialect.slice(0, 2)}_admin@example.com`
    const login = await app.inject({ method: 'POST', url: '/api/auth/email/login', payload: { login: email, password: DEFAULT_PASSWORD } })
    return { id: login.json().data.user.id, username: email.split('@')[0]!, email, cookie: sessionCookie(login)! }
  }
})

// Drizzle conditions on the app's own tables (either dialect).
const eqId = (app: FastifyInstance, id: string) => eq(app.services.database.t.users.id, id)
const eqUser = (app: FastifyInstance, id: string) => eq(app.services.database.t.twoFactorSecrets.userId, id)
const eqRecoveryUser = (app: FastifyInstance, id: string) => eq(app.services.database.t.recoveryCodes.userId, id)
