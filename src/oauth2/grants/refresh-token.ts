import type { Scope } from '../../auth/policies.js'
import type { OAuthClient } from '../clients.js'
import { nowOf, type CallContext, type OAuthDeps } from '../deps.js'
import { invalidGrant, invalidRequest, invalidScope } from '../errors.js'
import { isSubset, MALFORMED_SCOPE, scopesOrDefault } from '../scopes.js'
import { checkResource } from '../resources.js'
import { teamStillHeld } from '../team-binding.js'
import type { TokenResponse, Tokens } from '../tokens.js'

export interface Refresh {
  refresh_token?: string
  scope?: string
  resource?: string
}

/**
 * RFC 6749 §6 with rotation (RFC 9700 §4.14.2): every refresh spends the token and issues the next;
 * a spent one presented again ends the whole grant.
 */
export async function refreshTokenGrant(deps: OAuthDeps, tokens: Tokens, body: Refresh, client: OAuthClient, context: CallContext): Promise<TokenResponse> {
  const { database, repository, digest } = deps
  if (body.refresh_token === undefined) throw invalidRequest('refresh_token is required.')
  const now = nowOf(deps)
  const tokenDigest = digest(body.refresh_token)
  const found = await repository.findToken(tokenDigest)
  if (found === undefined || found.token.kind !== 'refresh') throw invalidGrant('The refresh token is unknown.')
  const presented = found.token
  if (presented.clientId !== client.id) throw invalidGrant('The refresh token was issued to another client.')
  if (presented.revoked) throw invalidGrant('The refresh token has been revoked.')
  if (presented.expiresAt <= now) throw invalidGrant('The refresh token has expired.')
  const grant = await repository.findGrant(presented.grantId)
  if (grant === undefined || grant.revokedAt !== null) throw invalidGrant('The refresh token has been revoked.')
  if (!(await teamStillHeld(deps, grant.userId, grant.teamId))) return tokens.endForLostTeam(grant, context)
  // RFC 8707 §2.2: a refresh keeps the resource (one per grant here, so narrowing means keeping it).
  checkResource(body.resource, grant, tokens.backend)
  // Unknown names are dropped, and a scope naming none known keeps the grant's (RFC 6749 §3.3);
  // the answer's `scope` says what the new tokens carry.
  const scopes = scopesOrDefault(body.scope, grant.scope.split(' ') as Scope[])
  if (scopes === null) throw invalidScope(`${MALFORMED_SCOPE}.`)
  // RFC 6749 §6: a refresh may narrow the original grant, never widen it.
  if (!isSubset(scopes, grant.scope.split(' '))) throw invalidScope(`The scope may only narrow the granted one: ${grant.scope}.`)
  const issued = await database.transaction(async (tx) => {
    const txRepository = repository.with(tx)
    if ((await txRepository.spendRefresh(tokenDigest, now)) === undefined) return null
    return tokens.issue(txRepository, grant, scopes, now)
  })
  // Already rotated (or raced): the token is in two hands.
  if (issued === null) return tokens.endGrant(grant, 'oauth.refresh_token_reused', context)
  return tokens.audited(grant, 'refresh_token', issued, context)
}
