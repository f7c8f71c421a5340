/**
 * The test fixture test/helpers/protected-mcp-server.ts on its own, with tokens signed by a key set
 * of the test's own (a stand-in issuer): what it answers without a token and with tokens that are
 * not for it (wrong audience, issuer, type, signature, expired), its protected-resource metadata,
 * and an SDK client calling `whoami` and `echo` with a valid token; a session stays its subject's.
 * Then with real tokens of an oidc-provider authorization server (test/helpers/upstream-oauth.ts):
 * one for its resource is accepted, one for another resource refused.
 */
import { Client } from '@modelcontextprotocol/sdk/client/index.js'
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js'
import { createLocalJWKSet, exportJWK, generateKeyPair, SignJWT, type JWK } from 'jose'
import * as oauth from 'oauth4webapi'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { startProtectedMcpServer, type ProtectedMcpServer } from '../helpers/protected-mcp-server.js'
import { authorize, startAuthorizationServer, type AuthorizationServer } from '../helpers/upstream-oauth.js'

const ISSUER = 'http://127.0.0.1:1/issuer'
const INITIALIZE = JSON.stringify({ jsonrpc: '2.0', id: 0, method: 'initialize', params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'fixture-test', version: '1' } } })

describe('the protected MCP server fixture', () => {
  let server: ProtectedMcpServer
  let sign: (claims: Record<string, unknown>, options?: { typ?: string; key?: 'other' }) => Promise<string>
  const clients: Client[] = []

  const post = (authorization?: string) => fetch(server.resource, {
    method: 'POST',
    headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream', ...(authorization === undefined ? {} : { authorization }) },
    body: INITIALIZE,
  })
  const valid = (sub: string, extra: Record<string, unknown> = {}) =>
    sign({ iss: ISSUER, aud: server.resource, sub, client_id: 'c1', scope: 'mcp', jti: `${sub}-${Math.random()}`, exp: Math.floor(Date.now() / 1000) + 60, ...extra })

  const connect = async (headers: Record<string, string>): Promise<Client> => {
    const mcp = new Client({ name: 'fixture-test', version: '1.0.0' })
    await mcp.connect(new StreamableHTTPClientTransport(new URL(server.resource), { requestInit: { headers } }))
    clients.push(mcp)
    return mcp
  }
  const text = (result: Awaited<ReturnType<Client['callTool']>>) => (result.content as Array<{ text: string }>)[0]!.text

  beforeAll(async () => {
    const { privateKey, publicKey } = await generateKeyPair('ES256')
    const other = await generateKeyPair('ES256')
    const jwk: JWK = { ...(await exportJWK(publicKey)), kid: 'k1', alg: 'ES256' }
    server = await startProtectedMcpServer({ issuer: ISSUER, keys: createLocalJWKSet({ keys: [jwk] }) })
    sign = (claims, { typ = 'at+jwt', key } = {}) =>
      new SignJWT(claims).setProtectedHeader({ alg: 'ES256', kid: 'k1', typ }).sign(key === 'other' ? other.privateKey : privateKey)
  })
  afterAll(async () => {
    await Promise.all(clients.map((mcp) => mcp.close().catch(() => undefined)))
    await server?.close()
  })

  it('answers a request without a token with 401 and a challenge naming its metadata and scopes', async () => {
    const response = await post()
    expect(response.status).toBe(401)
    expect(response.headers.get('www-authenticate')).toBe(`Bearer resource_metadata="${server.url}/.well-known/oauth-protected-resource/mcp", scope="mcp offline_access"`)
    expect(server.metadataUrl).toBe(`${server.url}/.well-known/oauth-protected-resource/mcp`)
  })

  it('serves its protected-resource metadata (RFC 9728) naming the resource and the issuer', async () => {
    const response = await fetch(server.metadataUrl)
    expect(response.status).toBe(200)
    expect(await response.json()).toMatchObject({ resource: server.resource, authorization_servers: [ISSUER], scopes_supported: ['mcp', 'offline_access'] })
  })

  it('refuses tokens that are not access tokens for it, with error="invalid_token"', async () => {
    const now = Math.floor(Date.now() / 1000)
    const cases: Array<[string, Promise<string>]> = [
      ['another audience', valid('alice', { aud: 'http://127.0.0.1:2/mcp' })],
      ['another issuer', valid('alice', { iss: 'http://127.0.0.1:3/' })],
      ['an ID token', sign({ iss: ISSUER, aud: server.resource, sub: 'alice', exp: now + 60 }, { typ: 'JWT' })],
      ['another key', sign({ iss: ISSUER, aud: server.resource, sub: 'alice', exp: now + 60 }, { key: 'other' })],
      ['expired', valid('alice', { exp: now - 5 })],
      ['garbage', Promise.resolve('not-a-jwt')],
    ]
    for (const [what, token] of cases) {
      const response = await post(`Bearer ${await token}`)
      expect(response.status, what).toBe(401)
      expect(response.headers.get('www-authenticate'), what).toContain('error="invalid_token"')
    }
    expect((await post('Basic dXNlcjpwYXNz')).status).toBe(401)
    expect(server.accepted).toEqual([])
  })

  it('lets an SDK client with a valid token call whoami and echo, and records what it accepted', async () => {
    const token = await valid('alice')
    const mcp = await connect({ authorization: `Bearer ${token}` })
    expect((await mcp.listTools()).tools.map((tool) => tool.name).sort()).toEqual(['echo', 'whoami'])
    expect(text(await mcp.callTool({ name: 'whoami', arguments: {} }))).toBe('alice')
    expect(text(await mcp.callTool({ name: 'echo', arguments: { text: 'hello' } }))).toBe('hello')
    expect(server.accepted.length).toBeGreaterThanOrEqual(3)
    expect(new Set(server.accepted.map((one) => one.authorization))).toEqual(new Set([`Bearer ${token}`]))
    expect(server.accepted.every((one) => one.sub === 'alice')).toBe(true)
    expect([...server.sessions().values()]).toContain('alice')
  })

  it("keeps a session to its subject: another subject's valid token on it is refused with 403", async () => {
    await connect({ authorization: `Bearer ${await valid('bob')}` })
    const [sessionId] = [...server.sessions()].find(([, sub]) => sub === 'bob')!
    const response = await fetch(server.resource, {
      method: 'POST',
      headers: {
        'content-type': 'application/json', accept: 'application/json, text/event-stream', 'mcp-session-id': sessionId,
        'mcp-protocol-version': '2025-06-18', authorization: `Bearer ${await valid('alice')}`,
      },
      body: JSON.stringify({ jsonrpc: '2.0', id: 5, method: 'tools/list', params: {} }),
    })
    expect(response.status).toBe(403)
  })
})

