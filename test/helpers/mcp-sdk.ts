/**
 * Pieces of test/oauth/mcp-sdk.test.ts, where the official MCP TypeScript SDK's OAuth client
 * (`@modelcontextprotocol/sdk/client/auth.js`) drives this authorization server over real HTTP:
 * a tiny MCP server run by a satellite (loopback, node:http), the in-memory `OAuthClientProvider`
 * an MCP client keeps, a fetch that records what the SDK sent and got, and the browser's part of
 * the flow (the consent step) done with the session cookie of a signed-up user.
 */
import { randomBytes } from 'node:crypto'
import { createServer, type IncomingHttpHeaders, type IncomingMessage, type ServerResponse } from 'node:http'
import type { AddressInfo } from 'node:net'
import type { OAuthClientProvider } from '@modelcontextprotocol/sdk/client/auth.js'
import type { OAuthClientInformationMixed, OAuthClientMetadata, OAuthTokens } from '@modelcontextprotocol/sdk/shared/auth.js'
import type { FetchLike } from '@modelcontextprotocol/sdk/shared/transport.js'

/** A request the fake MCP server received. */
export interface SeenRequest {
  method: string
  path: string
  headers: IncomingHttpHeaders
}

export interface FakeMcpServer {
  /** `http://127.0.0.1:<port>` */
  origin: string
  /** The MCP endpoint, `<origin>/mcp`: what a user types into an MCP client. */
  url: string
  /** Its RFC 8707 / RFC 9728 resource identifier (the same URL). */
  resource: string
  /** Where its RFC 9728 metadata is: `<origin>/.well-known/oauth-protected-resource/mcp`. */
  metadataUrl: string
  /** Every request, in order. */
  seen: SeenRequest[]
  close(): Promise<void>
}

export interface FakeMcpOptions {
  /** The authorization server it names in its metadata (the backend's PUBLIC_URL). */
  authorizationServer: string
  scopes: string[]
  /**
   * The satellite's API key, once paired: with it the server checks a bearer token by RFC 7662
   * introspection at the authorization server and accepts it only when active and for its own
   * resource (`aud`). Without it every bearer token is refused.
   */
  satelliteKey?: () => string | undefined
}

/**
 * An MCP server as a satellite runs it, reduced to its OAuth surface: `/mcp` answers 401 with
 * `WWW-Authenticate: Bearer resource_metadata="…"` unless the bearer token introspects active
 * for its resource (then 200 with a small JSON body), and it serves its RFC 9728 document.
 */
