/**
 * Account pre-hijacking (MSRC 2022, "classic-federated merge"): someone registers the victim's
 * address with their own password before the victim uses the service; when the victim later signs in
 * with the identity provider (which vouches for the address), the account must become the victim's
 * alone. A provider identity links to an existing account as before only when that account's
 * address was verified; otherwise the provider's verified address wins and everything the unverified
 * registrant held dies: the password (set to null), every session, every OAuth grant and every
 * pending reset or verification link. Checked with verification required (the squatter's password
 * must no longer open the account) and without it (the session the squatter already holds must die).
 */
import { sql } from 'drizzle-orm'
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest'
import { DEFAULT_PASSWORD, login, register } from '../helpers/accounts.js'
import { createTestContext, type TestContext } from '../helpers/app.js'
import { browser } from '../helpers/browser.js'
import { DIALECTS } from '../helpers/database.js'
import { providerSignIn, providerUser, startProviderLoginApp, userRows, whoAmI, type ProviderLoginApp } from '../helpers/fake-provider.js'
import { getWithBearer, issueTokens, refresh } from '../helpers/oauth.js'
import { smtpSettings, startSmtpSink, type SmtpSink } from '../helpers/smtp-sink.js'
import { rawRows } from '../helpers/sql.js'
import { createTeam, client, type Account } from '../helpers/teams.js'

const SQUATTER_PASSWORD = 'the squatter chose this'

