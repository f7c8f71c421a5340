/**
 * OpenID Connect sign-in against a real issuer (oidc-provider on loopback): a first sign-in makes
 * a global_user with a verified address, a username from preferred_username and a default team;
 * the same subject signs in to the same account again; the address comes from the ID token or,
 * when the ID token lacks it, from userinfo; the client authenticates as the issuer asks.
 */
import { sql } from 'drizzle-orm'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { DIALECTS } from '../helpers/database.js'
import { rawRows } from '../helpers/sql.js'
import { oidcSignIn, registerFirstAdmin, startOidcHarness, whoAmI, type OidcHarness } from './harness.js'

async function auditOf(h: OidcHarness, userId: string): Promise<Array<{ type: string; details: Record<string, unknown> }>> {
  const rows = await rawRows(h.app.services.database, sql`select type, details from audit_events where target = ${userId} order by created_at, id`)
  return rows.map(([type, details]) => ({ type: String(type), details: (typeof details === 'string' ? JSON.parse(details) : details) as Record<string, unknown> }))
}

async function teamCount(base: string, session: string): Promise<number> {
  const body = (await (await fetch(`${base}/api/users/me/teams`, { headers: { cookie: session } })).json()) as { data: { teams: unknown[] } }
  return body.data.teams.length
}

