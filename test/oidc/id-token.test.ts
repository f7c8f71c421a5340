/**
 * The ID token is trusted only after oauth4webapi's checks: a token whose nonce is not the one
 * this sign-in sent (the authorization request was altered on its way to the issuer), a token
 * signed by a key the issuer's JWKS does not hold, an authorization response naming another
 * issuer (RFC 9207) or a code the issuer does not know are refused, and nobody is signed in or
 * created.
 */
import { sql } from 'drizzle-orm'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { browser } from '../helpers/browser.js'
import { DIALECTS } from '../helpers/database.js'
import { rawRows } from '../helpers/sql.js'
import { oidcSignIn, registerFirstAdmin, startOidcHarness, type OidcHarness } from './harness.js'

async function userCount(h: OidcHarness): Promise<number> {
  return Number((await rawRows(h.app.services.database, sql`select count(*) from users`))[0]![0])
}

describe.each(DIALECTS)('ID token checks on %s', (dialect) => {
  let h: OidcHarness
  let seq = 0
  const person = () => {
    const subject = `sub-idt-${(seq += 1)}`
    h.issuer.accounts.set(subject, { email: `${subject}@example.test`, email_verified: true })
    return subject
  }

  beforeAll(async () => {
    h = await startOidcHarness(dialect)
    await registerFirstAdmin(h.app)
  })
  afterAll(() => h.close())

  it('a nonce other than the one this sign-in sent: 400 OIDC_ID_TOKEN_INVALID, nobody created or signed in', async () => {
    const before = await userCount(h)
    const flow = await oidcSignIn(h.base, { account: person(), tamper: (url) => url.searchParams.set('nonce', 'a-nonce-the-service-never-sent') })
    expect(flow.callback?.status, flow.callback?.body).toBe(400)
    expect(JSON.parse(flow.callback!.body)).toMatchObject({ success: false, code: 'OIDC_ID_TOKEN_INVALID' })
    expect(JSON.parse(flow.callback!.body).error).toMatch(/nonce/)
    expect(flow.session).toBeUndefined()
    expect(await userCount(h)).toBe(before)
  })

  it('an authorization response naming another issuer (RFC 9207 iss): 400 OIDC_LOGIN_FAILED before any code exchange', async () => {
    const agent = browser()
    const started = await oidcSignIn(h.base, { account: person(), agent, stopBeforeCallback: true })
    const tokenCalls = h.issuer.requests.get('/token') ?? 0
    const forged = new URL(started.callbackUrl!)
    forged.searchParams.set('iss', 'https://issuer.attacker.example')
    const refused = await agent.get(forged.toString())
    expect(refused.status).toBe(400)
    expect(JSON.parse(refused.body)).toMatchObject({ code: 'OIDC_LOGIN_FAILED' })
    expect(h.issuer.requests.get('/token') ?? 0).toBe(tokenCalls)
  })

  it('a code the issuer does not know: 400 OIDC_LOGIN_FAILED (invalid_grant)', async () => {
    const agent = browser()
    const started = await oidcSignIn(h.base, { account: person(), agent, stopBeforeCallback: true })
    const forged = new URL(started.callbackUrl!)
    forged.searchParams.set('code', 'a-code-the-issuer-never-issued')
    const refused = await agent.get(forged.toString())
    expect(refused.status).toBe(400)
    expect(JSON.parse(refused.body)).toMatchObject({ code: 'OIDC_LOGIN_FAILED' })
    expect(JSON.parse(refused.body).error).toMatch(/invalid_grant/)
  })

  it('wrong client credentials are the operator\'s to fix: 502 OIDC_LOGIN_FAILED naming the settings', async () => {
    await h.app.services.settings.update([{ key: 'oidc.client_secret', value: 'not-the-secret-the-issuer-knows' }])
    try {
      const flow = await oidcSignIn(h.base, { account: person() })
      expect(flow.callback?.status).toBe(502)
      expect(JSON.parse(flow.callback!.body).error).toMatch(/client credentials.*oidc\.client_secret/)
    } finally {
      await h.app.services.settings.update([{ key: 'oidc.client_secret', value: 'the-client-secret-of-the-oidc-tests-0123456789' }])
    }
  })
})

describe.each(DIALECTS)('an ID token signed by a key the issuer does not publish on %s', (dialect) => {
  let h: OidcHarness

  beforeAll(async () => {
    h = await startOidcHarness(dialect)
    await registerFirstAdmin(h.app)
  })
  afterAll(() => h.close())

  it('is refused (400 OIDC_ID_TOKEN_INVALID): the JWKS names another key under the same id', async () => {
    h.issuer.publishForeignKeys(true)
    h.issuer.accounts.set('sub-forged-0001', { email: 'forged@example.test', email_verified: true })
    const flow = await oidcSignIn(h.base, { account: 'sub-forged-0001' })
    expect(flow.callback?.status, flow.callback?.body).toBe(400)
    expect(JSON.parse(flow.callback!.body)).toMatchObject({ success: false, code: 'OIDC_ID_TOKEN_INVALID' })
    expect(JSON.parse(flow.callback!.body).error).toMatch(/signature/)
    expect(h.issuer.requests.get('/jwks')).toBeGreaterThanOrEqual(1)
    expect(flow.session).toBeUndefined()
    expect(await userCount(h)).toBe(1)
  })
})
