/**
 * The satellite's HTTP side: each installation placed here is served over MCP streamable HTTP at
 * `/mcp/<installation id>`, as an OAuth protected resource (RFC 9728) whose authorization server
 * is the backend.
 *
 * Every request carries a bearer token, checked by introspection: it must be an active access
 * token (never a refresh token), issued for this satellite's resource (`<satellite url>/mcp`),
 * hold mcp:read and belong to the team of the installation. A per-user installation is served
 * by the instance of the token's user. The token stops here: upstream servers only ever see the
 * instance's own configuration.
 *
 * Sessions (Mcp-Session-Id) are bound to the user and to the upstream connection they started
 * on; when that connection ends (stop, restart, crash), its sessions end too and clients start
 * new ones.
 */
import { randomUUID } from 'node:crypto'
import { createServer, type IncomingMessage, type Server as HttpServer, type ServerResponse } from 'node:http'
import type { AddressInfo } from 'node:net'
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js'
import { isInitializeRequest } from '@modelcontextprotocol/sdk/types.js'
import type { ManagedInstance } from './instance.js'
import type { TokenClaims, ToolCallRecord } from './types.js'
import type { Logger } from './logger.js'
import { BoundedEventStore } from './event-store.js'
import { SessionRelay } from './relay.js'
import { refusal, type TokenChecker } from './tokens.js'
import type { Upstream } from './upstream.js'

export const WELL_KNOWN = '/.well-known/oauth-protected-resource'
/** What a client asks for: the right to use the servers, and a refresh token so it need not come back to the browser hourly. */
const SCOPES = ['mcp:read', 'offline_access']
/** The largest JSON-RPC request body accepted. */
const MAX_BODY = 4 * 1024 * 1024
/** How long a client waits before it reconnects a stream the satellite ended (SSE `retry`). */
const RETRY_MS = 1000

export interface SessionLimits {
  /** A session nobody used for this long (no request waiting, no stream open) is closed, and its upstream session with it. */
  idleMs: number
  /** The most client sessions one instance serves at once (each has its own upstream session: a process, for a package). */
  perInstance: number
}

export const DEFAULT_SESSION_LIMITS: SessionLimits = { idleMs: 10 * 60_000, perInstance: 100 }

export interface FrontOptions {
  backendUrl: string
  tokens: TokenChecker
  /** The instances placed here for an installation (one shared, or one per user). */
  instancesOf(installationId: string): ManagedInstance[]
  log: Logger
  sessions?: SessionLimits
  /** Every `tools/call` served or refused, with the caller's user and client (never arguments or results). */
  calls?: (instance: ManagedInstance, call: ToolCallRecord) => void
}

interface Session {
  id: string | undefined
  instance: ManagedInstance
  upstream: Upstream
  sub: string
  /** The OAuth client the session's token was issued to (introspection's client_id). */
  clientId: string | null
  transport: StreamableHTTPServerTransport
  relay: SessionRelay
  /** Requests (and open streams) in progress. */
  active: number
  lastSeen: number
}

export class Front {
  private readonly http: HttpServer
  private readonly sessions = new Map<string, Session>()
  private base: string | undefined
  private sweeper: NodeJS.Timeout | undefined
  private readonly limits: SessionLimits

  constructor(private readonly options: FrontOptions) {
    this.limits = options.sessions ?? DEFAULT_SESSION_LIMITS
    this.http = createServer((request, response) => {
      this.handle(request, response).catch((error: unknown) => {
        options.log.error(`request ${request.method} ${request.url?.split('?')[0]} failed: ${error instanceof Error ? error.message : String(error)}`)
        if (!response.headersSent) json(response, 500, { error: 'server_error' })
        else response.end()
      })
    })
  }

  /** Listens; resolves with the port (useful with port 0). */
  async listen(host: string, port: number): Promise<number> {
    await new Promise<void>((resolve, reject) => {
      this.http.once('error', reject)
      this.http.listen(port, host, () => {
        this.http.off('error', reject)
        resolve()
      })
    })
    this.sweeper = setInterval(() => this.sweep(), Math.min(60_000, Math.max(1000, this.limits.idleMs / 2)))
    this.sweeper.unref()
    return (this.http.address() as AddressInfo).port
  }

