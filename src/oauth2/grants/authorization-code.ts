import type { Scope } from '../../auth/policies.js'
import type { OAuthClient } from '../clients.js'
import { nowOf, type CallContext, type OAuthDeps } from '../deps.js'
import { invalidGrant, invalidRequest } from '../errors.js'
import { isPkceValue, matchesChallenge } from '../pkce.js'
import { checkResource } from '../resources.js'
import { teamStillHeld } from '../team-binding.js'
import type { TokenResponse, Tokens } from '../tokens.js'

export interface CodeExchange {
  code?: string
  redirect_uri?: string
  code_verifier?: string
  resource?: string
}

/** RFC 6749 §4.1.3 with RFC 7636 §4.6: the code, its redirect URI and the PKCE verifier. */
export async function authorizationCodeGrant(deps: OAuthDeps, tokens: Tokens, body: CodeExchange, client: OAuthClient, context: CallContext): Promise<TokenResponse> {
  const { database, repository, digest } = deps
  const { code, redirect_uri: redirectUri, code_verifier: verifier } = body
  if (code === undefined) throw invalidRequest('code is required.')
  if (redirectUri === undefined) throw invalidRequest('redirect_uri is required.')
  if (verifier === undefined) throw invalidRequest('code_verifier is required.')
  if (!isPkceValue(verifier)) throw invalidGrant('The code_verifier is malformed (43 to 128 characters of [A-Za-z0-9-._~]).')
  const now = nowOf(deps)
  const grant = await repository.findGrantByCode(digest(code))
  if (grant === undefined) throw invalidGrant('The authorization code is unknown.')
  // RFC 6749 §4.1.2: a code used twice revokes what it was exchanged for.
  if (grant.codeUsedAt !== null || grant.revokedAt !== null) return tokens.endGrant(grant, 'oauth.code_reused', context)
  if (grant.codeExpiresAt <= now) throw invalidGrant('The authorization code has expired.')
  if (grant.clientId !== client.id) throw invalidGrant('The authorization code was issued to another client.')
  if (grant.redirectUri !== redirectUri) throw invalidGrant('The redirect_uri does not match the authorization request.')
  if (!matchesChallenge(verifier, grant.codeChallenge)) throw invalidGrant('The code_verifier does not match the code_challenge.')
  checkResource(body.resource, grant, tokens.backend)
  if (!(await teamStillHeld(deps, grant.userId, grant.teamId))) return tokens.endForLostTeam(grant, context)
  const issued = await database.transaction(async (tx) => {
    const txRepository = repository.with(tx)
    if (!(await txRepository.consumeCode(grant.id, now))) return null
    return tokens.issue(txRepository, grant, grant.scope.split(' ') as Scope[], now)
  })
  // Lost a race with another exchange of the same code: that is a reuse too.
  if (issued === null) return tokens.endGrant(grant, 'oauth.code_reused', context)
  return tokens.audited(grant, 'authorization_code', issued, context)
}
