import { SCOPES, type Scope } from '../auth/policies.js'
import type { SessionCaller } from '../auth/sessions.js'
import type { OAuthRequestRow } from '../db/repositories/oauth.js'
import { ERROR_CODES, type ErrorCode } from '../http/error-codes.js'
import { oauthError } from '../http/errors.js'
import { storableText } from '../http/validation.js'
import { randomToken } from '../lib/tokens.js'
import { lookupClient } from './client-lookup.js'
import { CLI_CLIENT_ID, registeredRedirectUri, type OAuthClient } from './clients.js'
import type { Consent } from './consent.js'
import { clientRedirect, issuerOf, loginEnabled, nowOf, type CallContext, type OAuthDeps } from './deps.js'
import { isPkceValue } from './pkce.js'
import { parseResource } from './resources.js'
import { formatScope, isSubset, MALFORMED_SCOPE, scopesOrDefault } from './scopes.js'

/** The longest `state` accepted (and so echoed). */
const MAX_STATE_LENGTH = 1024

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
  resource?: string
  prompt?: string
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
  async authorize(query: AuthorizeQuery, session: SessionCaller | null, context: CallContext, invalid?: string): Promise<string> {
    const { repository } = this.deps
    // Read before the query's validation failures are reported: a client_id no database can hold names no client.
    const clientId = query.client_id
    const found = typeof clientId === 'string' && clientId.length <= 256 && storableText(clientId) ? await lookupClient(this.deps, clientId, context.ip) : { client: null }
    const { client } = found
    if (client === null) {
      // A metadata document that could not be used: say why, so its author can fix it. No redirect: no redirect URI is vouched for.
      const description = found.refused === undefined ? 'Unknown or missing client_id.' : `Unknown client: its client_id metadata document was refused: ${found.refused}.`
      throw oauthError(400, 'invalid_request', description, 'UNKNOWN_CLIENT')
    }
    const redirectUri = typeof query.redirect_uri === 'string'
      ? registeredRedirectUri(client.redirectUris, query.redirect_uri)
      : client.redirectUris.length === 1 ? client.redirectUris[0] : undefined
    if (redirectUri === undefined) {
      throw oauthError(400, 'invalid_request', 'The redirect_uri is missing or not registered for this client.', 'INVALID_REDIRECT_URI')
    }
    // From here on every error goes back to the client, which is waiting for it (RFC 6749 §4.1.2.1).
    // A state that failed validation (too long) is not reflected.
    const state = typeof query.state === 'string' && query.state !== '' && query.state.length <= MAX_STATE_LENGTH ? query.state : undefined
    const refuse = async (error: string, description: string) => {
      if (!(await this.redirectsErrors(client, session))) throw errorPage(error, description)
      return clientRedirect(this.issuer, redirectUri, { error, error_description: description, state })
    }

    if (invalid !== undefined) return refuse('invalid_request', invalid)
    if (query.response_type === undefined) return refuse('invalid_request', 'response_type is required.')
    if (query.response_type !== 'code') return refuse('unsupported_response_type', 'Only response_type=code is supported.')
    if (query.code_challenge === undefined) return refuse('invalid_request', 'PKCE is required: send code_challenge and code_challenge_method=S256.')
    if (query.code_challenge_method !== 'S256') return refuse('invalid_request', 'code_challenge_method must be S256 (plain is not accepted).')
    if (!isPkceValue(query.code_challenge)) return refuse('invalid_request', 'code_challenge must be 43 to 128 characters of [A-Za-z0-9-._~].')
    // Names this service does not know are dropped (RFC 6749 §3.3); none known left → the client's
    // scopes, as without `scope`. The consent page and the token answer show what was kept.
    const asked = scopesOrDefault(query.scope, client.scopes)
    if (asked === null) return refuse('invalid_scope', `${MALFORMED_SCOPE}.`)
    const permitted = permittedScopes(client)
    if (!isSubset(asked, permitted)) {
      return refuse('invalid_scope', `The scope may name only scopes this client registered: ${formatScope(permitted)}.`)
    }
    // A refresh token only for a client that may use it: offline_access is granted to no other.
    const scopes = client.grantTypes.includes('refresh_token') ? asked : asked.filter((scope) => scope !== 'offline_access')
    if (scopes.length === 0) return refuse('invalid_scope', 'offline_access needs the refresh_token grant, which this client did not register.')
    const resource = query.resource === undefined ? null : parseResource(query.resource)
    if (resource === null && query.resource !== undefined) return refuse('invalid_target', 'resource must be an absolute URI without a fragment (RFC 8707).')
    if (!client.grantTypes.includes('authorization_code')) return refuse('unauthorized_client', 'This client may not use the authorization code grant.')
    if (!(await loginEnabled(this.deps))) return refuse('access_denied', 'Login is disabled on this service.')
    const prompt = promptOf(query.prompt)
    if (prompt === 'invalid') return refuse('invalid_request', 'prompt=none cannot be combined with other values.')
    if (prompt === 'none' && session === null) return refuse('login_required', 'The user is not signed in, and prompt=none allows no sign-in page.')

    const now = nowOf(this.deps)
    const request: OAuthRequestRow = {
      id: randomToken(),
      clientId: client.id,
      redirectUri,
      scope: formatScope(scopes),
      state: state ?? '',
      codeChallenge: query.code_challenge,
      prompt: prompt === 'none' ? null : prompt,
      resource,
      sessionId: session?.credentialId ?? null,
      expiresAt: new Date(now.getTime() + REQUEST_LIFETIME_MS),
      createdAt: now,
    }
    await repository.insertRequest(request)
    const remembered = session === null ? null : await this.consent.remembered(request, session)
    if (remembered !== null) return remembered
    if (prompt === 'none') {
      // Nobody will ever decide this request: spend it now rather than leave it to expire.
      if (session !== null) await repository.consumeRequest(request.id, session.credentialId, now)
      return refuse('consent_required', 'The user has not approved these scopes for this client, and prompt=none allows no consent page.')
    }
    return `/api/oauth2/consent?request_id=${encodeURIComponent(request.id)}`
  }

  /**
   * Whether an error goes back to the client's redirect URI. Anyone may register a client with any
   * https redirect URI (or publish a metadata document naming one), so redirecting its errors to a
   * browser nobody signed in would make this service an open redirector (RFC 9700 §4.11.2). Errors
   * are redirected for the CLI client, once someone signed in, and for a client some user approved
   * at least once; otherwise the browser gets the error as a page.
   */
  private async redirectsErrors(client: OAuthClient, session: SessionCaller | null): Promise<boolean> {
    return client.id === CLI_CLIENT_ID || session !== null || this.deps.repository.anyConsent(client.id)
  }
}

