import { createHash, createHmac, timingSafeEqual } from 'node:crypto'
import type { UserCaller } from '../../auth/caller.js'
import { SCOPES, type Scope } from '../../auth/policies.js'
import type { SessionCaller } from '../../auth/sessions.js'
import type { Config } from '../../config.js'
import { newId } from '../../db/ids.js'
import type { OAuthGrantRow, OAuthRepository, OAuthRequestRow, OAuthTokenRow } from '../../db/repositories/oauth.js'
import type { TeamsRepository } from '../../db/repositories/teams.js'
import type { UserRow } from '../../db/repositories/users.js'
import type { Database } from '../../db/types.js'
import { AppError, errors, oauthError } from '../../http/errors.js'
import type { Clock } from '../../lib/clock.js'
import { randomToken, type Digester } from '../../lib/tokens.js'
import type { AuditLog } from '../audit/service.js'
import type { SettingsService } from '../settings/service.js'
import { acceptableRedirectUri, findClient, GRANT_TYPES, type GrantType, type OAuthClient } from './clients.js'
import { formatScope, isSubset, parseScope } from './scopes.js'

/** SPEC §4.8 lifetimes. */
export const REQUEST_LIFETIME_MS = 10 * 60 * 1000
export const CODE_LIFETIME_MS = 10 * 60 * 1000
export const ACCESS_LIFETIME_S = 3600
export const REFRESH_LIFETIME_MS = 30 * 24 * 60 * 60 * 1000

/** RFC 7636 §4.1/4.2: 43–128 unreserved characters (the verifier, and an S256 challenge). */
const PKCE_VALUE = /^[A-Za-z0-9\-._~]{43,128}$/

export interface AuthorizeQuery {
  response_type?: string
  client_id?: string
  redirect_uri?: string
  scope?: string
  state?: string
  code_challenge?: string
  code_challenge_method?: string
}

export interface ConsentDecision {
  request_id: string
  decision: 'approve' | 'deny'
  team_id?: string
  csrf_token: string
}

export interface ConsentView {
  request: OAuthRequestRow
  client: OAuthClient
  scopes: Scope[]
  user: UserRow | null
  teams: Array<{ id: string; name: string }>
  csrfToken: string | null
}

export interface TokenRequest {
  grant_type?: string
  client_id?: string
  code?: string
  redirect_uri?: string
  code_verifier?: string
  refresh_token?: string
  scope?: string
}

export interface TokenResponse {
  access_token: string
  token_type: 'Bearer'
  expires_in: number
  refresh_token?: string
  scope: string
}

export interface ClientRegistration {
  redirect_uris: string[]
  client_name?: string
  scope?: string
  grant_types?: string[]
  response_types?: string[]
  token_endpoint_auth_method?: string
}

export interface BearerCaller extends UserCaller {
  user: UserRow
  teamId: string | null
}

interface Deps {
  database: Database
  repository: OAuthRepository
  teams: TeamsRepository
  settings: SettingsService
  audit: AuditLog
  digest: Digester
  /** Keys the consent form's CSRF token. */
  csrfKey: Buffer
  clock: Clock
  config: Config
}

const invalidGrant = (description: string) => oauthError(400, 'invalid_grant', description)
const invalidRequest = (description: string) => oauthError(400, 'invalid_request', description)
const invalidClient = () => oauthError(401, 'invalid_client', 'Unknown client: send the client_id of a registered client.')
const loginDisabled = () => oauthError(403, 'access_denied', 'Login is disabled on this service.', 'LOGIN_DISABLED')

/**
 * The OAuth 2.0 authorization server (SPEC §4.8): authorization code with PKCE S256 for public
 * clients, refresh rotation with reuse detection, revocation, introspection, registration.
 * Codes and tokens are 256 random bits stored only as HMAC digests (SPEC §3.1).
 */
export class OAuthServer {
  readonly issuer: string
  private readonly origins: ReadonlySet<string>

  constructor(private readonly deps: Deps) {
    this.issuer = deps.config.publicUrl.replace(/\/+$/, '')
    this.origins = new Set([new URL(deps.config.publicUrl).origin, ...deps.config.corsOrigins])
  }

  /** This service's own origin or a configured CORS origin (the sign-in form's login-CSRF check). */
  isAllowedOrigin(origin: string): boolean {
    return this.origins.has(origin)
  }

  private now(): Date {
    return new Date(this.deps.clock.now())
  }

