import { LRUCache } from 'lru-cache'
import * as oauth from 'oauth4webapi'
import type { OAuthInputDetails } from '../../formats/installation-inputs.js'
import { AppError } from '../../http/errors.js'
import { OutboundError, type GuardedFetch, type OutboundFetch } from '../../lib/outbound-fetch.js'
import { bearerChallenge, canonicalResource } from './resource.js'

/**
 * Learning what a remote MCP server wants: the probe (an unauthenticated `initialize` answered
 * 401 with a Bearer challenge), its protected-resource metadata (RFC 9728) and its authorization
 * server's metadata (RFC 8414, then OpenID discovery), read with oauth4webapi. Every request goes
 * through the outbound guard: https only (plain http only for OUTBOUND_ALLOWED_HOSTS), public
 * addresses only unless allowed, no redirects followed.
 */

/** What a connection is made with: the authorization server and the scopes to ask for. */
export interface Discovered {
  as: oauth.AuthorizationServer
  scopes: string[]
}

/** The options every oauth4webapi call of this module gets: the guarded fetch, and http only where the guard allows it. */
export type RequestOptions = { [oauth.customFetch]: GuardedFetch; [oauth.allowInsecureRequests]?: boolean }

export const upstreamRefused = (what: string, reason: string) =>
  new AppError(400, 'UPSTREAM_URL_REFUSED', `The ${what} is not fetched: ${reason}.`, { reason })
export const upstreamFailed = (what: string, reason: string) =>
  new AppError(502, 'UPSTREAM_ERROR', `The ${what} could not be read: ${reason}.`)

/** An outbound or protocol failure as the caller's error: refused URLs are 400, the rest 502. */
export function upstreamError(what: string, error: unknown): AppError {
  if (error instanceof AppError) return error
  if (error instanceof OutboundError) {
    return error.reason === 'not_https' || error.reason === 'refused_address' ? upstreamRefused(what, error.message) : upstreamFailed(what, error.message)
  }
  if (error instanceof oauth.OperationProcessingError && error.code === oauth.HTTP_REQUEST_FORBIDDEN) {
    return upstreamRefused(what, 'it is not an https URL (plain http only for hosts in OUTBOUND_ALLOWED_HOSTS)')
  }
  if (error instanceof oauth.ResponseBodyError) return upstreamFailed(what, `${error.error}${error.error_description === undefined ? '' : ` (${error.error_description})`}`)
  const cause = (error as { cause?: unknown }).cause
  if (cause instanceof OutboundError) return upstreamError(what, cause)
  return upstreamFailed(what, error instanceof Error ? error.message : 'an unexpected answer')
}

const MCP_INITIALIZE = JSON.stringify({
  jsonrpc: '2.0', id: 1, method: 'initialize',
  params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'service-backend-probe', version: '1' } },
})

export class Discovery {
  private readonly servers = new LRUCache<string, oauth.AuthorizationServer>({ max: 500, ttl: 10 * 60_000 })

  constructor(private readonly deps: {
    /** For metadata, registration, tokens and revocation. */
    outbound: OutboundFetch
    /** For the probe at installation (a shorter deadline). */
    probe: OutboundFetch
  }) {}

  /** Whether plain http may be used for `url` (its host is in OUTBOUND_ALLOWED_HOSTS). */
  isAllowedHost(url: URL): boolean {
    return this.deps.outbound.isAllowedHost(url)
  }

  /** oauth4webapi's options for a request to `url`. */
  options(url: string | URL): RequestOptions {
    const parsed = new URL(url)
    const insecure = parsed.protocol === 'http:' && this.deps.outbound.isAllowedHost(parsed)
    return { [oauth.customFetch]: this.deps.outbound.fetcher({ allowHttp: true }), ...(insecure ? { [oauth.allowInsecureRequests]: true } : {}) }
  }

