/**
 * Someone whose only way in is OpenID Connect can authorize the command-line client: the OAuth
 * sign-in page (shown by the consent route to a browser without a session) offers "Sign in with
 * <display name>" coming back to the same authorization request, which then asks for consent.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { browser } from '../helpers/browser.js'
import { DIALECTS } from '../helpers/database.js'
import { authorizeParams, authorizeUrl, pkce } from '../helpers/oauth.js'
import { oidcSignIn, registerFirstAdmin, startOidcHarness, type OidcHarness } from './harness.js'

const HTML = { accept: 'text/html' }

describe.each(DIALECTS)('the OAuth sign-in page and OpenID Connect on %s', (dialect) => {
  let h: OidcHarness

  beforeAll(async () => {
    h = await startOidcHarness(dialect)
    await registerFirstAdmin(h.app)
    await h.app.services.settings.update([{ key: 'oidc.display_name', value: 'Acme SSO' }])
  })
  afterAll(() => h.close())

  it('offers the button, which comes back to the same request signed in', async () => {
    h.issuer.accounts.set('sub-cli-0001', { email: 'cli.person@example.test', email_verified: true })
    const agent = browser()
    const authorized = await agent.get(`${h.base}${authorizeUrl(authorizeParams(pkce().challenge))}`, HTML)
    expect(authorized.status).toBe(302)
    const consentUrl = authorized.location!
    const consent = await agent.get(consentUrl, HTML)
    expect(consent.status).toBe(200)
    const consentPath = `${new URL(consentUrl).pathname}${new URL(consentUrl).search}`
    expect(consent.body).toContain(`href="/api/auth/oidc/login?return_to=${encodeURIComponent(consentPath).replace(/&/g, '&amp;')}"`)
    expect(consent.body).toContain('Sign in with Acme SSO')

    const flow = await oidcSignIn(h.base, { account: 'sub-cli-0001', agent, returnTo: consentPath })
    expect(flow.callback?.status, flow.callback?.body).toBe(302)
    expect(flow.callback?.location).toBe(`${h.base}${consentPath}`)
    const details = await agent.get(flow.callback!.location!, { accept: 'application/json' })
    expect(details.status).toBe(200)
    expect(JSON.parse(details.body).data).toMatchObject({ signed_in: true, client_id: 'service-gateway-cli' })
  })
})