  /** `redirect_uri` with the answer's parameters and `iss` (RFC 9207). */
  private redirectTo(redirectUri: string, params: Record<string, string | undefined>): string {
    const url = new URL(redirectUri)
    for (const [name, value] of Object.entries(params)) if (value !== undefined) url.searchParams.set(name, value)
    url.searchParams.set('iss', this.issuer)
    return url.toString()
  }

  /**
   * GET /api/oauth2/auth. Throws (never redirects) for an unknown client or an unregistered
   * redirect URI (RFC 6749 §4.1.2.1); every other error goes back to the client by redirect.
   * Answers the Location to send the browser to.
   */
  async authorize(query: AuthorizeQuery, session: SessionCaller | null): Promise<string> {
    const { repository, settings } = this.deps
    const client = query.client_id === undefined ? null : await findClient(repository, query.client_id)
    if (client === null) throw oauthError(400, 'invalid_request', 'Unknown or missing client_id.', 'UNKNOWN_CLIENT')
    const redirectUri = query.redirect_uri ?? (client.redirectUris.length === 1 ? client.redirectUris[0] : undefined)
    if (redirectUri === undefined || !client.redirectUris.includes(redirectUri)) {
      throw oauthError(400, 'invalid_request', 'The redirect_uri is missing or not registered for this client.', 'INVALID_REDIRECT_URI')
    }
    const state = query.state
    const refuse = (error: string, description: string) => this.redirectTo(redirectUri, { error, error_description: description, state })

    if (query.response_type === undefined) return refuse('invalid_request', 'response_type is required.')
    if (query.response_type !== 'code') return refuse('unsupported_response_type', 'Only response_type=code is supported.')
    if (state === undefined || state.length === 0) return refuse('invalid_request', 'state is required.')
    if (query.code_challenge === undefined) return refuse('invalid_request', 'PKCE is required: send code_challenge and code_challenge_method=S256.')
    if (query.code_challenge_method !== 'S256') return refuse('invalid_request', 'code_challenge_method must be S256 (plain is not accepted).')
    if (!PKCE_VALUE.test(query.code_challenge)) return refuse('invalid_request', 'code_challenge must be 43 to 128 characters of [A-Za-z0-9-._~].')
    const scopes = query.scope === undefined ? [...client.scopes] : parseScope(query.scope)
    if (scopes === null || scopes.length === 0 || !isSubset(scopes, client.scopes)) {
      return refuse('invalid_scope', `The scope must be a non-empty subset of: ${formatScope(client.scopes)}.`)
    }
    if (!client.grantTypes.includes('authorization_code')) return refuse('unauthorized_client', 'This client may not use the authorization code grant.')
    if (!(await settings.get('global.enable_login'))) return refuse('access_denied', 'Login is disabled on this service.')

    const now = this.now()
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
    if (session !== null) {
      const remembered = await this.rememberedApproval(request, session)
      if (remembered !== null) return remembered
    }
    return `/api/oauth2/consent?request_id=${encodeURIComponent(request.id)}`
  }

  /** The pending request and what the consent page shows; binds the request to the session. */
  async consentView(requestId: string, session: SessionCaller | null): Promise<ConsentView> {
    const { repository, teams, settings } = this.deps
    const request = await repository.findRequest(requestId, this.now())
    const client = request === undefined ? null : await findClient(repository, request.clientId)
    if (request === undefined || client === null) throw errors.notFound('Authorization request')
    if (!(await settings.get('global.enable_login'))) throw new AppError(403, 'LOGIN_DISABLED', 'Login is disabled on this service.')
    const scopes = parseScope(request.scope) ?? []
    if (session === null) return { request, client, scopes, user: null, teams: [], csrfToken: null }
    if (!(await repository.bindRequest(request.id, session.credentialId))) throw anotherSession()
    const userTeams = await teams.forUser(session.userId)
    return {
      request: { ...request, sessionId: session.credentialId },
      client,
      scopes,
      user: session.user,
      teams: userTeams.map((team) => ({ id: team.id, name: team.name })),
      csrfToken: this.csrfToken(request.id, session.credentialId),
    }
  }