  /** The public base URL (no trailing slash), known once listening. */
  setBaseUrl(url: string): void {
    this.base = url
  }

  /** The resource identifier tokens must be issued for. */
  get resource(): string {
    return `${this.baseUrl()}/mcp`
  }

  get sessionCount(): number {
    return this.sessions.size
  }

  async close(): Promise<void> {
    clearInterval(this.sweeper)
    await Promise.all([...this.sessions.values()].map((session) => session.relay.close()))
    this.sessions.clear()
    await new Promise<void>((resolve) => {
      this.http.close(() => resolve())
      this.http.closeAllConnections()
    })
  }

  private baseUrl(): string {
    if (this.base === undefined) throw new Error('the base URL is not known before listening')
    return this.base
  }

  /**
   * Where the metadata of the resource `<base>/mcp` is (RFC 9728 §3.1: the well-known name
   * inserted before the resource's path), so a client that checks that the document declares
   * the very resource its URL was derived from (§3.3) accepts it.
   */
  private get metadataUrl(): string {
    const resource = new URL(this.resource)
    return `${resource.origin}${WELL_KNOWN}${resource.pathname}`
  }

  /**
   * A satellite reached on a loopback address answers only to loopback host names: a web page
   * whose name was made to resolve to 127.0.0.1 (DNS rebinding) gets 403, not an MCP session.
   */
  private hostAllowed(host: string | undefined): boolean {
    if (!isLoopback(new URL(this.baseUrl()).hostname)) return true
    if (host === undefined) return false
    try {
      return isLoopback(new URL(`http://${host}`).hostname)
    } catch {
      return false
    }
  }

  private async handle(request: IncomingMessage, response: ServerResponse): Promise<void> {
    const path = new URL(request.url ?? '/', 'http://satellite').pathname
    allowBrowsers(response)
    if (request.method === 'OPTIONS') {
      response.writeHead(204).end()
      return
    }
    if (path === `${WELL_KNOWN}/mcp`) {
      if (request.method !== 'GET' && request.method !== 'HEAD') return json(response, 405, { error: 'method_not_allowed' }, { allow: 'GET' })
      return json(response, 200, {
        resource: this.resource,
        authorization_servers: [this.options.backendUrl],
        scopes_supported: SCOPES,
        bearer_methods_supported: ['header'],
        resource_name: 'MCP servers of this satellite',
      }, { 'cache-control': 'public, max-age=300' })
    }
    if (path === '/healthz') return json(response, 200, { status: 'ok' })
    const match = /^\/mcp\/([^/]+)\/?$/.exec(path)
    if (match === null) return json(response, 404, { error: 'not_found' })
    if (!this.hostAllowed(request.headers.host)) {
      return json(response, 403, { error: 'forbidden', error_description: 'This satellite answers only to its own host name.' })
    }
    let installationId: string
    try {
      installationId = decodeURIComponent(match[1]!)
    } catch {
      return json(response, 404, { error: 'not_found' })
    }
    await this.serveMcp(request, response, installationId)
  }

  private async serveMcp(request: IncomingMessage, response: ServerResponse, installationId: string): Promise<void> {
    const metadata = this.metadataUrl
    const token = bearerToken(request.headers.authorization)
    if (token === undefined) {
      return json(response, 401, { error: 'invalid_token', error_description: 'A bearer token is required.' }, { 'www-authenticate': `Bearer resource_metadata="${metadata}", scope="${SCOPES.join(' ')}"` })
    }
    let claims: TokenClaims
    try {
      claims = await this.options.tokens.claims(token)
    } catch (error) {
      this.options.log.warn(`introspection failed: ${error instanceof Error ? error.message : String(error)}`)
      return json(response, 503, { error: 'temporarily_unavailable', error_description: 'The token could not be checked; try again shortly.' }, { 'retry-after': '5' })
    }
    const refused = refusal(claims, this.resource)
    if (refused !== undefined) {
      const challenge = `Bearer error="${refused.error}", scope="${SCOPES.join(' ')}", resource_metadata="${metadata}"`
      return json(response, refused.status, { error: refused.error, error_description: refused.description }, { 'www-authenticate': challenge })
    }
    const candidates = this.options.instancesOf(installationId)
    if (candidates.length === 0) return json(response, 404, { error: 'not_found', error_description: 'No such installation on this satellite.' })
    const ofTeam = candidates.filter((instance) => instance.spec.team_id === claims.team_id)
    if (ofTeam.length === 0) return json(response, 403, { error: 'forbidden', error_description: 'The token belongs to another team.' })
    const sub = claims.sub ?? ''
    const instance = ofTeam.find((candidate) => candidate.spec.user_id === null) ?? ofTeam.find((candidate) => candidate.spec.user_id === sub)
    if (instance === undefined) return json(response, 403, { error: 'forbidden', error_description: 'This installation has no instance for this user.' })
    const upstream = instance.upstream
    if (upstream === undefined || instance.phase !== 'running') {
      return json(response, 503, { error: 'unavailable', error_description: `The server is ${instance.phase}.` }, { 'retry-after': '5' })
    }
    await this.session(request, response, instance, upstream, sub, claims.client_id ?? null)
  }

