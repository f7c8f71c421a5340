import type { OAuthRepository } from '../db/repositories/oauth.js'
import type { PersonalTokensRepository } from '../db/repositories/personal-tokens.js'
import type { SessionsRepository } from '../db/repositories/sessions.js'
import type { Db } from '../db/types.js'

export interface SignInStores {
  sessions: SessionsRepository
  oauth: OAuthRepository
  personalTokens: PersonalTokensRepository
}

/**
 * Signs a user out everywhere, inside the caller's transaction: every session (but `keepSessionId`,
 * the browser that asked), every OAuth grant and every personal access token, since the CLI's,
 * MCP clients' and scripts' tokens are sessions too (OWASP ASVS V3.3.3: a credential change ends
 * the other sessions). Answers how many grants and tokens ended, for the audit event.
 */
export async function signOutEverywhere(stores: SignInStores, tx: Db, userId: string, now: Date, keepSessionId?: string): Promise<{ oauthGrantsRevoked: number; personalTokensRevoked: number }> {
  await stores.sessions.with(tx).deleteForUser(userId, keepSessionId)
  const oauthGrantsRevoked = await stores.oauth.with(tx).revokeAllForUser(userId, now)
  return { oauthGrantsRevoked, personalTokensRevoked: await stores.personalTokens.with(tx).deleteForUser(userId) }
}
