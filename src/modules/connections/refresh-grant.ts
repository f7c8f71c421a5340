import * as oauth from 'oauth4webapi'
import type { ConnectionRow } from '../../db/repositories/connections.js'
import { AppError } from '../../http/errors.js'
import type { Discovery } from './discovery.js'
import type { Registration } from './registration.js'
import { OutboundError } from '../../lib/outbound-fetch.js'

/**
 * One refresh of a connection's tokens at its authorization server (RFC 6749, section 6), with
 * oauth4webapi: the server's metadata and this backend's client there as the connect flow found
 * them (discovery.ts, registration.ts), the refresh token grant with the connection's resource
 * (RFC 8707). Every request goes through the SSRF guard of discovery's options.
 */

/** The resource a connection's tokens are for: its input key is `oauth:<resource>`. */
const resourceOf = (inputKey: string): string => inputKey.replace(/^oauth:/, '')

export type RefreshOutcome =
  | { kind: 'refreshed'; response: oauth.TokenEndpointResponse }
  /**
   * The refresh can never succeed: the server refused the refresh token (`invalid_grant`), or the
   * registration that issued the tokens is gone. The connection has expired.
   */
  | { kind: 'refused'; reason: 'invalid_grant' | 'client_gone' }
  /** Anything else (unreachable, a 5xx, an unusable answer): worth trying again later. The reason holds no token. */
  | { kind: 'failed'; reason: string }

export class RefreshGrant {
  constructor(private readonly deps: {
    discovery: Pick<Discovery, 'authorizationServer' | 'options'>
    registration: Pick<Registration, 'clientById'>
  }) {}

  async refresh(row: ConnectionRow, refreshToken: string): Promise<RefreshOutcome> {
    try {
      const registered = await this.deps.registration.clientById(row.issuer, row.clientId)
      if (registered === null) return { kind: 'refused', reason: 'client_gone' }
      const as = await this.deps.discovery.authorizationServer(row.issuer)
      const response = await oauth.refreshTokenGrantRequest(as, registered.client, registered.auth, refreshToken, {
        ...this.deps.discovery.options(as.token_endpoint!), additionalParameters: { resource: resourceOf(row.inputKey) },
      })
      return { kind: 'refreshed', response: await oauth.processRefreshTokenResponse(as, registered.client, response) }
    } catch (error) {
      if (error instanceof oauth.ResponseBodyError && error.error === 'invalid_grant') return { kind: 'refused', reason: 'invalid_grant' }
      return { kind: 'failed', reason: reasonOf(error) }
    }
  }
}

/** Why a refresh failed, in words that quote no token and no answer body: the OAuth error code or the kind of failure. */
function reasonOf(error: unknown): string {
  if (error instanceof oauth.ResponseBodyError) return `the authorization server answered ${error.status} ${/^[\w.-]{1,64}$/.test(error.error) ? error.error : 'with an error'}`
  if (error instanceof oauth.WWWAuthenticateChallengeError) return `the authorization server answered ${error.status} with a challenge`
  if (error instanceof oauth.OperationProcessingError) return `the authorization server's answer was not usable (${error.code ?? 'invalid'})`
  if (error instanceof AppError) return error.message
  const outbound = error instanceof OutboundError ? error : (error as { cause?: unknown } | undefined)?.cause
  if (outbound instanceof OutboundError) return `the authorization server could not be reached (${outbound.reason})`
  return 'the authorization server could not be reached'
}
