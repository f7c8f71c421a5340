import type { OAuthRepository } from '../db/repositories/oauth.js'
import type { SessionsRepository } from '../db/repositories/sessions.js'
import type { Db } from '../db/types.js'

export interface SignInStores {
  sessions: SessionsRepository
  oauth: OAuthRepository
}

/**
 * Signs a user out everywhere, inside the caller's transaction: every session (but `keepSessionId`,
 * the browser that asked) and every OAuth grant, since the CLI's and MCP clients' tokens are
 * sessions too (OWASP ASVS V3.3.3: a credential change ends the other sessions). Answers how many
 * grants ended, for the audit event.
 */
export async function signOutEverywhere(stores: SignInStores, tx: Db, userId: string, now: Date, keepSessionId?: string): Promise<{ oauthGrantsRevoked: number }> {
  await stores.sessions.with(tx).deleteForUser(userId, keepSessionId)
  return { oauthGrantsRevoked: await stores.oauth.with(tx).revokeAllForUser(userId, now) }
}
