/**
 * A password reset (account recovery) or a password change must end every OAuth grant of the user,
 * not only their sessions: the CLI's and MCP clients' tokens are other sessions too. Access tokens
 * are refused on the very next request (on SQLite that is also the reused-answer cache's test: the
 * same app instance that answered the token before must refuse it now), refresh tokens answer
 * invalid_grant, and the password event says the grants ended.
 */
import { sql } from 'drizzle-orm'
import type { FastifyInstance } from 'fastify'
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest'
import { DEFAULT_PASSWORD, login } from '../helpers/accounts.js'
import { createTestContext, type TestContext } from '../helpers/app.js'
import { DIALECTS } from '../helpers/database.js'
import { getWithBearer, issueTokens, refresh, type TokenSet } from '../helpers/oauth.js'
import { smtpSettings, startSmtpSink, type SmtpSink } from '../helpers/smtp-sink.js'
import { rawRows } from '../helpers/sql.js'
import { signUp, type Account } from '../helpers/teams.js'

const NEW_PASSWORD = 'a brand new password'
const SCOPE = 'user:read teams:read offline_access'

describe.each(DIALECTS)('password reset and change end OAuth grants on %s', (dialect) => {
  let ctx: TestContext
  let app: FastifyInstance
  let sink: SmtpSink
  let seq = 0

  const me = (token: string) => getWithBearer(app, '/api/users/me', token)
  const fresh = () => signUp(app, `grant_user_${(seq += 1)}`)

  async function expectAlive(tokens: TokenSet, user: Account) {
    const profile = await me(tokens.access_token)
    expect(profile.statusCode, profile.body).toBe(200)
    expect(profile.json().data.id).toBe(user.id)
  }

  async function expectEnded(tokens: TokenSet) {
    const profile = await me(tokens.access_token)
    expect(profile.statusCode).toBe(401)
    expect(profile.headers['www-authenticate']).toContain('invalid_token')
    const refreshed = await refresh(app, tokens.refresh_token!)
    expect(refreshed.statusCode, refreshed.body).toBe(400)
    expect(refreshed.json()).toMatchObject({ error: 'invalid_grant' })
  }

  async function liveGrants(userId: string): Promise<number> {
    const rows = await rawRows(app.services.database, sql`select count(*) from oauth_grants where user_id = ${userId} and revoked_at is null`)
    return Number(rows[0]![0])
  }

  async function lastEvent(type: string, userId: string): Promise<Record<string, unknown>> {
    const rows = await rawRows(app.services.database, sql`select details from audit_events where type = ${type} and target = ${userId} order by created_at desc limit 1`)
    expect(rows).toHaveLength(1)
    const details = rows[0]![0]
    return (typeof details === 'string' ? JSON.parse(details) : details) as Record<string, unknown>
  }

  beforeAll(async () => {
    ctx = await createTestContext(dialect)
    sink = await startSmtpSink()
    app = (await ctx.build({ env: { RATE_LIMIT_ENABLED: 'false' } })).app
    await signUp(app, 'grant_admin')
    await app.services.settings.update(smtpSettings(sink, { 'global.page_url': '', 'global.require_email_verification': false }))
  })
  beforeEach(() => sink.clear())
  afterAll(async () => {
    await ctx.close()
    await sink.close()
  })

  it('a password reset ends every grant: access tokens refused at once, refresh answers invalid_grant, the event says so', async () => {
    const user = await fresh()
    const cli = await issueTokens(app, user.cookie, SCOPE)
    const other = await issueTokens(app, user.cookie, SCOPE)
    // Rotated once: the live refresh token of a grant is the newest one.
    const rotated = (await refresh(app, other.refresh_token!)).json() as TokenSet
    await expectAlive(cli, user)
    await expectAlive(rotated, user)
    // Someone else's grant is not touched.
    const bystander = await fresh()
    const theirs = await issueTokens(app, bystander.cookie, SCOPE)

    const forgot = await app.inject({ method: 'POST', url: '/api/auth/email/forgot-password', payload: { email: user.email } })
    expect(forgot.statusCode).toBe(200)
    const [mail] = await sink.waitFor(1)
    const token = /reset-password\?token=([A-Za-z0-9_-]+)/.exec(mail!.text)![1]!
    const reset = await app.inject({ method: 'POST', url: '/api/auth/email/reset-password', payload: { token, new_password: NEW_PASSWORD } })
    expect(reset.statusCode, reset.body).toBe(200)

    await expectEnded(cli)
    await expectEnded(rotated)
    expect(await liveGrants(user.id)).toBe(0)
    await expectAlive(theirs, bystander)
    expect(await lastEvent('user.password_reset', user.id)).toMatchObject({ oauth_grants_revoked: 2 })
    expect((await login(app, user.email, NEW_PASSWORD)).response.statusCode).toBe(200)
  })

  it('a password change keeps the current session but ends every grant of the user', async () => {
    const user = await fresh()
    const cli = await issueTokens(app, user.cookie, SCOPE)
    await expectAlive(cli, user)
    const { cookie: otherSession } = await login(app, user.email, DEFAULT_PASSWORD)

    const changed = await app.inject({
      method: 'PUT', url: '/api/auth/email/change-password', headers: { cookie: user.cookie },
      payload: { current_password: DEFAULT_PASSWORD, new_password: NEW_PASSWORD },
    })
    expect(changed.statusCode, changed.body).toBe(200)

    await expectEnded(cli)
    expect(await liveGrants(user.id)).toBe(0)
    expect((await app.inject({ method: 'GET', url: '/api/users/me', headers: { cookie: user.cookie } })).statusCode).toBe(200)
    expect((await app.inject({ method: 'GET', url: '/api/users/me', headers: { cookie: otherSession! } })).statusCode).toBe(401)
    expect(await lastEvent('user.password_changed', user.id)).toMatchObject({ oauth_grants_revoked: 1 })

    // The user can authorize the CLI again afterwards.
    await expectAlive(await issueTokens(app, user.cookie, SCOPE), user)
  })
})
