import type { EmailTokensRepository } from '../../db/repositories/email-tokens.js'
import type { OAuthRepository } from '../../db/repositories/oauth.js'
import type { PersonalTokensRepository } from '../../db/repositories/personal-tokens.js'
import type { SessionsRepository } from '../../db/repositories/sessions.js'
import type { Db } from '../../db/types.js'
import { signOutEverywhere } from '../../auth/sign-outs.js'

/** What an unverified account's registrant may hold besides the password. */
export interface HeldCredentials {
  sessionRows: SessionsRepository
  oauth: OAuthRepository
  emailTokens: EmailTokensRepository
  personalTokens: PersonalTokensRepository
}

/**
 * Account pre-hijacking (OWASP ASVS V6; the MSRC 2022 "pre-hijacking" analysis): an identity
 * provider just proved an address that whoever registered this account never did. Before the
 * account becomes the address owner's, every session, OAuth grant, personal access token and
 * pending reset or verification link of the registrant ends; the caller clears the password and
 * the second factor in the same transaction. Shared by every sign-in that vouches for an address (provider, OpenID Connect).
 */
export async function discardUnverifiedCredentials(held: HeldCredentials, tx: Db, userId: string, now: Date): Promise<void> {
  await signOutEverywhere({ sessions: held.sessionRows, oauth: held.oauth, personalTokens: held.personalTokens }, tx, userId, now)
  await held.emailTokens.with(tx).consumeAllFor(userId, 'reset_password', now)
  await held.emailTokens.with(tx).consumeAllFor(userId, 'verify_email', now)
}
