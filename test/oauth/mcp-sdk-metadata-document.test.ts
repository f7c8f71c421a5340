/**
 * The official MCP TypeScript SDK's `auth()` with a Client ID Metadata Document instead of
 * dynamic registration (SEP-991): the provider names the https URL of its document
 * (`clientMetadataUrl`), the SDK sees `client_id_metadata_document_supported` in this service's
 * RFC 8414 metadata and uses that URL as its client_id, without POSTing to /api/oauth2/register.
 * The document is served by a local https server whose self-signed CA the backend trusts and whose
 * host is in OUTBOUND_ALLOWED_HOSTS.
 */
import { auth, extractWWWAuthenticateParams } from '@modelcontextprotocol/sdk/client/auth.js'
import type { OAuthClientMetadata } from '@modelcontextprotocol/sdk/shared/auth.js'
import { LATEST_PROTOCOL_VERSION } from '@modelcontextprotocol/sdk/types.js'
import { sql } from 'drizzle-orm'
import type { FastifyInstance } from 'fastify'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createTestContext, type TestContext } from '../helpers/app.js'
import { DIALECTS } from '../helpers/database.js'
import { startDocumentServer, type DocumentServer } from '../helpers/document-server.js'
import { approveInBrowser, MemoryOAuthProvider, recordingFetch, startFakeMcpServer, type Exchange, type FakeMcpServer } from '../helpers/mcp-sdk.js'
import { apiJson, freePort, registerOverHttp, type Registered } from '../helpers/oauth-e2e.js'
import { createToken, pair } from '../helpers/satellites.js'
import { rawRows } from '../helpers/sql.js'
import { client } from '../helpers/teams.js'

const MCP_SCOPES = ['mcp:read', 'offline_access']
const DOCUMENT_PATH = '/mcp-client/client-metadata.json'

const INITIALIZE = {
  jsonrpc: '2.0', id: 0, method: 'initialize',
  params: { protocolVersion: LATEST_PROTOCOL_VERSION, capabilities: {}, clientInfo: { name: 'sdk-cimd-client', version: '1.0.0' } },
}

/** The in-memory provider of an MCP client that has a metadata document rather than registering. */
class DocumentOAuthProvider extends MemoryOAuthProvider {
  constructor(redirectUrl: string, clientMetadata: OAuthClientMetadata, readonly clientMetadataUrl: string) {
    super(redirectUrl, clientMetadata)
  }
}

