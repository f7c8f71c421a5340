import { sql } from 'drizzle-orm'
import type { FastifyInstance, LightMyRequestResponse } from 'fastify'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createTestContext, type TestContext } from '../helpers/app.js'
import { DIALECTS } from '../helpers/database.js'
import {
  ALL_SCOPES, authorizeAndApprove, authorizeParams, authorizeUrl, CLI_CLIENT_ID, consentDetails, consentRequestId, exchangeCode,
  ISSUER, isHtml, locationOf, LOOPBACK_REDIRECT_URI, pkce, REDIRECT_URI, registerClient, startAuthorization, type AuthorizeParams,
} from '../helpers/oauth.js'
import { rawRows } from '../helpers/sql.js'
import { signUp, type Account } from '../helpers/teams.js'

const scopeSet = (scope: string) => scope.split(' ').filter(Boolean).sort()

/** GET /api/oauth2/auth. */
describe.each(DIALECTS)('GET /api/oauth2/auth on %s', (dialect) => {
  let ctx: TestContext
  let app: FastifyInstance
  let user: Account
  const { challenge } = pkce()

  const get = (params: AuthorizeParams, headers: Record<string, string> = {}) =>
    app.inject({ method: 'GET', url: authorizeUrl(params), headers })

  /** A 302 to the client's redirect URI carrying an error (RFC 6749 §4.1.2.1, RFC 9207). */
  function expectErrorRedirect(response: LightMyRequestResponse, error: string, { state, redirectUri = REDIRECT_URI }: { state: string | undefined; redirectUri?: string }) {
    expect(response.statusCode, response.body).toBe(302)
    const location = new URL(locationOf(response)!)
    expect(`${location.origin}${location.pathname}`).toBe(redirectUri)
    expect(location.searchParams.get('error')).toBe(error)
    expect(location.searchParams.get('error_description')).toEqual(expect.any(String))
    expect(location.searchParams.get('error_description')!.length).toBeGreaterThan(0)
    expect(location.searchParams.get('state')).toBe(state ?? null)
    expect(location.searchParams.get('iss')).toBe(ISSUER)
    expect(location.searchParams.get('code')).toBeNull()
  }

  beforeAll(async () => {
    ctx = await createTestContext(dialect)
    app = (await ctx.build({ env: { RATE_LIMIT_ENABLED: 'false' } })).app
    await signUp(app, 'authz_admin')
    user = await signUp(app, 'authz_user')
  })
  afterAll(() => ctx.close())

  describe('errors that are never redirected', () => {
    it.each([
      ['unknown', { client_id: 'no-such-client' }],
      ['missing', { client_id: undefined }],
    ])('%s client_id: 400 JSON invalid_request UNKNOWN_CLIENT, no Location', async (_, overrides) => {
      const response = await get(authorizeParams(challenge, overrides), { accept: 'application/json' })
      expect(response.statusCode).toBe(400)
      expect(response.headers.location).toBeUndefined()
      expect(response.json()).toMatchObject({ success: false, error: 'invalid_request', code: 'UNKNOWN_CLIENT', error_description: expect.any(String) })
    })

    it.each([
      ['not registered', { redirect_uri: 'https://evil.example.com/callback' }],
      ['a registered one with an extra path', { redirect_uri: `${REDIRECT_URI}/more` }],
      ['a registered one with a query', { redirect_uri: `${REDIRECT_URI}?x=1` }],
      ['a registered one on another port', { redirect_uri: 'http://localhost:8977/oauth/callback' }],
      ['missing', { redirect_uri: undefined }],
    ])('redirect_uri %s: 400 JSON INVALID_REDIRECT_URI, no Location', async (_, overrides) => {
      const response = await get(authorizeParams(challenge, overrides), { accept: 'application/json' })
      expect(response.statusCode).toBe(400)
      expect(response.headers.location).toBeUndefined()
      expect(response.json()).toMatchObject({ success: false, error: 'invalid_request', code: 'INVALID_REDIRECT_URI', error_description: expect.any(String) })
    })

    it('an unregistered redirect_uri is refused before any other error is redirected to it', async () => {
      const response = await get(authorizeParams(challenge, { redirect_uri: 'https://evil.example.com/cb', response_type: 'token', code_challenge_method: 'plain' }), { accept: 'application/json' })
      expect(response.statusCode).toBe(400)
      expect(response.headers.location).toBeUndefined()
      expect(response.json().code).toBe('INVALID_REDIRECT_URI')
    })

    it.each([
      ['unknown client', { client_id: 'no-such-client' }],
      ['unregistered redirect URI', { redirect_uri: 'https://evil.example.com/callback' }],
    ])('%s without Accept: application/json: a 400 HTML page, no Location', async (_, overrides) => {
      for (const headers of [{}, { accept: 'text/html,application/xhtml+xml' }] as Array<Record<string, string>>) {
        const response = await get(authorizeParams(challenge, overrides), headers)
        expect(response.statusCode).toBe(400)
        expect(response.headers.location).toBeUndefined()
        expect(isHtml(response)).toBe(true)
        expect(response.body).toMatch(/<html/i)
        expect(response.body).not.toContain('evil.example.com/callback"')
      }
    })

    it('an unknown query parameter is ignored (RFC 6749 §3.1): on to the consent page', async () => {
      const response = await get({ ...authorizeParams(challenge), display: 'popup', resource_hint: 'x' })
      expect(response.statusCode, response.body).toBe(302)
      expect(locationOf(response)).toMatch(/^\/api\/oauth2\/consent\?request_id=/)
    })
  })

  describe('errors redirected to the registered redirect URI', () => {
    const cases: Array<[string, string, AuthorizeParams]> = [
      ['response_type missing', 'invalid_request', { response_type: undefined }],
      ['response_type token', 'unsupported_response_type', { response_type: 'token' }],
      ['code_challenge missing', 'invalid_request', { code_challenge: undefined }],
      ['code_challenge too short (42)', 'invalid_request', { code_challenge: 'a'.repeat(42) }],
      ['code_challenge too long (129)', 'invalid_request', { code_challenge: 'a'.repeat(129) }],
      ['code_challenge with a character outside [A-Za-z0-9-._~]', 'invalid_request', { code_challenge: `${'a'.repeat(42)}/` }],
      ['code_challenge_method plain', 'invalid_request', { code_challenge_method: 'plain' }],
      ['code_challenge_method missing', 'invalid_request', { code_challenge_method: undefined }],
      ['code_challenge_method s256 (case matters)', 'invalid_request', { code_challenge_method: 's256' }],
      // Unknown names are dropped (test/oauth/unknown-scopes.test.ts); a name breaking RFC 6749's scope-token syntax is refused.
      ['a malformed scope (a double quote)', 'invalid_scope', { scope: 'user:read "admin"' }],
    ]

    it.each(cases)('%s → 302 with error=%s, error_description, state and iss', async (_, error, overrides) => {
      const state = 'st@te with spaces&and=more'
      const response = await get(authorizeParams(challenge, { state, ...overrides }), { accept: 'application/json' })
      expectErrorRedirect(response, error, { state })
    })

    it('state missing is fine with PKCE (RFC 9700 §2.1.1); an error then redirects without a state parameter', async () => {
      const accepted = await get(authorizeParams(challenge, { state: undefined }))
      expect(accepted.statusCode, accepted.body).toBe(302)
      expect(locationOf(accepted)).toMatch(/^\/api\/oauth2\/consent\?request_id=/)
      expectErrorRedirect(await get(authorizeParams(challenge, { state: undefined, code_challenge_method: 'plain' })), 'invalid_request', { state: undefined })
    })

    it('errors go to the redirect URI the request named (the 127.0.0.1 one)', async () => {
      const response = await get(authorizeParams(challenge, { redirect_uri: LOOPBACK_REDIRECT_URI, state: 's1', code_challenge_method: 'plain' }))
      expectErrorRedirect(response, 'invalid_request', { state: 's1', redirectUri: LOOPBACK_REDIRECT_URI })
    })

    it('with login disabled → 302 access_denied; nothing is stored', async () => {
      const before = await rawRows(app.services.database, sql`select count(*) from oauth_requests`)
      await app.services.settings.update([{ key: 'global.enable_login', value: false }])
      try {
        const response = await get(authorizeParams(challenge, { state: 'off' }), { cookie: user.cookie })
        expectErrorRedirect(response, 'access_denied', { state: 'off' })
      } finally {
        await app.services.settings.update([{ key: 'global.enable_login', value: true }])
      }
      const after = await rawRows(app.services.database, sql`select count(*) from oauth_requests`)
      expect(Number(after[0]![0])).toBe(Number(before[0]![0]))
    })
  })

  describe('a valid request', () => {
    it('stores a pending request and 302s to the consent page (relative Location)', async () => {
      const state = 'valid-state-1'
      const response = await get(authorizeParams(challenge, { state, scope: 'user:read teams:read' }))
      expect(response.statusCode).toBe(302)
      const location = locationOf(response)!
      expect(location).toMatch(/^\/api\/oauth2\/consent\?request_id=[^&]+$/)
      const requestId = consentRequestId(location)!
      const rows = await rawRows(app.services.database, sql`select client_id, redirect_uri, scope, state, code_challenge from oauth_requests where id = ${requestId}`)
      expect(rows).toHaveLength(1)
      const [clientId, redirectUri, scope, storedState, storedChallenge] = rows[0]!
      expect([clientId, redirectUri, storedState, storedChallenge]).toEqual([CLI_CLIENT_ID, REDIRECT_URI, state, challenge])
      expect(scopeSet(String(scope))).toEqual(['teams:read', 'user:read'])
    })

    it('the 127.0.0.1 redirect URI is registered too', async () => {
      const response = await get(authorizeParams(challenge, { redirect_uri: LOOPBACK_REDIRECT_URI }))
      expect(response.statusCode).toBe(302)
      expect(consentRequestId(locationOf(response))).toEqual(expect.any(String))
    })

    it('scope missing → the client\'s five default scopes', async () => {
      const response = await get(authorizeParams(challenge, { scope: undefined }))
      expect(response.statusCode).toBe(302)
      const details = await consentDetails(app, consentRequestId(locationOf(response))!)
      expect(details.statusCode).toBe(200)
      expect(details.json().data.scopes.map((scope: { name: string }) => scope.name).sort()).toEqual([...ALL_SCOPES].sort())
    })
  })

  describe('remembered consent', () => {
    it('skips the page for the same or fewer scopes, not for more, not for another user or client', async () => {
      const holder = await signUp(app, 'authz_remember')
      const first = await authorizeAndApprove(app, holder.cookie, { scope: 'user:read teams:read' })
      expect(first.skipped).toBe(false)

      // Same scopes: straight back to the client with a code.
      for (const scope of ['user:read teams:read', 'teams:read user:read', 'user:read']) {
        const pair = pkce()
        const response = await startAuthorization(app, authorizeParams(pair.challenge, { scope, state: 'again' }), holder.cookie)
        expect(response.statusCode).toBe(302)
        const location = new URL(locationOf(response)!)
        expect(`${location.origin}${location.pathname}`).toBe(REDIRECT_URI)
        expect(location.searchParams.get('state')).toBe('again')
        expect(location.searchParams.get('iss')).toBe(ISSUER)
        const code = location.searchParams.get('code')!
        expect(code).toEqual(expect.any(String))
        const exchanged = await exchangeCode(app, { code, verifier: pair.verifier })
        expect(exchanged.statusCode, exchanged.body).toBe(200)
        expect(scopeSet(exchanged.json().scope)).toEqual(scopeSet(scope))
      }

      // More scopes: the consent page again.
      const wider = await startAuthorization(app, authorizeParams(challenge, { scope: 'user:read teams:read mcp:read' }), holder.cookie)
      expect(wider.statusCode).toBe(302)
      expect(consentRequestId(locationOf(wider))).toEqual(expect.any(String))

      // Without the session, or for another user: the consent page.
      const anonymous = await startAuthorization(app, authorizeParams(challenge, { scope: 'user:read' }))
      expect(consentRequestId(locationOf(anonymous))).toEqual(expect.any(String))
      const other = await startAuthorization(app, authorizeParams(challenge, { scope: 'user:read' }), user.cookie)
      expect(consentRequestId(locationOf(other))).toEqual(expect.any(String))

      // Another client: the consent page.
      const clientId = await registerClient(app, { client_name: 'Other Tool', redirect_uris: ['https://tool.example.com/callback'], scope: 'user:read teams:read' })
      const otherClient = await startAuthorization(
        app, authorizeParams(challenge, { client_id: clientId, redirect_uri: 'https://tool.example.com/callback', scope: 'user:read' }), holder.cookie,
      )
      expect(otherClient.statusCode).toBe(302)
      expect(consentRequestId(locationOf(otherClient))).toEqual(expect.any(String))
    })

    it('a denial is not remembered as consent', async () => {
      const holder = await signUp(app, 'authz_denier')
      const denied = await authorizeAndApprove(app, holder.cookie, { scope: 'user:read', decision: 'deny' })
      expect(new URL(denied.redirectUrl).searchParams.get('error')).toBe('access_denied')
      const again = await startAuthorization(app, authorizeParams(challenge, { scope: 'user:read' }), holder.cookie)
      expect(consentRequestId(locationOf(again))).toEqual(expect.any(String))
    })
  })
})
