/**
 * A remote MCP server protected by OAuth, as the MCP authorization spec describes one: the
 * official SDK's streamable HTTP server (stateful sessions) on 127.0.0.1 behind a bearer check.
 *
 * - Its resource identifier is `<url>/mcp`. A request to `/mcp` without a valid access token gets
 *   401 with `WWW-Authenticate: Bearer resource_metadata="<url>/.well-known/oauth-protected-resource/mcp"`
 *   (and `scope`, and `error="invalid_token"` when a token was sent but refused).
 * - That URL serves its protected-resource metadata (RFC 9728): the resource and its one
 *   authorization server (the issuer given).
 * - A token is valid when it is a JWT access token (RFC 9068: `typ` `at+jwt`) signed by a key of
 *   the issuer's JWKS, issued by that issuer, for this resource as audience, not expired (jose).
 * - A session belongs to the subject that opened it: a later request of that session with another
 *   subject's token is refused (403), so a satellite that mixed its members' tokens would show.
 * - Tools: `whoami` answers the subject of the token that carried the call, `echo` answers its text.
 * - Every Authorization it accepted is recorded with its subject, token id, expiry and session.
 */
import { randomUUID } from 'node:crypto'
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http'
import type { AddressInfo } from 'node:net'
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js'
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js'
import type { AuthInfo } from '@modelcontextprotocol/sdk/server/auth/types.js'
import { createRemoteJWKSet, jwtVerify, type JWTVerifyGetKey } from 'jose'
import { z } from 'zod'

export interface ProtectedMcpServerOptions {
  /** The authorization server's issuer identifier: named in the metadata and checked in `iss`. */
  issuer: string
  /** Where its signing keys are; without it (and without `keys`), read from the issuer's discovery document. */
  jwksUri?: string
  /** The keys themselves, instead of a JWKS URL (a local key set in the fixture's own test). */
  keys?: JWTVerifyGetKey
  /** Named in `scopes_supported` and in the challenge's `scope` (default `mcp offline_access`). */
  scopes?: string[]
}

export interface AcceptedRequest {
  /** The whole `Authorization` header value as received. */
  authorization: string
  sub: string
  jti: string | undefined
  /** The token's `exp`, in seconds. */
  exp: number | undefined
  /** The MCP session the request belonged to (undefined for the initialize that opened one). */
  sessionId: string | undefined
  method: string
  at: Date
}

export interface RefusedRequest {
  status: 401 | 403
  /** Why, in a few words (never the token). */
  reason: string
  /** The refused header value, for assertions (undefined when none was sent). */
  authorization: string | undefined
  at: Date
}

export interface ProtectedMcpServer {
  /** `http://127.0.0.1:<port>` */
  url: string
  /** `<url>/mcp`: where MCP clients connect, and the resource identifier (RFC 8707, RFC 9728). */
  resource: string
  /** `<url>/.well-known/oauth-protected-resource/mcp` */
  metadataUrl: string
  scopes: string[]
  accepted: AcceptedRequest[]
  refused: RefusedRequest[]
  /** The sessions open now, with the subject each belongs to. */
  sessions(): Map<string, string>
  close(): Promise<void>
}