/**
 * The scopes a client may ask for: those it registered (or its metadata document names), and
 * `offline_access` for every client that registered the refresh_token grant. offline_access
 * grants nothing on any resource; it asks for a refresh token, which `grant_types` already allows
 * (RFC 7591 §2). MCP clients copy a resource's `scopes_supported` into their registration, and a
 * client that registered before that list named offline_access must still get refresh tokens.
 */
function permittedScopes(client: OAuthClient): readonly Scope[] {
  if (!client.grantTypes.includes('refresh_token') || client.scopes.includes('offline_access')) return client.scopes
  return SCOPES.filter((scope) => scope === 'offline_access' || client.scopes.includes(scope))
}

/**
 * An authorization error shown where the browser is rather than redirected: the RFC 6749 error,
 * with the API's own code when it has one.
 */
function errorPage(error: string, description: string) {
  if (error === 'access_denied') return oauthError(403, error, description, 'LOGIN_DISABLED')
  const code = error.toUpperCase()
  return oauthError(400, error, description, (ERROR_CODES as readonly string[]).includes(code) ? code as ErrorCode : 'INVALID_REQUEST')
}

/**
 * OpenID Connect's `prompt` values that OAuth clients (the MCP SDK among them) send: `login`
 * before `consent` when both are given, unknown values ignored, and `none` alone or not at all
 * (OpenID Connect Core §3.1.2.1).
 */
function promptOf(value: string | undefined): 'none' | 'login' | 'consent' | 'invalid' | null {
  const values = new Set((value ?? '').split(' ').filter((part) => part !== ''))
  if (values.has('none')) return values.size === 1 ? 'none' : 'invalid'
  if (values.has('login')) return 'login'
  return values.has('consent') ? 'consent' : null
}
