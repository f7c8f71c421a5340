import type { FastifyInstance, LightMyRequestResponse } from 'fastify'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { register, sessionCookie } from '../helpers/accounts.js'
import { createTestContext, type TestContext } from '../helpers/app.js'
import { manualClock } from '../helpers/clock.js'
import { DIALECTS } from '../helpers/database.js'
import {
  ALL_SCOPES, authorizeAndApprove, bearer, CLI_CLIENT_ID, consentDetails, consentRequestId, exchangeCode, getWithBearer, introspect,
  ISSUER, issueTokens, locationOf, pkce, authorizeParams, authorizeUrl, refresh, registerClient, revoke, startAuthorization, type TokenSet,
} from '../helpers/oauth.js'
import { signUp, type Account } from '../helpers/teams.js'

const MINUTE = 60_000
const SATELLITE_KEY = { authorization: 'Bearer service_satkey_k' }

/** Revocation, introspection, userinfo, dynamic registration, metadata. */
describe.each(DIALECTS)('OAuth2 endpoints on %s', (dialect) => {
  let ctx: TestContext
  let app: FastifyInstance
  const clock = manualClock(Date.now())
  let admin: Account
  let user: Account
  let seq = 0

  const me = (token: string) => getWithBearer(app, '/api/users/me', token)
  const expectLive = async (token: string) => expect((await me(token)).statusCode).toBe(200)
  const expectDead = async (token: string) => {
    const response = await me(token)
    expect(response.statusCode).toBe(401)
    expect(response.headers['www-authenticate']).toContain('invalid_token')
  }

  function expectOAuthError(response: LightMyRequestResponse, status: number, error: string) {
    expect(response.statusCode, response.body).toBe(status)
    expect(response.json()).toMatchObject({ success: false, error, error_description: expect.any(String), code: expect.any(String) })
  }

  const adminIntrospect = (token: string) => introspect(app, token, { cookie: admin.cookie })

  async function dynamicClient(scope = 'user:read offline_access'): Promise<{ clientId: string; redirectUri: string }> {
    const redirectUri = `https://client-${++seq}.example.com/callback`
    return { clientId: await registerClient(app, { client_name: `Tool ${seq}`, redirect_uris: [redirectUri], scope }), redirectUri }
  }

  beforeAll(async () => {
    ctx = await createTestContext(dialect)
    app = (await ctx.build({
      clock,
      env: { RATE_LIMIT_ENABLED: 'false' },
      credentials: { satelliteKey: async (secret) => (secret === 'k' ? { kind: 'satellite', satelliteId: 's1', teamId: null, disabled: false } : null) },
    })).app
    admin = await signUp(app, 'endpoints_admin')
    const registered = await register(app, { username: 'endpoints_user', email: 'endpoints.user@example.com', first_name: 'Ada', last_name: 'Lovelace' })
    expect(registered.statusCode).toBe(201)
    user = { id: registered.json().data.user.id, username: 'endpoints_user', email: 'endpoints.user@example.com', cookie: sessionCookie(registered)! }
  })
  afterAll(() => ctx.close())

  describe('POST /api/oauth2/revoke', () => {
    it('an access token: 200, that token dies, the refresh token keeps working', async () => {
      const tokens = await issueTokens(app, user.cookie, 'user:read offline_access')
      const response = await revoke(app, { token: tokens.access_token, token_type_hint: 'access_token', client_id: CLI_CLIENT_ID })
      expect(response.statusCode).toBe(200)
      expect(response.json()).toEqual({ success: true })
      await expectDead(tokens.access_token)
      const refreshed = await refresh(app, tokens.refresh_token!)
      expect(refreshed.statusCode, refreshed.body).toBe(200)
      await expectLive(refreshed.json().access_token)
    })

    it('a refresh token: 200, the whole grant dies (its access tokens too)', async () => {
      const first = await issueTokens(app, user.cookie, 'user:read offline_access')
      const second: TokenSet = (await refresh(app, first.refresh_token!)).json()
      const response = await revoke(app, { token: second.refresh_token!, client_id: CLI_CLIENT_ID })
      expect(response.statusCode).toBe(200)
      expect(response.json()).toEqual({ success: true })
      await expectDead(second.access_token)
      await expectDead(first.access_token)
      expectOAuthError(await refresh(app, second.refresh_token!), 400, 'invalid_grant')
    })

    it('JSON body works; an unknown or already revoked token still answers 200', async () => {
      const tokens = await issueTokens(app, user.cookie, 'user:read')
      const json = await app.inject({ method: 'POST', url: '/api/oauth2/revoke', payload: { token: tokens.access_token, client_id: CLI_CLIENT_ID } })
      expect(json.statusCode).toBe(200)
      await expectDead(tokens.access_token)
      for (const token of [tokens.access_token, 'no-such-token-0123456789']) {
        const response = await revoke(app, { token, client_id: CLI_CLIENT_ID })
        expect(response.statusCode).toBe(200)
        expect(response.json()).toEqual({ success: true })
      }
    })

    it('another client\'s token: 200 and nothing happens; its own client can revoke it', async () => {
      const { clientId, redirectUri } = await dynamicClient()
      const tokens = await issueTokens(app, user.cookie, 'user:read offline_access', { clientId, redirectUri })
      for (const token of [tokens.access_token, tokens.refresh_token!]) {
        const response = await revoke(app, { token, client_id: CLI_CLIENT_ID })
        expect(response.statusCode).toBe(200)
      }
      await expectLive(tokens.access_token)
      expect((await adminIntrospect(tokens.refresh_token!)).json().active).toBe(true)
      expect((await revoke(app, { token: tokens.access_token, client_id: clientId })).statusCode).toBe(200)
      await expectDead(tokens.access_token)
    })

    it('a missing token: 400 invalid_request; an unknown client: 401 invalid_client', async () => {
      expectOAuthError(await revoke(app, { client_id: CLI_CLIENT_ID }), 400, 'invalid_request')
      const tokens = await issueTokens(app, user.cookie, 'user:read')
      expectOAuthError(await revoke(app, { token: tokens.access_token, client_id: 'no-such-client' }), 401, 'invalid_client')
      await expectLive(tokens.access_token)
    })
  })

  describe('POST /api/oauth2/introspect', () => {
    it('without a credential: 401; a non-admin session: 403; a wrong satellite key: 401', async () => {
      const tokens = await issueTokens(app, user.cookie, 'user:read')
      expect((await introspect(app, tokens.access_token)).statusCode).toBe(401)
      const asUser = await introspect(app, tokens.access_token, { cookie: user.cookie })
      expect(asUser.statusCode).toBe(403)
      expect(asUser.json().success).toBe(false)
      expect((await introspect(app, tokens.access_token, { authorization: 'Bearer service_satkey_wrong' })).statusCode).toBe(401)
      // An OAuth access token is not a credential for introspection.
      expect((await introspect(app, tokens.access_token, bearer(tokens.access_token))).statusCode).toBe(401)
    })

    it('an admin session: active with every field for a live token', async () => {
      const teamId = (await app.inject({ method: 'GET', url: '/api/teams/me/default', headers: { cookie: user.cookie } })).json().data.team.id
      const tokens = await issueTokens(app, user.cookie, 'user:read teams:read')
      const response = await adminIntrospect(tokens.access_token)
      expect(response.statusCode, response.body).toBe(200)
      const body = response.json()
      for (const key of ['success', 'active', 'scope', 'client_id', 'username', 'sub', 'exp', 'iat', 'team_id', 'token_type']) expect(body).toHaveProperty(key)
      expect(body).toMatchObject({ success: true, active: true, client_id: CLI_CLIENT_ID, username: user.username, sub: user.id, team_id: teamId })
      expect(body.scope.split(' ').sort()).toEqual(['teams:read', 'user:read'])
      expect(body.token_type).toEqual(expect.any(String))
      expect(Number.isInteger(body.iat) && Number.isInteger(body.exp)).toBe(true)
      expect(body.exp - body.iat).toBe(3600)
      expect(Math.abs(body.iat - Math.floor(clock.now() / 1000))).toBeLessThanOrEqual(1)
    })

    it('a satellite API key may introspect (form or JSON), and learns nothing of a token not for its own resource', async () => {
      // Satellite s1 exists only as this key: it registered no URL, so no token is for it.
      const tokens = await issueTokens(app, user.cookie, 'user:read')
      const form = await introspect(app, tokens.access_token, SATELLITE_KEY)
      expect(form.statusCode, form.body).toBe(200)
      expect(form.json()).toEqual({ success: true, active: false })
      const json = await app.inject({ method: 'POST', url: '/api/oauth2/introspect', headers: SATELLITE_KEY, payload: { token: tokens.access_token } })
      expect(json.statusCode).toBe(200)
      expect(json.json()).toEqual({ success: true, active: false })
    })

    it('inactive: unknown, revoked, and a spent refresh token answer exactly {success, active:false}', async () => {
      expect((await adminIntrospect('no-such-token-0123456789')).json()).toEqual({ success: true, active: false })
      const revoked = await issueTokens(app, user.cookie, 'user:read')
      await revoke(app, { token: revoked.access_token, client_id: CLI_CLIENT_ID })
      const answer = await adminIntrospect(revoked.access_token)
      expect(answer.statusCode).toBe(200)
      expect(answer.json()).toEqual({ success: true, active: false })

      const rotating = await issueTokens(app, user.cookie, 'user:read offline_access')
      expect((await refresh(app, rotating.refresh_token!)).statusCode).toBe(200)
      expect((await adminIntrospect(rotating.refresh_token!)).json()).toEqual({ success: true, active: false })
    })

    it('a missing token parameter: 400', async () => {
      const response = await app.inject({ method: 'POST', url: '/api/oauth2/introspect', headers: { cookie: admin.cookie }, payload: {} })
      expect(response.statusCode).toBe(400)
      expect(response.json().success).toBe(false)
    })
  })

  describe('GET /api/oauth2/userinfo', () => {
    it('a bearer with user:read: the OIDC-style fields at the top level', async () => {
      const tokens = await issueTokens(app, user.cookie, 'user:read')
      const response = await getWithBearer(app, '/api/oauth2/userinfo', tokens.access_token)
      expect(response.statusCode, response.body).toBe(200)
      const body = response.json()
      expect(Object.keys(body).sort()).toEqual(['email', 'email_verified', 'name', 'preferred_username', 'sub', 'success'])
      expect(body).toMatchObject({ success: true, sub: user.id, email: user.email, email_verified: expect.any(Boolean), preferred_username: user.username })
      expect(body.name).toContain('Ada')
      expect(body.name).toContain('Lovelace')
    })

    it('a bearer without user:read: 403 insufficient_scope', async () => {
      const tokens = await issueTokens(app, user.cookie, 'teams:read')
      const response = await getWithBearer(app, '/api/oauth2/userinfo', tokens.access_token)
      expect(response.statusCode).toBe(403)
      expect(response.headers['www-authenticate']).toContain('insufficient_scope')
      expect(response.headers['www-authenticate']).toContain('scope="user:read"')
    })

    it('a session cookie only: 401; an unknown token: 401 invalid_token', async () => {
      const session = await app.inject({ method: 'GET', url: '/api/oauth2/userinfo', headers: { cookie: user.cookie } })
      expect(session.statusCode).toBe(401)
      const unknown = await getWithBearer(app, '/api/oauth2/userinfo', 'no-such-token-0123456789')
      expect(unknown.statusCode).toBe(401)
      expect(unknown.headers['www-authenticate']).toContain('invalid_token')
    })
  })

  describe('POST /api/oauth2/register', () => {
    const registerRaw = (payload: unknown) => app.inject({ method: 'POST', url: '/api/oauth2/register', payload: payload as object })

    it('201 with the client\'s metadata', async () => {
      const response = await registerRaw({
        client_name: 'My Tool', redirect_uris: ['https://tool.example.com/cb'], scope: 'user:read teams:read', grant_types: ['authorization_code', 'refresh_token'],
        token_endpoint_auth_method: 'none', response_types: ['code'],
      })
      expect(response.statusCode, response.body).toBe(201)
      const body = response.json()
      expect(Object.keys(body).sort()).toEqual([
        'client_id', 'client_id_issued_at', 'client_name', 'grant_types', 'redirect_uris', 'response_types', 'scope', 'success', 'token_endpoint_auth_method',
      ])
      expect(body).toMatchObject({
        success: true, client_id: expect.any(String), client_name: 'My Tool', redirect_uris: ['https://tool.example.com/cb'],
        grant_types: ['authorization_code', 'refresh_token'], response_types: ['code'], token_endpoint_auth_method: 'none',
      })
      expect(body.scope.split(' ').sort()).toEqual(['teams:read', 'user:read'])
      expect(Number.isInteger(body.client_id_issued_at)).toBe(true)
      expect(Math.abs(body.client_id_issued_at - Math.floor(clock.now() / 1000))).toBeLessThanOrEqual(1)
      expect(body.client_id).not.toBe(CLI_CLIENT_ID)
      const minimal = await registerRaw({ redirect_uris: ['https://tool.example.com/cb'] })
      expect(minimal.statusCode, minimal.body).toBe(201)
      expect(minimal.json().client_id).not.toBe(body.client_id)
    })

    it.each(['https://app.example.com/callback', 'http://localhost:1234/cb', 'http://127.0.0.1/cb', 'http://[::1]:8080/cb'])('accepts %s', async (uri) => {
      const response = await registerRaw({ redirect_uris: [uri] })
      expect(response.statusCode, response.body).toBe(201)
      expect(response.json().redirect_uris).toEqual([uri])
    })

    it.each([
      'http://app.example.com/callback', 'https://app.example.com/callback#fragment', 'http://localhost.evil.com/cb', 'not a url', 'javascript:alert(1)',
    ])('refuses %s: 400 invalid_redirect_uri', async (uri) => {
      expectOAuthError(await registerRaw({ redirect_uris: ['https://fine.example.com/cb', uri] }), 400, 'invalid_redirect_uri')
    })

    it.each([
      ['a malformed scope (unknown names are dropped, bad characters refused)', { scope: 'user:read "admin"' }],
      ['an unsupported grant type', { grant_types: ['client_credentials'] }],
      ['an unsupported response type', { response_types: ['token'] }],
    ])('refuses %s: 400 invalid_client_metadata', async (_, metadata) => {
      expectOAuthError(await registerRaw({ redirect_uris: ['https://fine.example.com/cb'], ...metadata }), 400, 'invalid_client_metadata')
    })

    it('a confidential auth method asked for is answered with none (public clients only)', async () => {
      const response = await registerRaw({ redirect_uris: ['https://fine.example.com/cb'], token_endpoint_auth_method: 'client_secret_basic' })
      expect(response.statusCode, response.body).toBe(201)
      expect(response.json().token_endpoint_auth_method).toBe('none')
    })

    it('no redirect URI, or more than ten: 400', async () => {
      for (const uris of [[], Array.from({ length: 11 }, (_, i) => `https://many.example.com/cb${i}`)]) {
        const response = await registerRaw({ redirect_uris: uris })
        expect(response.statusCode).toBe(400)
        expect(response.json().success).toBe(false)
      }
      expect((await registerRaw({ client_name: 'No URIs' })).statusCode).toBe(400)
    })

    it('the registered client completes the whole flow; only its own redirect URIs are accepted', async () => {
      const redirectUri = 'https://flow.example.com/callback'
      const clientId = await registerClient(app, { client_name: 'Flow Tool', redirect_uris: [redirectUri], scope: 'user:read offline_access' })

      const wrong = await app.inject({ method: 'GET', url: authorizeUrl(authorizeParams(pkce().challenge, { client_id: clientId, scope: 'user:read' })), headers: { accept: 'application/json' } })
      expect(wrong.statusCode).toBe(400)
      expect(wrong.headers.location).toBeUndefined()
      expect(wrong.json().code).toBe('INVALID_REDIRECT_URI')

      const pair = pkce()
      const started = await startAuthorization(app, authorizeParams(pair.challenge, { client_id: clientId, redirect_uri: redirectUri, scope: 'user:read offline_access' }))
      const details = await consentDetails(app, consentRequestId(locationOf(started))!)
      expect(details.json().data).toMatchObject({ client_id: clientId, client_name: 'Flow Tool' })

      const authorized = await authorizeAndApprove(app, user.cookie, { clientId, redirectUri, scope: 'user:read offline_access' })
      const redirect = new URL(authorized.redirectUrl)
      expect(`${redirect.origin}${redirect.pathname}`).toBe(redirectUri)
      expect(redirect.searchParams.get('iss')).toBe(ISSUER)
      const exchanged = await exchangeCode(app, { code: authorized.code, verifier: authorized.verifier, clientId, redirectUri })
      expect(exchanged.statusCode, exchanged.body).toBe(200)
      const tokens: TokenSet = exchanged.json()
      expect((await getWithBearer(app, '/api/oauth2/userinfo', tokens.access_token)).json().sub).toBe(user.id)
      expect((await adminIntrospect(tokens.access_token)).json()).toMatchObject({ active: true, client_id: clientId })
      const refreshed = await refresh(app, tokens.refresh_token!, { clientId })
      expect(refreshed.statusCode, refreshed.body).toBe(200)
    })
  })

  describe('GET /.well-known/oauth-authorization-server', () => {
    it('RFC 8414 metadata with issuer = PUBLIC_URL', async () => {
      const response = await app.inject({ method: 'GET', url: '/.well-known/oauth-authorization-server' })
      expect(response.statusCode).toBe(200)
      const body = response.json()
      expect(body).toMatchObject({
        success: true,
        issuer: ISSUER,
        authorization_endpoint: `${ISSUER}/api/oauth2/auth`,
        token_endpoint: `${ISSUER}/api/oauth2/token`,
        revocation_endpoint: `${ISSUER}/api/oauth2/revoke`,
        introspection_endpoint: `${ISSUER}/api/oauth2/introspect`,
        userinfo_endpoint: `${ISSUER}/api/oauth2/userinfo`,
        registration_endpoint: `${ISSUER}/api/oauth2/register`,
        response_types_supported: ['code'],
        grant_types_supported: ['authorization_code', 'refresh_token'],
        code_challenge_methods_supported: ['S256'],
        token_endpoint_auth_methods_supported: ['none'],
        authorization_response_iss_parameter_supported: true,
      })
      expect([...body.scopes_supported].sort()).toEqual([...ALL_SCOPES].sort())
    })

    it('follows PUBLIC_URL', async () => {
      const other = (await ctx.build({ env: { PUBLIC_URL: 'https://gateway.example.com', RATE_LIMIT_ENABLED: 'false' } })).app
      const body = (await other.inject({ method: 'GET', url: '/.well-known/oauth-authorization-server' })).json()
      expect(body.issuer).toBe('https://gateway.example.com')
      expect(body.token_endpoint).toBe('https://gateway.example.com/api/oauth2/token')
    })
  })

  describe('expiry (manual clock)', () => {
    it('an expired access token introspects as inactive', async () => {
      const tokens = await issueTokens(app, user.cookie, 'user:read')
      expect((await adminIntrospect(tokens.access_token)).json().active).toBe(true)
      clock.advance(61 * MINUTE)
      expect((await adminIntrospect(tokens.access_token)).json()).toEqual({ success: true, active: false })
    })
  })
})
