import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest'
import { register } from '../helpers/accounts.js'
import { createTestContext, type TestContext } from '../helpers/app.js'
import { browser, type Browser, type Hop } from '../helpers/browser.js'
import { DIALECTS } from '../helpers/database.js'
import {
  providerSettings, providerSignIn, providerUser, startFakeProvider, startProviderLoginApp, userRows, whoAmI,
  type FakeProvider, type ProviderLoginApp,
} from '../helpers/fake-provider.js'

describe.each(DIALECTS)('provider login: when the provider fails on %s', (dialect) => {
  let ctx: TestContext
  let harness: ProviderLoginApp

  beforeAll(async () => {
    ctx = await createTestContext(dialect)
    harness = await startProviderLoginApp(ctx)
    expect((await register(harness.app, { username: 'first_admin', email: 'first.admin@example.com' })).statusCode).toBe(201)
  })
  afterAll(async () => {
    await ctx.close()
    await harness.provider.close()
  })
  beforeEach(async () => {
    await harness.app.services.settings.update(providerSettings(harness.base))
    harness.provider.configure({ user: providerUser(), fail: null, delayMs: 0, tokenErrorStatus: 200 })
  })

  /** The callback refused with `status` and PROVIDER_OAUTH_FAILED in the envelope; nobody created, no session. */
  async function expectFailed(hop: Hop | undefined, status: number, usersBefore: number): Promise<void> {
    expect(hop?.status, hop?.body).toBe(status)
    expect(JSON.parse(hop!.body)).toMatchObject({ success: false, code: 'PROVIDER_OAUTH_FAILED', error: expect.any(String) })
    expect(hop!.setCookie.filter((line) => /^auth_session=[^;]/.test(line))).toEqual([])
    expect((await userRows(harness.app)).length).toBe(usersBefore)
  }

  async function untilCallback(b: Browser): Promise<URL> {
    const login = await b.get(`${harness.base}/api/auth/provider/login`)
    return new URL((await b.get(login.location!)).location!)
  }

  describe('a refused code: 400 PROVIDER_OAUTH_FAILED', () => {
    it.each([200, 401] as const)('when the token endpoint answers bad_verification_code with %i', async (tokenErrorStatus) => {
      harness.provider.configure({ tokenErrorStatus })
      const before = (await userRows(harness.app)).length
      const b = browser()
      const callback = await untilCallback(b)
      callback.searchParams.set('code', 'not-a-code-the-provider-issued')
      await expectFailed(await b.get(callback.toString()), 400, before)
    })

    it('when the code was already exchanged (the provider refuses it the second time)', async () => {
      const b = browser()
      const callback = await untilCallback(b)
      const code = callback.searchParams.get('code')!
      // Spend the code at the provider first, as an eavesdropper racing the browser would.
      const spent = await fetch(`${harness.provider.url}/login/oauth/access_token`, {
        method: 'POST', headers: { accept: 'application/json', 'content-type': 'application/json' },
        body: JSON.stringify({ client_id: 'cid', client_secret: 'csecret', code }),
      })
      expect(((await spent.json()) as { access_token?: string }).access_token).toBeDefined()
      const before = (await userRows(harness.app)).length
      await expectFailed(await b.get(callback.toString()), 400, before)
    })
  })

  it('a wrong client secret in the settings: the provider refuses the exchange, the envelope says so', async () => {
    await harness.app.services.settings.update([{ key: 'provider.oauth.client_secret', value: 'not-the-secret' }])
    const before = (await userRows(harness.app)).length
    const flow = await providerSignIn(browser(), harness)
    expect([400, 502]).toContain(flow.callback?.status)
    expect(JSON.parse(flow.callback!.body)).toMatchObject({ success: false, code: 'PROVIDER_OAUTH_FAILED' })
    expect(flow.session).toBeUndefined()
    expect((await userRows(harness.app)).length).toBe(before)
  })

  it.each(['token', 'user', 'emails'] as const)('a provider 500 at the %s endpoint: 502 PROVIDER_OAUTH_FAILED', async (fail) => {
    harness.provider.configure({ fail })
    const before = (await userRows(harness.app)).length
    const flow = await providerSignIn(browser(), harness)
    await expectFailed(flow.callback, 502, before)
  })

  it('a slow provider (200 ms for every answer) still signs in', async () => {
    harness.provider.configure({ delayMs: 200 })
    const started = Date.now()
    const flow = await providerSignIn(browser(), harness)
    // authorize, token, /user, /user/emails: four slow answers.
    expect(Date.now() - started).toBeGreaterThanOrEqual(4 * 190)
    expect(flow.callback?.status, flow.callback?.body).toBe(302)
    expect((await whoAmI(harness.base, flow.session!)).status).toBe(200)
  })

  describe('an API host that does not answer', () => {
    let deadCtx: TestContext
    let other: ProviderLoginApp
    beforeAll(async () => {
      const dead: FakeProvider = await startFakeProvider()
      await dead.close()
      // An app of its own: its settings must not move the callback URL of the one above.
      deadCtx = await createTestContext(dialect)
      const { app } = await deadCtx.build({ env: { PROVIDER_OAUTH_URL: harness.provider.url, PROVIDER_API_URL: dead.url, RATE_LIMIT_ENABLED: 'false' } })
      const base = await app.listen({ port: 0, host: '127.0.0.1' })
      await app.services.settings.update(providerSettings(base))
      expect((await register(app, { username: 'first_admin', email: 'first.admin@example.com' })).statusCode).toBe(201)
      other = { app, base, provider: harness.provider }
    })
    afterAll(() => deadCtx.close())

    it('502 PROVIDER_OAUTH_FAILED, no session, nobody created', async () => {
      const flow = await providerSignIn(browser(), other)
      expect(flow.callback?.status, flow.callback?.body).toBe(502)
      expect(JSON.parse(flow.callback!.body)).toMatchObject({ success: false, code: 'PROVIDER_OAUTH_FAILED', error: expect.any(String) })
      expect(flow.session).toBeUndefined()
      expect(await userRows(other.app)).toHaveLength(1)
    })
  })
})
