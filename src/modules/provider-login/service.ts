import type { Config } from '../../config.js'
import { newId } from '../../db/ids.js'
import type { EmailTokensRepository } from '../../db/repositories/email-tokens.js'
import type { PersonalTokensRepository } from '../../db/repositories/personal-tokens.js'
import type { OAuthRepository } from '../../db/repositories/oauth.js'
import type { SessionsRepository } from '../../db/repositories/sessions.js'
import type { TeamsRepository } from '../../db/repositories/teams.js'
import type { UserRow, UsersRepository } from '../../db/repositories/users.js'
import type { Database, Db } from '../../db/types.js'
import { AppError, errors } from '../../http/errors.js'
import type { Clock } from '../../lib/clock.js'
import { randomToken, sameSecret, type Digester } from '../../lib/tokens.js'
import type { ProviderStatesRepository } from '../../db/repositories/provider-states.js'
import type { AuditLog } from '../audit/service.js'
import { loginDisabled } from '../auth/service.js'
import type { SettingsService } from '../settings/service.js'
import type { SessionService } from '../../auth/sessions.js'
import { emailNotAvailable, providerFailed, type ProviderClient, type ProviderCredentials, type ProviderIdentity } from './client.js'
import { safeReturnTo } from './return-to.js'
import { discardUnverifiedCredentials } from './unverified-accounts.js'
import { usernameCandidates } from './usernames.js'

/** A sign-in must come back within 10 minutes. */
export const STATE_LIFETIME_MS = 10 * 60 * 1000

const disabled = () => new AppError(403, 'PROVIDER_OAUTH_DISABLED', 'Sign-in with the identity provider is not enabled.')
const stateMismatch = () => new AppError(400, 'PROVIDER_STATE_MISMATCH', 'The sign-in request could not be matched; start again.')

export interface Deps {
  database: Database
  client: ProviderClient
  states: ProviderStatesRepository
  digest: Digester
  users: UsersRepository
  teams: TeamsRepository
  sessions: SessionService
  /** What an unverified account's registrant held, ended when the provider's verified address wins. */
  sessionRows: SessionsRepository
  oauth: OAuthRepository
  emailTokens: EmailTokensRepository
  personalTokens: PersonalTokensRepository
  settings: SettingsService
  audit: AuditLog
  clock: Clock
  config: Config
}

/** Sign-in with a GitHub-compatible identity provider, with account linking. */
export class ProviderLogin {
  constructor(private readonly deps: Deps) {}

  async status(): Promise<{ enabled: boolean; configured: boolean }> {
    const { settings } = this.deps
    const configured = (await settings.get('provider.oauth.client_id')) !== '' && (await settings.get('provider.oauth.client_secret')) !== ''
    return { enabled: await settings.get('provider.oauth.enabled'), configured }
  }

  /**
   * The authorize URL, and the state (256 bits) that the browser keeps in a short-lived cookie
   * and the database keeps (as a digest, with the checked return_to) until the callback uses it.
   */
  async start(returnTo: string | undefined): Promise<{ url: string; state: string }> {
    const credentials = await this.credentials()
    const state = randomToken()
    const now = this.deps.clock.now()
    await this.deps.states.insert({
      id: newId(), digest: this.deps.digest(state), returnTo: await this.safeReturnTo(returnTo),
      expiresAt: new Date(now + STATE_LIFETIME_MS), createdAt: new Date(now),
    })
    return { url: await this.deps.client.authorizeUrl(credentials, state), state }
  }

  /**
   * Checks the state against the cookie's (single use: the caller clears the cookie), reads the
   * identity with the code, and resolves it to a user: by provider id, else by email (linking),
   * else a new global_user. Returns the user and a new session.
   */
  async complete(input: { code: string | undefined; state: string | undefined; expectedState: string | undefined; providerError: string | undefined; ip: string }) {
    // The state must be the one this browser was given, and one the server still holds.
    if (!input.state || !input.expectedState || !sameSecret(input.state, input.expectedState)) throw stateMismatch()
    const pending = await this.deps.states.consume(this.deps.digest(input.state), new Date(this.deps.clock.now()))
    if (pending === undefined) throw stateMismatch()
    const credentials = await this.credentials()
    if (input.providerError !== undefined || !input.code) throw providerFailed(400, input.providerError ?? 'no authorization code')
    const identity = await this.deps.client.identify(credentials, input.code)
    if (identity.email === null) throw emailNotAvailable()
    const { user, outcome } = await this.resolve(identity, identity.email)
    const session = await this.deps.sessions.create(user.id)
    await this.deps.audit.record(outcome === 'created' ? 'user.registered' : 'user.login', {
      actorId: user.id, ip: input.ip, target: user.id, details: { method: 'provider', ...LINK_DETAILS[outcome] },
    })
    return { user, session, returnTo: pending.returnTo }
  }

  /** A path on this service or a URL on global.page_url's origin; anything else is dropped (return-to.ts). */
  async safeReturnTo(returnTo: string | undefined): Promise<string | null> {
    if (returnTo === undefined) return null
    return safeReturnTo(returnTo, { publicUrl: this.deps.config.publicUrl, pageUrl: await this.deps.settings.get('global.page_url') })
  }

