import { sql } from 'drizzle-orm'
import type { FastifyInstance, LightMyRequestResponse } from 'fastify'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { DEFAULT_PASSWORD, sessionCookie } from '../helpers/accounts.js'
import { createTestContext, type TestContext } from '../helpers/app.js'
import { DIALECTS } from '../helpers/database.js'
import {
  authorizeAndApprove, authorizeParams, authorizeUrl, bearer, CLI_CLIENT_ID, consentDetails, consentRequestId, exchangeCode, htmlTags, inputValue,
  ISSUER, isHtml, issueTokens, locationOf, LOOPBACK_REDIRECT_URI, pkce, postConsent, REDIRECT_URI, registerClient, tokenRequest,
  type AuthorizeParams, type Pkce, type TokenSet,
} from '../helpers/oauth.js'
import { rawRows } from '../helpers/sql.js'
import { signUp, type Account } from '../helpers/teams.js'

const FORM = { 'content-type': 'application/x-www-form-urlencoded' }

/** Parameters no endpoint knows: an RFC 8707 resource indicator and junk. */
const UNKNOWN = { resource: 'http://localhost:3000/api', foo: 'bar' }

const OPTIONAL_METADATA = {
  client_uri: 'https://tools.example.org:8443/about',
  logo_uri: 'https://tools.example.org/logo.png',
  tos_uri: 'https://tools.example.org/tos',
  policy_uri: 'http://tools.example.org/privacy',
  contacts: ['ops@tools.example.org', 'dev@tools.example.org'],
  software_id: '4NRB1-0XZABZI9E6-5SM3R',
  software_version: '2.1.0',
}

/**
 * What MCP clients (and their SDK) send the authorization server: unknown parameters, RFC 7591
 * optional metadata, no `state`, `prompt`, loopback redirect URIs on any port (RFC 8252 §7.3).
 */