describe.each(DIALECTS)('provider linking and pre-registered addresses on %s', (dialect) => {
  let ctx: TestContext
  let harness: ProviderLoginApp & { ownProvider: boolean }
  let sink: SmtpSink
  let admin: Account
  let seq = 0
  const unique = (name: string) => `${name}${(seq += 1)}`

  const settings = (changes: Parameters<typeof harness.app.services.settings.update>[0]) => harness.app.services.settings.update(changes)
  const mailOn = () => settings(smtpSettings(sink, { 'global.require_email_verification': true }))
  const mailOff = () => settings([{ key: 'global.send_mail', value: false }])

  /** The victim signs in at the provider, whose verified primary address is `email`. */
  async function victimSignsIn(email: string, person = providerUser({ login: unique('victim'), emails: [{ email, primary: true, verified: true, visibility: 'private' }] })) {
    harness.provider.configure({ user: person })
    const flow = await providerSignIn(browser(), harness)
    expect(flow.callback?.status, flow.callback?.body).toBe(302)
    const me = await whoAmI(harness.base, flow.session!)
    expect(me.status).toBe(200)
    return { session: flow.session!, user: me.user!, person }
  }

  async function row(id: string) {
    return (await userRows(harness.app)).find((candidate) => candidate.id === id)!
  }

  async function liveEmailTokens(userId: string): Promise<number> {
    return Number((await rawRows(harness.app.services.database, sql`select count(*) from email_tokens where user_id = ${userId} and used_at is null`))[0]![0])
  }

  async function loginEvent(userId: string): Promise<Record<string, unknown>> {
    const rows = await rawRows(harness.app.services.database, sql`select details from audit_events where type = 'user.login' and target = ${userId} order by created_at desc limit 1`)
    const details = rows[0]![0]
    return (typeof details === 'string' ? JSON.parse(details) : details) as Record<string, unknown>
  }

  beforeAll(async () => {
    ctx = await createTestContext(dialect)
    sink = await startSmtpSink()
    harness = await startProviderLoginApp(ctx)
    const first = await register(harness.app, { username: 'first_admin', email: 'first.admin@example.com' })
    admin = { id: first.json().data.user.id, username: 'first_admin', email: 'first.admin@example.com', cookie: String(first.headers['set-cookie']).split(';')[0]! }
  })
  beforeEach(() => sink.clear())
  afterAll(async () => {
    await ctx.close()
    await harness.provider.close()
    await sink.close()
  })

  it('verification required: the squatter\'s password and pending links stop working once the provider vouches for the address', async () => {
    await mailOn()
    const name = unique('squat')
    const email = `${name}@victim.test`
    const registered = await register(harness.app, { username: name, email, password: SQUATTER_PASSWORD })
    expect(registered.statusCode).toBe(201)
    const squatterId = registered.json().data.user.id as string
    await sink.waitFor(1) // the verification mail, to the victim's address
    expect((await harness.app.inject({ method: 'POST', url: '/api/auth/email/forgot-password', payload: { email } })).statusCode).toBe(200)
    await sink.waitFor(2)
    expect(await liveEmailTokens(squatterId)).toBe(2)

    const victim = await victimSignsIn(email)
    expect(victim.user).toMatchObject({ id: squatterId, email, email_verified: true, auth_methods: ['provider'] })

    const byPassword = await login(harness.app, email, SQUATTER_PASSWORD)
    expect(byPassword.response.statusCode, byPassword.response.body).toBe(401)
    expect(byPassword.response.json().code).toBe('INVALID_CREDENTIALS')
    expect(byPassword.cookie).toBeUndefined()
    const stored = await row(squatterId)
    expect(stored.passwordHash).toBeNull()
    expect(stored.emailVerified).toBe(true)
    expect(await liveEmailTokens(squatterId)).toBe(0)
    expect(await loginEvent(squatterId)).toEqual({ method: 'provider', linked: true, unverified_credentials_discarded: true })
    // The victim's own session works, and the provider signs them in again.
    expect((await whoAmI(harness.base, victim.session)).status).toBe(200)
    expect((await victimSignsIn(email, victim.person)).user.id).toBe(squatterId)
  })

  it('verification not required: the session and OAuth tokens the squatter already holds are refused afterwards; the account and its teams stay', async () => {
    await mailOff()
    const name = unique('holder')
    const email = `${name}@victim.test`
    const registered = await register(harness.app, { username: name, email, password: SQUATTER_PASSWORD })
    expect(registered.statusCode).toBe(201)
    const squatter: Account = { id: registered.json().data.user.id, username: name, email, cookie: String(registered.headers['set-cookie']).split(';')[0]! }
    expect((await whoAmI(harness.base, squatter.cookie)).status).toBe(200)
    const tokens = await issueTokens(harness.app, squatter.cookie, 'user:read teams:read offline_access')
    expect((await getWithBearer(harness.app, '/api/users/me', tokens.access_token)).statusCode).toBe(200)
    const team = await createTeam(client(harness.app), squatter, unique('squatters-team'))

    const victim = await victimSignsIn(email)
    expect(victim.user).toMatchObject({ id: squatter.id, email_verified: true, auth_methods: ['provider'] })

    expect((await whoAmI(harness.base, squatter.cookie)).status).toBe(401)
    expect((await getWithBearer(harness.app, '/api/users/me', tokens.access_token)).statusCode).toBe(401)
    const refreshed = await refresh(harness.app, tokens.refresh_token!)
    expect(refreshed.statusCode).toBe(400)
    expect(refreshed.json()).toMatchObject({ error: 'invalid_grant' })
    expect((await login(harness.app, email, SQUATTER_PASSWORD)).response.statusCode).toBe(401)
    expect((await row(squatter.id)).passwordHash).toBeNull()

    // The account is now the verified owner's, with what was in it.
    const mine = await harness.app.inject({ method: 'GET', url: `/api/teams/${team.id}`, headers: { cookie: victim.session } })
    expect(mine.statusCode, mine.body).toBe(200)
  })

  it('a verified account still links as before: password and provider both sign in, sessions are kept', async () => {
    await mailOff()
    const name = unique('owner')
    const email = `${name}@example.test`
    const registered = await register(harness.app, { username: name, email })
    const owner: Account = { id: registered.json().data.user.id, username: name, email, cookie: String(registered.headers['set-cookie']).split(';')[0]! }
    const verified = await harness.app.inject({ method: 'PUT', url: `/api/admin/users/${owner.id}`, headers: { cookie: admin.cookie }, payload: { email_verified: true } })
    expect(verified.statusCode, verified.body).toBe(200)

    const linked = await victimSignsIn(email)
    expect(linked.user).toMatchObject({ id: owner.id, auth_methods: ['email', 'provider'] })
    expect(await loginEvent(owner.id)).toEqual({ method: 'provider', linked: true })
    expect((await whoAmI(harness.base, owner.cookie)).status).toBe(200)
    expect((await login(harness.app, email, DEFAULT_PASSWORD)).response.statusCode).toBe(200)
  })
})
