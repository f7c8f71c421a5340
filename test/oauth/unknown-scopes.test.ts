/**
 * Scopes this service does not know are dropped, not refused (RFC 6749 §3.3 lets a server ignore
 * part of a requested scope; the granted `scope` in its answers tells the client what it got).
 * MCP clients copy a protected resource's own `scopes_supported` into registration and
 * authorization requests, so an MCP server advertising scopes of its own must not lock them out.
 * A name that breaks the scope-token syntax is still refused. Checked at registration (RFC 7591),
 * in a Client ID Metadata Document, at the authorization endpoint, on refresh, and end to end with
 * the official MCP TypeScript SDK's `auth()` over real HTTP.
 */
import { auth, extractWWWAuthenticateParams } from '@modelcontextprotocol/sdk/client/auth.js'
import { sql } from 'drizzle-orm'
import type { FastifyInstance, LightMyRequestResponse } from 'fastify'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createTestContext, type TestContext } from '../helpers/app.js'
import { DIALECTS } from '../helpers/database.js'
import { startDocumentServer, type DocumentServer } from '../helpers/document-server.js'
import { approveInBrowser, MemoryOAuthProvider, startFakeMcpServer, type FakeMcpServer } from '../helpers/mcp-sdk.js'
import {
  ALL_SCOPES, authorizeParams, authorizeUrl, bearer, consentDetails, consentRequestId, exchangeCode, issueTokens, locationOf, pkce, postConsent,
  refresh, type AuthorizeParams,
} from '../helpers/oauth.js'
import { freePort, registerOverHttp, startOAuthServer, type OAuthServer, type Registered } from '../helpers/oauth-e2e.js'
import { createToken, pair } from '../helpers/satellites.js'
import { rawRows } from '../helpers/sql.js'
import { client, signUp, type Account } from '../helpers/teams.js'

const CALLBACK = 'http://127.0.0.1:7777/callback'
const EVERY_SCOPE = ALL_SCOPES.join(' ')