describe.each(DIALECTS)('MCP clients on %s', (dialect) => {
  let ctx: TestContext
  let app: FastifyInstance
  let admin: Account
  let user: Account
  let seq = 0

  const fresh = () => signUp(app, `mcp_user_${++seq}`)
  const get = (params: AuthorizeParams, headers: Record<string, string> = {}) => app.inject({ method: 'GET', url: authorizeUrl(params), headers })
  const register = (payload: Record<string, unknown>) => app.inject({ method: 'POST', url: '/api/oauth2/register', payload })
  const me = (token: string) => app.inject({ method: 'GET', url: '/api/users/me', headers: bearer(token) })
  const consentHtml = (requestId: string, cookie?: string) => app.inject({
    method: 'GET',
    url: `/api/oauth2/consent?request_id=${encodeURIComponent(requestId)}`,
    headers: cookie === undefined ? {} : { cookie },
  })
  const formPost = (url: string, body: Record<string, string>, headers: Record<string, string> = {}) =>
    app.inject({ method: 'POST', url, headers: { ...FORM, ...headers }, payload: new URLSearchParams(body).toString() })

  const count = async (table: 'oauth_requests' | 'oauth_clients' | 'oauth_grants') =>
    Number((await rawRows(app.services.database, sql.raw(`select count(*) from ${table}`)))[0]![0])

  /** The stored `oauth_clients.metadata` (JSON text on SQLite, jsonb on PostgreSQL). */
  async function storedMetadata(clientId: string): Promise<unknown> {
    const rows = await rawRows(app.services.database, sql`select metadata from oauth_clients where id = ${clientId}`)
    expect(rows).toHaveLength(1)
    const value = rows[0]![0]
    return typeof value === 'string' ? JSON.parse(value) : value
  }

  /** A 302 to `redirectUri` (origin and path) and its query parameters. */
  function expectClientRedirect(response: LightMyRequestResponse, redirectUri: string): URLSearchParams {
    expect(response.statusCode, response.body).toBe(302)
    const location = new URL(locationOf(response)!)
    expect(`${location.origin}${location.pathname}`).toBe(redirectUri)
    expect(location.searchParams.get('iss')).toBe(ISSUER)
    return location.searchParams
  }

  /** A 302 carrying an error to the client (RFC 6749 §4.1.2.1, RFC 9207). */
  function expectErrorRedirect(response: LightMyRequestResponse, error: string, { state, redirectUri = REDIRECT_URI }: { state?: string | null; redirectUri?: string } = {}) {
    const params = expectClientRedirect(response, redirectUri)
    expect(params.get('error')).toBe(error)
    expect(params.get('error_description')).toMatch(/\S/)
    expect(params.get('code')).toBeNull()
    if (state !== undefined) expect(params.get('state')).toBe(state)
    return params
  }

  /** A 302 to the consent page; answers its request id. */
  function expectConsentPage(response: LightMyRequestResponse): string {
    expect(response.statusCode, response.body).toBe(302)
    const requestId = consentRequestId(locationOf(response))
    expect(requestId, locationOf(response)).toEqual(expect.any(String))
    return requestId!
  }

  /** The JSON consent details for `cookie`, then Approve; answers the redirect URL. */
  async function approve(requestId: string, cookie: string): Promise<string> {
    const details = await consentDetails(app, requestId, cookie)
    expect(details.statusCode, details.body).toBe(200)
    expect(details.json().data.signed_in).toBe(true)
    const decided = await postConsent(app, { request_id: requestId, decision: 'approve', csrf_token: details.json().data.csrf_token }, cookie)
    expect(decided.statusCode, decided.body).toBe(200)
    return decided.json().data.redirect_url
  }

  /** A code for `pair`, approved by `account` on the consent page. */
  async function approvedCode(account: Account, pair: Pkce, overrides: AuthorizeParams = {}): Promise<URL> {
    const requestId = expectConsentPage(await get(authorizeParams(pair.challenge, { scope: 'user:read', ...overrides })))
    return new URL(await approve(requestId, account.cookie))
  }

  beforeAll(async () => {
    ctx = await createTestContext(dialect)
    app = (await ctx.build({ env: { RATE_LIMIT_ENABLED: 'false' } })).app
    admin = await signUp(app, 'mcp_admin')
    user = await signUp(app, 'mcp_user')
  })
  afterAll(() => ctx.close())

  describe('unknown parameters are ignored', () => {
    it('GET /auth with resource, foo and client_uri → the consent page; the request is stored', async () => {
      const before = await count('oauth_requests')
      const { challenge } = pkce()
      const response = await get({ ...authorizeParams(challenge), ...UNKNOWN, client_uri: 'javascript:alert(1)' }, { accept: 'application/json' })
      const requestId = expectConsentPage(response)
      expect(await count('oauth_requests')).toBe(before + 1)
      const details = await consentDetails(app, requestId, user.cookie)
      expect(details.statusCode).toBe(200)
      // A client_uri in the query is not the client's registered one.
      expect(details.json().data).toMatchObject({ client_id: CLI_CLIENT_ID, client_uri: null })
    })

    it('GET /auth with unknown parameters still validates the known ones: a 1025-character state → 302 invalid_request', async () => {
      const { challenge } = pkce()
      const response = await get({ ...authorizeParams(challenge, { state: 's'.repeat(1025) }), ...UNKNOWN })
      const params = expectErrorRedirect(response, 'invalid_request')
      expect(params.get('error_description')).toContain('state')
    })

    it.each([['form-encoded', false], ['JSON', true]] as const)('POST /token (%s) with unknown parameters issues tokens', async (_, json) => {
      const pair = pkce()
      const callback = await approvedCode(user, pair)
      const response = await tokenRequest(app, {
        grant_type: 'authorization_code', code: callback.searchParams.get('code')!, redirect_uri: REDIRECT_URI, client_id: CLI_CLIENT_ID,
        code_verifier: pair.verifier, ...UNKNOWN,
      }, { json })
      expect(response.statusCode, response.body).toBe(200)
      expect(response.json()).toMatchObject({ success: true, token_type: 'Bearer', access_token: expect.any(String), scope: 'user:read' })
      expect((await me(response.json().access_token)).statusCode).toBe(200)
    })

    it.each([['form-encoded', false], ['JSON', true]] as const)('POST /token (%s): known parameters are still validated (grant_type of 65 characters)', async (_, json) => {
      const response = await tokenRequest(app, { grant_type: 'g'.repeat(65), client_id: CLI_CLIENT_ID, ...UNKNOWN }, { json })
      expect(response.statusCode).toBe(400)
      expect(response.json()).toMatchObject({ success: false, error: 'invalid_request', error_description: expect.stringContaining('grant_type') })
    })

    it.each([['form-encoded', false], ['JSON', true]] as const)('POST /revoke (%s) with unknown parameters revokes the token', async (_, json) => {
      const tokens = await issueTokens(app, user.cookie, 'user:read')
      expect((await me(tokens.access_token)).statusCode).toBe(200)
      const body = { token: tokens.access_token, token_type_hint: 'access_token', client_id: CLI_CLIENT_ID, ...UNKNOWN }
      const response = json
        ? await app.inject({ method: 'POST', url: '/api/oauth2/revoke', payload: body })
        : await formPost('/api/oauth2/revoke', body)
      expect(response.statusCode, response.body).toBe(200)
      expect(response.json()).toEqual({ success: true })
      expect((await me(tokens.access_token)).statusCode).toBe(401)
    })

    it.each([['form-encoded', false], ['JSON', true]] as const)('POST /introspect (%s) with unknown parameters answers active', async (_, json) => {
      const tokens: TokenSet = await issueTokens(app, user.cookie, 'user:read')
      const body = { token: tokens.access_token, token_type_hint: 'access_token', ...UNKNOWN }
      const headers = { cookie: admin.cookie }
      const response = json
        ? await app.inject({ method: 'POST', url: '/api/oauth2/introspect', headers, payload: body })
        : await formPost('/api/oauth2/introspect', body, headers)
      expect(response.statusCode, response.body).toBe(200)
      expect(response.json()).toMatchObject({ success: true, active: true, client_id: CLI_CLIENT_ID, scope: 'user:read', username: user.username })
    })

    it('POST /introspect: a too-long token is still refused (invalid_request)', async () => {
      const response = await app.inject({ method: 'POST', url: '/api/oauth2/introspect', headers: { cookie: admin.cookie }, payload: { token: 't'.repeat(257), ...UNKNOWN } })
      expect(response.statusCode).toBe(400)
      expect(response.json()).toMatchObject({ success: false, error: 'invalid_request' })
    })

    it('POST /register ignores unknown metadata: 201, not echoed, not stored', async () => {
      const response = await register({
        client_name: 'Unknowns', redirect_uris: ['https://unknowns.example.com/cb'], ...UNKNOWN,
        jwks_uri: 'https://unknowns.example.com/jwks', client_secret: 'nope', software_statement: 'eyJ.x.y', client_uri: 'https://unknowns.example.com',
      })
      expect(response.statusCode, response.body).toBe(201)
      const body = response.json()
      for (const key of ['resource', 'foo', 'jwks_uri', 'client_secret', 'software_statement']) expect(body, key).not.toHaveProperty(key)
      expect(body).toMatchObject({ success: true, client_name: 'Unknowns', client_uri: 'https://unknowns.example.com', token_endpoint_auth_method: 'none' })
      expect(await storedMetadata(body.client_id)).toEqual({ client_uri: 'https://unknowns.example.com' })
    })
  })

  describe('RFC 7591 optional metadata', () => {
    it('is stored and returned as sent', async () => {
      const response = await register({ client_name: 'Full', redirect_uris: ['https://full.example.com/cb'], scope: 'user:read', ...OPTIONAL_METADATA })
      expect(response.statusCode, response.body).toBe(201)
      const body = response.json()
      expect(body).toMatchObject({
        success: true, client_id: expect.stringMatching(/^client_/), client_name: 'Full', redirect_uris: ['https://full.example.com/cb'],
        grant_types: ['authorization_code', 'refresh_token'], response_types: ['code'], token_endpoint_auth_method: 'none', scope: 'user:read',
        ...OPTIONAL_METADATA,
      })
      expect(await storedMetadata(body.client_id)).toEqual(OPTIONAL_METADATA)
    })

    it('a client without optional metadata stores none and returns none of those fields', async () => {
      const response = await register({ redirect_uris: ['https://bare.example.com/cb'] })
      expect(response.statusCode, response.body).toBe(201)
      for (const key of Object.keys(OPTIONAL_METADATA)) expect(response.json(), key).not.toHaveProperty(key)
      const stored = await storedMetadata(response.json().client_id)
      expect(stored === null || (typeof stored === 'object' && Object.keys(stored).length === 0), JSON.stringify(stored)).toBe(true)
    })

    it.each([
      ['client_uri', 'javascript:alert(1)'],
      ['client_uri', 'ftp://files.example.com/'],
      ['logo_uri', 'data:image/png;base64,AAAA'],
      ['tos_uri', 'not a url'],
      ['policy_uri', 'https://'],
    ])('%s %s → 400 invalid_client_metadata; no client is stored', async (field, value) => {
      const before = await count('oauth_clients')
      const response = await register({ redirect_uris: ['https://bad.example.com/cb'], [field]: value })
      expect(response.statusCode, response.body).toBe(400)
      expect(response.json()).toMatchObject({ success: false, error: 'invalid_client_metadata', error_description: expect.stringContaining(field) })
      expect(await count('oauth_clients')).toBe(before)
    })

    it('token_endpoint_auth_method client_secret_basic → 201 answered with none, and no secret', async () => {
      const response = await register({ redirect_uris: ['https://basic.example.com/cb'], token_endpoint_auth_method: 'client_secret_basic' })
      expect(response.statusCode, response.body).toBe(201)
      expect(response.json().token_endpoint_auth_method).toBe('none')
      expect(response.json()).not.toHaveProperty('client_secret')
    })
  })

  describe('the consent page shows the client_uri host', () => {
    it('HTML: "from <host>"; JSON: client_uri', async () => {
      const redirectUri = 'https://hosted.example.com/cb'
      const clientId = await registerClient(app, { client_name: 'Hosted Tool', redirect_uris: [redirectUri], client_uri: 'https://tools.example.org:8443/about' })
      const { challenge } = pkce()
      const requestId = expectConsentPage(await get(authorizeParams(challenge, { client_id: clientId, redirect_uri: redirectUri, scope: 'user:read' })))
      const page = await consentHtml(requestId, user.cookie)
      expect(page.statusCode, page.body).toBe(200)
      expect(isHtml(page)).toBe(true)
      expect(page.body).toContain('Hosted Tool wants to access your account')
      expect(page.body).toContain('from tools.example.org:8443')
      const details = await consentDetails(app, requestId, user.cookie)
      expect(details.json().data).toMatchObject({ client_id: clientId, client_name: 'Hosted Tool', client_uri: 'https://tools.example.org:8443/about', signed_in: true })
    })

    it('a client without client_uri: no "from" line, client_uri null', async () => {
      // A user who never approved the CLI: a remembered consent would redirect instead of showing the page.
      const account = await fresh()
      const { challenge } = pkce()
      const requestId = expectConsentPage(await get(authorizeParams(challenge, { scope: 'user:read' })))
      const page = await consentHtml(requestId, account.cookie)
      expect(page.statusCode, page.body).toBe(200)
      expect(page.body).toContain('Service Gateway CLI wants to access your account')
      expect(page.body).not.toMatch(/>from /)
      expect((await consentDetails(app, requestId, account.cookie)).json().data.client_uri).toBeNull()
    })
  })

  describe('state is optional with PKCE', () => {
    it('without state: consent page; Approve → code and iss, no state; the code buys tokens', async () => {
      const pair = pkce()
      const requestId = expectConsentPage(await get(authorizeParams(pair.challenge, { state: undefined, scope: 'user:read' })))
      const redirect = new URL(await approve(requestId, user.cookie))
      expect(`${redirect.origin}${redirect.pathname}`).toBe(REDIRECT_URI)
      expect(redirect.searchParams.get('code')).toEqual(expect.any(String))
      expect(redirect.searchParams.get('iss')).toBe(ISSUER)
      expect(redirect.searchParams.has('state')).toBe(false)
      const tokens = await exchangeCode(app, { code: redirect.searchParams.get('code')!, verifier: pair.verifier })
      expect(tokens.statusCode, tokens.body).toBe(200)
      expect((await me(tokens.json().access_token)).statusCode).toBe(200)
    })

    it('with state: echoed', async () => {
      const pair = pkce()
      const redirect = await approvedCode(user, pair, { state: 'echo me & keep=this' })
      expect(redirect.searchParams.get('state')).toBe('echo me & keep=this')
      expect(redirect.searchParams.get('iss')).toBe(ISSUER)
    })

    it('an empty state is treated as none: no state parameter in the error redirect either', async () => {
      const { challenge } = pkce()
      const params = expectErrorRedirect(await get(authorizeParams(challenge, { state: '', code_challenge_method: 'plain' })), 'invalid_request')
      expect(params.has('state')).toBe(false)
    })
  })

  describe('prompt', () => {
    it('a repeat within approved scopes goes straight back with a code (control); prompt=consent asks again', async () => {
      const account = await fresh()
      await authorizeAndApprove(app, account.cookie, { scope: 'user:read' })
      const grantsBefore = await count('oauth_grants')

      const pair = pkce()
      const repeat = await get(authorizeParams(pair.challenge, { scope: 'user:read', state: 'again' }), { cookie: account.cookie })
      const params = expectClientRedirect(repeat, REDIRECT_URI)
      expect(params.get('code')).toEqual(expect.any(String))
      expect(params.get('state')).toBe('again')
      expect(await count('oauth_grants')).toBe(grantsBefore + 1)

      const forced = await get(authorizeParams(pkce().challenge, { scope: 'user:read', state: 'ask', prompt: 'consent' }), { cookie: account.cookie })
      const requestId = expectConsentPage(forced)
      // The HTML consent page too asks rather than redirecting with the remembered consent.
      const page = await consentHtml(requestId, account.cookie)
      expect(page.statusCode, page.body).toBe(200)
      expect(inputValue(page.body, 'csrf_token')).toEqual(expect.any(String))
      expect(await count('oauth_grants')).toBe(grantsBefore + 1)
      const redirect = new URL(await approve(requestId, account.cookie))
      expect(redirect.searchParams.get('code')).toEqual(expect.any(String))
      expect(redirect.searchParams.get('state')).toBe('ask')
    })

    it('prompt=none without a session → 302 login_required with state and iss; nothing stored', async () => {
      const before = await count('oauth_requests')
      expectErrorRedirect(await get(authorizeParams(pkce().challenge, { prompt: 'none', state: 'silent' })), 'login_required', { state: 'silent' })
      expectErrorRedirect(await get(authorizeParams(pkce().challenge, { prompt: 'none', state: undefined })), 'login_required', { state: null })
      expect(await count('oauth_requests')).toBe(before)
    })

    it('prompt=none with a session but no remembered consent → 302 consent_required; no request is left waiting', async () => {
      const account = await fresh()
      const before = await count('oauth_requests')
      const response = await get(authorizeParams(pkce().challenge, { prompt: 'none', state: 'quiet', scope: 'user:read' }), { cookie: account.cookie })
      expectErrorRedirect(response, 'consent_required', { state: 'quiet' })
      expect(await count('oauth_requests')).toBe(before)
    })

    it('prompt=none with another value → 302 invalid_request (OpenID Connect Core §3.1.2.1)', async () => {
      const account = await fresh()
      const response = await get(authorizeParams(pkce().challenge, { prompt: 'none login', state: 'mixed', scope: 'user:read' }), { cookie: account.cookie })
      expectErrorRedirect(response, 'invalid_request', { state: 'mixed' })
    })

    it('prompt=none asking beyond the remembered scopes → 302 consent_required', async () => {
      const account = await fresh()
      await authorizeAndApprove(app, account.cookie, { scope: 'user:read' })
      const response = await get(authorizeParams(pkce().challenge, { prompt: 'none', state: 'more', scope: 'user:read teams:read' }), { cookie: account.cookie })
      expectErrorRedirect(response, 'consent_required', { state: 'more' })
    })

    it('prompt=none with a remembered consent → 302 with a code that buys tokens', async () => {
      const account = await fresh()
      await authorizeAndApprove(app, account.cookie, { scope: 'user:read' })
      const pair = pkce()
      const response = await get(authorizeParams(pair.challenge, { prompt: 'none', state: 'ok', scope: 'user:read' }), { cookie: account.cookie })
      const params = expectClientRedirect(response, REDIRECT_URI)
      expect(params.get('error')).toBeNull()
      expect(params.get('state')).toBe('ok')
      const tokens = await exchangeCode(app, { code: params.get('code')!, verifier: pair.verifier })
      expect(tokens.statusCode, tokens.body).toBe(200)
      expect(tokens.json().scope).toBe('user:read')
    })

    it('prompt=login with a session (and a remembered consent): the sign-in page; after signing in, the consent form; Approve → code', async () => {
      const account = await fresh()
      await authorizeAndApprove(app, account.cookie, { scope: 'user:read' })
      const pair = pkce()
      const requestId = expectConsentPage(await get(authorizeParams(pair.challenge, { prompt: 'login', state: 'relogin', scope: 'user:read' }), { cookie: account.cookie }))

      const details = await consentDetails(app, requestId, account.cookie)
      expect(details.statusCode, details.body).toBe(200)
      expect(details.json().data).toMatchObject({ request_id: requestId, signed_in: false, csrf_token: null, teams: [] })
      const signIn = await consentHtml(requestId, account.cookie)
      expect(signIn.statusCode).toBe(200)
      expect(isHtml(signIn)).toBe(true)
      expect(htmlTags(signIn.body, 'form').map((form) => form.action)).toEqual(['/api/oauth2/consent/login'])
      expect(inputValue(signIn.body, 'csrf_token')).toBeUndefined()

      const loggedIn = await formPost('/api/oauth2/consent/login', { request_id: requestId, login: account.username, password: DEFAULT_PASSWORD })
      expect(loggedIn.statusCode, loggedIn.body).toBe(303)
      expect(consentRequestId(locationOf(loggedIn))).toBe(requestId)
      const cookie = sessionCookie(loggedIn)
      expect(cookie).toEqual(expect.any(String))
      expect(cookie).not.toBe(account.cookie)

      const page = await consentHtml(requestId, cookie)
      expect(page.statusCode, page.body).toBe(200)
      expect(htmlTags(page.body, 'form').map((form) => form.action)).toEqual(['/api/oauth2/consent'])
      expect(inputValue(page.body, 'request_id')).toBe(requestId)
      expect(inputValue(page.body, 'csrf_token')).toEqual(expect.any(String))

      const redirect = new URL(await approve(requestId, cookie!))
      expect(redirect.searchParams.get('state')).toBe('relogin')
      const tokens = await exchangeCode(app, { code: redirect.searchParams.get('code')!, verifier: pair.verifier })
      expect(tokens.statusCode, tokens.body).toBe(200)
    })

    it('prompt=select_account is ignored: a remembered consent goes straight back with a code, no session → consent page', async () => {
      const account = await fresh()
      await authorizeAndApprove(app, account.cookie, { scope: 'user:read' })
      const remembered = await get(authorizeParams(pkce().challenge, { prompt: 'select_account', state: 'sa', scope: 'user:read' }), { cookie: account.cookie })
      const params = expectClientRedirect(remembered, REDIRECT_URI)
      expect(params.get('code')).toEqual(expect.any(String))
      expect(params.get('state')).toBe('sa')
      expectConsentPage(await get(authorizeParams(pkce().challenge, { prompt: 'select_account' })))
    })
  })

  describe('loopback redirect URIs on any port (RFC 8252 §7.3)', () => {
    const CLI_OTHER_PORT = 'http://127.0.0.1:54321/oauth/callback'

    it('the CLI on 127.0.0.1:54321: the code goes to that port; it exchanges with that redirect_uri only', async () => {
      const pair = pkce()
      const requestId = expectConsentPage(await get(authorizeParams(pair.challenge, { redirect_uri: CLI_OTHER_PORT, scope: 'user:read', state: 'port' })))
      const redirect = new URL(await approve(requestId, user.cookie))
      expect(redirect.origin).toBe('http://127.0.0.1:54321')
      expect(redirect.pathname).toBe('/oauth/callback')
      expect(redirect.searchParams.get('state')).toBe('port')
      expect(redirect.searchParams.get('iss')).toBe(ISSUER)
      const code = redirect.searchParams.get('code')!

      const registered = await exchangeCode(app, { code, verifier: pair.verifier, redirectUri: LOOPBACK_REDIRECT_URI })
      expect(registered.statusCode).toBe(400)
      expect(registered.json()).toMatchObject({ success: false, error: 'invalid_grant' })

      const tokens = await exchangeCode(app, { code, verifier: pair.verifier, redirectUri: CLI_OTHER_PORT })
      expect(tokens.statusCode, tokens.body).toBe(200)
      expect((await me(tokens.json().access_token)).statusCode).toBe(200)
    })

    it('a remembered consent covers only the port approved: another port asks again, and once approved goes straight there (RFC 8252 §8.6)', async () => {
      const account = await fresh()
      await authorizeAndApprove(app, account.cookie, { scope: 'user:read' })
      const other = 'http://127.0.0.1:40001/oauth/callback'
      const requestId = expectConsentPage(await get(authorizeParams(pkce().challenge, { redirect_uri: other, scope: 'user:read' }), { cookie: account.cookie }))
      expect(new URL(await approve(requestId, account.cookie)).searchParams.get('code')).toEqual(expect.any(String))
      const response = await get(authorizeParams(pkce().challenge, { redirect_uri: other, scope: 'user:read' }), { cookie: account.cookie })
      const params = expectClientRedirect(response, other)
      expect(params.get('code')).toEqual(expect.any(String))
    })

    it('errors go to the presented port too', async () => {
      expectErrorRedirect(await get(authorizeParams(pkce().challenge, { redirect_uri: CLI_OTHER_PORT, code_challenge_method: 'plain', state: 'p' })), 'invalid_request', {
        state: 'p', redirectUri: CLI_OTHER_PORT,
      })
    })

    it('a registered http://[::1]:8080/cb client on [::1]:40000: the code goes there and exchanges', async () => {
      const clientId = await registerClient(app, { client_name: 'IPv6 tool', redirect_uris: ['http://[::1]:8080/cb'], scope: 'user:read' })
      const presented = 'http://[::1]:40000/cb'
      const pair = pkce()
      const requestId = expectConsentPage(await get(authorizeParams(pair.challenge, { client_id: clientId, redirect_uri: presented, scope: 'user:read' })))
      const redirect = new URL(await approve(requestId, user.cookie))
      expect(redirect.origin).toBe('http://[::1]:40000')
      expect(redirect.pathname).toBe('/cb')
      const tokens = await exchangeCode(app, { code: redirect.searchParams.get('code')!, verifier: pair.verifier, redirectUri: presented, clientId })
      expect(tokens.statusCode, tokens.body).toBe(200)
      expect(tokens.json().scope).toBe('user:read')
    })

    it.each([
      ['localhost on another port', 'http://localhost:54321/oauth/callback'],
      ['127.0.0.1 with another path', 'http://127.0.0.1:54321/other/callback'],
      ['127.0.0.1 with a longer path', 'http://127.0.0.1:54321/oauth/callback/more'],
      ['127.0.0.1 with a query', 'http://127.0.0.1:54321/oauth/callback?x=1'],
      ['https on 127.0.0.1', 'https://127.0.0.1:54321/oauth/callback'],
      ['[::1] for a client that registered only 127.0.0.1 and localhost', 'http://[::1]:8976/oauth/callback'],
    ])('%s → 400 INVALID_REDIRECT_URI, no redirect, nothing stored', async (_, redirectUri) => {
      const before = await count('oauth_requests')
      const response = await get(authorizeParams(pkce().challenge, { redirect_uri: redirectUri, code_challenge_method: 'plain' }), { accept: 'application/json' })
      expect(response.statusCode).toBe(400)
      expect(response.headers.location).toBeUndefined()
      expect(response.json()).toMatchObject({ success: false, error: 'invalid_request', code: 'INVALID_REDIRECT_URI' })
      expect(await count('oauth_requests')).toBe(before)
    })

    it.each([
      ['a fragment (RFC 6749 §3.1.2)', 'http://127.0.0.1:54321/oauth/callback#frag'],
      ['credentials', 'http://user:pw@127.0.0.1:54321/oauth/callback'],
    ])('127.0.0.1 on another port with %s → 400 INVALID_REDIRECT_URI', async (_, redirectUri) => {
      const response = await get(authorizeParams(pkce().challenge, { redirect_uri: redirectUri }), { accept: 'application/json' })
      expect(response.statusCode).toBe(400)
      expect(response.headers.location).toBeUndefined()
      expect(response.json()).toMatchObject({ code: 'INVALID_REDIRECT_URI' })
    })

    it('an unregistered loopback port on localhost is refused with an HTML page for a browser', async () => {
      const response = await get(authorizeParams(pkce().challenge, { redirect_uri: 'http://localhost:54321/oauth/callback' }))
      expect(response.statusCode).toBe(400)
      expect(response.headers.location).toBeUndefined()
      expect(isHtml(response)).toBe(true)
    })
  })

  describe('errors after the client and redirect URI are known are redirected', () => {
    it.each([
      ['code_challenge_method=plain', 'invalid_request', { code_challenge_method: 'plain' }],
      ['a malformed code_challenge', 'invalid_request', { code_challenge: 'not a challenge!' }],
      ['a code_challenge of 42 characters', 'invalid_request', { code_challenge: 'a'.repeat(42) }],
      ['a malformed scope (a backslash)', 'invalid_scope', { scope: 'user:read admin\\all' }],
    ] as Array<[string, string, AuthorizeParams]>)('%s → 302 %s with error_description, state and iss', async (_, error, overrides) => {
      const before = await count('oauth_requests')
      for (const headers of [{}, { accept: 'application/json' }] as Array<Record<string, string>>) {
        expectErrorRedirect(await get(authorizeParams(pkce().challenge, { state: 'keep', ...overrides }), headers), error, { state: 'keep' })
      }
      expect(await count('oauth_requests')).toBe(before)
    })

    it('a 1025-character state → 302 invalid_request (never a page)', async () => {
      for (const headers of [{}, { accept: 'application/json' }] as Array<Record<string, string>>) {
        const response = await get(authorizeParams(pkce().challenge, { state: 'x'.repeat(1025) }), headers)
        expect(isHtml(response)).toBe(false)
        expectErrorRedirect(response, 'invalid_request')
      }
    })

    it('a 1024-character state is accepted and echoed', async () => {
      const state = 'y'.repeat(1024)
      const redirect = await approvedCode(user, pkce(), { state })
      expect(redirect.searchParams.get('state')).toBe(state)
    })
  })
})
