/**
 * The official MCP TypeScript SDK's OAuth client (`@modelcontextprotocol/sdk/client/auth.js`)
 * against this authorization server, over real HTTP, used exactly as an MCP client uses it:
 * discovery from an MCP server's 401 (RFC 9728 → RFC 8414), dynamic registration (RFC 7591),
 * the authorization URL with PKCE, `resource` (RFC 8707) and `prompt=consent`, the code exchange,
 * refresh with rotation, and the `auth()` orchestrator with an in-memory provider. The MCP server
 * is a tiny loopback server playing one run by a satellite: it checks bearer tokens by
 * introspection with its satellite key. The browser's part (consent) is done with the session
 * cookie of a signed-up user.
 */
import {
  auth, discoverAuthorizationServerMetadata, discoverOAuthMetadata, discoverOAuthProtectedResourceMetadata, discoverOAuthServerInfo,
  exchangeAuthorization, extractWWWAuthenticateParams, refreshAuthorization, registerClient, selectResourceURL, startAuthorization,
} from '@modelcontextprotocol/sdk/client/auth.js'
import { InvalidGrantError } from '@modelcontextprotocol/sdk/server/auth/errors.js'
import type { AuthorizationServerMetadata, OAuthClientInformationFull, OAuthClientMetadata, OAuthTokens } from '@modelcontextprotocol/sdk/shared/auth.js'
import { LATEST_PROTOCOL_VERSION } from '@modelcontextprotocol/sdk/types.js'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createTestContext, type TestContext } from '../helpers/app.js'
import { DIALECTS } from '../helpers/database.js'
import { approveInBrowser, MemoryOAuthProvider, recordingFetch, startFakeMcpServer, type Exchange, type FakeMcpServer } from '../helpers/mcp-sdk.js'
import { randomState } from '../helpers/oauth.js'
import { apiJson, freePort, registerOverHttp, startOAuthServer, type OAuthServer, type Registered } from '../helpers/oauth-e2e.js'
import { createToken, pair } from '../helpers/satellites.js'
import { client } from '../helpers/teams.js'

/** What the satellite's MCP server advertises in its RFC 9728 document. */
const MCP_SCOPES = ['mcp:read', 'offline_access']
/** What the low-level flows ask for: user:read too, so that a refusal on /api/users/me is about the audience, not the scope. */
const SDK_SCOPE = 'mcp:read user:read offline_access'

const sameScopes = (scope: string | undefined) => (scope ?? '').split(' ').filter(Boolean).sort()
const bearer = (token: string) => ({ authorization: `Bearer ${token}` })

/** The first request of an MCP session (Streamable HTTP), as the SDK's transport sends it. */
const INITIALIZE = {
  jsonrpc: '2.0', id: 0, method: 'initialize',
  params: { protocolVersion: LATEST_PROTOCOL_VERSION, capabilities: {}, clientInfo: { name: 'sdk-test-client', version: '1.0.0' } },
}