  /** Hands the request to its session, or opens one (with its own upstream session) for an `initialize`. */
  private async session(request: IncomingMessage, response: ServerResponse, instance: ManagedInstance, upstream: Upstream, sub: string, clientId: string | null): Promise<void> {
    const body = request.method === 'POST' ? await readJson(request, response) : undefined
    if (body === INVALID) return
    const sessionId = request.headers['mcp-session-id']
    if (typeof sessionId === 'string') {
      const session = this.sessions.get(sessionId)
      // Another user's session, or one from before a restart, does not exist for this caller.
      if (session === undefined || session.upstream !== upstream || session.sub !== sub) {
        return json(response, 404, { jsonrpc: '2.0', error: { code: -32001, message: 'Session not found' }, id: null })
      }
      return this.forward(session, request, response, body)
    }
    const initializing = Array.isArray(body) ? body.some((message) => isInitializeRequest(message)) : isInitializeRequest(body)
    if (!initializing) {
      return json(response, 400, { jsonrpc: '2.0', error: { code: -32000, message: 'Bad Request: Mcp-Session-Id header is required' }, id: null })
    }
    if (this.sessionsOf(instance) >= this.limits.perInstance) {
      return json(response, 503, { jsonrpc: '2.0', error: { code: -32000, message: 'This server has as many sessions as this satellite runs for it; close one or try again later' }, id: null }, { 'retry-after': '30' })
    }
    let relay: SessionRelay | undefined
    const own = instance.sessionTransport({ streamEnded: (id) => relay?.upstreamStreamEnded(id) })
    if (own === undefined) return json(response, 503, { error: 'unavailable', error_description: `The server is ${instance.phase}.` }, { 'retry-after': '5' })
    const session: Session = { id: undefined, instance, upstream, sub, clientId, active: 0, lastSeen: Date.now(), transport: undefined as never, relay: undefined as never }
    const transport = new StreamableHTTPServerTransport({
      sessionIdGenerator: () => randomUUID(),
      onsessioninitialized: (id) => {
        session.id = id
        this.sessions.set(id, session)
      },
      eventStore: new BoundedEventStore(),
      retryInterval: RETRY_MS,
    })
    const calls = this.options.calls
    relay = new SessionRelay(transport, own, {
      tools: () => instance.toolPolicy,
      ...(calls === undefined ? {} : {
        called: (call) => calls(instance, { at: call.at.toISOString(), user_id: sub === '' ? null : sub, client_id: session.clientId, tool: call.tool, outcome: call.outcome, duration_ms: call.duration_ms }),
      }),
    }, (text) => this.options.log.warn(`a session of ${instance.id}: ${text}`))
    session.transport = transport
    session.relay = relay
    // A restart or crash of the instance ends its sessions: clients start new ones on what runs now.
    const offClose = upstream.onClose(() => void relay.close())
    transport.onclose = () => void relay.close()
    relay.onclose = () => {
      if (session.id !== undefined && this.sessions.get(session.id) === session) this.sessions.delete(session.id)
      offClose()
    }
    try {
      await relay.start()
    } catch (error) {
      this.options.log.warn(`a session of ${instance.id} could not start: ${error instanceof Error ? error.message : String(error)}`)
      await relay.close()
      return json(response, 503, { jsonrpc: '2.0', error: { code: -32000, message: 'The server could not start a session; try again shortly' }, id: null }, { 'retry-after': '5' })
    }
    await this.forward(session, request, response, body)
    if (session.id === undefined) await relay.close()
  }

