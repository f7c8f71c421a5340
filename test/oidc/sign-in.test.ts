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

describe.each(DIALECTS)('OpenID Connect sign-in on %s', (dialect) => {
  let h: OidcHarness

  beforeAll(async () => {
    h = await startOidcHarness(dialect)
    await registerFirstAdmin(h.app)
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
    expect(first.callback?.status, first.callback?.body).toBe(302)
    expect(first.callback?.location).toBe(`${h.base}/api/auth/account`)
    const me = await whoAmI(h.base, first.session!)
    expect(me.status).toBe(200)
    expect(me.user).toMatchObject({ username: 'ada-l', email: 'ada@example.test', email_verified: true, role_id: 'global_user', auth_methods: ['oidc'], first_name: 'Ada', last_name: 'Lovelace' })
    const teams = await fetch(`${h.base}/api/users/me/teams`, { headers: { cookie: first.session! } })
    expect((await teams.json()).data.teams).toHaveLength(1)
    const [row] = await rawRows(h.app.services.database, sql`select oidc_issuer, oidc_subject, password_hash from users where id = ${me.user!.id}`)
    expect(row).toEqual([h.issuer.issuer, 'sub-ada-0001', null])

    const again = await oidcSignIn(h.base, { account: 'sub-ada-0001' })
    expect(again.callback?.status, again.callback?.body).toBe(302)
    expect(again.session).not.toBe(first.session)
    expect((await whoAmI(h.base, again.session!)).user?.id).toBe(me.user!.id)
  })
})
