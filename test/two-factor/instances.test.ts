import type { FastifyInstance } from 'fastify'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createTestContext, type TestContext } from '../helpers/app.js'
import { manualClock, type ManualClock } from '../helpers/clock.js'
import { DIALECTS } from '../helpers/database.js'
import { signUp } from '../helpers/teams.js'
import { until } from '../helpers/until.js'
import { codeAt, enrol, passwordStep, sessionCookie, STEP_MS, verify } from './helpers.js'

/**
 * Two instances on one database (PostgreSQL, or one SQLite file): the challenge the password step
 * stores on one is verified on the other, a code used on one is refused on the other, and an
 * admin's enrolment on one lets them through the other's admin requirement (the credential caches
 * learn of the users row's change through the change feed).
 */
describe.each(DIALECTS)('two-factor across two instances on %s', (dialect) => {
  let ctx: TestContext
  let first: FastifyInstance
  let second: FastifyInstance
  let clock: ManualClock

  beforeAll(async () => {
    ctx = await createTestContext(dialect, { file: true })
    clock = manualClock()
    first = (await ctx.build({ clock, env: { RATE_LIMIT_ENABLED: 'false' } })).app
    second = (await ctx.build({ clock, env: { RATE_LIMIT_ENABLED: 'false' } })).app
  })
  afterAll(() => ctx.close())

  it('a challenge made on one instance is verified on the other; its code is spent for both', async () => {
    await signUp(first, `inst_${dialect.slice(0, 2)}_admin`)
    const account = await signUp(first, `inst_${dialect.slice(0, 2)}_user`)
    const { secret } = await enrol(first, account, clock.now())
    clock.advance(STEP_MS)
    const challenge = await passwordStep(first, account.email)
    const code = codeAt(secret, clock.now())
    const verified = await verify(second, challenge, { code })
    expect(verified.statusCode, verified.body).toBe(200)
    const session = sessionCookie(verified)!
    expect((await first.inject({ method: 'GET', url: '/api/users/me', headers: { cookie: session } })).json().data.id).toBe(account.id)
    // Spent everywhere: the challenge, and the code in a new challenge.
    expect((await verify(first, challenge, { code: codeAt(secret, clock.now() + STEP_MS) })).json().code).toBe('UNAUTHORIZED')
    expect((await verify(first, await passwordStep(second, account.email), { code })).json().code).toBe('INVALID_TWO_FACTOR_CODE')
  })

  it('an admin who enrols on one instance is let through on the other', async () => {
    const admin = await signUp(first, `inst_${dialect.slice(0, 2)}_second_admin`)
    const firstAdmin = (await first.inject({ method: 'POST', url: '/api/auth/email/login', payload: { login: `inst_${dialect.slice(0, 2)}_admin`, password: 'correct horse battery' } }))
    const cookie = sessionCookie(firstAdmin)!
    expect((await first.inject({ method: 'PUT', url: `/api/admin/users/${admin.id}/role`, headers: { cookie }, payload: { role_id: 'global_admin' } })).statusCode).toBe(200)
    await first.services.settings.update([{ key: 'global.require_2fa_for_admins', value: true }])
    // Another process's settings write is looked for every 2 s of the app's clock where no notification tells (SQLite).
    clock.advance(2_001)
    const adminUsers = (app: FastifyInstance) => app.inject({ method: 'GET', url: '/api/admin/users', headers: { cookie: admin.cookie } })
    await until(async () => (await adminUsers(second)).statusCode === 403, { what: 'the setting reaching the second instance' })
    expect((await adminUsers(second)).json().code).toBe('TWO_FACTOR_REQUIRED')
    clock.advance(STEP_MS)
    await enrol(first, admin, clock.now())
    await until(async () => (await adminUsers(second)).statusCode === 200, { what: 'the enrolment reaching the second instance' })
    expect((await adminUsers(first)).statusCode).toBe(200)
  })
})