  private async forward(session: Session, request: IncomingMessage, response: ServerResponse, body: unknown): Promise<void> {
    session.active += 1
    session.lastSeen = Date.now()
    response.once('close', () => {
      session.active -= 1
      session.lastSeen = Date.now()
    })
    negotiated(request, session.relay.protocolVersion)
    await session.transport.handleRequest(request, response, body)
  }

  private sessionsOf(instance: ManagedInstance): number {
    let count = 0
    for (const session of this.sessions.values()) if (session.instance === instance) count += 1
    return count
  }

  /** Ends sessions nobody used for the idle bound (no request waiting, no stream open). */
  private sweep(): void {
    const now = Date.now()
    for (const session of this.sessions.values()) {
      if (session.active === 0 && session.relay.pending === 0 && now - session.lastSeen > this.limits.idleMs) void session.relay.close()
    }
  }

  /** Tells the open sessions of an instance that its tool list changed (its tool policy did). */
  toolsChanged(instance: ManagedInstance): void {
    for (const session of this.sessions.values()) {
      if (session.instance === instance) session.relay.listChanged('tools')
    }
  }
}

const INVALID = Symbol('invalid')

/** The JSON body, or INVALID once an error answer was sent. */
async function readJson(request: IncomingMessage, response: ServerResponse): Promise<unknown> {
  const chunks: Buffer[] = []
  let size = 0
  for await (const chunk of request as AsyncIterable<Buffer>) {
    size += chunk.length
    if (size > MAX_BODY) {
      json(response, 413, { jsonrpc: '2.0', error: { code: -32600, message: 'Request body too large' }, id: null }, { connection: 'close' })
      return INVALID
    }
    chunks.push(chunk)
  }
  try {
    return JSON.parse(Buffer.concat(chunks).toString('utf8'))
  } catch {
    json(response, 400, { jsonrpc: '2.0', error: { code: -32700, message: 'Parse error' }, id: null })
    return INVALID
  }
}

/**
 * A session's requests are served at the protocol version agreed at `initialize`, whatever
 * version header a request carries: the transport decides from that header whether a stream
 * starts with an event id to resume from, and a client that sends an older one on a newer
 * session would otherwise lose resumability.
 */
function negotiated(request: IncomingMessage, version: string | undefined): void {
  if (version === undefined) return
  request.headers['mcp-protocol-version'] = version
  const raw = request.rawHeaders
  const index = raw.findIndex((name, position) => position % 2 === 0 && name.toLowerCase() === 'mcp-protocol-version')
  if (index === -1) raw.push('mcp-protocol-version', version)
  else raw[index + 1] = version
}

function isLoopback(hostname: string): boolean {
  return hostname === 'localhost' || hostname === '[::1]' || /^127(\.\d{1,3}){3}$/.test(hostname)
}

function bearerToken(header: string | undefined): string | undefined {
  const match = /^Bearer +([^\s]+) *$/i.exec(header ?? '')
  return match?.[1]
}

/**
 * Browser-based MCP clients call from other origins. Credentials are bearer tokens, never
 * cookies, so any origin may call; the headers MCP uses must be allowed and readable.
 */
function allowBrowsers(response: ServerResponse): void {
  response.setHeader('access-control-allow-origin', '*')
  response.setHeader('access-control-allow-methods', 'GET, POST, DELETE, OPTIONS')
  response.setHeader('access-control-allow-headers', 'authorization, content-type, accept, mcp-session-id, mcp-protocol-version, last-event-id')
  response.setHeader('access-control-expose-headers', 'mcp-session-id, www-authenticate')
  response.setHeader('access-control-max-age', '600')
}

function json(response: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}): void {
  response.writeHead(status, { 'content-type': 'application/json', 'cache-control': 'no-store', ...headers }).end(JSON.stringify(body))
}