export async function startProtectedMcpServer(options: ProtectedMcpServerOptions): Promise<ProtectedMcpServer> {
  const scopes = options.scopes ?? ['mcp', 'offline_access']
  const accepted: AcceptedRequest[] = []
  const refused: RefusedRequest[] = []
  const transports = new Map<string, StreamableHTTPServerTransport>()
  const owners = new Map<string, string>()
  const servers = new Set<McpServer>()
  let keys = options.keys ?? (options.jwksUri === undefined ? undefined : createRemoteJWKSet(new URL(options.jwksUri)))

  const http = createServer((request, response) => {
    handle(request, response).catch((error: unknown) => {
      if (!response.headersSent) response.writeHead(500, { 'content-type': 'text/plain' })
      response.end(String(error))
    })
  })
  await new Promise<void>((resolve, reject) => {
    http.once('error', reject)
    http.listen(0, '127.0.0.1', resolve)
  })
  const url = `http://127.0.0.1:${(http.address() as AddressInfo).port}`
  const resource = `${url}/mcp`
  const metadataUrl = `${url}/.well-known/oauth-protected-resource/mcp`

  const challenge = (error?: string): string =>
    `Bearer resource_metadata="${metadataUrl}", scope="${scopes.join(' ')}"${error === undefined ? '' : `, error="${error}"`}`

  const refuse = (response: ServerResponse, status: 401 | 403, reason: string, authorization: string | undefined): void => {
    refused.push({ status, reason, authorization, at: new Date() })
    const error = status === 403 ? 'insufficient_scope' : authorization === undefined ? undefined : 'invalid_token'
    response.writeHead(status, { 'content-type': 'application/json', 'www-authenticate': challenge(error) })
    response.end(JSON.stringify({ error: error ?? 'unauthorized', error_description: reason }))
  }

  async function verifier(): Promise<JWTVerifyGetKey> {
    if (keys !== undefined) return keys
    const discovery = await fetch(new URL('.well-known/openid-configuration', options.issuer.endsWith('/') ? options.issuer : `${options.issuer}/`))
    const { jwks_uri: jwksUri } = (await discovery.json()) as { jwks_uri?: string }
    if (jwksUri === undefined) throw new Error(`${options.issuer} names no jwks_uri`)
    keys = createRemoteJWKSet(new URL(jwksUri))
    return keys
  }

  /** The token's claims when it is valid for this resource, else a reason. */
  async function verify(token: string): Promise<{ sub: string; jti?: string; exp?: number; scope: string[]; clientId: string } | string> {
    try {
      const { payload } = await jwtVerify(token, await verifier(), { issuer: options.issuer, audience: resource, typ: 'at+jwt' })
      if (typeof payload.sub !== 'string') return 'no subject'
      return {
        sub: payload.sub,
        ...(payload.jti === undefined ? {} : { jti: payload.jti }),
        ...(payload.exp === undefined ? {} : { exp: payload.exp }),
        scope: typeof payload.scope === 'string' ? payload.scope.split(' ') : [],
        clientId: typeof payload.client_id === 'string' ? payload.client_id : '',
      }
    } catch (error) {
      return (error as { code?: string }).code ?? 'not a valid token'
    }
  }

  const mcpServer = (): McpServer => {
    const server = new McpServer({ name: 'protected-test-server', version: '1.0.0' })
    server.registerTool('whoami', { description: "Answers the subject of the caller's access token" }, async (extra) => ({
      content: [{ type: 'text', text: String(extra.authInfo?.extra?.sub ?? '') }],
    }))
    server.registerTool('echo', { description: 'Answers its text', inputSchema: { text: z.string() } }, async ({ text }) => ({
      content: [{ type: 'text', text }],
    }))
    servers.add(server)
    return server
  }

  async function handle(request: IncomingMessage, response: ServerResponse): Promise<void> {
    const path = new URL(request.url ?? '/', url).pathname
    if (path === '/.well-known/oauth-protected-resource/mcp' && request.method === 'GET') {
      response.writeHead(200, { 'content-type': 'application/json' })
      response.end(JSON.stringify({
        resource,
        authorization_servers: [options.issuer],
        scopes_supported: scopes,
        bearer_methods_supported: ['header'],
        resource_name: 'Protected test server',
      }))
      return
    }
    if (path !== '/mcp') {
      request.resume()
      response.writeHead(404).end()
      return
    }
    const authorization = request.headers.authorization
    const token = /^Bearer ([^\s]+)$/i.exec(authorization ?? '')?.[1]
    if (token === undefined) {
      request.resume()
      refuse(response, 401, authorization === undefined ? 'no token' : 'not a bearer token', authorization)
      return
    }
    const claims = await verify(token)
    if (typeof claims === 'string') {
      request.resume()
      refuse(response, 401, claims, authorization)
      return
    }
    const header = request.headers['mcp-session-id']
    const sessionId = typeof header === 'string' ? header : undefined
    if (sessionId !== undefined && owners.has(sessionId) && owners.get(sessionId) !== claims.sub) {
      request.resume()
      refuse(response, 403, 'the session belongs to another subject', authorization)
      return
    }
    accepted.push({ authorization: authorization!, sub: claims.sub, jti: claims.jti, exp: claims.exp, sessionId, method: request.method ?? 'GET', at: new Date() })
    const auth: AuthInfo = {
      token, clientId: claims.clientId, scopes: claims.scope, resource: new URL(resource),
      ...(claims.exp === undefined ? {} : { expiresAt: claims.exp }),
      extra: { sub: claims.sub },
    }

    let transport = sessionId === undefined ? undefined : transports.get(sessionId)
    if (transport === undefined) {
      if (sessionId !== undefined || request.method !== 'POST') {
        request.resume()
        response.writeHead(404, { 'content-type': 'application/json' })
        response.end(JSON.stringify({ jsonrpc: '2.0', error: { code: -32001, message: 'Session not found' }, id: null }))
        return
      }
      const created = new StreamableHTTPServerTransport({
        sessionIdGenerator: () => randomUUID(),
        onsessioninitialized: (id) => {
          transports.set(id, created)
          owners.set(id, claims.sub)
        },
      })
      created.onclose = () => {
        if (created.sessionId === undefined) return
        transports.delete(created.sessionId)
        owners.delete(created.sessionId)
      }
      await mcpServer().connect(created)
      transport = created
    }
    await transport.handleRequest(Object.assign(request, { auth }), response)
  }

  return {
    url,
    resource,
    metadataUrl,
    scopes,
    accepted,
    refused,
    sessions: () => new Map(owners),
    async close() {
      await Promise.all([...servers].map((server) => server.close().catch(() => undefined)))
      http.closeAllConnections()
      await new Promise<void>((resolve) => http.close(() => resolve()))
    },
  }
}