describe.each(DIALECTS)('OpenID Connect sign-in on %s (claims at userinfo)', (dialect) => {
  let h: OidcHarness
  let admin: { id: string; cookie: string }

  beforeAll(async () => {
    h = await startOidcHarness(dialect)
    admin = await registerFirstAdmin(h.app)
  })
  afterAll(() => h.close())

  it('a first sign-in creates a verified global_user with a default team; the same subject comes back to it', async () => {
    h.issuer.accounts.set('sub-ada-0001', { email: 'Ada@Example.test', email_verified: true, preferred_username: 'ada.l', given_name: 'Ada', family_name: 'Lovelace' })
    const first = await oidcSignIn(h.base, { account: 'sub-ada-0001', returnTo: '/api/auth/account' })
    expect(first.start.status).toBe(302)
    const authorization = new URL(first.start.location!)
    expect(authorization.origin).toBe(h.issuer.issuer)
    expect(Object.fromEntries(authorization.searchParams)).toMatchObject({
      response_type: 'code', client_id: 'service-backend', redirect_uri: `${h.base}/api/auth/oidc/callback`, scope: 'openid email profile', code_challenge_method: 'S256',
    })
    expect(authorization.searchParams.get('state')!.length).toBeGreaterThanOrEqual(43)
    expect(authorization.searchParams.get('nonce')!.length).toBeGreaterThanOrEqual(43)
    expect(first.start.setCookie.find((line) => line.startsWith('oidc_state='))).toMatch(/HttpOnly/i)
    expect(first.callback?.status, first.callback?.body).toBe(302)
    expect(first.callback?.location).toBe(`${h.base}/api/auth/account`)
    const me = await whoAmI(h.base, first.session!)
    expect(me.status).toBe(200)
    expect(me.user).toMatchObject({ username: 'ada-l', email: 'ada@example.test', email_verified: true, role_id: 'global_user', auth_methods: ['oidc'], first_name: 'Ada', last_name: 'Lovelace' })
    expect(await teamCount(h.base, first.session!)).toBe(1)
    const [row] = await rawRows(h.app.services.database, sql`select oidc_issuer, oidc_subject, password_hash from users where id = ${me.user!.id}`)
    expect(row).toEqual([h.issuer.issuer, 'sub-ada-0001', null])
    expect(await auditOf(h, me.user!.id)).toEqual([{ type: 'user.registered', details: { method: 'oidc', issuer: h.issuer.issuer } }])
    // The ID token lacked the address (oidc-provider keeps scope claims at userinfo for the code flow).
    expect(h.issuer.requests.get('/me')).toBe(1)

    const again = await oidcSignIn(h.base, { account: 'sub-ada-0001' })
    expect(again.callback?.status, again.callback?.body).toBe(302)
    expect(again.session).not.toBe(first.session)
    expect((await whoAmI(h.base, again.session!)).user?.id).toBe(me.user!.id)
    expect(await teamCount(h.base, again.session!)).toBe(1)
    expect((await auditOf(h, me.user!.id)).at(-1)).toEqual({ type: 'user.login', details: { method: 'oidc', issuer: h.issuer.issuer } })
    // Without return_to the browser lands on PUBLIC_URL (global.page_url is empty).
    expect(again.callback?.location).toBe(`${h.base}/`)

    // Administrators find the accounts that sign in this way.
    const listed = await h.app.inject({ method: 'GET', url: '/api/admin/users?auth_method=oidc', headers: { cookie: admin.cookie } })
    expect(listed.statusCode).toBe(200)
    expect(listed.json().data.users.map((user: { id: string }) => user.id)).toEqual([me.user!.id])
  })

  it('the same subject keeps its account when its address changes at the issuer; a new subject with a taken username gets a suffix', async () => {
    h.issuer.accounts.set('sub-moved-0001', { email: 'before@example.test', email_verified: true, preferred_username: 'mover' })
    const before = await oidcSignIn(h.base, { account: 'sub-moved-0001' })
    const id = (await whoAmI(h.base, before.session!)).user!.id
    h.issuer.accounts.set('sub-moved-0001', { email: 'after@example.test', email_verified: true, preferred_username: 'mover' })
    const after = await oidcSignIn(h.base, { account: 'sub-moved-0001' })
    expect((await whoAmI(h.base, after.session!)).user).toMatchObject({ id, username: 'mover' })

    h.issuer.accounts.set('sub-other-0002', { email: 'other.mover@example.test', email_verified: true, preferred_username: 'Mover' })
    const other = await oidcSignIn(h.base, { account: 'sub-other-0002' })
    expect((await whoAmI(h.base, other.session!)).user).toMatchObject({ username: 'Mover-2', email: 'other.mover@example.test' })
  })

  it('an address as preferred_username gives its local part; no preferred_username gives the address\'s local part', async () => {
    h.issuer.accounts.set('sub-upn-0001', { email: 'grace@corp.example.test', email_verified: true, preferred_username: 'grace.hopper@corp.example.test' })
    const upn = await oidcSignIn(h.base, { account: 'sub-upn-0001' })
    expect((await whoAmI(h.base, upn.session!)).user).toMatchObject({ username: 'grace-hopper' })
    h.issuer.accounts.set('sub-bare-0001', { email: 'linus@example.test', email_verified: true })
    const bare = await oidcSignIn(h.base, { account: 'sub-bare-0001' })
    expect((await whoAmI(h.base, bare.session!)).user).toMatchObject({ username: 'linus', first_name: null, last_name: null })
  })
})

describe.each(DIALECTS)('OpenID Connect sign-in on %s (claims in the ID token, client_secret_post)', (dialect) => {
  let h: OidcHarness

  beforeAll(async () => {
    h = await startOidcHarness(dialect, { claimsInIdToken: true, tokenEndpointAuthMethod: 'client_secret_post' })
    await registerFirstAdmin(h.app)
  })
  afterAll(() => h.close())

  it('takes the address from the ID token without asking userinfo, and sends the secret in the body when that is all the issuer takes', async () => {
    h.issuer.accounts.set('sub-idt-0001', { email: 'idtoken@example.test', email_verified: true, preferred_username: 'idtoken' })
    const flow = await oidcSignIn(h.base, { account: 'sub-idt-0001' })
    expect(flow.callback?.status, flow.callback?.body).toBe(302)
    expect((await whoAmI(h.base, flow.session!)).user).toMatchObject({ username: 'idtoken', email: 'idtoken@example.test', auth_methods: ['oidc'] })
    expect(h.issuer.requests.get('/me')).toBeUndefined()
    const tokenRequests = h.issuer.received.filter((request) => request.url === '/token')
    expect(tokenRequests).toEqual([{ method: 'POST', url: '/token', authorization: null }])
  })
})
