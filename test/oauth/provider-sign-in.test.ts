import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { register } from '../helpers/accounts.js'
import { createTestContext, type TestContext } from '../helpers/app.js'
import { browser } from '../helpers/browser.js'
import { DIALECTS } from '../helpers/database.js'
import { providerSignIn, providerUser, startFakeProvider, startProviderLoginApp, type FakeProvider, type ProviderLoginApp } from '../helpers/fake-provider.js'
import { authorizeParams, authorizeUrl, htmlTags, inputValue, pkce, unescapeHtml } from '../helpers/oauth.js'

/** The consent page's sign-in offers the provider when it is on, and comes back to the consent. */
describe.each(DIALECTS)('signing in with the identity provider from the consent page on %s', (dialect) => {
  let ctx: TestContext
  let provider: FakeProvider
  let harness: ProviderLoginApp

  beforeAll(async () => {
    ctx = await createTestContext(dialect)
    provider = await startFakeProvider()
    harness = await startProviderLoginApp(ctx, provider)
    expect((await register(harness.app, { username: 'first_admin', email: 'first.admin@example.com' })).statusCode).toBe(201)
  })
  afterAll(async () => {
    await ctx.close()
    await provider.close()
  })

  /** A fresh browser's authorization request, up to the sign-in page. */
  async function signInPage() {
    const b = browser()
    const hops = await b.follow(`${harness.base}${authorizeUrl(authorizeParams(pkce().challenge))}`)
    const page = hops.at(-1)!
    expect(page.status, page.body).toBe(200)
    expect(new URL(page.url).pathname).toBe('/api/oauth2/consent')
    return { b, page, requestId: new URL(page.url).searchParams.get('request_id')! }
  }

  const providerLinks = (html: string) => htmlTags(html, 'a').map((a) => unescapeHtml(a.href ?? '')).filter((href) => href.startsWith('/api/auth/provider/login'))

  it('offers the provider; its sign-in lands back on this consent page, signed in, with the consent form', async () => {
    const { b, page, requestId } = await signInPage()
    const [link] = providerLinks(page.body)
    expect(link).toBeDefined()
    const returnTo = new URL(link!, harness.base).searchParams.get('return_to')
    expect(returnTo).toBe(`/api/oauth2/consent?request_id=${requestId}`)

    provider.configure({ user: providerUser({ login: 'octo-consenter' }) })
    const flow = await providerSignIn(b, harness, returnTo!)
    expect(flow.callback?.status, flow.callback?.body).toBe(302)
    expect(flow.landing).toBe(`${harness.base}${returnTo}`)

    const consent = await b.get(flow.landing!)
    expect(consent.status, consent.body).toBe(200)
    expect(inputValue(consent.body, 'csrf_token')).toEqual(expect.any(String))
    expect(consent.body).toContain('octo-consenter')
  })

  it('does not offer it while provider login is off', async () => {
    await harness.app.services.settings.update([{ key: 'provider.oauth.enabled', value: false }])
    try {
      const { page } = await signInPage()
      expect(providerLinks(page.body)).toEqual([])
      expect(inputValue(page.body, 'request_id')).toEqual(expect.any(String))
    } finally {
      await harness.app.services.settings.update([{ key: 'provider.oauth.enabled', value: true }])
    }
  })
})
