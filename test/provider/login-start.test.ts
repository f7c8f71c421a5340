import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest'
import { register } from '../helpers/accounts.js'
import { createTestContext, type TestContext } from '../helpers/app.js'
import { browser, type Hop } from '../helpers/browser.js'
import { DIALECTS } from '../helpers/database.js'
import {
  CALLBACK_PATH, PAGE_URL, providerSettings, providerSignIn, providerUser, startProviderLoginApp, whoAmI, type ProviderLoginApp,
} from '../helpers/fake-provider.js'

const PUBLIC_URL = 'http://localhost:3000'

describe.each(DIALECTS)('provider login: status, start and return_to on %s', (dialect) => {
  let ctx: TestContext
  let harness: ProviderLoginApp
  const get = (path: string) => browser().get(`${harness.base}${path}`)
  const json = (hop: Hop) => JSON.parse(hop.body)
  const settings = (changes: Array<{ key: string; value: unknown }>) => harness.app.services.settings.update(changes)

  function expectRefused(hop: Hop, status: number, code: string): void {
    expect(hop.status).toBe(status)
    expect(json(hop)).toMatchObject({ success: false, code, error: expect.any(String) })
    expect(hop.location).toBeUndefined()
    expect(hop.setCookie).toEqual([])
  }

  beforeAll(async () => {
    ctx = await createTestContext(dialect)
    harness = await startProviderLoginApp(ctx)
    // A provider login needs a first user, who registers by email.
    expect((await register(harness.app, { username: 'first_admin', email: 'first.admin@example.com' })).statusCode).toBe(201)
  })
  afterAll(async () => {
    await ctx.close()
    await harness.provider.close()
  })
  beforeEach(async () => {
    await settings([...providerSettings(harness.base), { key: 'provider.oauth.scope', value: 'user:email' }, { key: 'global.enable_login', value: true }])
    harness.provider.configure({ user: providerUser(), deny: false })
  })

  describe('GET /api/auth/provider/status and the switches of GET /api/auth/provider/login', () => {
    const cases: Array<[enabled: boolean, clientId: string, clientSecret: string, configured: boolean]> = [
      [false, '', '', false],
      [true, '', '', false],
      [true, 'cid', '', false],
      [true, '', 'csecret', false],
      [false, 'cid', 'csecret', true],
      [false, 'cid', '', false],
      [true, 'cid', 'csecret', true],
    ]
    it.each(cases)('enabled=%s, client id %j, secret %j: status says configured=%s; login starts only when both', async (enabled, clientId, clientSecret, configured) => {
      await settings([
        { key: 'provider.oauth.enabled', value: enabled },
        { key: 'provider.oauth.client_id', value: clientId },
        { key: 'provider.oauth.client_secret', value: clientSecret },
      ])
      const status = await get('/api/auth/provider/status')
      expect(status.status).toBe(200)
      expect(json(status)).toEqual({ success: true, data: { enabled, configured } })

      const login = await get('/api/auth/provider/login')
      if (enabled && configured) {
        expect(login.status).toBe(302)
        expect(login.location).toMatch(new RegExp(`^${harness.provider.url}/login/oauth/authorize\\?`))
      } else {
        expectRefused(login, 403, 'PROVIDER_OAUTH_DISABLED')
      }
    })

    it('answers 403 LOGIN_DISABLED while Enable Login is off, though the provider is configured', async () => {
      await settings([{ key: 'global.enable_login', value: false }])
      expectRefused(await get('/api/auth/provider/login'), 403, 'LOGIN_DISABLED')
      expectRefused(await get('/api/auth/provider/login?return_to=%2Fdashboard'), 403, 'LOGIN_DISABLED')
      await settings([{ key: 'global.enable_login', value: true }])
      expect((await get('/api/auth/provider/login')).status).toBe(302)
    })
  })

  describe('the redirect to the provider', () => {
    it('carries the client id, the callback URL, the scope and a fresh state of at least 128 bits', async () => {
      const states: string[] = []
      for (let i = 0; i < 3; i++) {
        const login = await get('/api/auth/provider/login')
        expect(login.status).toBe(302)
        const target = new URL(login.location!)
        expect(`${target.origin}${target.pathname}`).toBe(`${harness.provider.url}/login/oauth/authorize`)
        expect(target.searchParams.get('client_id')).toBe('cid')
        expect(target.searchParams.get('redirect_uri')).toBe(`${harness.base}${CALLBACK_PATH}`)
        expect(target.searchParams.get('scope')).toBe('user:email')
        // 22 base64url characters carry 132 bits.
        const state = target.searchParams.get('state')!
        expect(state).toMatch(/^[A-Za-z0-9_-]{22,}$/)
        expect(login.location).not.toContain('csecret')
        states.push(state)
      }
      expect(new Set(states).size).toBe(3)
    })

    it('keeps the state in an HttpOnly, SameSite=Lax cookie that lives 10 minutes, and sets no session', async () => {
      const login = await get('/api/auth/provider/login')
      const state = new URL(login.location!).searchParams.get('state')!
      const stateCookie = login.setCookie.find((line) => line.split(';')[0]!.includes(state))
      expect(stateCookie, login.setCookie.join('\n')).toBeDefined()
      const attributes = stateCookie!.split(';').slice(1).map((part) => part.trim().toLowerCase())
      expect(attributes).toContain('httponly')
      expect(attributes).toContain('max-age=600')
      // The provider sends the browser back by a top-level GET from another site: Strict would drop it.
      expect(attributes).toContain('samesite=lax')
      expect(login.setCookie.some((line) => line.startsWith('auth_session='))).toBe(false)
    })

    it('takes the callback URL and the scope from the settings', async () => {
      await settings([
        { key: 'provider.oauth.callback_url', value: 'https://login.example.test/api/auth/provider/callback' },
        { key: 'provider.oauth.scope', value: 'read:user user:email' },
      ])
      const target = new URL((await get('/api/auth/provider/login')).location!)
      expect(target.searchParams.get('redirect_uri')).toBe('https://login.example.test/api/auth/provider/callback')
      expect(target.searchParams.get('scope')).toBe('read:user user:email')
    })
  })

  describe('return_to (no open redirect)', () => {
    async function landingFor(returnTo?: string): Promise<URL> {
      const flow = await providerSignIn(browser(), harness, returnTo)
      expect(flow.callback?.status, flow.callback?.body).toBe(302)
      expect(flow.session).toBeDefined()
      expect((await whoAmI(harness.base, flow.session!)).status).toBe(200)
      return new URL(flow.landing!)
    }

    it('without return_to, lands on global.page_url', async () => {
      expect((await landingFor()).href).toBe(`${PAGE_URL}/`)
    })

    it('lands on the backend itself when global.page_url is empty', async () => {
      await settings([{ key: 'global.page_url', value: '' }])
      expect([PUBLIC_URL, harness.base]).toContain((await landingFor()).origin)
    })

    it('honours a path on this service', async () => {
      const landing = await landingFor('/dashboard?tab=1')
      expect([PUBLIC_URL, harness.base]).toContain(landing.origin)
      expect(`${landing.pathname}${landing.search}`).toBe('/dashboard?tab=1')
    })

    it("honours a URL on global.page_url's origin", async () => {
      expect((await landingFor(`${PAGE_URL}/teams/42?tab=members`)).href).toBe(`${PAGE_URL}/teams/42?tab=members`)
    })

    it.each([
      'https://evil.example/x',
      '//evil.example',
      '//evil.example/dashboard',
      '/\\evil.example',
      '\\\\evil.example',
      'javascript:alert(document.cookie)',
      'JavaScript:alert(1)',
      'data:text/html,<script>alert(1)</script>',
      'https://app.example.test.evil.example/x',
      'https://app.example.test@evil.example/x',
      'http://app.example.test/x',
      'https://app.example.test:8443/x',
      `${PUBLIC_URL.replace('localhost', 'evil.example')}/dashboard`,
    ])('drops %j and lands on global.page_url instead', async (returnTo) => {
      const landing = await landingFor(returnTo)
      expect(landing.href).toBe(`${PAGE_URL}/`)
    })
  })
})
