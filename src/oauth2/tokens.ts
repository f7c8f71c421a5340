import type { UserCaller } from '../auth/caller.js'
import type { Scope } from '../auth/policies.js'
import { newId } from '../db/ids.js'
import type { OAuthGrantRow, OAuthRepository, OAuthTokenRow } from '../db/repositories/oauth.js'
import type { UserRow } from '../db/repositories/users.js'
import type { IssuingGrant } from '../modules/metrics/service.js'
import { randomToken } from '../lib/tokens.js'
import { issuerOf, nowOf, type CallContext, type OAuthDeps } from './deps.js'
import { audienceOf, backendResources } from './resources.js'
import { invalidGrant } from './errors.js'
import { formatScope } from './scopes.js'

/** Lifetimes of codes and tokens. */
export const ACCESS_LIFETIME_S = 3600
export const REFRESH_LIFETIME_MS = 30 * 24 * 60 * 60 * 1000

export interface TokenResponse {
  access_token: string
  token_type: 'Bearer'
  expires_in: number
  refresh_token?: string
  scope: string
}

/** A caller identified by an access token; the user row came with the lookup. */
export interface BearerCaller extends UserCaller {
  user: UserRow
  teamId: string | null
}

/**
 * Access and refresh tokens: 256 random bits, shown once, stored only as an HMAC digest under a
 * unique index, so a bearer check is one indexed lookup.
 */
export class Tokens {
  /** This service's own resource identifiers. */
  readonly backend: ReadonlySet<string>

  constructor(private readonly deps: OAuthDeps) {
    this.backend = backendResources(issuerOf(deps.config))
  }

  /** An access token, and a refresh token only when `offline_access` is granted. */
  async issue(repository: OAuthRepository, grant: OAuthGrantRow, scopes: readonly Scope[], now: Date): Promise<TokenResponse> {
    const scope = formatScope(scopes)
    const accessToken = randomToken()
    const base = {
      grantId: grant.id, userId: grant.userId, clientId: grant.clientId, teamId: grant.teamId, scope, resource: grant.resource, usedAt: null, revoked: false, createdAt: now,
    }
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

  /** The bearer credential check: the live access token and its user, or null. */
  async verifyAccess(token: string): Promise<BearerCaller | null> {
    const found = await this.deps.repository.findLiveAccess(this.deps.digest(token), nowOf(this.deps))
    if (found === undefined) return null
    const { token: row, user, defaultTeam } = found
    // No token passthrough: a token for another resource (a satellite's MCP server) is not for this API.
    if (row.resource !== null && audienceOf(row.resource, this.backend).kind !== 'backend') return null
    return { kind: 'user', via: 'bearer', userId: user.id, role: user.roleId, scopes: row.scope.split(' '), credentialId: row.id, user, defaultTeam, teamId: row.teamId }
  }

  /** The grant and every token issued from it, in one transaction. */
  revokeGrant(grantId: string): Promise<void> {
    return this.deps.database.transaction((tx) => this.deps.repository.with(tx).revokeGrant(grantId, nowOf(this.deps)))
  }

  /** A replayed code or refresh token: the grant ends, the replay is audited, the caller gets invalid_grant. */
  async endGrant(grant: OAuthGrantRow, event: 'oauth.code_reused' | 'oauth.refresh_token_reused', context: CallContext): Promise<never> {
    await this.revokeGrant(grant.id)
    this.deps.metrics.revoked(event === 'oauth.code_reused' ? 'code_reused' : 'refresh_token_reused')
    await this.deps.audit.record(event, { actorId: grant.userId, ip: context.ip, target: grant.clientId, details: { grant_id: grant.id } })
    throw invalidGrant(event === 'oauth.code_reused'
      ? 'The authorization code was already used; the tokens issued from it are revoked.'
      : 'The refresh token was already used; every token of this authorization is revoked.')
  }

  /**
   * The user is no longer a member of the grant's team (removed, or the team deleted): the grant
   * ends, the revocation is audited, the caller gets invalid_grant. Membership coming back later
   * does not revive it; the user approves again.
   */
  async endForLostTeam(grant: OAuthGrantRow, context: CallContext): Promise<never> {
    await this.revokeGrant(grant.id)
    await this.deps.audit.record('oauth.token_revoked', {
      actorId: grant.userId, ip: context.ip, target: grant.clientId, details: { grant_id: grant.id, reason: 'team_membership_ended', team_id: grant.teamId },
    })
    throw invalidGrant('The user is no longer a member of the team this authorization was granted for; every token of it is revoked.')
  }

  /** Records an issuance, once its transaction committed: the audit trail and the metrics. */
  async audited(grant: OAuthGrantRow, grantType: IssuingGrant, issued: TokenResponse, context: CallContext): Promise<TokenResponse> {
    this.deps.metrics.issued(grantType, issued.refresh_token !== undefined)
    await this.deps.audit.record('oauth.token_issued', {
      actorId: grant.userId, ip: context.ip, target: grant.clientId, details: { grant_id: grant.id, grant_type: grantType, scope: issued.scope },
    })
    return issued
  }
}