describe.each(DIALECTS)('the MCP TypeScript SDK with a Client ID Metadata Document on %s', (dialect) => {
  let ctx: TestContext
  let documents: DocumentServer
  let app: FastifyInstance
  let base: string
  let admin: Registered
  let user: Registered
  let mcp: FakeMcpServer
  let satelliteKey: string | undefined
  let callbackUrl: string
  let documentUrl: string

  const countClients = async () => Number((await rawRows(app.services.database, sql`select count(*) from oauth_clients`))[0]![0])

  /** The backend listening on 127.0.0.1 at its PUBLIC_URL, trusting the document server. */
  async function listen(): Promise<void> {
    let lastError: unknown
    for (let attempt = 0; attempt < 5; attempt += 1) {
      const port = await freePort()
      const origin = `http://127.0.0.1:${port}`
      const built = (await ctx.build({
        outbound: { ca: [documents.ca] },
        env: { OUTBOUND_ALLOWED_HOSTS: `127.0.0.1:${documents.port}`, PUBLIC_URL: origin, RATE_LIMIT_ENABLED: 'false' },
      })).app
      try {
        await built.listen({ host: '127.0.0.1', port })
        app = built
        base = origin
        return
      } catch (error) {
        lastError = error
        await built.close()
        if ((error as NodeJS.ErrnoException).code !== 'EADDRINUSE') throw error
      }
    }
    throw lastError
  }

  const callMcp = (token?: string) => fetch(mcp.url, {
    method: 'POST',
    headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream', ...(token === undefined ? {} : { authorization: `Bearer ${token}` }) },
    body: JSON.stringify(INITIALIZE),
  })

  beforeAll(async () => {
    documents = await startDocumentServer()
    ctx = await createTestContext(dialect)
    await listen()
    admin = await registerOverHttp(base, 'cimd_sdk_admin')
    user = await registerOverHttp(base, 'cimd_sdk_user')
    const registration = await createToken(client(app), admin)
    mcp = await startFakeMcpServer({ authorizationServer: base, scopes: MCP_SCOPES, satelliteKey: () => satelliteKey })
    // Registered with its URL: introspection tells a satellite only of tokens for its own resource.
    satelliteKey = (await pair(app, registration.token, 'cimd-satellite', { satellite_url: mcp.origin })).apiKey
    callbackUrl = `http://127.0.0.1:${await freePort()}/callback`
    documentUrl = documents.document(DOCUMENT_PATH, {
      client_name: 'SDK Document MCP Client',
      redirect_uris: [callbackUrl],
      grant_types: ['authorization_code', 'refresh_token'],
      response_types: ['code'],
      token_endpoint_auth_method: 'none',
      scope: MCP_SCOPES.join(' '),
    })
  })
  afterAll(async () => {
    await mcp?.close()
    await ctx?.close()
    await documents?.close()
  })

  it('auth() with clientMetadataUrl: REDIRECT without registering, client_id = the document URL, consent, AUTHORIZED, a token for the MCP resource', async () => {
    const clientsBefore = await countClients()
    const provider = new DocumentOAuthProvider(callbackUrl, {
      client_name: 'SDK Document MCP Client',
      redirect_uris: [callbackUrl],
      grant_types: ['authorization_code', 'refresh_token'],
      response_types: ['code'],
      token_endpoint_auth_method: 'none',
    }, documentUrl)

    const refused = await callMcp()
    expect(refused.status).toBe(401)
    const { resourceMetadataUrl, scope } = extractWWWAuthenticateParams(refused)
    const log: Exchange[] = []
    const options = { serverUrl: mcp.url, resourceMetadataUrl, scope, fetchFn: recordingFetch(log) }

    expect(await auth(provider, options)).toBe('REDIRECT')
    // The SDK read client_id_metadata_document_supported and took the URL as its client_id.
    const asMetadata = log.find((exchange) => exchange.url === `${base}/.well-known/oauth-authorization-server`)
    expect(asMetadata?.status).toBe(200)
    expect(JSON.parse(asMetadata!.responseBody)).toMatchObject({ client_id_metadata_document_supported: true })
    expect(log.filter((exchange) => exchange.url.includes('/api/oauth2/register'))).toEqual([])
    expect(await countClients()).toBe(clientsBefore)
    expect(await countClients()).toBe(0)
    expect(provider.client).toEqual({ client_id: documentUrl, issuer: base })

    expect(provider.authorizationUrls).toHaveLength(1)
    const authorizationUrl = provider.authorizationUrls[0]!
    expect(`${authorizationUrl.origin}${authorizationUrl.pathname}`).toBe(`${base}/api/oauth2/auth`)
    expect(Object.fromEntries(authorizationUrl.searchParams)).toMatchObject({
      client_id: documentUrl, redirect_uri: callbackUrl, resource: mcp.resource, code_challenge_method: 'S256', state: provider.lastState,
    })

    const { callback, consented, details } = await approveInBrowser(authorizationUrl, user.cookie, base)
    expect(consented).toBe(true)
    expect(details).toMatchObject({
      client_id: documentUrl, client_name: 'SDK Document MCP Client',
      client_registered: false, client_id_document_host: `127.0.0.1:${documents.port}`,
    })
    expect(documents.hits(DOCUMENT_PATH)).toBeGreaterThanOrEqual(1)
    expect(`${callback.origin}${callback.pathname}`).toBe(callbackUrl)
    expect(callback.searchParams.get('error'), callback.href).toBeNull()
    expect(callback.searchParams.get('iss')).toBe(base)
    expect(callback.searchParams.get('state')).toBe(provider.lastState)
    const code = callback.searchParams.get('code')
    expect(code).toMatch(/\S/)

    expect(await auth(provider, { ...options, authorizationCode: code! })).toBe('AUTHORIZED')
    const tokens = provider.saved!
    expect(tokens).toMatchObject({ access_token: expect.any(String), issuer: base })
    const tokenRequest = log.find((exchange) => exchange.url === `${base}/api/oauth2/token`)
    expect(new URLSearchParams(tokenRequest!.requestBody).get('client_id')).toBe(documentUrl)

    const introspected = await apiJson(base, 'POST', '/api/oauth2/introspect', { cookie: admin.cookie, body: { token: tokens.access_token } })
    expect(introspected.status, introspected.text).toBe(200)
    expect(introspected.json).toMatchObject({ active: true, client_id: documentUrl, aud: mcp.resource, sub: user.id })

    expect((await callMcp(tokens.access_token)).status).toBe(200)
    expect(log.filter((exchange) => exchange.url.includes('/api/oauth2/register'))).toEqual([])
    expect(await countClients()).toBe(0)
    expect(documents.hits(DOCUMENT_PATH)).toBeGreaterThanOrEqual(1)
  })
})
