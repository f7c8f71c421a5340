/**
 * A real OAuth authorization server on loopback for the connection tests: oidc-provider (the
 * library, not a fake) on 127.0.0.1 over http, with resource indicators (JWT access tokens whose
 * audience is the resource), open dynamic registration, revocation, introspection, userinfo,
 * refresh-token rotation and its development login and consent forms, which `authorize` drives
 * through a cookie-carrying client as a browser would. Tests put `127.0.0.1:<port>` in
 * OUTBOUND_ALLOWED_HOSTS so that the backend may reach it.
 */
import { createServer, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import Provider, { type Configuration } from 'oidc-provider'
import { browser, type Browser, type Hop } from './browser.js'

export interface AuthorizationServerOptions {
  /** Access token lifetime in seconds (default 3600); short for refresh tests. */
  accessTokenTTL?: number
  /** Refresh token lifetime in seconds (default 14 days). */
  refreshTokenTTL?: number
  /** Scopes the server knows besides openid, offline_access, email (default ['mcp:tools']). */
  scopes?: string[]
  /** Open dynamic registration (default true). */
  registration?: boolean
  /** Revocation endpoint (default true). */
  revocation?: boolean
  /**
   * Client ID metadata documents (the library's own support): the server then advertises
   * `client_id_metadata_document_supported`. A client_id must be an https URL, so `resolve` maps it
   * to where the test serves the document (e.g. the backend's loopback http address).
   */
  clientIdMetadataDocument?: { resolve(url: string): string }
  /** Clients known from the start (e.g. the credentials a global admin will enter), besides the introspector. */
  clients?: Array<Record<string, unknown>>
  /** Refresh tokens rotate on every use (default true). */
  rotateRefreshToken?: boolean
}

export interface AuthorizationServer {
  /** `http://127.0.0.1:<port>`: the issuer. */
  issuer: string
  /** `127.0.0.1:<port>`, for OUTBOUND_ALLOWED_HOSTS. */
  host: string
  jwksUri: string
  provider: Provider
  /** A confidential client of this server, allowed to introspect any token. */
  introspect(token: string): Promise<Record<string, unknown>>
  /** Counts of requests by path (registration, token, revocation …), to check what the backend did. */
  requests: Map<string, number>
  /** Forgets every registered client (dynamic ones), as a server that lost its registrations. */
  forgetClients(): Promise<void>
  close(): Promise<void>
}

const INTROSPECTOR = { client_id: 'test-introspector', client_secret: 'introspector-secret-of-the-tests-0123456789' }

export async function startAuthorizationServer(options: AuthorizationServerOptions = {}): Promise<AuthorizationServer> {
  const server: Server = createServer()
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const { port } = server.address() as AddressInfo
  const issuer = `http://127.0.0.1:${port}`
  const scopes = options.scopes ?? ['mcp:tools']
  const forgotten = new Set<string>()
  const registered = new Set<string>()
  const cimd = options.clientIdMetadataDocument

  const configuration: Configuration = {
    clients: [{ ...INTROSPECTOR, grant_types: [], response_types: [], redirect_uris: [] }, ...(options.clients ?? [])],
    scopes: ['openid', 'offline_access', 'email', ...scopes],
    claims: { openid: ['sub'], email: ['email'] },
    findAccount: async (_ctx: unknown, id: string) => ({ accountId: id, claims: async () => ({ sub: id, email: `${id}@example.test` }) }),
    pkce: { required: () => true },
    rotateRefreshToken: options.rotateRefreshToken ?? true,
    // Every client allowed the refresh grant gets a refresh token, offline_access asked or not.
    issueRefreshToken: async (_ctx: unknown, client: { grantTypeAllowed(type: string): boolean }) => client.grantTypeAllowed('refresh_token'),
    ttl: {
      AccessToken: options.accessTokenTTL ?? 3600,
      AuthorizationCode: 60,
      Grant: 14 * 24 * 3600,
      IdToken: 3600,
      Interaction: 600,
      RefreshToken: options.refreshTokenTTL ?? 14 * 24 * 3600,
      Session: 24 * 3600,
    },
    cookies: { keys: ['test-cookie-key-of-the-upstream-server'] },
    features: {
      devInteractions: { enabled: true },
      registration: { enabled: options.registration ?? true },
      revocation: { enabled: options.revocation ?? true, allowedPolicy: async () => true },
      introspection: { enabled: true, allowedPolicy: async () => true },
      userinfo: { enabled: true },
      resourceIndicators: {
        enabled: true,
        defaultResource: (_ctx: unknown, _client: unknown, oneOf?: string | string[]) => (Array.isArray(oneOf) ? oneOf[0] : oneOf),
        useGrantedResource: () => true,
        getResourceServerInfo: (_ctx: unknown, resource: string) => ({
          scope: scopes.join(' '),
          audience: resource,
          accessTokenTTL: options.accessTokenTTL ?? 3600,
          accessTokenFormat: 'jwt',
          jwt: { sign: { alg: 'RS256' } },
        }),
      },
      ...(cimd === undefined ? {} : {
        clientIdMetadataDocument: { enabled: true, allowFetch: async () => true, allowClient: async () => true },
      }),
    },
    ...(cimd === undefined ? {} : {
      // The library refuses loopback addresses for these fetches; the test's map sends it to its own server.
      fetch: (url: URL | string, init: RequestInit) => {
        const { dispatcher: _ignored, ...rest } = init as RequestInit & { dispatcher?: unknown }
        return fetch(cimd.resolve(String(url)), rest)
      },
    }),
  }
  const provider = new Provider(issuer, configuration)
  const requests = new Map<string, number>()
  provider.use(async (ctx, next) => {
    requests.set(ctx.path, (requests.get(ctx.path) ?? 0) + 1)
    await next()
    if (ctx.path === '/reg' && ctx.status === 201) registered.add((ctx.body as { client_id: string }).client_id)
  })
  // Forgotten clients are unknown from then on (invalid_client), as after the server lost its registrations.
  const findClient = provider.Client.find.bind(provider.Client)
  provider.Client.find = async (id: string) => (forgotten.has(id) ? undefined : findClient(id))
  server.on('request', provider.callback())

  return {
    issuer,
    host: `127.0.0.1:${port}`,
    jwksUri: `${issuer}/jwks`,
    provider,
    requests,
    async introspect(token) {
      const response = await fetch(`${issuer}/token/introspection`, {
        method: 'POST',
        headers: {
          'content-type': 'application/x-www-form-urlencoded',
          authorization: `Basic ${Buffer.from(`${INTROSPECTOR.client_id}:${INTROSPECTOR.client_secret}`).toString('base64')}`,
        },
        body: new URLSearchParams({ token }).toString(),
      })
      return await response.json() as Record<string, unknown>
    },
    async forgetClients() {
      for (const id of registered) forgotten.add(id)
    },
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  }
}

/** What `authorize` saw: every hop, and the last one (the redirect back to the client). */
export interface Authorization {
  hops: Hop[]
  /** The Location the server sent the browser back to (the client's redirect URI with code or error). */
  callback: string
}

/**
 * Walks an authorization URL as a browser through the server's development forms: sign in as
 * `account`, then approve (or abort, with `deny`). Stops before following the redirect back to the
 * client, and answers it.
 */
export async function authorize(url: string, { account = 'alice', deny = false, agent = browser() }: { account?: string; deny?: boolean; agent?: Browser } = {}): Promise<Authorization> {
  const issuerOrigin = new URL(url).origin
  const hops: Hop[] = []
  let next: string | undefined = url
  for (let step = 0; step < 12 && next !== undefined; step++) {
    if (new URL(next).origin !== issuerOrigin) return { hops, callback: next }
    const hop = await agent.get(next)
    hops.push(hop)
    if (hop.status >= 300 && hop.status < 400) {
      next = hop.location
      continue
    }
    const form = /<form[^>]*action="([^"]+)"[^>]*>([\s\S]*?)<\/form>/.exec(hop.body)
    if (hop.status !== 200 || form === null) throw new Error(`the authorization server answered ${hop.status} at ${next}: ${hop.body.slice(0, 300)}`)
    const action = new URL(form[1]!.replace(/&amp;/g, '&'), next).toString()
    const prompt = /name="prompt" value="([a-z]+)"/.exec(form[2]!)?.[1]
    const submitted = deny
      ? await agent.get(`${action}/abort`)
      : await agent.postForm(action, prompt === 'login' ? { prompt, login: account, password: 'any' } : { prompt: prompt ?? 'consent' })
    hops.push(submitted)
    next = submitted.location
  }
  throw new Error(`the authorization never came back to the client: ${hops.map((h) => `${h.status} ${h.url}`).join(' → ')}`)
}