describe.each(DIALECTS)('the MCP TypeScript SDK OAuth client over real HTTP on %s', (dialect) => {
  let ctx: TestContext
  let server: OAuthServer
  let base: string
  let admin: Registered
  let user: Registered
  let mcp: FakeMcpServer
  let satelliteKey: string | undefined
  let metadata: AuthorizationServerMetadata
  /** The MCP client's loopback redirect URI (nothing listens there: the test reads the browser's redirect). */
  let callbackUrl: string

  /** Realistic MCP client metadata (RFC 7591), as Claude, Cursor or the SDK's examples send it. */
  const clientMetadata = (): OAuthClientMetadata => ({
    client_name: 'SDK Test MCP Client',
    redirect_uris: [callbackUrl],
    grant_types: ['authorization_code', 'refresh_token'],
    response_types: ['code'],
    token_endpoint_auth_method: 'none',
    client_uri: 'https://mcp-client.example.org',
    logo_uri: 'https://mcp-client.example.org/logo.png',
    software_id: 'org.example.mcp-client',
    software_version: '1.4.2',
  })

  /** RFC 7662 as the global admin (session). */
  async function introspect(token: string): Promise<Record<string, unknown>> {
    const response = await apiJson(base, 'POST', '/api/oauth2/introspect', { cookie: admin.cookie, body: { token } })
    expect(response.status, response.text).toBe(200)
    return response.json
  }

  const me = (token: string) => fetch(`${base}/api/users/me`, { headers: bearer(token) })
  /** A request to the MCP server's endpoint, with the token when given. */
  const callMcp = (token?: string) => fetch(mcp.url, {
    method: 'POST',
    headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream', ...(token === undefined ? {} : bearer(token)) },
    body: JSON.stringify(INITIALIZE),
  })

  /** RFC 7009 as an MCP client does it (the SDK has no revocation helper): form `token` and `client_id`. */
  const revoke = (token: string, clientId: string) => fetch(`${base}/api/oauth2/revoke`, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded', accept: 'application/json' },
    body: new URLSearchParams({ token, client_id: clientId }),
  })

  async function expectInvalidGrant(promise: Promise<unknown>): Promise<void> {
    const error = await promise.then(() => new Error('expected invalid_grant, got tokens'), (rejection: unknown) => rejection)
    expect(error).toBeInstanceOf(InvalidGrantError)
    expect((error as InvalidGrantError).errorCode).toBe('invalid_grant')
  }

  /** The redirect back to the client: its redirect URI with `code`, `state` and `iss` (RFC 9207). */
  function expectCallback(callback: URL, state: string | undefined): string {
    expect(`${callback.origin}${callback.pathname}`).toBe(callbackUrl)
    expect(callback.searchParams.get('error'), callback.href).toBeNull()
    expect(callback.searchParams.get('iss')).toBe(base)
    expect(callback.searchParams.get('state')).toBe(state ?? null)
    const code = callback.searchParams.get('code')
    expect(code).toMatch(/\S/)
    return code!
  }

  /**
   * The low-level flow of an MCP client: `registerClient`, `startAuthorization` (scope with
   * offline_access, `resource`), the user's consent, `exchangeAuthorization` with the same resource.
   */
  async function sdkFlow(resource: string, scope: string = SDK_SCOPE): Promise<{ information: OAuthClientInformationFull; authorizationUrl: URL; tokens: OAuthTokens }> {
    const information = await registerClient(base, { metadata, clientMetadata: clientMetadata() })
    const state = randomState()
    const { authorizationUrl, codeVerifier } = await startAuthorization(base, {
      metadata, clientInformation: information, redirectUrl: callbackUrl, scope, state, resource,
    })
    const { callback, consented, details } = await approveInBrowser(authorizationUrl, user.cookie, base)
    expect(consented, 'prompt=consent: the consent page is shown').toBe(true)
    expect(details).toMatchObject({ client_id: information.client_id, client_name: 'SDK Test MCP Client' })
    const code = expectCallback(callback, state)
    const tokens = await exchangeAuthorization(base, {
      metadata, clientInformation: information, authorizationCode: code, codeVerifier, redirectUri: callbackUrl, resource,
    })
    return { information, authorizationUrl, tokens }
  }

  beforeAll(async () => {
    ctx = await createTestContext(dialect)
    server = await startOAuthServer(ctx)
    base = server.base
    admin = await registerOverHttp(base, 'sdk_admin') // the first user: global admin
    user = await registerOverHttp(base, 'sdk_user')
    const registration = await createToken(client(server.app), admin)
    mcp = await startFakeMcpServer({ authorizationServer: base, scopes: MCP_SCOPES, satelliteKey: () => satelliteKey })
    // Registered with its URL: introspection tells a satellite only of tokens for its own resource.
    satelliteKey = (await pair(server.app, registration.token, 'sdk-satellite', { satellite_url: mcp.origin })).apiKey
    const discovered = await discoverAuthorizationServerMetadata(base)
    if (discovered === undefined) throw new Error(`no authorization server metadata at ${base}`)
    metadata = discovered
    callbackUrl = `http://127.0.0.1:${await freePort()}/callback`
  })
  afterAll(async () => {
    await mcp?.close()
    await ctx?.close()
  })

  it("discovery from an MCP server's 401: its RFC 9728 document names this service, whose RFC 8414 metadata the SDK reads", async () => {
    const refused = await callMcp()
    expect(refused.status).toBe(401)
    const challenge = extractWWWAuthenticateParams(refused)
    expect(challenge.resourceMetadataUrl?.href).toBe(mcp.metadataUrl)

    // As the transport does after a 401 (resource_metadata given), and by RFC 9728 path-aware probing.
    const prm = await discoverOAuthProtectedResourceMetadata(mcp.url, { resourceMetadataUrl: challenge.resourceMetadataUrl })
    expect(prm).toMatchObject({ resource: mcp.resource, authorization_servers: [base], scopes_supported: MCP_SCOPES })
    expect(await discoverOAuthProtectedResourceMetadata(mcp.url)).toEqual(prm)
    const probes = mcp.seen.filter((request) => request.path.startsWith('/.well-known/'))
    expect(probes.map((request) => request.path)).toEqual(['/.well-known/oauth-protected-resource/mcp', '/.well-known/oauth-protected-resource/mcp'])
    expect(probes.every((request) => request.headers['mcp-protocol-version'] === LATEST_PROTOCOL_VERSION)).toBe(true)

    // RFC 8414 at the named issuer: found at the first URL tried, no OpenID fallback needed.
    const log: Exchange[] = []
    const as = await discoverAuthorizationServerMetadata(prm.authorization_servers![0]!, { fetchFn: recordingFetch(log) })
    expect(log.map((exchange) => `${exchange.method} ${exchange.url} ${exchange.status}`)).toEqual([`GET ${base}/.well-known/oauth-authorization-server 200`])
    expect(as).toMatchObject({
      issuer: base,
      authorization_endpoint: `${base}/api/oauth2/auth`,
      token_endpoint: `${base}/api/oauth2/token`,
      registration_endpoint: `${base}/api/oauth2/register`,
      revocation_endpoint: `${base}/api/oauth2/revoke`,
      response_types_supported: ['code'],
      code_challenge_methods_supported: ['S256'],
      token_endpoint_auth_methods_supported: ['none'],
    })
    expect(as?.grant_types_supported).toEqual(expect.arrayContaining(['authorization_code', 'refresh_token']))
    expect(as?.scopes_supported).toEqual(expect.arrayContaining(MCP_SCOPES))
    // The deprecated entry point still used by older clients finds the same document.
    expect(await discoverOAuthMetadata(base)).toEqual(as)

    // The one-call discovery, and the resource indicator the SDK derives from it.
    const info = await discoverOAuthServerInfo(mcp.url, { resourceMetadataUrl: challenge.resourceMetadataUrl })
    expect(info.authorizationServerUrl).toBe(base)
    expect(info.authorizationServerMetadata).toEqual(as)
    expect(info.resourceMetadata?.resource).toBe(mcp.resource)
    const selected = await selectResourceURL(mcp.url, new MemoryOAuthProvider(callbackUrl, clientMetadata()), info.resourceMetadata)
    expect(selected?.href).toBe(mcp.resource)
  })

  it('registerClient with realistic MCP client metadata: 201 and the standard fields back; an unknown field is ignored', async () => {
    const sent = { ...clientMetadata(), scope: SDK_SCOPE, x_vendor_extension: { telemetry: false } }
    const log: Exchange[] = []
    const information = await registerClient(base, { metadata, clientMetadata: sent, fetchFn: recordingFetch(log) })

    expect(log).toHaveLength(1)
    expect(log[0]).toMatchObject({ method: 'POST', url: `${base}/api/oauth2/register`, status: 201 })
    expect(JSON.parse(log[0]!.requestBody!)).toMatchObject({ x_vendor_extension: { telemetry: false } })
    const raw = JSON.parse(log[0]!.responseBody) as Record<string, unknown>
    expect(raw).not.toHaveProperty('x_vendor_extension')

    expect(information.client_id).toMatch(/^client_/)
    expect(information.client_secret).toBeUndefined()
    expect(information.client_id_issued_at).toEqual(expect.any(Number))
    expect(Math.abs(information.client_id_issued_at! - Date.now() / 1000)).toBeLessThan(60)
    expect(information).toMatchObject({
      client_name: 'SDK Test MCP Client',
      redirect_uris: [callbackUrl],
      grant_types: ['authorization_code', 'refresh_token'],
      response_types: ['code'],
      token_endpoint_auth_method: 'none',
      client_uri: 'https://mcp-client.example.org',
      logo_uri: 'https://mcp-client.example.org/logo.png',
      software_id: 'org.example.mcp-client',
      software_version: '1.4.2',
    })
    expect(sameScopes(information.scope)).toEqual(sameScopes(SDK_SCOPE))
  })

  it("a token for the MCP server's resource: its audience, refused here, accepted by the satellite; refresh rotates, a replay ends the grant", async () => {
    const { information, authorizationUrl, tokens } = await sdkFlow(mcp.resource)

    // What the SDK put in the authorization URL.
    expect(`${authorizationUrl.origin}${authorizationUrl.pathname}`).toBe(`${base}/api/oauth2/auth`)
    expect(Object.fromEntries(authorizationUrl.searchParams)).toMatchObject({
      response_type: 'code', client_id: information.client_id, code_challenge_method: 'S256', redirect_uri: callbackUrl,
      scope: SDK_SCOPE, prompt: 'consent', resource: mcp.resource,
    })

    expect(tokens).toMatchObject({ access_token: expect.any(String), refresh_token: expect.any(String), expires_in: 3600 })
    expect(tokens.token_type.toLowerCase()).toBe('bearer')
    expect(sameScopes(tokens.scope)).toEqual(sameScopes(SDK_SCOPE))
    expect(await introspect(tokens.access_token)).toMatchObject({
      active: true, aud: mcp.resource, client_id: information.client_id, sub: user.id, token_type: 'Bearer',
    })

    // No passthrough: with user:read granted, this service still refuses a token for another resource.
    const refused = await me(tokens.access_token)
    expect(refused.status).toBe(401)
    expect(refused.headers.get('www-authenticate')).toMatch(/^Bearer error="invalid_token"/)
    // The satellite's MCP server takes it (introspection with its key: active, aud = its resource).
    const accepted = await callMcp(tokens.access_token)
    expect(accepted.status).toBe(200)
    expect(((await accepted.json()) as { result: { sub: string } }).result.sub).toBe(user.id)

    const refreshed = await refreshAuthorization(base, { metadata, clientInformation: information, refreshToken: tokens.refresh_token!, resource: mcp.resource })
    expect(refreshed.refresh_token).toEqual(expect.any(String))
    expect(refreshed.refresh_token).not.toBe(tokens.refresh_token)
    expect(refreshed.access_token).not.toBe(tokens.access_token)
    expect(await introspect(refreshed.access_token)).toMatchObject({ active: true, aud: mcp.resource })
    expect(await introspect(tokens.refresh_token!)).toEqual(expect.objectContaining({ active: false }))

    // The spent refresh token presented again: invalid_grant, and the whole grant is revoked.
    await expectInvalidGrant(refreshAuthorization(base, { metadata, clientInformation: information, refreshToken: tokens.refresh_token!, resource: mcp.resource }))
    expect(await introspect(refreshed.access_token)).toEqual(expect.objectContaining({ active: false }))
    expect((await callMcp(refreshed.access_token)).status).toBe(401)
    await expectInvalidGrant(refreshAuthorization(base, { metadata, clientInformation: information, refreshToken: refreshed.refresh_token!, resource: mcp.resource }))
  })

  it.each([
    ['registered without grant_types or scope (RFC 7591 defaults)', {}],
    ['registered with scope mcp:read alone, before the resource listed offline_access', { scope: 'mcp:read' }],
  ])('an MCP client %s that asks for mcp:read offline_access gets a refresh token, and the refresh works', async (_, extra) => {
    const { grant_types: _grants, ...bare } = clientMetadata()
    const information = await registerClient(base, { metadata, clientMetadata: { ...bare, ...extra } })
    expect(information.grant_types).toEqual(['authorization_code', 'refresh_token'])
    const state = randomState()
    const { authorizationUrl, codeVerifier } = await startAuthorization(base, {
      metadata, clientInformation: information, redirectUrl: callbackUrl, scope: MCP_SCOPES.join(' '), state, resource: mcp.resource,
    })
    const { callback, details } = await approveInBrowser(authorizationUrl, user.cookie, base)
    expect(details?.scopes.map((scope) => scope.name)).toEqual(MCP_SCOPES)
    const tokens = await exchangeAuthorization(base, {
      metadata, clientInformation: information, authorizationCode: expectCallback(callback, state), codeVerifier, redirectUri: callbackUrl, resource: mcp.resource,
    })
    expect(tokens.refresh_token).toEqual(expect.any(String))
    expect(sameScopes(tokens.scope)).toEqual(sameScopes(MCP_SCOPES.join(' ')))
    const refreshed = await refreshAuthorization(base, { metadata, clientInformation: information, refreshToken: tokens.refresh_token!, resource: mcp.resource })
    expect(refreshed.refresh_token).toEqual(expect.any(String))
    expect(refreshed.refresh_token).not.toBe(tokens.refresh_token)
    expect((await callMcp(refreshed.access_token)).status).toBe(200)
  })

  it("a token for this service's own resource, found from its 401's resource_metadata: it works on GET /api/users/me", async () => {
    const challenged = await fetch(`${base}/api/users/me`)
    expect(challenged.status).toBe(401)
    const { resourceMetadataUrl } = extractWWWAuthenticateParams(challenged)
    expect(resourceMetadataUrl?.href).toBe(`${base}/.well-known/oauth-protected-resource`)
    const prm = await discoverOAuthProtectedResourceMetadata(`${base}/api/users/me`, { resourceMetadataUrl })
    expect(prm).toMatchObject({ resource: base, authorization_servers: [base] })
    // The SDK's own check of the indicator against the URL it called; like auth(), send the document's string verbatim.
    const selected = await selectResourceURL(`${base}/api/users/me`, new MemoryOAuthProvider(callbackUrl, clientMetadata()), prm)
    expect(selected?.href).toBe(`${base}/`)

    const { information, tokens } = await sdkFlow(prm.resource)
    const response = await me(tokens.access_token)
    expect(response.status, await response.clone().text()).toBe(200)
    expect(((await response.json()) as { data: { id: string } }).data.id).toBe(user.id)
    expect(await introspect(tokens.access_token)).toMatchObject({ active: true, aud: base, client_id: information.client_id })
    // This service's token is not one for the satellite's MCP server.
    expect((await callMcp(tokens.access_token)).status).toBe(401)

    const refreshed = await refreshAuthorization(base, { metadata, clientInformation: information, refreshToken: tokens.refresh_token!, resource: prm.resource })
    expect((await me(refreshed.access_token)).status).toBe(200)
  })

  it("auth() against this service itself at PUBLIC_URL/api, as the SDK's example client: path-aware RFC 9728, no state, a localhost callback, client_secret_post asked", async () => {
    // The SDK's examples/client/simpleOAuthClient: http://localhost callback, client_secret_post, a provider without state().
    const localhostCallback = `http://localhost:${await freePort()}/callback`
    const provider = new MemoryOAuthProvider(localhostCallback, {
      client_name: 'Simple OAuth MCP Client', redirect_uris: [localhostCallback], grant_types: ['authorization_code', 'refresh_token'],
      response_types: ['code'], token_endpoint_auth_method: 'client_secret_post',
    }, { state: false })
    expect(await auth(provider, { serverUrl: `${base}/api` })).toBe('REDIRECT')
    // RFC 7591 §3.2.1: the server answers the method it supports; the SDK then authenticates as a public client.
    expect(provider.client).toMatchObject({ token_endpoint_auth_method: 'none', issuer: base })
    expect(provider.client?.client_secret).toBeUndefined()
    const authorizationUrl = provider.authorizationUrls[0]!
    expect(authorizationUrl.searchParams.get('resource')).toBe(`${base}/api`)
    expect(authorizationUrl.searchParams.has('state')).toBe(false)
    // No scope from a challenge: the SDK asks for the PRM's scopes_supported (SEP-835), offline_access with prompt=consent.
    expect(sameScopes(authorizationUrl.searchParams.get('scope') ?? undefined)).toEqual(sameScopes('mcp:read account:read user:read teams:read offline_access'))
    expect(authorizationUrl.searchParams.get('prompt')).toBe('consent')

    const { callback } = await approveInBrowser(authorizationUrl, user.cookie, base)
    expect(`${callback.origin}${callback.pathname}`).toBe(localhostCallback)
    expect(callback.searchParams.has('state')).toBe(false)
    expect(callback.searchParams.get('iss')).toBe(base)
    const code = callback.searchParams.get('code')
    expect(code).toMatch(/\S/)
    expect(await auth(provider, { serverUrl: `${base}/api`, authorizationCode: code! })).toBe('AUTHORIZED')
    const access = provider.saved!.access_token
    expect((await me(access)).status).toBe(200)
    expect(await introspect(access)).toMatchObject({ active: true, aud: `${base}/api` })
  })

  it('the auth() orchestrator against the MCP server: REDIRECT (registered, URL recorded), consent, AUTHORIZED, then a refresh when the access token is gone', async () => {
    const provider = new MemoryOAuthProvider(callbackUrl, clientMetadata())

    // The transport's first request meets a 401 and hands its challenge to auth().
    const refused = await callMcp()
    expect(refused.status).toBe(401)
    const { resourceMetadataUrl, scope } = extractWWWAuthenticateParams(refused)
    const options = { serverUrl: mcp.url, resourceMetadataUrl, scope }

    expect(await auth(provider, options)).toBe('REDIRECT')
    expect(provider.client).toMatchObject({ client_id: expect.stringMatching(/^client_/), token_endpoint_auth_method: 'none', issuer: base })
    expect(sameScopes(provider.client && 'scope' in provider.client ? provider.client.scope : undefined)).toEqual(sameScopes(MCP_SCOPES.join(' ')))
    expect(provider.saved).toBeUndefined()
    expect(provider.verifier).toMatch(/^[A-Za-z0-9._~-]{43,128}$/)
    expect(provider.authorizationUrls).toHaveLength(1)
    const authorizationUrl = provider.authorizationUrls[0]!
    expect(`${authorizationUrl.origin}${authorizationUrl.pathname}`).toBe(`${base}/api/oauth2/auth`)
    expect(Object.fromEntries(authorizationUrl.searchParams)).toMatchObject({
      client_id: provider.client!.client_id, redirect_uri: callbackUrl, resource: mcp.resource, prompt: 'consent',
      scope: MCP_SCOPES.join(' '), state: provider.lastState, code_challenge_method: 'S256',
    })

    const { callback } = await approveInBrowser(authorizationUrl, user.cookie, base)
    const code = expectCallback(callback, provider.lastState)

    expect(await auth(provider, { ...options, authorizationCode: code })).toBe('AUTHORIZED')
    const first = provider.saved!
    expect(first).toMatchObject({ access_token: expect.any(String), refresh_token: expect.any(String), issuer: base })
    expect(sameScopes(first.scope)).toEqual(sameScopes(MCP_SCOPES.join(' ')))
    const accepted = await callMcp(first.access_token)
    expect(accepted.status).toBe(200)
    expect(await introspect(first.access_token)).toMatchObject({ active: true, aud: mcp.resource, sub: user.id })

    // The access token stops working (revoked alone here): the MCP server says invalid_token, the client calls auth() again.
    const revoked = await revoke(first.access_token, provider.client!.client_id)
    expect(revoked.status, await revoked.text()).toBe(200)
    const expired = await callMcp(first.access_token)
    expect(expired.status).toBe(401)
    const again = extractWWWAuthenticateParams(expired)
    expect(again.error).toBe('invalid_token')

    expect(await auth(provider, { serverUrl: mcp.url, resourceMetadataUrl: again.resourceMetadataUrl, scope: again.scope })).toBe('AUTHORIZED')
    const second = provider.saved!
    expect(provider.authorizationUrls, 'no new browser round').toHaveLength(1)
    expect(second.refresh_token).toEqual(expect.any(String))
    expect(second.refresh_token).not.toBe(first.refresh_token)
    expect(second.access_token).not.toBe(first.access_token)
    expect((await callMcp(second.access_token)).status).toBe(200)
    expect(await introspect(second.access_token)).toMatchObject({ active: true, aud: mcp.resource })
    expect(provider.invalidated).toEqual([])
  })

  it('revocation of the refresh token (RFC 7009, form token + client_id): 200, its access token is dead, and auth() starts over', async () => {
    const { information, tokens } = await sdkFlow(mcp.resource)
    expect((await callMcp(tokens.access_token)).status).toBe(200)

    const revoked = await revoke(tokens.refresh_token!, information.client_id)
    expect(revoked.status, await revoked.clone().text()).toBe(200)
    expect(await introspect(tokens.access_token)).toEqual(expect.objectContaining({ active: false }))
    expect(await introspect(tokens.refresh_token!)).toEqual(expect.objectContaining({ active: false }))
    expect((await callMcp(tokens.access_token)).status).toBe(401)
    await expectInvalidGrant(refreshAuthorization(base, { metadata, clientInformation: information, refreshToken: tokens.refresh_token!, resource: mcp.resource }))

    // A client session holding these credentials: the refresh fails with invalid_grant, auth() drops the tokens and redirects.
    const provider = new MemoryOAuthProvider(callbackUrl, clientMetadata())
    provider.client = { ...information, issuer: base }
    provider.saved = { ...tokens, issuer: base }
    expect(await auth(provider, { serverUrl: mcp.url })).toBe('REDIRECT')
    expect(provider.invalidated).toEqual(['tokens'])
    expect(provider.client.client_id, 'the registration is kept').toBe(information.client_id)
    expect(provider.authorizationUrls).toHaveLength(1)
    expect(provider.authorizationUrls[0]!.searchParams.get('client_id')).toBe(information.client_id)
  })

  it('a registration this server does not know (invalid_client on refresh): auth() forgets everything and registers again', async () => {
    const provider = new MemoryOAuthProvider(callbackUrl, clientMetadata())
    provider.client = { client_id: 'client_forgotten0000000000000000000', token_endpoint_auth_method: 'none', redirect_uris: [callbackUrl], issuer: base }
    provider.saved = { access_token: 'stale', token_type: 'Bearer', refresh_token: 'stale-refresh', issuer: base }
    const log: Exchange[] = []
    expect(await auth(provider, { serverUrl: mcp.url, fetchFn: recordingFetch(log) })).toBe('REDIRECT')
    const refreshAttempt = log.find((exchange) => exchange.url === `${base}/api/oauth2/token`)
    expect(refreshAttempt?.status).toBe(401)
    expect(JSON.parse(refreshAttempt!.responseBody)).toMatchObject({ error: 'invalid_client' })
    expect(provider.invalidated).toEqual(['all'])
    expect(provider.client.client_id).toMatch(/^client_/)
    expect(provider.client.client_id).not.toBe('client_forgotten0000000000000000000')
    expect(provider.authorizationUrls[0]!.searchParams.get('client_id')).toBe(provider.client.client_id)
  })
})