  /**
   * A repeat authorization within the scopes this user already approved for this client skips
   * the page: the code is issued at once. Null when consent must be asked.
   */
  async rememberedApproval(request: OAuthRequestRow, session: SessionCaller): Promise<string | null> {
    const { repository, teams } = this.deps
    const consent = await repository.findConsent(session.userId, request.clientId)
    if (consent === undefined || !isSubset(request.scope.split(' '), consent.scope.split(' '))) return null
    const teamId = consent.teamId ?? (await teams.defaultOf(session.userId))?.id ?? null
    if (teamId === null || (await teams.roleOf(session.userId, teamId)) === null) return null
    const consumed = await repository.consumeRequest(request.id, session.credentialId, this.now())
    if (consumed === undefined) return null
    return this.approve(consumed, session.user, teamId, false)
  }

  /** The sign-in form on the consent page gave the browser a new session: the request is now its. */
  async adoptRequest(requestId: string, sessionId: string): Promise<void> {
    const request = await this.deps.repository.findRequest(requestId, this.now())
    if (request === undefined) throw errors.notFound('Authorization request')
    await this.deps.repository.rebindRequest(requestId, sessionId)
  }

  async requestExists(requestId: string): Promise<boolean> {
    return (await this.deps.repository.findRequest(requestId, this.now())) !== undefined
  }

  /** POST /api/oauth2/consent: answers the URL the browser goes back to the client with. */
  async decide(input: ConsentDecision, session: SessionCaller): Promise<string> {
    const { repository, teams, settings } = this.deps
    if (!(await settings.get('global.enable_login'))) throw new AppError(403, 'LOGIN_DISABLED', 'Login is disabled on this service.')
    const request = await repository.findRequest(input.request_id, this.now())
    if (request === undefined) throw errors.notFound('Authorization request')
    if (request.sessionId !== session.credentialId) throw anotherSession()
    if (!this.csrfMatches(input.csrf_token, request.id, session.credentialId)) {
      throw new AppError(403, 'INVALID_CSRF_TOKEN', 'The form is stale or was not sent by this page: reload the consent page.')
    }
    let teamId: string | null = null
    if (input.decision === 'approve') {
      teamId = input.team_id ?? (await teams.defaultOf(session.userId))?.id ?? null
      if (teamId === null || (await teams.roleOf(session.userId, teamId)) === null) {
        throw new AppError(400, 'INVALID_TEAM', 'Choose one of your own teams.')
      }
    }
    const consumed = await repository.consumeRequest(request.id, session.credentialId, this.now())
    if (consumed === undefined) throw errors.notFound('Authorization request')
    if (input.decision === 'deny' || teamId === null) {
      return this.redirectTo(consumed.redirectUri, { error: 'access_denied', error_description: 'The user denied the request.', state: consumed.state })
    }
    return this.approve(consumed, session.user, teamId, true)
  }

  /** Issues the code for an approved request (and remembers the consent). */
  private async approve(request: OAuthRequestRow, user: UserRow, teamId: string, remember: boolean): Promise<string> {
    const { database, repository, audit, digest } = this.deps
    const now = this.now()
    const code = randomToken()
    const grant: OAuthGrantRow = {
      id: newId(),
      clientId: request.clientId,
      userId: user.id,
      teamId,
      scope: request.scope,
      redirectUri: request.redirectUri,
      codeDigest: digest(code),
      codeChallenge: request.codeChallenge,
      codeExpiresAt: new Date(now.getTime() + CODE_LIFETIME_MS),
      codeUsedAt: null,
      revokedAt: null,
      createdAt: now,
    }
    await database.transaction(async (tx) => {
      const txRepository = repository.with(tx)
      await txRepository.insertGrant(grant)
      if (remember) {
        await txRepository.rememberConsent({ userId: user.id, clientId: request.clientId, scope: request.scope, teamId, updatedAt: now })
        await audit.record('oauth.consent_approved', { actorId: user.id, target: request.clientId, details: { scope: request.scope, team_id: teamId } }, tx)
      }
    })
    return this.redirectTo(request.redirectUri, { code, state: request.state })
  }

  csrfToken(requestId: string, sessionId: string): string {
    return createHmac('sha256', this.deps.csrfKey).update(`${requestId}.${sessionId}`).digest('base64url')
  }

  private csrfMatches(presented: string, requestId: string, sessionId: string): boolean {
    const expected = Buffer.from(this.csrfToken(requestId, sessionId))
    const given = Buffer.from(presented)
    return given.length === expected.length && timingSafeEqual(given, expected)
  }

