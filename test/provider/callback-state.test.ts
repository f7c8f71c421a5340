import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest'
import { register } from '../helpers/accounts.js'
import { createTestContext, type TestContext } from '../helpers/app.js'
import { browser, type Browser, type Hop } from '../helpers/browser.js'
import { DIALECTS } from '../helpers/database.js'
import {
  providerSettings, providerSignIn, providerUser, startProviderLoginApp, userRows, whoAmI, type ProviderLoginApp,
} from '../helpers/fake-provider.js'

const STATE_LIKE = 'A'.repeat(43)

describe.each(DIALECTS)('provider login: the callback and its state on %s', (dialect) => {
  let ctx: TestContext
  let harness: ProviderLoginApp
  const settings = (changes: Array<{ key: string; value: unknown }>) => harness.app.services.settings.update(changes)

  /** Login and authorize in `b`, stopping before the callback: its URL (with code and state). */
  async function untilCallback(b: Browser): Promise<URL> {
    const login = await b.get(`${harness.base}/api/auth/provider/login`)
    expect(login.status).toBe(302)
    const authorize = await b.get(login.location!)
    expect(authorize.status).toBe(302)
    return new URL(authorize.location!)
  }

  /** A new code for `state` from the provider (the user authorizes again). */
  async function freshCode(state: string): Promise<string> {
    const authorize = new URL(`${harness.provider.url}/login/oauth/authorize`)
    for (const [key, value] of Object.entries({ client_id: 'cid', redirect_uri: `${harness.base}/api/auth/provider/callback`, scope: 'user:email', state })) {
      authorize.searchParams.set(key, value)
    }
    const hop = await browser().get(authorize.toString())
    return new URL(hop.location!).searchParams.get('code')!
  }

  function withParams(url: URL, changes: Record<string, string | null>): string {
    const next = new URL(url)
    for (const [key, value] of Object.entries(changes)) {
      if (value === null) next.searchParams.delete(key)
      else next.searchParams.set(key, value)
    }
    return next.toString()
  }

  function expectRefused(hop: Hop, status: number, code: string): void {
    expect(hop.status, hop.body).toBe(status)
    expect(JSON.parse(hop.body)).toMatchObject({ success: false, code, error: expect.any(String) })
    expect(hop.setCookie.filter((line) => /^auth_session=[^;]/.test(line))).toEqual([])
  }

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
    await settings([...providerSettings(harness.base), { key: 'global.enable_login', value: true }])
    harness.provider.configure({ user: providerUser(), deny: false })
  })

  describe('400 PROVIDER_STATE_MISMATCH', () => {
    it('when the state is missing', async () => {
      const b = browser()
      const callback = await untilCallback(b)
      expectRefused(await b.get(withParams(callback, { state: null })), 400, 'PROVIDER_STATE_MISMATCH')
    })

    it('when the state differs from the cookie', async () => {
      const b = browser()
      const callback = await untilCallback(b)
      expectRefused(await b.get(withParams(callback, { state: STATE_LIKE })), 400, 'PROVIDER_STATE_MISMATCH')
    })

    it("when the state is another browser's", async () => {
      const mine = browser()
      const theirs = browser()
      await untilCallback(mine)
      const callback = await untilCallback(theirs)
      // The attacker's authorization response replayed in the victim's browser (login CSRF).
      expectRefused(await mine.get(callback.toString()), 400, 'PROVIDER_STATE_MISMATCH')
    })

    it('when the browser carries no state cookie', async () => {
      const callback = await untilCallback(browser())
      expectRefused(await browser().get(callback.toString()), 400, 'PROVIDER_STATE_MISMATCH')
    })

    it('and no user is created by any of them', async () => {
      const before = (await userRows(harness.app)).length
      const b = browser()
      const callback = await untilCallback(b)
      await b.get(withParams(callback, { state: STATE_LIKE }))
      await browser().get(callback.toString())
      expect((await userRows(harness.app)).length).toBe(before)
      expect(harness.provider.tokens.filter((token) => token.code === callback.searchParams.get('code'))).toEqual([])
    })
  })

  describe('single use', () => {
    it('the browser cannot complete a second callback with the same state, even with a fresh code', async () => {
      const b = browser()
      const callback = await untilCallback(b)
      const first = await b.get(callback.toString())
      expect(first.status, first.body).toBe(302)
      const state = callback.searchParams.get('state')!
      expectRefused(await b.get(withParams(callback, { code: await freshCode(state) })), 400, 'PROVIDER_STATE_MISMATCH')
    })

    it('a replayed state cookie is refused once its state was used, even with a fresh code', async () => {
      const b = browser()
      const login = await b.get(`${harness.base}/api/auth/provider/login`)
      const stateCookies = login.setCookie.map((line) => line.split(';')[0]!)
      const callback = new URL((await b.get(login.location!)).location!)
      expect((await b.get(callback.toString())).status).toBe(302)

      // Someone who captured the state cookie and the state replays them with a new code.
      const replay = withParams(callback, { code: await freshCode(callback.searchParams.get('state')!) })
      const response = await fetch(replay, { redirect: 'manual', headers: { cookie: stateCookies.join('; ') } })
      expect(response.status).toBe(400)
      expect(await response.json()).toMatchObject({ success: false, code: 'PROVIDER_STATE_MISMATCH' })
      expect(response.headers.getSetCookie().filter((line) => /^auth_session=[^;]/.test(line))).toEqual([])
    })
  })

  describe('no session without a completed authorization', () => {
    it('when the user refuses at the provider (error=access_denied)', async () => {
      harness.provider.configure({ deny: true })
      const before = (await userRows(harness.app)).length
      const flow = await providerSignIn(browser(), harness)
      expect(new URL(flow.callback!.url).searchParams.get('error')).toBe('access_denied')
      expect(flow.callback!.status).toBeGreaterThanOrEqual(400)
      expect(flow.callback!.status).toBeLessThan(500)
      expect(JSON.parse(flow.callback!.body)).toMatchObject({ success: false, code: expect.any(String) })
      expect(flow.session).toBeUndefined()
      expect((await userRows(harness.app)).length).toBe(before)
    })

    it('when the code is missing', async () => {
      const b = browser()
      const callback = await untilCallback(b)
      const hop = await b.get(withParams(callback, { code: null }))
      expect(hop.status).toBeGreaterThanOrEqual(400)
      expect(hop.status).toBeLessThan(500)
      expect(JSON.parse(hop.body)).toMatchObject({ success: false })
      expect(hop.setCookie.filter((line) => /^auth_session=[^;]/.test(line))).toEqual([])
    })
  })

  describe('switches turned off between the start and the callback', () => {
    it('403 LOGIN_DISABLED when Enable Login went off', async () => {
      const b = browser()
      const callback = await untilCallback(b)
      await settings([{ key: 'global.enable_login', value: false }])
      expectRefused(await b.get(callback.toString()), 403, 'LOGIN_DISABLED')
    })

    it('403 PROVIDER_OAUTH_DISABLED when the provider was switched off', async () => {
      const b = browser()
      const callback = await untilCallback(b)
      await settings([{ key: 'provider.oauth.enabled', value: false }])
      expectRefused(await b.get(callback.toString()), 403, 'PROVIDER_OAUTH_DISABLED')
    })
  })

  it('a complete callback sets a working session and clears the state cookie', async () => {
    const b = browser()
    const flow = await providerSignIn(b, harness)
    expect(flow.callback!.status).toBe(302)
    expect(flow.session).toMatch(/^auth_session=.{43,}$/)
    const sessionLine = flow.callback!.setCookie.find((line) => line.startsWith('auth_session='))!
    expect(sessionLine.toLowerCase()).toContain('httponly')
    expect((await whoAmI(harness.base, flow.session!)).user?.email).toBe(harness.provider.options.user.emails[0]!.email)
    const state = new URL(flow.callback!.url).searchParams.get('state')!
    expect(b.cookieHeader(flow.callback!.url)).not.toContain(state)
  })
})