describe.each(DIALECTS)('unknown scopes are dropped, malformed ones refused, on %s', (dialect) => {
  let ctx: TestContext
  let documents: DocumentServer
  let app: FastifyInstance
  let user: Account

  const register = (metadata: Record<string, unknown>) =>
    app.inject({ method: 'POST', url: '/api/oauth2/register', payload: { client_name: 'Scoped Tool', redirect_uris: [CALLBACK], ...metadata } })
  const storedClientScope = async (clientId: string) =>
    (await rawRows(app.services.database, sql`select scope from oauth_clients where id = ${clientId}`))[0]?.[0]
  const clientCount = async () => Number((await rawRows(app.services.database, sql`select count(*) from oauth_clients`))[0]![0])
  const authorize = (params: AuthorizeParams) =>
    app.inject({ method: 'GET', url: authorizeUrl(params), headers: { cookie: user.cookie, accept: 'application/json' } })

  /** /auth (signed in) → the consent page's scopes; answers them and the request id. */
  async function consentScopes(params: AuthorizeParams): Promise<{ scopes: string[]; requestId: string; csrf: string }> {
    const started = await authorize(params)
    expect(started.statusCode, started.body).toBe(302)
    const requestId = consentRequestId(locationOf(started))
    expect(requestId, locationOf(started)).toEqual(expect.any(String))
    const details = await consentDetails(app, requestId!, user.cookie)
    expect(details.statusCode, details.body).toBe(200)
    const data = details.json().data as { scopes: Array<{ name: string }>; csrf_token: string }
    return { scopes: data.scopes.map((scope) => scope.name), requestId: requestId!, csrf: data.csrf_token }
  }

  function expectErrorRedirect(response: LightMyRequestResponse, error: string): void {
    expect(response.statusCode, response.body).toBe(302)
    const location = new URL(locationOf(response)!)
    expect(`${location.origin}${location.pathname}`).toBe(CALLBACK)
    expect(location.searchParams.get('error')).toBe(error)
  }

  beforeAll(async () => {
    documents = await startDocumentServer()
    ctx = await createTestContext(dialect)
    ;({ app } = await ctx.build({
      outbound: { ca: [documents.ca], timeoutMs: 1500 },
      env: { RATE_LIMIT_ENABLED: 'false', OUTBOUND_ALLOWED_HOSTS: `127.0.0.1:${documents.port}` },
    }))
    user = await signUp(app, `scopes_user_${dialect}`)
  })
  afterAll(async () => {
    await ctx?.close()
    await documents?.close()
  })

  it('registration keeps the known scopes and drops the rest; none known → every scope, as without scope', async () => {
    const kept = await register({ scope: 'mcp:read tools:call custom:thing' })
    expect(kept.statusCode, kept.body).toBe(201)
    expect(kept.json().scope).toBe('mcp:read')
    expect(await storedClientScope(kept.json().client_id)).toBe('mcp:read')

    const none = await register({ scope: 'tools:call custom:thing' })
    expect(none.statusCode, none.body).toBe(201)
    expect(none.json().scope).toBe(EVERY_SCOPE)
    expect(await storedClientScope(none.json().client_id)).toBe(EVERY_SCOPE)
  })

  it('registration refuses a malformed scope: 400 invalid_client_metadata, nothing stored', async () => {
    const before = await clientCount()
    for (const scope of ['mcp:read tools"call', 'mcp:read back\\slash', 'mcp:read\ttools:call', 'mcp:read tööls']) {
      const response = await register({ scope })
      expect(response.statusCode, `${JSON.stringify(scope)} ${response.body}`).toBe(400)
      expect(response.json()).toMatchObject({ error: 'invalid_client_metadata', code: 'INVALID_CLIENT_METADATA' })
      expect(response.json().error_description).toMatch(/RFC 6749 section 3\.3/)
    }
    expect(await clientCount()).toBe(before)
  })

  it('authorize + token: an unknown extra scope is dropped; the consent page and the token answer show only the known ones', async () => {
    const registered = await register({ scope: 'user:read offline_access tools:call' })
    const clientId: string = registered.json().client_id
    expect(registered.json().scope).toBe('user:read offline_access')

    const codePair = pkce()
    const params = authorizeParams(codePair.challenge, { client_id: clientId, redirect_uri: CALLBACK, scope: 'user:read tools:call offline_access' })
    const { scopes, requestId, csrf } = await consentScopes(params)
    expect(scopes).toEqual(['user:read', 'offline_access'])
    const decided = await postConsent(app, { request_id: requestId, decision: 'approve', csrf_token: csrf }, user.cookie)
    expect(decided.statusCode, decided.body).toBe(200)
    const code = new URL(decided.json().data.redirect_url).searchParams.get('code')!
    const token = await exchangeCode(app, { code, verifier: codePair.verifier, redirectUri: CALLBACK, clientId })
    expect(token.statusCode, token.body).toBe(200)
    expect(token.json()).toMatchObject({ scope: 'user:read offline_access', refresh_token: expect.any(String) })
    const stored = await rawRows(app.services.database, sql`select scope from oauth_grants where client_id = ${clientId}`)
    expect(stored).toEqual([['user:read offline_access']])
    const me = await app.inject({ method: 'GET', url: '/api/users/me', headers: bearer(token.json().access_token) })
    expect(me.statusCode, me.body).toBe(200)

    // The service's own client as well: user:read kept, custom:thing gone.
    const cli = await issueTokens(app, user.cookie, 'user:read custom:thing')
    expect(cli.scope).toBe('user:read')
  })

  it("authorize: no known scope left → the client's registered scopes; a known one it did not register or a malformed one → invalid_scope", async () => {
    const clientId: string = (await register({ scope: 'user:read offline_access' })).json().client_id
    const paramsWith = (scope: string) => authorizeParams(pkce().challenge, { client_id: clientId, redirect_uri: CALLBACK, scope })
    expect((await consentScopes(paramsWith('tools:call custom:thing'))).scopes).toEqual(['user:read', 'offline_access'])
    expect((await consentScopes(paramsWith('offline_access  custom:thing'))).scopes).toEqual(['offline_access'])
    expectErrorRedirect(await authorize(paramsWith('teams:read custom:thing')), 'invalid_scope')
    for (const malformed of ['user:read "custom"', 'user:read custom\\thing', 'user:read é']) {
      expectErrorRedirect(await authorize(paramsWith(malformed)), 'invalid_scope')
    }
  })

  it('refresh: unknown names dropped, none known → the granted scope, wider or malformed → invalid_scope', async () => {
    const tokens = await issueTokens(app, user.cookie, 'user:read teams:read offline_access')
    const same = await refresh(app, tokens.refresh_token!, { scope: 'custom:thing' })
    expect(same.statusCode, same.body).toBe(200)
    expect(same.json().scope).toBe('user:read teams:read offline_access')

    const narrowed = await refresh(app, same.json().refresh_token, { scope: 'user:read offline_access tools:call' })
    expect(narrowed.statusCode, narrowed.body).toBe(200)
    expect(narrowed.json().scope).toBe('user:read offline_access')
    // The dropped teams:read is gone from the token itself.
    const teams = await app.inject({ method: 'GET', url: '/api/teams/me', headers: bearer(narrowed.json().access_token) })
    expect(teams.statusCode).toBe(403)
    expect(teams.headers['www-authenticate']).toContain('insufficient_scope')

    for (const refused of ['account:read custom:thing', 'user:read "custom"']) {
      const response = await refresh(app, narrowed.json().refresh_token, { scope: refused })
      expect(response.statusCode, response.body).toBe(400)
      expect(response.json()).toMatchObject({ error: 'invalid_scope' })
    }
    // A refused request spends nothing: the refresh token still works.
    expect((await refresh(app, narrowed.json().refresh_token)).statusCode).toBe(200)
  })

  it("a Client ID Metadata Document's scope keeps its known scopes; a malformed one refuses the document", async () => {
    const clientId = documents.document('/clients/scoped.json', { client_name: 'Document Tool', redirect_uris: [CALLBACK], scope: 'user:read custom:thing' })
    const scope = 'user:read custom:thing'
    expect((await consentScopes(authorizeParams(pkce().challenge, { client_id: clientId, redirect_uri: CALLBACK, scope }))).scopes).toEqual(['user:read'])
    // teams:read is known but not in the document's scope.
    expectErrorRedirect(await authorize(authorizeParams(pkce().challenge, { client_id: clientId, redirect_uri: CALLBACK, scope: 'teams:read' })), 'invalid_scope')

    const malformed = documents.document('/clients/malformed.json', { redirect_uris: [CALLBACK], scope: 'user:read "custom"' })
    const refused = await authorize(authorizeParams(pkce().challenge, { client_id: malformed, redirect_uri: CALLBACK, scope: 'user:read' }))
    expect(refused.statusCode, refused.body).toBe(400)
    expect(refused.headers.location).toBeUndefined()
    expect(refused.json()).toMatchObject({ error: 'invalid_request', code: 'UNKNOWN_CLIENT' })
    expect(refused.json().error_description).toMatch(/scope must be space-separated names/)
  })
})