  /** POST /api/oauth2/token (RFC 6749 §4.1.3, §6). */
  async token(body: TokenRequest, context: { ip: string }): Promise<TokenResponse> {
    if (body.grant_type === undefined) throw invalidRequest('grant_type is required.')
    if (body.grant_type !== 'authorization_code' && body.grant_type !== 'refresh_token') {
      throw oauthError(400, 'unsupported_grant_type', 'grant_type must be authorization_code or refresh_token.')
    }
    const client = body.client_id === undefined ? null : await findClient(this.deps.repository, body.client_id)
    if (client === null) throw invalidClient()
    if (!client.grantTypes.includes(body.grant_type)) throw oauthError(400, 'unauthorized_client', `This client may not use the ${body.grant_type} grant.`)
    if (!(await this.deps.settings.get('global.enable_login'))) throw loginDisabled()
    return body.grant_type === 'authorization_code' ? this.exchangeCode(body, client, context) : this.refresh(body, client, context)
  }

  private async exchangeCode(body: TokenRequest, client: OAuthClient, context: { ip: string }): Promise<TokenResponse> {
    const { database, repository, audit, digest } = this.deps
    for (const name of ['code', 'redirect_uri', 'code_verifier'] as const) {
      if (body[name] === undefined) throw invalidRequest(`${name} is required.`)
    }
    if (!PKCE_VALUE.test(body.code_verifier!)) throw invalidGrant('The code_verifier is malformed (43 to 128 characters of [A-Za-z0-9-._~]).')
    const now = this.now()
    const grant = await repository.findGrantByCode(digest(body.code!))
    if (grant === undefined) throw invalidGrant('The authorization code is unknown.')
    // RFC 6749 §4.1.2: a code used twice revokes what it was exchanged for.
    if (grant.codeUsedAt !== null || grant.revokedAt !== null) return this.endGrant(grant, 'oauth.code_reused', context)
    if (grant.codeExpiresAt <= now) throw invalidGrant('The authorization code has expired.')
    if (grant.clientId !== client.id) throw invalidGrant('The authorization code was issued to another client.')
    if (grant.redirectUri !== body.redirect_uri) throw invalidGrant('The redirect_uri does not match the authorization request.')
    if (createHash('sha256').update(body.code_verifier!).digest('base64url') !== grant.codeChallenge) {
      throw invalidGrant('The code_verifier does not match the code_challenge.')
    }
    const issued = await database.transaction(async (tx) => {
      const txRepository = repository.with(tx)
      if (!(await txRepository.consumeCode(grant.id, now))) return null
      return this.issueTokens(txRepository, grant, grant.scope.split(' ') as Scope[], now)
    })
    // Lost a race with another exchange of the same code: that is a reuse too.
    if (issued === null) return this.endGrant(grant, 'oauth.code_reused', context)
    await audit.record('oauth.token_issued', { actorId: grant.userId, ip: context.ip, target: grant.clientId, details: { grant_id: grant.id, grant_type: 'authorization_code', scope: issued.scope } })
    return issued
  }

  private async refresh(body: TokenRequest, client: OAuthClient, context: { ip: string }): Promise<TokenResponse> {
    const { database, repository, audit, digest } = this.deps
    if (body.refresh_token === undefined) throw invalidRequest('refresh_token is required.')
    const now = this.now()
    const tokenDigest = digest(body.refresh_token)
    const found = await repository.findToken(tokenDigest)
    if (found === undefined || found.token.kind !== 'refresh') throw invalidGrant('The refresh token is unknown.')
    const presented = found.token
    if (presented.clientId !== client.id) throw invalidGrant('The refresh token was issued to another client.')
    if (presented.revoked) throw invalidGrant('The refresh token has been revoked.')
    if (presented.expiresAt <= now) throw invalidGrant('The refresh token has expired.')
    const grant = await repository.findGrant(presented.grantId)
    if (grant === undefined || grant.revokedAt !== null) throw invalidGrant('The refresh token has been revoked.')
    let scopes = grant.scope.split(' ') as Scope[]
    if (body.scope !== undefined) {
      const requested = parseScope(body.scope)
      // RFC 6749 §6: a refresh may narrow the original grant, never widen it.
      if (requested === null || requested.length === 0 || !isSubset(requested, scopes)) {
        throw oauthError(400, 'invalid_scope', `The scope may only narrow the granted one: ${grant.scope}.`)
      }
      scopes = requested
    }
    const issued = await database.transaction(async (tx) => {
      const txRepository = repository.with(tx)
      const spent = await txRepository.spendRefresh(tokenDigest, now)
      if (spent === undefined) return null
      return this.issueTokens(txRepository, grant, scopes, now)
    })
    // Already rotated (or raced): the token is in two hands. End the whole grant (RFC 9700 §4.14.2).
    if (issued === null) return this.endGrant(grant, 'oauth.refresh_token_reused', context)
    await audit.record('oauth.token_issued', { actorId: grant.userId, ip: context.ip, target: grant.clientId, details: { grant_id: grant.id, grant_type: 'refresh_token', scope: issued.scope } })
    return issued
  }