  /**
   * Where the callback sends the browser. The stored return_to is checked again (a row may predate
   * the check, or page_url may have changed since): a Location header is never built from a value
   * that was not checked just now.
   */
  async landing(returnTo: string | null): Promise<string> {
    const checked = returnTo === null ? null : await this.safeReturnTo(returnTo)
    if (checked !== null) return checked
    const pageUrl = (await this.deps.settings.get('global.page_url')).replace(/\/+$/, '')
    const fallback = pageUrl === '' ? null : safeReturnTo(`${pageUrl}/`, { publicUrl: this.deps.config.publicUrl, pageUrl })
    return fallback ?? `${this.deps.config.publicUrl}/`
  }

  private async credentials(): Promise<ProviderCredentials> {
    const { settings } = this.deps
    if (!(await settings.get('global.enable_login'))) throw loginDisabled()
    const { enabled, configured } = await this.status()
    if (!enabled || !configured) throw disabled()
    return {
      clientId: await settings.get('provider.oauth.client_id'),
      clientSecret: await settings.get('provider.oauth.client_secret'),
      callbackUrl: await settings.get('provider.oauth.callback_url'),
      scope: await settings.get('provider.oauth.scope'),
    }
  }

  /**
   * Under the registration lock, so concurrent first sign-ins of one provider account make one
   * user, and "is there any user yet?" cannot race with an email registration.
   */
  private async resolve(identity: ProviderIdentity, email: string): Promise<{ user: UserRow; outcome: Outcome }> {
    const { database, users, teams, clock } = this.deps
    return database.transaction(async (tx) => {
      const txUsers = users.with(tx)
      await txUsers.lockRegistrations()
      const now = new Date(clock.now())
      const linked = await txUsers.findByProviderId(identity.id)
      if (linked !== undefined) return { user: linked, outcome: 'signed_in' }
      const sameEmail = await txUsers.findByLogin(email)
      if (sameEmail !== undefined && sameEmail.providerUserId !== null) {
        // Already linked to another provider account: re-linking would lock that one out.
        throw errors.conflict('PROVIDER_ALREADY_LINKED', 'This email belongs to an account linked to another provider account.')
      }
      if (sameEmail !== undefined && sameEmail.emailVerified) {
        // The address was proven to this account, and the provider proves it too: one person,
        // both methods work afterwards.
        const user = await txUsers.update(sameEmail.id, { providerUserId: identity.id, updatedAt: now })
        return { user: user!, outcome: 'linked' }
      }
      if (sameEmail !== undefined) return { user: await this.claimUnverified(tx, sameEmail, identity, now), outcome: 'claimed' }
      if (!(await txUsers.any())) {
        throw new AppError(403, 'FIRST_USER_REQUIRES_EMAIL', 'The first user must register with email and password.')
      }
      const [firstName, ...rest] = (identity.name ?? '').trim().split(/\s+/)
      for (const username of usernameCandidates(identity.login)) {
        if ((await txUsers.taken('', username)).username) continue
        const user = await txUsers.insert({
          id: newId(), username, email, passwordHash: null,
          firstName: firstName ? firstName.slice(0, 100) : null, lastName: rest.length > 0 ? rest.join(' ').slice(0, 100) : null,
          roleId: 'global_user', emailVerified: true, providerUserId: identity.id, createdAt: now, updatedAt: now,
        })
        await teams.with(tx).createDefault(user.id, user.username, now)
        return { user, outcome: 'created' }
      }
      throw new Error('no free username')
    })
  }

  /**
   * Account pre-hijacking (OWASP ASVS V6; the MSRC 2022 "pre-hijacking" analysis): whoever registered
   * this address never proved it, and the provider just did. The address's owner gets the account;
   * nothing its registrant held survives — the password (a reset by the owner sets a new one), every
   * session, every OAuth grant and every pending reset or verification link.
   */
  private async claimUnverified(tx: Db, account: UserRow, identity: ProviderIdentity, now: Date): Promise<UserRow> {
    const { users } = this.deps
    await discardUnverifiedCredentials(this.deps, tx, account.id, now)
    const user = await users.with(tx).update(account.id, {
      providerUserId: identity.id, emailVerified: true, passwordHash: null,
      failedLogins: 0, failedLoginsSince: null, lockedUntil: null, updatedAt: now,
      // The registrant's second factor ends too (its secret and recovery codes are inert while off,
      // and replaced when the owner sets two-factor up).
      twoFactorEnabledAt: null,
    })
    return user!
  }
}

/** How a provider identity found its account. */
type Outcome = 'signed_in' | 'linked' | 'claimed' | 'created'

/** What the audit event adds (never a secret): a link, and whether an unverified registrant's credentials were discarded. */
const LINK_DETAILS: Record<Outcome, Record<string, boolean>> = {
  signed_in: {},
  linked: { linked: true },
  claimed: { linked: true, unverified_credentials_discarded: true },
  created: {},
}