describe.each(DIALECTS)('the MCP SDK against a protected resource advertising a scope of its own, on %s', (dialect) => {
  /** What the MCP server advertises: two of this service's scopes and one of its own. */
  const ADVERTISED = ['mcp:read', 'offline_access', 'tools:call']
  let ctx: TestContext
  let server: OAuthServer
  let user: Registered
  let mcp: FakeMcpServer
  let satelliteKey: string | undefined

  const callMcp = (token?: string) => fetch(mcp.url, {
    method: 'POST',
    headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream', ...(token === undefined ? {} : bearer(token)) },
    body: JSON.stringify({ jsonrpc: '2.0', id: 0, method: 'initialize', params: {} }),
  })

  beforeAll(async () => {
    ctx = await createTestContext(dialect)
    server = await startOAuthServer(ctx)
    const admin = await registerOverHttp(server.base, 'extra_scope_admin')
    user = await registerOverHttp(server.base, 'extra_scope_user')
    const registration = await createToken(client(server.app), admin)
    mcp = await startFakeMcpServer({ authorizationServer: server.base, scopes: ADVERTISED, satelliteKey: () => satelliteKey })
    // Registered with its URL: introspection tells a satellite only of tokens for its own resource.
    satelliteKey = (await pair(server.app, registration.token, 'extra-scope-satellite', { satellite_url: mcp.origin })).apiKey
  })
  afterAll(async () => {
    await mcp?.close()
    await ctx?.close()
  })

  it("auth(): registers, the user consents to the known scopes, tokens carry exactly those, and the MCP server accepts them", async () => {
    const callbackUrl = `http://127.0.0.1:${await freePort()}/callback`
    const provider = new MemoryOAuthProvider(callbackUrl, {
      client_name: 'Extra Scope MCP Client', redirect_uris: [callbackUrl], grant_types: ['authorization_code', 'refresh_token'],
      response_types: ['code'], token_endpoint_auth_method: 'none',
    })
    const refused = await callMcp()
    expect(refused.status).toBe(401)
    const { resourceMetadataUrl } = extractWWWAuthenticateParams(refused)

    // The SDK sends the resource's scopes_supported, tools:call included, to registration and /auth.
    expect(await auth(provider, { serverUrl: mcp.url, resourceMetadataUrl })).toBe('REDIRECT')
    expect(provider.client && 'scope' in provider.client ? provider.client.scope : undefined).toBe('mcp:read offline_access')
    const authorizationUrl = provider.authorizationUrls[0]!
    expect(authorizationUrl.searchParams.get('scope')).toBe(ADVERTISED.join(' '))

    const { callback, consented, details } = await approveInBrowser(authorizationUrl, user.cookie, server.base)
    expect(consented).toBe(true)
    expect(details?.scopes.map((scope) => scope.name)).toEqual(['mcp:read', 'offline_access'])
    expect(callback.searchParams.get('error'), callback.href).toBeNull()
    const code = callback.searchParams.get('code')!

    expect(await auth(provider, { serverUrl: mcp.url, resourceMetadataUrl, authorizationCode: code })).toBe('AUTHORIZED')
    expect(provider.saved).toMatchObject({ scope: 'mcp:read offline_access', refresh_token: expect.any(String) })
    const accepted = await callMcp(provider.saved!.access_token)
    expect(accepted.status).toBe(200)
    expect(((await accepted.json()) as { result: { sub: string; scope: string } }).result).toEqual({ sub: user.id, scope: 'mcp:read offline_access' })
  })
})