  /** The grant and all its tokens, in one transaction. */
  private revokeGrant(grantId: string): Promise<void> {
    return this.deps.database.transaction((tx) => this.deps.repository.with(tx).revokeGrant(grantId, this.now()))
  }

  /** A replayed code or refresh token: the grant and every token issued from it end, and it is audited. */
  private async endGrant(grant: OAuthGrantRow, event: 'oauth.code_reused' | 'oauth.refresh_token_reused', context: { ip: string }): Promise<never> {
    await this.revokeGrant(grant.id)
    await this.deps.audit.record(event, { actorId: grant.userId, ip: context.ip, target: grant.clientId, details: { grant_id: grant.id } })
    throw invalidGrant(event === 'oauth.code_reused'
      ? 'The authorization code was already used; the tokens issued from it are revoked.'
      : 'The refresh token was already used; every token of this authorization is revoked.')
  }

  /** An access token, and a refresh token only when `offline_access` is granted (SPEC §4.8). */
  private async issueTokens(repository: OAuthRepository, grant: OAuthGrantRow, scopes: Scope[], now: Date): Promise<TokenResponse> {
    const scope = formatScope(scopes)
    const accessToken = randomToken()
    const base = { grantId: grant.id, userId: grant.userId, clientId: grant.clientId, teamId: grant.teamId, scope, usedAt: null, revoked: false, createdAt: now }
    const rows: OAuthTokenRow[] = [
      { ...base, id: newId(), digest: this.deps.digest(accessToken), kind: 'access', expiresAt: new Date(now.getTime() + ACCESS_LIFETIME_S * 1000) },
    ]
    let refreshToken: string | undefined
    if (scopes.includes('offline_access')) {
      refreshToken = randomToken()
      rows.push({ ...base, id: newId(), digest: this.deps.digest(refreshToken), kind: 'refresh', expiresAt: new Date(now.getTime() + REFRESH_LIFETIME_MS) })
    }
    await repository.insertTokens(rows)
    return {
      access_token: accessToken,
      token_type: 'Bearer',
      expires_in: ACCESS_LIFETIME_S,
      ...(refreshToken === undefined ? {} : { refresh_token: refreshToken }),
      scope,
    }
  }

  /** RFC 7009. Unknown tokens and other clients' tokens are silently ignored. */
  async revoke(body: { token?: string; client_id?: string }, context: { ip: string }): Promise<void> {
    const { repository, audit, digest } = this.deps
    const client = body.client_id === undefined ? null : await findClient(repository, body.client_id)
    if (client === null) throw invalidClient()
    if (body.token === undefined) throw invalidRequest('token is required.')
    const found = await repository.findToken(digest(body.token))
    if (found === undefined || found.token.clientId !== client.id) return
    const { token } = found
    if (token.kind === 'refresh') await this.revokeGrant(token.grantId)
    else await repository.revokeToken(token.id)
    await audit.record('oauth.token_revoked', { actorId: token.userId, ip: context.ip, target: token.clientId, details: { grant_id: token.grantId, token_type: token.kind } })
  }

  /** RFC 7662; the caller is authenticated by the route policy. */
  async introspect(token: string): Promise<Record<string, unknown>> {
    const { repository, digest } = this.deps
    const found = await repository.findToken(digest(token))
    const now = this.now()
    if (found === undefined) return { active: false }
    const { token: row, user } = found
    if (row.revoked || row.usedAt !== null || row.expiresAt <= now) return { active: false }
    return {
      active: true,
      scope: row.scope,
      client_id: row.clientId,
      username: user.username,
      sub: user.id,
      exp: Math.floor(row.expiresAt.getTime() / 1000),
      iat: Math.floor(row.createdAt.getTime() / 1000),
      team_id: row.teamId,
      token_type: row.kind === 'access' ? 'Bearer' : 'refresh_token',
      iss: this.issuer,
    }
  }

