import type { FastifyInstance } from 'fastify'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createTestContext, type TestContext } from '../helpers/app.js'
import { DIALECTS } from '../helpers/database.js'
import { expectNoServerError, expectOutcome, fire, warmUp } from '../helpers/races.js'
import { smtpSettings, startSmtpSink, type SmtpSink } from '../helpers/smtp-sink.js'
import { client, signUp } from '../helpers/teams.js'
import { createToken, getWith, tokenFor } from './helpers.js'
import { PERSONAL_TOKENS_PER_USER } from '../../src/modules/personal-tokens/service.js'

/** The per-user limit under concurrent creations, and a password reset (through the mailed link) ending every token. */
describe.each(DIALECTS)('personal access tokens: the limit and a reset on %s', (dialect) => {
  let ctx: TestContext
  let app: FastifyInstance
  let sink: SmtpSink

  beforeAll(async () => {
    ctx = await createTestContext(dialect)
    sink = await startSmtpSink()
    app = (await ctx.build({ env: { RATE_LIMIT_ENABLED: 'false' } })).app
    await signUp(app, `patr_admin_${dialect}`)
    await app.services.settings.update(smtpSettings(sink, { 'global.require_email_verification': false }))
  })
  afterAll(async () => {
    await ctx?.close()
    await sink?.close()
  })

  it(`holds ${PERSONAL_TOKENS_PER_USER} unexpired tokens per user, also under concurrent creations`, async () => {
    const owner = await signUp(app, `patr_owner_${dialect}`)
    for (let i = 0; i < PERSONAL_TOKENS_PER_USER - 3; i++) await tokenFor(app, owner, { name: `job ${i}` })
    await warmUp(app, 8)
    const raced = await fire(8, (index) => createToken(app, owner, { name: `raced ${index}` }))
    expectNoServerError(raced)
    expectOutcome(raced, { 201: 3, '409 TOKEN_LIMIT_REACHED': 5 })
    const listed = await client(app)('GET', '/api/users/me/tokens?limit=1', owner)
    expect(listed.json().data.pagination.total).toBe(PERSONAL_TOKENS_PER_USER)
    // Another user is not held by this one's count.
    const other = await signUp(app, `patr_other_${dialect}`)
    expect((await createToken(app, other)).statusCode).toBe(201)
    // Deleting one makes room again.
    const oldest = (await client(app)('GET', '/api/users/me/tokens?limit=1&offset=49', owner)).json().data.tokens[0]
    expect((await client(app)('DELETE', `/api/users/me/tokens/${oldest.id}`, owner)).statusCode).toBe(200)
    expect((await createToken(app, owner)).statusCode).toBe(201)
  })

  it('a password reset through the mailed link ends every token of the user', async () => {
    const owner = await signUp(app, `patr_reset_${dialect}`)
    const { token } = await tokenFor(app, owner)
    expect((await getWith(app, '/api/users/me', token)).statusCode).toBe(200)
    const before = sink.messages.length
    expect((await app.inject({ method: 'POST', url: '/api/auth/email/forgot-password', payload: { email: owner.email } })).statusCode).toBe(200)
    const [mail] = (await sink.waitFor(before + 1)).slice(before)
    const resetToken = /reset-password\?token=([A-Za-z0-9_-]+)/.exec(mail!.text)![1]!
    const reset = await app.inject({ method: 'POST', url: '/api/auth/email/reset-password', payload: { token: resetToken, new_password: 'a brand new password' } })
    expect(reset.statusCode, reset.body).toBe(200)
    expect((await getWith(app, '/api/users/me', token)).statusCode).toBe(401)
    const { db, t } = app.services.database
    expect((await db.select().from(t.personalTokens)).filter((row) => row.userId === owner.id)).toEqual([])
  })
})
