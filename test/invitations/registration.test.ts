import { eq } from 'drizzle-orm'
import type { FastifyInstance } from 'fastify'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { register, sessionCookie } from '../helpers/accounts.js'
import { createTestContext, type TestContext } from '../helpers/app.js'
import { DIALECTS } from '../helpers/database.js'
import { smtpSettings, startSmtpSink, type SmtpSink } from '../helpers/smtp-sink.js'
import { client, createTeam, ROOMY_LIMITS, signUp, teamAs, type Account, type Call } from '../helpers/teams.js'
import { invited } from './helpers.js'

type Registration = Parameters<typeof register>[1] & { invitation_token?: string }

/**
 * Registering with `invitation_token`: the invited address counts as verified, nothing else does,
 * and the answer never tells whether a token was for another address (or was one at all).
 */
describe.each(DIALECTS)('registering with an invitation on %s', (dialect) => {
  let ctx: TestContext
  let app: FastifyInstance
  let call: Call
  let sink: SmtpSink
  let owner: Account
  let teamId: string

  const registerWith = (account: Registration) => register(app, account)

  beforeAll(async () => {
    ctx = await createTestContext(dialect)
    sink = await startSmtpSink()
    app = (await ctx.build({ limits: ROOMY_LIMITS })).app
    call = client(app)
    await signUp(app, 'reg_first_admin')
    owner = await signUp(app, 'reg_owner')
    teamId = (await createTeam(call, owner, 'Registration team')).id
    // From here on, mail goes out and verification is required.
    await app.services.settings.update(smtpSettings(sink))
  })
  afterAll(async () => {
    await ctx?.close()
    await sink?.close()
  })

  it('the invited address, in any case, is verified at once: a session, no verification mail, not yet a member', async () => {
    const { token } = await invited(call, teamId, owner, 'reg_invited@example.com')
    const before = sink.messages.length
    const response = await registerWith({ username: 'reg_invited', email: 'Reg_Invited@Example.COM', invitation_token: token })
    expect(response.statusCode).toBe(201)
    expect(response.json().message).toBe('Registered successfully.')
    expect(response.json().data.user).toMatchObject({ email: 'reg_invited@example.com', email_verified: true })
    const cookie = sessionCookie(response)!
    expect(cookie).toBeDefined()
    expect(sink.messages.slice(before)).toEqual([])
    expect(await teamAs(call, teamId, { id: response.json().data.user.id, username: 'reg_invited', email: 'reg_invited@example.com', cookie })).toBeUndefined()
    const { db, t } = app.services.database
    const [event] = await db.select().from(t.auditEvents).where(eq(t.auditEvents.target, response.json().data.user.id))
    expect(event).toMatchObject({ type: 'user.registered', details: { role_id: 'global_user', email_verified_by: 'invitation' } })
    // The invitation stays pending: registering does not use it up.
    expect((await call('GET', `/api/invitations/${token}`)).statusCode).toBe(200)
  })

  it('a token for another address, an unknown token, and no token at all answer alike: unverified, verification mail sent', async () => {
    const { token } = await invited(call, teamId, owner, 'reg_someone_else@example.com')
    const cases: Array<[string, string | undefined]> = [['reg_other', token], ['reg_unknown', 'x'.repeat(43)], ['reg_none', undefined]]
    const answers = []
    for (const [username, invitationToken] of cases) {
      const before = sink.messages.length
      const response = await registerWith({ username, email: `${username}@example.com`, ...(invitationToken === undefined ? {} : { invitation_token: invitationToken }) })
      expect(response.statusCode).toBe(201)
      expect(sessionCookie(response)).toBeUndefined()
      expect(response.json().data.user.email_verified).toBe(false)
      expect(response.body).not.toContain('reg_someone_else')
      const mails = await sink.waitFor(before + 1)
      expect(mails.slice(before).map((mail) => mail.to)).toEqual([[`${username}@example.com`]])
      const { data: { user }, ...rest } = response.json()
      answers.push({ ...rest, user: { ...user, id: undefined, username: undefined, email: undefined, created_at: undefined } })
    }
    expect(answers[0]).toEqual(answers[2])
    expect(answers[1]).toEqual(answers[2])
  })

  it('a revoked invitation verifies nothing', async () => {
    const { token, invitation } = await invited(call, teamId, owner, 'reg_revoked@example.com')
    expect((await call('DELETE', `/api/teams/${teamId}/invitations/${invitation.id}`, owner)).statusCode).toBe(200)
    const response = await registerWith({ username: 'reg_revoked', email: 'reg_revoked@example.com', invitation_token: token })
    expect(response.statusCode).toBe(201)
    expect(response.json().data.user.email_verified).toBe(false)
  })

  it('a malformed invitation_token is a validation error like any other field', async () => {
    for (const invitationToken of ['', 'x'.repeat(201)]) {
      const response = await registerWith({ username: 'reg_malformed', email: 'reg_malformed@example.com', invitation_token: invitationToken })
      expect(response.statusCode).toBe(400)
      expect(response.json()).toMatchObject({ code: 'VALIDATION_ERROR', details: [expect.objectContaining({ field: 'invitation_token' })] })
    }
  })
})