  /** The bearer credential check (SPEC §3.1): one indexed lookup joined with the user. */
  async verifyAccess(token: string): Promise<BearerCaller | null> {
    const found = await this.deps.repository.findLiveAccess(this.deps.digest(token), this.now())
    if (found === undefined) return null
    const { token: row, user } = found
    return {
      kind: 'user',
      via: 'bearer',
      userId: user.id,
      role: user.roleId,
      scopes: row.scope.split(' '),
      credentialId: row.id,
      user,
      teamId: row.teamId,
    }
  }

  /** RFC 7591 registration of a public, PKCE-only client. */
  async register(body: ClientRegistration, context: { ip: string }) {
    const invalidMetadata = (description: string) => oauthError(400, 'invalid_client_metadata', description)
    const badUri = body.redirect_uris.find((uri) => !acceptableRedirectUri(uri))
    if (badUri !== undefined) {
      throw oauthError(400, 'invalid_redirect_uri', `Redirect URIs must be https, or http on a loopback host, without a fragment: ${badUri}`)
    }
    if (body.token_endpoint_auth_method !== undefined && body.token_endpoint_auth_method !== 'none') {
      throw invalidMetadata('Only public clients are registered: token_endpoint_auth_method must be none.')
    }
    if (body.response_types !== undefined && body.response_types.some((type) => type !== 'code')) {
      throw invalidMetadata('Only the code response type is supported.')
    }
    const grantTypes = body.grant_types === undefined ? [...GRANT_TYPES] : [...new Set(body.grant_types)]
    if (grantTypes.some((type) => !GRANT_TYPES.includes(type as GrantType)) || !grantTypes.includes('authorization_code')) {
      throw invalidMetadata('grant_types must include authorization_code and may add refresh_token.')
    }
    const scopes = body.scope === undefined ? [...SCOPES] : parseScope(body.scope)
    if (scopes === null || scopes.length === 0) throw invalidMetadata('scope names an unknown scope.')
    const now = this.now()
    const redirectUris = [...new Set(body.redirect_uris)]
    const client = {
      id: `client_${randomToken().slice(0, 32)}`,
      name: body.client_name ?? 'Unnamed client',
      redirectUris: redirectUris.join(' '),
      grantTypes: grantTypes.join(' '),
      scope: formatScope(scopes),
      createdAt: now,
    }
    await this.deps.repository.insertClient(client)
    await this.deps.audit.record('oauth.client_registered', { ip: context.ip, target: client.id, details: { client_name: client.name, redirect_uris: redirectUris } })
    return {
      client_id: client.id,
      client_id_issued_at: Math.floor(now.getTime() / 1000),
      client_name: client.name,
      redirect_uris: redirectUris,
      grant_types: grantTypes,
      response_types: ['code'],
      token_endpoint_auth_method: 'none',
      scope: client.scope,
    }
  }

  userinfo(user: UserRow) {
    const name = [user.firstName, user.lastName].filter((part) => part !== null && part !== '').join(' ')
    return {
      sub: user.id,
      email: user.email,
      email_verified: user.emailVerified,
      preferred_username: user.username,
      name: name === '' ? user.username : name,
    }
  }

  /** RFC 8414 metadata. */
  metadata() {
    const at = (path: string) => `${this.issuer}${path}`
    return {
      issuer: this.issuer,
      authorization_endpoint: at('/api/oauth2/auth'),
      token_endpoint: at('/api/oauth2/token'),
      revocation_endpoint: at('/api/oauth2/revoke'),
      introspection_endpoint: at('/api/oauth2/introspect'),
      userinfo_endpoint: at('/api/oauth2/userinfo'),
      registration_endpoint: at('/api/oauth2/register'),
      scopes_supported: [...SCOPES],
      response_types_supported: ['code'],
      response_modes_supported: ['query'],
      grant_types_supported: [...GRANT_TYPES],
      code_challenge_methods_supported: ['S256'],
      token_endpoint_auth_methods_supported: ['none'],
      revocation_endpoint_auth_methods_supported: ['none'],
      introspection_endpoint_auth_methods_supported: ['bearer'],
      authorization_response_iss_parameter_supported: true,
      service_documentation: at('/documentation'),
    }
  }
}

function anotherSession(): AppError {
  return new AppError(403, 'FORBIDDEN', 'This authorization request belongs to another sign-in: start it again from the client.')
}