  /**
   * Whether the remote server asks for OAuth: an unauthenticated `initialize` answered 401 with a
   * Bearer challenge. Null when it does not, or cannot be reached (the probe never blocks an installation).
   */
  async probe(url: string): Promise<OAuthInputDetails | null> {
    try {
      const response = await this.deps.probe.fetcher({ allowHttp: true })(url, {
        method: 'POST',
        headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
        body: MCP_INITIALIZE,
      })
      if (response.status !== 401) return null
      const challenge = bearerChallenge(response.headers.get('www-authenticate'))
      if (challenge === null) return null
      return { resource: canonicalResource(url), resource_metadata: challenge.resourceMetadata, scopes: challenge.scopes }
    } catch {
      return null
    }
  }

  /** The authorization server and scopes for an oauth input. */
  async discover(input: OAuthInputDetails): Promise<Discovered> {
    const metadata = await this.resourceMetadata(input)
    const issuer = metadata?.authorization_servers?.[0] ?? new URL(input.resource).origin
    const as = await this.authorizationServer(issuer)
    const scopes = input.scopes.length > 0 ? input.scopes : (metadata?.scopes_supported ?? [])
    return { as, scopes: [...scopes] }
  }

  /** The authorization server's metadata: RFC 8414 first, then OpenID discovery; kept ten minutes. */
  async authorizationServer(issuer: string): Promise<oauth.AuthorizationServer> {
    const kept = this.servers.get(issuer)
    if (kept !== undefined) return kept
    const url = new URL(issuer)
    let lastError: unknown
    for (const algorithm of ['oauth2', 'oidc'] as const) {
      try {
        const response = await oauth.discoveryRequest(url, { algorithm, ...this.options(url) })
        const as = await oauth.processDiscoveryResponse(url, response)
        if (as.authorization_endpoint === undefined || as.token_endpoint === undefined) throw upstreamFailed('authorization server metadata', 'it names no authorization or token endpoint')
        this.servers.set(issuer, as)
        return as
      } catch (error) {
        lastError = error
        if (upstreamError('', error).code === 'UPSTREAM_URL_REFUSED') break
      }
    }
    throw upstreamError(`metadata of the authorization server ${issuer}`, lastError)
  }

  /**
   * RFC 9728: the URL the challenge named, else the well-known URL with the resource's path, then
   * at the root. Null when the server publishes none (the authorization server is then taken to be
   * at the resource's origin, as older MCP servers expect).
   */
  private async resourceMetadata(input: OAuthInputDetails): Promise<oauth.ResourceServer | null> {
    const resource = new URL(input.resource)
    const candidates: string[] = []
    if (input.resource_metadata !== null) candidates.push(input.resource_metadata)
    const path = resource.pathname === '/' ? '' : resource.pathname.replace(/\/$/, '')
    candidates.push(`${resource.origin}/.well-known/oauth-protected-resource${path}`, `${resource.origin}/.well-known/oauth-protected-resource`)
    let lastError: unknown
    for (const candidate of [...new Set(candidates)]) {
      try {
        const response = await this.options(candidate)[oauth.customFetch](candidate, { method: 'GET', headers: { accept: 'application/json' }, redirect: 'manual' })
        if (response.status === 404) continue
        // The document must name this resource (its origin for the document at the root).
        const expected = candidate.endsWith('/.well-known/oauth-protected-resource') && path !== '' ? [input.resource, resource.origin] : [input.resource]
        for (const identifier of expected) {
          try {
            const metadata = await oauth.processResourceDiscoveryResponse(new URL(identifier), response.clone())
            if (Array.isArray(metadata.authorization_servers) && metadata.authorization_servers.length > 0) return metadata
          } catch (error) {
            lastError = error
          }
        }
      } catch (error) {
        lastError = error
        if (error instanceof OutboundError && (error.reason === 'not_https' || error.reason === 'refused_address')) throw upstreamError('protected resource metadata', error)
      }
    }
    if (lastError !== undefined && !(lastError instanceof OutboundError)) throw upstreamError(`protected resource metadata of ${input.resource}`, lastError)
    return null
  }
}
