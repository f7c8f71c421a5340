import type { SessionCaller } from '../auth/sessions.js'
import type { OAuthRequestRow } from '../db/repositories/oauth.js'
import { oauthError } from '../http/errors.js'
import { randomToken } from '../lib/tokens.js'
import { findClient } from './clients.js'
import type { Consent } from './consent.js'
import { clientRedirect, issuerOf, loginEnabled, nowOf, type OAuthDeps } from './deps.js'
import { isPkceValue } from './pkce.js'
import { formatScope, isSubset, parseScope } from './scopes.js'

/** A pending authorization request waits 10 minutes for sign-in and consent. */
export const REQUEST_LIFETIME_MS = 10 * 60 * 1000

export interface AuthorizeQuery {
  response_type?: string
  client_id?: string
  redirect_uri?: string
  scope?: string
  state?: string
  code_challenge?: string
  code_challenge_method?: string
}

/** GET /api/oauth2/auth (RFC 6749 §4.1.1, RFC 7636, RFC 9207). */
export class AuthorizationEndpoint {
  private readonly issuer: string

  constructor(private readonly deps: OAuthDeps, private readonly consent: Consent) {
    this.issuer = issuerOf(deps.config)
  }

  /**
   * Answers the Location to send the browser to. Throws — never redirects — for an unknown client
   * or an unregistered redirect URI (RFC 6749 §4.1.2.1); every other error goes back to the client.
   */
  async authorize(query: AuthorizeQuery, session: SessionCaller | null): Promise<string> {
    const { repository } = this.deps
    const client = query.client_id === undefined ? null : await findClient(repository, query.client_id)
    if (client === null) throw oauthError(400, 'invalid_request', 'Unknown or missing client_id.', 'UNKNOWN_CLIENT')
    const redirectUri = query.redirect_uri ?? (client.redirectUris.length === 1 ? client.redirectUris[0] : undefined)
    if (redirectUri === undefined || !client.redirectUris.includes(redirectUri)) {
      throw oauthError(400, 'invalid_request', 'The redirect_uri is missing or not registered for this client.', 'INVALID_REDIRECT_URI')
    }
    const state = query.state
    const refuse = (error: string, description: string) => clientRedirect(this.issuer, redirectUri, { error, error_description: description, state })

    if (query.response_type === undefined) return refuse('invalid_request', 'response_type is required.')
    if (query.response_type !== 'code') return refuse('unsupported_response_type', 'Only response_type=code is supported.')
    if (state === undefined || state.length === 0) return refuse('invalid_request', 'state is required.')
    if (query.code_challenge === undefined) return refuse('invalid_request', 'PKCE is required: send code_challenge and code_challenge_method=S256.')
    if (query.code_challenge_method !== 'S256') return refuse('invalid_request', 'code_challenge_method must be S256 (plain is not accepted).')
    if (!isPkceValue(query.code_challenge)) return refuse('invalid_request', 'code_challenge must be 43 to 128 characters of [A-Za-z0-9-._~].')
    const scopes = query.scope === undefined ? [...client.scopes] : parseScope(query.scope)
    if (scopes === null || scopes.length === 0 || !isSubset(scopes, client.scopes)) {
      return refuse('invalid_scope', `The scope must be a non-empty subset of: ${formatScope(client.scopes)}.`)
    }
    if (!client.grantTypes.includes('authorization_code')) return refuse('unauthorized_client', 'This client may not use the authorization code grant.')
    if (!(await loginEnabled(this.deps))) return refuse('access_denied', 'Login is disabled on this service.')

    const now = nowOf(this.deps)
    const request: OAuthRequestRow = {
      id: randomToken(),
      clientId: client.id,
      redirectUri,
      scope: formatScope(scopes),
      state,
      codeChallenge: query.code_challenge,
      sessionId: session?.credentialId ?? null,
      expiresAt: new Date(now.getTime() + REQUEST_LIFETIME_MS),
      createdAt: now,
    }
    await repository.insertRequest(request)
    const remembered = session === null ? null : await this.consent.remembered(request, session)
    return remembered ?? `/api/oauth2/consent?request_id=${encodeURIComponent(request.id)}`
  }
}
