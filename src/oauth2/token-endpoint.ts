import { oauthError } from '../http/errors.js'
import { lookupClient } from './client-lookup.js'
import { issuerOf, loginEnabled, nowOf, type CallContext, type OAuthDeps } from './deps.js'
import { grantsDisabled, invalidClient, invalidRequest } from './errors.js'
import { authorizationCodeGrant, type CodeExchange } from './grants/authorization-code.js'
import { refreshTokenGrant, type Refresh } from './grants/refresh-token.js'
import { teamStillHeld } from './team-binding.js'
import type { TokenResponse, Tokens } from './tokens.js'

export interface TokenRequest extends CodeExchange, Refresh {
  grant_type?: string
  client_id?: string
}

const GRANTS = { authorization_code: authorizationCodeGrant, refresh_token: refreshTokenGrant } as const

/**
 * Who introspects. A global admin sees what any token is. A satellite learns only of the tokens
 * it may admit: live access tokens for its own resource (`<satellite_url>/mcp`; null when it
 * registered no URL, so none). Anything else — another satellite's or the API's tokens, refresh
 * tokens — is `{active: false}` to it, with no word about whose it is (RFC 7662 §4: the server
 * may answer inactive to a protected resource that is not the token's audience).
 */
export type Introspector = { kind: 'admin' } | { kind: 'satellite'; resource: string | null }

/** POST /api/oauth2/token, /revoke (RFC 7009) and /introspect (RFC 7662). Every client is public. */
export class TokenEndpoint {
  constructor(private readonly deps: OAuthDeps, private readonly tokens: Tokens) {}

  async token(body: TokenRequest, context: CallContext): Promise<TokenResponse> {
    if (body.grant_type === undefined) throw invalidRequest('grant_type is required.')
    if (!Object.hasOwn(GRANTS, body.grant_type)) {
      throw oauthError(400, 'unsupported_grant_type', 'grant_type must be authorization_code or refresh_token.')
    }
    const grantType = body.grant_type as keyof typeof GRANTS
    const { client, refused } = body.client_id === undefined ? { client: null } : await lookupClient(this.deps, body.client_id, context.ip)
    if (client === null) throw invalidClient(refused)
    if (!client.grantTypes.includes(grantType)) throw oauthError(400, 'unauthorized_client', `This client may not use the ${grantType} grant.`)
    if (!(await loginEnabled(this.deps))) throw grantsDisabled()
    return GRANTS[grantType](this.deps, this.tokens, body, client, context)
  }

  /** RFC 7009. Unknown tokens and other clients' tokens are silently ignored. */
  async revoke(body: { token?: string; client_id?: string }, context: CallContext): Promise<void> {
    const { repository, audit, digest, metrics } = this.deps
    const { client, refused } = body.client_id === undefined ? { client: null } : await lookupClient(this.deps, body.client_id, context.ip)
    if (client === null) throw invalidClient(refused)
    if (body.token === undefined) throw invalidRequest('token is required.')
    const found = await repository.findToken(digest(body.token))
    if (found === undefined || found.token.clientId !== client.id) return
    const { token } = found
    // Revoking a refresh token ends its grant; an access token ends alone.
    if (token.kind === 'refresh') await this.tokens.revokeGrant(token.grantId)
    else await repository.revokeToken(token.id)
    metrics.revoked('revocation_request')
    await audit.record('oauth.token_revoked', { actorId: token.userId, ip: context.ip, target: token.clientId, details: { grant_id: token.grantId, token_type: token.kind } })
  }

  /** RFC 7662; the caller was authenticated by the route policy. */
  async introspect(token: string, asker: Introspector): Promise<{ active: boolean } & Record<string, unknown>> {
    const found = await this.deps.repository.findToken(this.deps.digest(token))
    if (found === undefined) return { active: false }
    const { token: row, user } = found
    if (asker.kind === 'satellite' && (row.kind !== 'access' || asker.resource === null || row.resource !== asker.resource)) return { active: false }
    if (row.revoked || row.usedAt !== null || row.expiresAt <= nowOf(this.deps)) return { active: false }
    // The API refuses a non-admin's bearer token while login is off; introspection must not vouch for it either.
    if (user.roleId !== 'global_admin' && !(await loginEnabled(this.deps))) return { active: false }
    if (!(await teamStillHeld(this.deps, user.id, row.teamId))) return { active: false }
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
      iss: issuerOf(this.deps.config),
      // RFC 8707 / RFC 7662: whom the token is for. A satellite accepts it only if this is its own MCP endpoint.
      aud: row.resource ?? issuerOf(this.deps.config),
    }
  }
}
