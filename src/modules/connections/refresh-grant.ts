import * as oauth from 'oauth4webapi'
import type { ConnectionRow } from '../../db/repositories/connections.js'
import type { UpstreamClientsRepository } from '../../db/repositories/upstream-clients.js'
import type { ConnectionTokens, TokensBox } from './tokens-box.js'

/**
 * One refresh of a connection's tokens at its authorization server (RFC 6749, section 6), with
 * oauth4webapi: the server's metadata (RFC 8414, then OpenID discovery), this backend's client
 * as it is registered there, and the refresh token grant with the connection's resource
 * (RFC 8707). Every request goes through the SSRF-guarded fetch it is given.
 */

/** A fetch that checks addresses and follows no redirect (src/lib/outbound-fetch.ts), as oauth4webapi calls it. */
export type GuardedFetch = (url: string, init: {
  method?: string
  headers?: Record<string, string>
  body?: string | URLSearchParams | null
  redirect?: string
  signal?: AbortSignal | null
}) => Promise<Response>

export type RefreshOutcome =
  | { kind: 'refreshed'; tokens: ConnectionTokens; lifetimeSeconds: number | null }
  /** The server refused the refresh token for good (`invalid_grant`): the connection has expired. */
  | { kind: 'refused' }
  /** Anything else (unreachable, a 5xx, a bad answer): worth trying again later. The reason holds no token. */
  | { kind: 'failed'; reason: string }

export interface RefreshGrantDeps {
  fetch: GuardedFetch
  /** Whether plain http may be used for this URL (a host of OUTBOUND_ALLOWED_HOSTS, in tests). */
  allowHttp: (url: URL) => boolean
  clients: Pick<UpstreamClientsRepository, 'find'>
  tokens: Pick<TokensBox, 'openClientSecret'>
  /** This backend's client ID metadata document URL: a connection made with it has no stored registration. */
  metadataDocumentClientId: string
}

/** The resource a connection's tokens are for: its input key is `oauth:<resource>`. */
export const resourceOf = (inputKey: string): string => inputKey.replace(/^oauth:/, '')

export class RefreshGrant {
  constructor(private readonly deps: RefreshGrantDeps) {}

  /** The options of every oauth4webapi request to `url`: the guarded fetch, http only where allowed. */
  private options(url: URL) {
    return { [oauth.customFetch]: this.deps.fetch, [oauth.allowInsecureRequests]: url.protocol === 'http:' && this.deps.allowHttp(url) }
  }

  /** The issuer's metadata: RFC 8414 first, then OpenID Connect discovery. */
  async metadata(issuer: string): Promise<oauth.AuthorizationServer> {
    const url = new URL(issuer)
    let failure: unknown
    for (const algorithm of ['oauth2', 'oidc'] as const) {
      try {
        return await oauth.processDiscoveryResponse(url, await oauth.discoveryRequest(url, { algorithm, ...this.options(url) }))
      } catch (error) {
        failure = error
      }
    }
    throw failure
  }

  /** This backend's authentication at the issuer's token endpoint, as it registered there. */
  private async client(row: ConnectionRow): Promise<{ client: oauth.Client; auth: oauth.ClientAuth }> {
    const client: oauth.Client = { client_id: row.clientId }
    if (row.clientId === this.deps.metadataDocumentClientId) return { client, auth: oauth.None() }
    const registration = await this.deps.clients.find(row.issuer)
    if (registration === undefined || registration.clientId !== row.clientId || registration.clientSecretSealed === null) return { client, auth: oauth.None() }
    const secret = this.deps.tokens.openClientSecret(row.issuer, registration.clientSecretSealed)
    switch (registration.tokenEndpointAuthMethod) {
      case 'client_secret_post': return { client, auth: oauth.ClientSecretPost(secret) }
      case 'none': return { client, auth: oauth.None() }
      default: return { client, auth: oauth.ClientSecretBasic(secret) }
    }
  }

  /**
   * Refreshes `current` (which holds a refresh token). A new refresh token replaces the old one
   * (rotation); without one the old one stays. `metadata` may be given when the caller already has it.
   */
  async refresh(row: ConnectionRow, current: ConnectionTokens, now: number, metadata?: oauth.AuthorizationServer): Promise<RefreshOutcome> {
    if (current.refresh_token === undefined) return { kind: 'refused' }
    try {
      const as = metadata ?? (await this.metadata(row.issuer))
      const { client, auth } = await this.client(row)
      const endpoint = new URL(as.token_endpoint ?? row.issuer)
      const response = await oauth.refreshTokenGrantRequest(as, client, auth, current.refresh_token, {
        ...this.options(endpoint), additionalParameters: { resource: resourceOf(row.inputKey) },
      })
      const answer = await oauth.processRefreshTokenResponse(as, client, response)
      const lifetime = typeof answer.expires_in === 'number' && answer.expires_in > 0 ? answer.expires_in : null
      return {
        kind: 'refreshed',
        lifetimeSeconds: lifetime,
        tokens: {
          access_token: answer.access_token,
          ...(answer.refresh_token !== undefined ? { refresh_token: answer.refresh_token } : { refresh_token: current.refresh_token }),
          token_type: answer.token_type,
          expires_at: lifetime === null ? null : new Date(now + lifetime * 1000).toISOString(),
          scope: answer.scope ?? current.scope,
          account: current.account,
        },
      }
    } catch (error) {
      if (error instanceof oauth.ResponseBodyError && error.error === 'invalid_grant') return { kind: 'refused' }
      return { kind: 'failed', reason: reasonOf(error) }
    }
  }
}

/** Why a refresh failed, in words that quote no token and no body: the OAuth error code or the kind of failure. */
function reasonOf(error: unknown): string {
  if (error instanceof oauth.ResponseBodyError) return `the authorization server answered ${error.status} ${/^[\w.-]{1,64}$/.test(error.error) ? error.error : 'with an error'}`
  if (error instanceof oauth.WWWAuthenticateChallengeError) return `the authorization server answered ${error.status} with a challenge`
  if (error instanceof oauth.OperationProcessingError) return `the authorization server's answer was not usable (${error.code ?? 'invalid'})`
  const code = (error as { code?: unknown; reason?: unknown } | undefined)?.reason ?? (error as { code?: unknown } | undefined)?.code
  return typeof code === 'string' && /^[\w.-]{1,64}$/.test(code) ? `the authorization server could not be reached (${code})` : 'the authorization server could not be reached'
}