describe('the protected MCP server fixture with tokens of a real authorization server', () => {
  let as: AuthorizationServer
  let server: ProtectedMcpServer
  const clients: Client[] = []

  beforeAll(async () => {
    as = await startAuthorizationServer({ accessTokenTTL: 60 })
    server = await startProtectedMcpServer({ issuer: as.issuer, jwksUri: as.jwksUri, scopes: ['mcp:tools'] })
  })
  afterAll(async () => {
    await Promise.all(clients.map((mcp) => mcp.close().catch(() => undefined)))
    await server?.close()
    await as?.close()
  })

  /** A public client registered dynamically, the code flow with PKCE and the resource, as `account`. */
  async function tokenFor(account: string, resource: string): Promise<oauth.TokenEndpointResponse> {
    const issuer = new URL(as.issuer)
    const options = { [oauth.allowInsecureRequests]: true }
    const metadata = await oauth.processDiscoveryResponse(issuer, await oauth.discoveryRequest(issuer, { algorithm: 'oidc', ...options }))
    const redirectUri = 'http://127.0.0.1:9/callback'
    const registered = await oauth.processDynamicClientRegistrationResponse(await oauth.dynamicClientRegistrationRequest(metadata, {
      redirect_uris: [redirectUri], token_endpoint_auth_method: 'none', grant_types: ['authorization_code', 'refresh_token'], response_types: ['code'],
    }, options))
    const client: oauth.Client = { client_id: registered.client_id, token_endpoint_auth_method: 'none' }
    const verifier = oauth.generateRandomCodeVerifier()
    const url = new URL(metadata.authorization_endpoint!)
    for (const [name, value] of Object.entries({
      client_id: client.client_id, redirect_uri: redirectUri, response_type: 'code', scope: 'mcp:tools', resource,
      code_challenge: await oauth.calculatePKCECodeChallenge(verifier), code_challenge_method: 'S256', state: 'fixture-state',
    })) url.searchParams.set(name, value)
    const { callback } = await authorize(url.toString(), { account })
    const params = oauth.validateAuthResponse(metadata, client, new URL(callback), 'fixture-state')
    const response = await oauth.authorizationCodeGrantRequest(metadata, client, oauth.None(), params, redirectUri, verifier, { ...options, additionalParameters: { resource } })
    return oauth.processAuthorizationCodeResponse(metadata, client, response)
  }

  it("accepts oidc-provider's JWT access token for its resource: whoami answers the account", async () => {
    const tokens = await tokenFor('carol', server.resource)
    const mcp = new Client({ name: 'fixture-test', version: '1.0.0' })
    await mcp.connect(new StreamableHTTPClientTransport(new URL(server.resource), { requestInit: { headers: { authorization: `Bearer ${tokens.access_token}` } } }))
    clients.push(mcp)
    expect(((await mcp.callTool({ name: 'whoami', arguments: {} })).content as Array<{ text: string }>)[0]!.text).toBe('carol')
    expect(server.accepted.at(-1)).toMatchObject({ sub: 'carol', authorization: `Bearer ${tokens.access_token}` })
  })

  it('refuses a token the same server issued for another resource', async () => {
    const tokens = await tokenFor('carol', 'http://127.0.0.1:9/elsewhere')
    const response = await fetch(server.resource, {
      method: 'POST',
      headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream', authorization: `Bearer ${tokens.access_token}` },
      body: INITIALIZE,
    })
    expect(response.status).toBe(401)
    expect(server.refused.at(-1)?.reason).toBe('ERR_JWT_CLAIM_VALIDATION_FAILED')
  })
})
