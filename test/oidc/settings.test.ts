/**
 * The `oidc.*` settings and what follows from them: the client secret is write-only (never
 * returned: value null, is_set), the issuer must be a URL the outbound rules allow, the status
 * route says whether the button is offered, the sign-in page shows "Sign in with <display name>",
 * the switches refuse sign-in (LOGIN_DISABLED, OIDC_DISABLED), and OIDC_ISSUER / OIDC_CLIENT_ID /
 * OIDC_CLIENT_SECRET seed the settings once, never over a value chosen through the service.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { ConfigError, loadConfig } from '../../src/config.js'
import { createTestContext, TEST_SECRET, type TestContext } from '../helpers/app.js'
import { DIALECTS } from '../helpers/database.js'
import { CLIENT_SECRET } from './issuer.js'
import { oidcSettings, oidcSignIn, registerFirstAdmin, startOidcHarness, type OidcHarness } from './harness.js'

const HTML = { accept: 'text/html' }

describe.each(DIALECTS)('OpenID Connect settings on %s', (dialect) => {
  let h: OidcHarness
  let admin: { cookie: string }
  const put = (key: string, value: unknown) => h.app.inject({ method: 'PUT', url: `/api/settings/${key}`, headers: { cookie: admin.cookie }, payload: { value } })
  const status = async () => (await h.app.inject({ method: 'GET', url: '/api/auth/oidc/status' })).json()

  beforeAll(async () => {
    h = await startOidcHarness(dialect, { configure: false })
    admin = await registerFirstAdmin(h.app)
  })
  afterAll(() => h.close())

  it('unconfigured: the status says so, login answers 403 OIDC_DISABLED, the sign-in page has no button', async () => {
    expect(await status()).toEqual({ success: true, data: { enabled: false, display_name: 'Single sign-on' } })
    const login = await h.app.inject({ method: 'GET', url: '/api/auth/oidc/login' })
    expect(login.statusCode).toBe(403)
    expect(login.json()).toMatchObject({ success: false, code: 'OIDC_DISABLED' })
    const page = await h.app.inject({ method: 'GET', url: '/api/auth/sign-in', headers: HTML })
    expect(page.body).not.toContain('/api/auth/oidc/login')
    // Switched on without credentials: still not offered.
    expect((await put('oidc.enabled', true)).statusCode).toBe(200)
    expect((await status()).data.enabled).toBe(false)
  })

  it('the client secret is write-only: stored sealed, answered as null with is_set, never in the group or the list', async () => {
    const written = await put('oidc.client_secret', CLIENT_SECRET)
    expect(written.statusCode, written.body).toBe(200)
    expect(written.body).not.toContain(CLIENT_SECRET)
    const one = await h.app.inject({ method: 'GET', url: '/api/settings/oidc.client_secret', headers: { cookie: admin.cookie } })
    expect(one.json().data.setting).toMatchObject({ key: 'oidc.client_secret', value: null, is_set: true, encrypted: true })
    for (const url of ['/api/settings/groups/oidc', '/api/settings']) {
      const listed = await h.app.inject({ method: 'GET', url, headers: { cookie: admin.cookie } })
      expect(listed.statusCode).toBe(200)
      expect(listed.body).not.toContain(CLIENT_SECRET)
    }
    const group = (await h.app.inject({ method: 'GET', url: '/api/settings/groups/oidc', headers: { cookie: admin.cookie } })).json().data
    expect(JSON.stringify(group)).toContain('oidc.display_name')
  })

  it('refuses issuers the outbound rules would not fetch, and malformed values', async () => {
    for (const [key, value] of [
      ['oidc.issuer', 'http://10.1.2.3/realms/acme'],
      ['oidc.issuer', 'https://127.0.0.1:1/realms/acme'],
      ['oidc.issuer', 'http://sso.example.com'],
      ['oidc.issuer', 'ftp://sso.example.com'],
      ['oidc.issuer', 'https://user:pw@sso.example.com'],
      ['oidc.issuer', 'https://sso.example.com/?tenant=1'],
      ['oidc.scope', 'email profile'],
      ['oidc.scope', 'openid  email'],
      ['oidc.display_name', '   '],
      ['oidc.display_name', 'x'.repeat(61)],
      ['oidc.email_verified_claim', 'has space'],
      ['oidc.client_id', 'tab\there'],
    ] as const) {
      const refused = await put(key, value)
      expect(refused.statusCode, `${key}=${value}: ${refused.body}`).toBe(400)
      expect(refused.json()).toMatchObject({ code: 'VALIDATION_ERROR', details: [{ field: key }] })
    }
  })

  it('configured: the status and the sign-in page offer "Sign in with <display name>"; the switches refuse sign-in', async () => {
    for (const change of oidcSettings(h.issuer, { 'oidc.display_name': 'Acme <SSO>' })) expect((await put(change.key, change.value)).statusCode).toBe(200)
    expect(await status()).toEqual({ success: true, data: { enabled: true, display_name: 'Acme <SSO>' } })
    const page = await h.app.inject({ method: 'GET', url: '/api/auth/sign-in', headers: HTML })
    expect(page.body).toContain('href="/api/auth/oidc/login?return_to=%2Fapi%2Fauth%2Faccount"')
    expect(page.body).toContain('Sign in with Acme &lt;SSO&gt;')

    expect((await put('global.enable_login', false)).statusCode).toBe(200)
    try {
      const login = await h.app.inject({ method: 'GET', url: '/api/auth/oidc/login' })
      expect(login.statusCode).toBe(403)
      expect(login.json().code).toBe('LOGIN_DISABLED')
      const browserRefusal = await h.app.inject({ method: 'GET', url: '/api/auth/oidc/login', headers: HTML })
      expect(browserRefusal.statusCode).toBe(403)
      expect(browserRefusal.headers['content-type']).toMatch(/^text\/html/)
    } finally {
      expect((await put('global.enable_login', true)).statusCode).toBe(200)
    }

    // Login switched off between the redirect and the callback: the callback refuses too.
    h.issuer.accounts.set('sub-switch-0001', { email: 'switch@example.test', email_verified: true })
    const started = await oidcSignIn(h.base, { account: 'sub-switch-0001', stopBeforeCallback: true })
    expect((await put('oidc.enabled', false)).statusCode).toBe(200)
    expect((await status()).data.enabled).toBe(false)
    const callback = new URL(started.callbackUrl!)
    const state = callback.searchParams.get('state')!
    const refused = await h.app.inject({ method: 'GET', url: `${callback.pathname}${callback.search}`, headers: { cookie: `oidc_state=${state}` } })
    expect(refused.statusCode).toBe(403)
    expect(refused.json().code).toBe('OIDC_DISABLED')
    expect((await put('oidc.enabled', true)).statusCode).toBe(200)
  })

  it('changing a setting audits the key, never the secret', async () => {
    const audit = await h.app.inject({ method: 'GET', url: '/api/admin/audit-log?type=settings.updated&limit=100', headers: { cookie: admin.cookie } })
    expect(audit.statusCode).toBe(200)
    expect(audit.body).toContain('oidc.client_secret')
    expect(audit.body).not.toContain(CLIENT_SECRET)
  })
})

describe.each(DIALECTS)('OIDC_ISSUER, OIDC_CLIENT_ID and OIDC_CLIENT_SECRET on %s', (dialect) => {
  const env = { OIDC_ISSUER: 'https://sso.example.com/realms/acme', OIDC_CLIENT_ID: 'service-backend', OIDC_CLIENT_SECRET: 'seeded-secret-0123456789' }
  let ctx: TestContext

  beforeAll(async () => {
    ctx = await createTestContext(dialect, { file: true })
  })
  afterAll(() => ctx.close())

  it('seed and switch on OpenID Connect sign-in for a fresh database; a value chosen later through the service is kept at the next start', async () => {
    const first = await ctx.build({ env })
    const settings = first.app.services.settings
    expect(await settings.get('oidc.issuer')).toBe(env.OIDC_ISSUER)
    expect(await settings.get('oidc.client_id')).toBe(env.OIDC_CLIENT_ID)
    expect(await settings.get('oidc.client_secret')).toBe(env.OIDC_CLIENT_SECRET)
    expect(await settings.get('oidc.enabled')).toBe(true)
    expect((await first.app.inject({ method: 'GET', url: '/api/auth/oidc/status' })).json().data).toEqual({ enabled: true, display_name: 'Single sign-on' })
    await settings.update([{ key: 'oidc.client_id', value: 'chosen-by-the-operator' }, { key: 'oidc.enabled', value: false }])
    await first.app.close()

    const second = await ctx.build({ env: { ...env, OIDC_CLIENT_ID: 'another-id' } })
    expect(await second.app.services.settings.get('oidc.client_id')).toBe('chosen-by-the-operator')
    expect(await second.app.services.settings.get('oidc.enabled')).toBe(false)
  })
})

describe('the OIDC_* variables', () => {
  const base = { ENCRYPTION_SECRET: TEST_SECRET, DATA_DIR: '/tmp/oidc-config-test' }
  it('must be set all three or none, with an http(s) issuer', () => {
    expect(() => loadConfig({ ...base, OIDC_ISSUER: 'https://sso.example.com', OIDC_CLIENT_ID: 'x' })).toThrow(ConfigError)
    expect(() => loadConfig({ ...base, OIDC_ISSUER: 'sso.example.com', OIDC_CLIENT_ID: 'x', OIDC_CLIENT_SECRET: 'y' })).toThrow(/OIDC_ISSUER must be an http\(s\) URL/)
    expect(loadConfig(base).oidcSeed).toBeNull()
    expect(loadConfig({ ...base, OIDC_ISSUER: 'https://sso.example.com', OIDC_CLIENT_ID: 'x', OIDC_CLIENT_SECRET: 'y' }).oidcSeed).toEqual({ issuer: 'https://sso.example.com', clientId: 'x', clientSecret: 'y' })
  })
})