export async function startFakeMcpServer(options: FakeMcpOptions): Promise<FakeMcpServer> {
  const seen: SeenRequest[] = []
  const server = createServer((request, response) => {
    handle(request, response).catch((error: unknown) => {
      response.writeHead(500, { 'content-type': 'text/plain' }).end(String(error))
    })
  })
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject)
    server.listen(0, '127.0.0.1', resolve)
  })
  const origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`
  const resource = `${origin}/mcp`
  const metadataUrl = `${origin}/.well-known/oauth-protected-resource/mcp`
  const challenge = (error?: string) => `Bearer ${error === undefined ? '' : `error="${error}", `}resource_metadata="${metadataUrl}"`

  const json = (response: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}) => {
    response.writeHead(status, { 'content-type': 'application/json', ...headers }).end(JSON.stringify(body))
  }

  async function handle(request: IncomingMessage, response: ServerResponse): Promise<void> {
    const path = new URL(request.url ?? '/', origin).pathname
    seen.push({ method: request.method ?? 'GET', path, headers: request.headers })
    request.resume()
    if (path === '/.well-known/oauth-protected-resource/mcp' && request.method === 'GET') {
      json(response, 200, {
        resource,
        authorization_servers: [options.authorizationServer],
        scopes_supported: options.scopes,
        bearer_methods_supported: ['header'],
        resource_name: 'Fake MCP server (satellite)',
      })
      return
    }
    if (path !== '/mcp') {
      json(response, 404, { error: 'not_found' })
      return
    }
    const authorization = request.headers.authorization
    if (authorization === undefined || !/^Bearer /i.test(authorization)) {
      json(response, 401, { error: 'unauthorized' }, { 'www-authenticate': challenge() })
      return
    }
    const verdict = await introspect(authorization.slice('Bearer '.length))
    if (verdict === null) {
      json(response, 401, { error: 'invalid_token' }, { 'www-authenticate': challenge('invalid_token') })
      return
    }
    json(response, 200, { jsonrpc: '2.0', id: null, result: { sub: verdict.sub, scope: verdict.scope } })
  }

  /** RFC 7662 at the authorization server with the satellite's key; the token's claims when it is for this resource. */
  async function introspect(token: string): Promise<{ sub: string; scope: string } | null> {
    const key = options.satelliteKey?.()
    if (key === undefined) return null
    const answer = await fetch(`${options.authorizationServer}/api/oauth2/introspect`, {
      method: 'POST',
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/x-www-form-urlencoded', accept: 'application/json' },
      body: new URLSearchParams({ token }),
    })
    if (answer.status !== 200) throw new Error(`introspection by the satellite failed: ${answer.status} ${await answer.text()}`)
    const claims = (await answer.json()) as { active: boolean; aud?: string; sub?: string; scope?: string }
    return claims.active && claims.aud === resource ? { sub: claims.sub ?? '', scope: claims.scope ?? '' } : null
  }

  return {
    origin,
    url: resource,
    resource,
    metadataUrl,
    seen,
    close: () => new Promise<void>((resolve, reject) => {
      server.closeAllConnections()
      server.close((error) => (error ? reject(error) : resolve()))
    }),
  }
}

/**
 * The in-memory `OAuthClientProvider` of one MCP client session: it keeps what the SDK gives it
 * (client information, tokens, code verifier — each stamped with `issuer` by `auth()`) and
 * records the authorization URLs instead of opening a browser.
 */
export class MemoryOAuthProvider implements OAuthClientProvider {
  client: OAuthClientInformationMixed | undefined
  saved: OAuthTokens | undefined
  verifier: string | undefined
  /** The `state` of the latest authorization request. */
  lastState: string | undefined
  readonly authorizationUrls: URL[] = []
  /** The scopes `invalidateCredentials` was called with. */
  readonly invalidated: string[] = []

  /** The optional `state()` of the interface; absent with `{ state: false }` (like the SDK's example provider), so no `state` is sent. */
  readonly state?: () => string

  constructor(readonly redirectUrl: string, readonly clientMetadata: OAuthClientMetadata, { state = true }: { state?: boolean } = {}) {
    if (state) {
      this.state = () => {
        this.lastState = randomBytes(16).toString('base64url')
        return this.lastState
      }
    }
  }

  clientInformation(): OAuthClientInformationMixed | undefined {
    return this.client
  }

  saveClientInformation(information: OAuthClientInformationMixed): void {
    this.client = information
  }

  tokens(): OAuthTokens | undefined {
    return this.saved
  }

  saveTokens(tokens: OAuthTokens): void {
    this.saved = tokens
  }

  redirectToAuthorization(authorizationUrl: URL): void {
    this.authorizationUrls.push(authorizationUrl)
  }

  saveCodeVerifier(codeVerifier: string): void {
    this.verifier = codeVerifier
  }

  codeVerifier(): string {
    if (this.verifier === undefined) throw new Error('no code verifier saved')
    return this.verifier
  }

  invalidateCredentials(scope: 'all' | 'client' | 'tokens' | 'verifier' | 'discovery'): void {
    this.invalidated.push(scope)
    if (scope === 'all' || scope === 'client') this.client = undefined
    if (scope === 'all' || scope === 'tokens') this.saved = undefined
    if (scope === 'all' || scope === 'verifier') this.verifier = undefined
  }
}

/** One HTTP exchange made through `recordingFetch`. */
export interface Exchange {
  method: string
  url: string
  requestHeaders: Record<string, string>
  requestBody: string | undefined
  status: number
  responseHeaders: Record<string, string>
  responseBody: string
}

/** A fetch for the SDK's `fetchFn` options that logs every request and response (bodies as text). */
export function recordingFetch(log: Exchange[]): FetchLike {
  return async (url, init) => {
    const response = await fetch(url, init)
    const requestHeaders = Object.fromEntries(new Headers(init?.headers).entries())
    const body = init?.body
    log.push({
      method: init?.method ?? 'GET',
      url: String(url),
      requestHeaders,
      requestBody: body === undefined || body === null ? undefined : String(body),
      status: response.status,
      responseHeaders: Object.fromEntries(response.headers.entries()),
      responseBody: await response.clone().text(),
    })
    return response
  }
}

export interface Consented {
  /** Where the browser is sent back: the client's redirect URI with `code`, `state`, `iss`. */
  callback: URL
  /** False when /auth skipped the consent page (remembered consent). */
  consented: boolean
  /** The consent page's JSON details, when it was shown. */
  details: { request_id: string; client_id: string; client_name: string; scopes: Array<{ name: string }>; csrf_token: string } | undefined
}

/**
 * The browser's part: opens the authorization URL with the session cookie of a signed-in user,
 * follows the 302 to the consent page, reads its JSON variant for the CSRF token and approves as
 * JSON. Fails loudly (with the server's answer) at any unexpected step.
 */
export async function approveInBrowser(authorizationUrl: URL, cookie: string, base: string): Promise<Consented> {
  const opened = await fetch(authorizationUrl, { redirect: 'manual', headers: { cookie } })
  const location = opened.headers.get('location')
  if (opened.status !== 302 || location === null) throw new Error(`GET ${authorizationUrl} → ${opened.status} ${await opened.text()}`)
  const next = new URL(location, base)
  if (next.origin !== base || next.pathname !== '/api/oauth2/consent') return { callback: next, consented: false, details: undefined }

  const page = await fetch(next, { headers: { cookie, accept: 'application/json' } })
  const pageText = await page.text()
  if (page.status !== 200) throw new Error(`GET ${next} → ${page.status} ${pageText}`)
  const details = (JSON.parse(pageText) as { data: NonNullable<Consented['details']> }).data
  const decided = await fetch(`${base}/api/oauth2/consent`, {
    method: 'POST',
    headers: { cookie, origin: base, accept: 'application/json', 'content-type': 'application/json' },
    body: JSON.stringify({ request_id: details.request_id, decision: 'approve', csrf_token: details.csrf_token }),
  })
  const decidedText = await decided.text()
  if (decided.status !== 200) throw new Error(`POST /api/oauth2/consent → ${decided.status} ${decidedText}`)
  const redirectUrl = (JSON.parse(decidedText) as { data: { redirect_url: string } }).data.redirect_url
  return { callback: new URL(redirectUrl), consented: true, details }
}
