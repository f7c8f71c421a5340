/**
 * Which account an OpenID Connect identity signs in to, and the pre-hijacking rule of the provider
 * sign-in (test/security/provider-link-pre-hijack.test.ts) applied to it: an identity links to
 * the account with its address only when that account's address was verified; an account whose
 * address was never verified becomes the issuer's verified owner's, and everything its registrant
 * held dies (password, sessions, OAuth grants, pending links). The address is taken only when
 * the issuer says `email_verified: true` — the JSON value, not a string — or the claim an
 * operator names instead.
 */
import { sql } from 'drizzle-orm'
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest'
import { DEFAULT_PASSWORD, login, register } from '../helpers/accounts.js'
import { browser } from '../helpers/browser.js'
import { DIALECTS } from '../helpers/database.js'
import { getWithBearer, issueTokens, refresh } from '../helpers/oauth.js'
import { smtpSettings, startSmtpSink, type SmtpSink } from '../helpers/smtp-sink.js'
import { rawRows } from '../helpers/sql.js'
import { oidcSignIn, registerFirstAdmin, startOidcHarness, whoAmI, type OidcHarness } from './harness.js'

const SQUATTER_PASSWORD = 'the squatter chose this'

describe.each(DIALECTS)('OpenID Connect linking on %s', (dialect) => {
  let h: OidcHarness
  let sink: SmtpSink
  let admin: { id: string; cookie: string }
  let seq = 0
  const unique = (name: string) => `${name}${(seq += 1)}`

  const userCount = async () => Number((await rawRows(h.app.services.database, sql`select count(*) from users`))[0]![0])
  const liveEmailTokens = async (userId: string) =>
    Number((await rawRows(h.app.services.database, sql`select count(*) from email_tokens where user_id = ${userId} and used_at is null`))[0]![0])
  async function lastLoginDetails(userId: string): Promise<Record<string, unknown>> {
    const rows = await rawRows(h.app.services.database, sql`select details from audit_events where type = 'user.login' and target = ${userId} order by created_at desc limit 1`)
    const details = rows[0]![0]
    return (typeof details === 'string' ? JSON.parse(details) : details) as Record<string, unknown>
  }
  /** The person at the issuer, with `claims`, signs in; answers the callback and the session. */
  async function signsIn(claims: Record<string, unknown>, subject = unique('sub-')) {
    h.issuer.accounts.set(subject, claims)
    return { subject, ...(await oidcSignIn(h.base, { account: subject, agent: browser() })) }
  }

  beforeAll(async () => {
    sink = await startSmtpSink()
    h = await startOidcHarness(dialect)
    admin = await registerFirstAdmin(h.app)
  })
  beforeEach(() => sink.clear())
  afterAll(async () => {
    await h.close()
    await sink.close()
  })

  it('links to the account with that verified address: password and OpenID Connect both sign in, sessions are kept', async () => {
    await h.app.services.settings.update([{ key: 'global.send_mail', value: false }])
    const name = unique('owner')
    const email = `${name}@example.test`
    const registered = await register(h.app, { username: name, email })
    const owner = { id: registered.json().data.user.id as string, cookie: String(registered.headers['set-cookie']).split(';')[0]! }
    expect((await h.app.inject({ method: 'PUT', url: `/api/admin/users/${owner.id}`, headers: { cookie: admin.cookie }, payload: { email_verified: true } })).statusCode).toBe(200)

    const flow = await signsIn({ email: email.toUpperCase(), email_verified: true, preferred_username: 'someone-else' })
    expect(flow.callback?.status, flow.callback?.body).toBe(302)
    expect((await whoAmI(h.base, flow.session!)).user).toMatchObject({ id: owner.id, username: name, auth_methods: ['email', 'oidc'] })
    expect(await lastLoginDetails(owner.id)).toEqual({ method: 'oidc', issuer: h.issuer.issuer, linked: true })
    expect((await whoAmI(h.base, owner.cookie)).status).toBe(200)
    expect((await login(h.app, email, DEFAULT_PASSWORD)).response.statusCode).toBe(200)
    // The link is by subject from now on.
    const again = await oidcSignIn(h.base, { account: flow.subject })
    expect((await whoAmI(h.base, again.session!)).user?.id).toBe(owner.id)
  })

  it('an unverified account with that address: the squatter\'s password, sessions, OAuth tokens and pending links end; the account is the owner\'s', async () => {
    await h.app.services.settings.update(smtpSettings(sink, { 'global.require_email_verification': false }))
    const name = unique('squat')
    const email = `${name}@victim.test`
    const registered = await register(h.app, { username: name, email, password: SQUATTER_PASSWORD })
    expect(registered.statusCode).toBe(201)
    const squatter = { id: registered.json().data.user.id as string, cookie: String(registered.headers['set-cookie']).split(';')[0]! }
    // A verification and a reset link, mailed to the victim's address.
    expect((await h.app.inject({ method: 'POST', url: '/api/auth/email/resend-verification', payload: { email } })).statusCode).toBe(200)
    expect((await h.app.inject({ method: 'POST', url: '/api/auth/email/forgot-password', payload: { email } })).statusCode).toBe(200)
    await sink.waitFor(2)
    expect(await liveEmailTokens(squatter.id)).toBe(2)
    const tokens = await issueTokens(h.app, squatter.cookie, 'user:read offline_access')
    expect((await getWithBearer(h.app, '/api/users/me', tokens.access_token)).statusCode).toBe(200)

    const victim = await signsIn({ email, email_verified: true })
    expect(victim.callback?.status, victim.callback?.body).toBe(302)
    expect((await whoAmI(h.base, victim.session!)).user).toMatchObject({ id: squatter.id, email_verified: true, auth_methods: ['oidc'] })

    expect((await whoAmI(h.base, squatter.cookie)).status).toBe(401)
    expect((await getWithBearer(h.app, '/api/users/me', tokens.access_token)).statusCode).toBe(401)
    expect((await refresh(h.app, tokens.refresh_token!)).json()).toMatchObject({ error: 'invalid_grant' })
    const byPassword = await login(h.app, email, SQUATTER_PASSWORD)
    expect(byPassword.response.statusCode).toBe(401)
    expect(byPassword.cookie).toBeUndefined()
    expect(await liveEmailTokens(squatter.id)).toBe(0)
    const [row] = await rawRows(h.app.services.database, sql`select password_hash from users where id = ${squatter.id}`)
    expect(row).toEqual([null])
    expect(await lastLoginDetails(squatter.id)).toEqual({ method: 'oidc', issuer: h.issuer.issuer, linked: true, unverified_credentials_discarded: true })
  })

  it('email_verified false, a string "true", or no address at all: 400 OIDC_EMAIL_NOT_AVAILABLE, no account, no session', async () => {
    const before = await userCount()
    for (const claims of [
      { email: `${unique('unverified')}@example.test`, email_verified: false },
      { email: `${unique('stringly')}@example.test`, email_verified: 'true' },
      { email: `${unique('silent')}@example.test` },
      { email_verified: true },
    ]) {
      const flow = await signsIn(claims)
      expect(flow.callback?.status, JSON.stringify(claims)).toBe(400)
      expect(JSON.parse(flow.callback!.body)).toMatchObject({ success: false, code: 'OIDC_EMAIL_NOT_AVAILABLE' })
      expect(flow.session).toBeUndefined()
    }
    expect(await userCount()).toBe(before)
  })

  it('an unverified address never links to the verified account that has it', async () => {
    const name = unique('holder')
    const email = `${name}@example.test`
    const registered = await register(h.app, { username: name, email })
    const id = registered.json().data.user.id as string
    await h.app.inject({ method: 'PUT', url: `/api/admin/users/${id}`, headers: { cookie: admin.cookie }, payload: { email_verified: true } })
    const flow = await signsIn({ email, email_verified: false })
    expect(flow.callback?.status).toBe(400)
    const [row] = await rawRows(h.app.services.database, sql`select oidc_subject from users where id = ${id}`)
    expect(row).toEqual([null])
  })

  it('an account linked to another subject at this issuer is not taken over by a second subject with the same address: 409 OIDC_ALREADY_LINKED', async () => {
    const email = `${unique('taken')}@example.test`
    const first = await signsIn({ email, email_verified: true })
    const id = (await whoAmI(h.base, first.session!)).user!.id
    const second = await signsIn({ email, email_verified: true })
    expect(second.callback?.status).toBe(409)
    expect(JSON.parse(second.callback!.body).code).toBe('OIDC_ALREADY_LINKED')
    const [row] = await rawRows(h.app.services.database, sql`select oidc_subject from users where id = ${id}`)
    expect(row).toEqual([first.subject])
  })

  it('the operator may name another claim that vouches for the address (Entra ID\'s xms_edov); email_verified alone then does not count', async () => {
    await h.app.services.settings.update([{ key: 'oidc.email_verified_claim', value: 'xms_edov' }])
    try {
      const vouched = await signsIn({ email: `${unique('edov')}@example.test`, xms_edov: true })
      expect(vouched.callback?.status, vouched.callback?.body).toBe(302)
      const plain = await signsIn({ email: `${unique('plain')}@example.test`, email_verified: true })
      expect(plain.callback?.status).toBe(400)
      expect(JSON.parse(plain.callback!.body).code).toBe('OIDC_EMAIL_NOT_AVAILABLE')
    } finally {
      await h.app.services.settings.update([{ key: 'oidc.email_verified_claim', value: 'email_verified' }])
    }
  })
})

describe.each(DIALECTS)('the first user on %s', (dialect) => {
  let h: OidcHarness

  beforeAll(async () => {
    h = await startOidcHarness(dialect)
  })
  afterAll(() => h.close())

  it('while no user exists: 403 FIRST_USER_REQUIRES_EMAIL and nothing is created; after an email registration the same person gets in', async () => {
    h.issuer.accounts.set('sub-first-0001', { email: 'eager@example.test', email_verified: true })
    const refused = await oidcSignIn(h.base, { account: 'sub-first-0001' })
    expect(refused.callback?.status).toBe(403)
    expect(JSON.parse(refused.callback!.body)).toMatchObject({ success: false, code: 'FIRST_USER_REQUIRES_EMAIL' })
    expect(refused.session).toBeUndefined()
    expect(await rawRows(h.app.services.database, sql`select id from users`)).toEqual([])

    await registerFirstAdmin(h.app)
    const admitted = await oidcSignIn(h.base, { account: 'sub-first-0001' })
    expect(admitted.callback?.status, admitted.callback?.body).toBe(302)
    expect((await whoAmI(h.base, admitted.session!)).user).toMatchObject({ role_id: 'global_user', email: 'eager@example.test' })
  })
})
