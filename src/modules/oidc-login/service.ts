import * as oauth from 'oauth4webapi'
import type { SessionService } from '../../auth/sessions.js'
import type { Config } from '../../config.js'
import { newId } from '../../db/ids.js'
import type { OidcStatesRepository } from '../../db/repositories/oidc-states.js'
import type { TeamsRepository } from '../../db/repositories/teams.js'
import type { UserRow, UsersRepository } from '../../db/repositories/users.js'
import type { Database, Db } from '../../db/types.js'
import { AppError } from '../../http/errors.js'
import type { Clock } from '../../lib/clock.js'
import type { SecretBox } from '../../lib/secret-box.js'
import { randomToken, sameSecret, type Digester } from '../../lib/tokens.js'
import type { AuditLog } from '../audit/service.js'
import { loginDisabled } from '../auth/service.js'
import type { ProviderLogin } from '../provider-login/service.js'
import { discardUnverifiedCredentials, type HeldCredentials } from '../provider-login/unverified-accounts.js'
import { usernameCandidates } from '../provider-login/usernames.js'
import type { SettingsService } from '../settings/service.js'
import { alreadyLinked, emailNotAvailable, oidcDisabled, stateMismatch } from './errors.js'
import { identityFrom, needsUserinfo, type OidcIdentity } from './identity.js'
import type { IssuerClient, IssuerSettings } from './issuer-client.js'

/** A sign-in must come back within 10 minutes. */
export const STATE_LIFETIME_MS = 10 * 60 * 1000

/** Where the issuer sends the browser back; registered at the issuer as the redirect URI. */
export const CALLBACK_PATH = '/api/auth/oidc/callback'

/** What OpenID Connect sign-in is built from (services.ts). */
export interface Deps {
  database: Database
  client: IssuerClient
  states: OidcStatesRepository
  digest: Digester
  /** Seals the PKCE code verifier at rest. */
  box: SecretBox
  users: UsersRepository
  teams: TeamsRepository
  sessions: SessionService
  /** What an unverified account's registrant held, ended when the issuer's verified address wins. */
  held: HeldCredentials
  settings: SettingsService
  audit: AuditLog
  clock: Clock
  config: Config
  /** The provider sign-in's return_to rules (no open redirect), shared as they are. */
  returnTo: Pick<ProviderLogin, 'safeReturnTo' | 'landing'>
}

/** What the callback reads from its request. */
export interface Callback {
  /** Every query parameter as sent (oauth4webapi checks `iss`, `error` and `code` among them). */
  parameters: URLSearchParams
  /** The state cookie this browser carries. */
  expectedState: string | undefined
  ip: string
}

/** Sign-in with an OpenID Connect issuer, with the provider sign-in's linking and first-user rules. */
export class OidcLogin {
  constructor(private readonly deps: Deps) {}

  /** Enabled only when an issuer, a client id and a client secret are set too. */
  async status(): Promise<{ enabled: boolean; display_name: string }> {
    const { settings } = this.deps
    const configured = (await settings.get('oidc.issuer')) !== '' && (await settings.get('oidc.client_id')) !== '' && (await settings.get('oidc.client_secret')) !== ''
    return { enabled: configured && (await settings.get('oidc.enabled')), display_name: await settings.get('oidc.display_name') }
  }

  /**
   * The issuer's authorization URL, and the state (256 bits) that the browser keeps in a
   * short-lived cookie. The database keeps its digest with the nonce, the sealed PKCE verifier, the
   * issuer and the checked return_to until the callback, on whichever instance, uses it once.
   */
  async start(returnTo: string | undefined): Promise<{ url: string; state: string }> {
    const settings = await this.issuerSettings()
    const state = randomToken()
    const secrets = { state, nonce: randomToken(), codeVerifier: oauth.generateRandomCodeVerifier() }
    const url = await this.deps.client.authorizationUrl(settings, secrets)
    const digest = this.deps.digest(state)
    const now = this.deps.clock.now()
    await this.deps.states.insert({
      id: newId(), digest, issuer: settings.issuer, nonce: secrets.nonce, codeVerifier: this.deps.box.seal(secrets.codeVerifier, digest),
      returnTo: await this.deps.returnTo.safeReturnTo(returnTo), expiresAt: new Date(now + STATE_LIFETIME_MS), createdAt: new Date(now),
    })
    return { url, state }
  }

  /**
   * The state must be this browser's and one the server still holds (spent now, whatever
   * follows). Then the code is exchanged and the ID token verified at the issuer the sign-in began
   * with, and the identity resolved to a user: by (issuer, sub), else by verified address
   * (linking), else a new global_user. Returns the user and a new session.
   */
  async complete({ parameters, expectedState, ip }: Callback) {
    const state = parameters.get('state')
    if (!state || !expectedState || !sameSecret(state, expectedState)) throw stateMismatch()
    const digest = this.deps.digest(state)
    const pending = await this.deps.states.consume(digest, new Date(this.deps.clock.now()))
    if (pending === undefined) throw stateMismatch()
    const settings = await this.issuerSettings()
    if (pending.issuer !== settings.issuer) throw stateMismatch('the issuer setting changed since this sign-in began; start again')
    const verifiedClaim = await this.deps.settings.get('oidc.email_verified_claim')
    const secrets = { state, nonce: pending.nonce, codeVerifier: this.openVerifier(pending.codeVerifier, digest) }
    const claims = await this.deps.client.signIn(settings, secrets, parameters, needsUserinfo(verifiedClaim))
    const identity = identityFrom(claims, verifiedClaim)
    if (identity.email === null) throw emailNotAvailable(verifiedClaim)
    const { user, outcome } = await this.resolve(identity, identity.email)
    const session = await this.deps.sessions.create(user.id)
    await this.deps.audit.record(outcome === 'created' ? 'user.registered' : 'user.login', {
      actorId: user.id, ip, target: user.id, details: { method: 'oidc', issuer: identity.issuer, ...LINK_DETAILS[outcome] },
    })
    return { user, session, returnTo: pending.returnTo }
  }

  /** See ProviderLogin.safeReturnTo: a path here or a URL on global.page_url's origin, else null. */
  safeReturnTo(returnTo: string | undefined): Promise<string | null> {
    return this.deps.returnTo.safeReturnTo(returnTo)
  }

  /** See ProviderLogin.landing: the stored return_to checked again, else global.page_url, else PUBLIC_URL. */
  landing(returnTo: string | null): Promise<string> {
    return this.deps.returnTo.landing(returnTo)
  }

  /** Sealed under another ENCRYPTION_SECRET (changed during the sign-in): the sign-in starts again. */
  private openVerifier(sealed: string, digest: string): string {
    try {
      return this.deps.box.open(sealed, digest)
    } catch {
      throw stateMismatch()
    }
  }

  private async issuerSettings(): Promise<IssuerSettings> {
    const { settings, config } = this.deps
    if (!(await settings.get('global.enable_login'))) throw loginDisabled()
    if (!(await this.status()).enabled) throw oidcDisabled()
    return {
      issuer: await settings.get('oidc.issuer'),
      clientId: await settings.get('oidc.client_id'),
      clientSecret: await settings.get('oidc.client_secret'),
      redirectUri: `${config.publicUrl}${CALLBACK_PATH}`,
      scope: await settings.get('oidc.scope'),
    }
  }

  /**
   * Under the registration lock, so concurrent first sign-ins of one identity make one user, and
   * "is there any user yet?" cannot race with an email registration.
   */
  private async resolve(identity: OidcIdentity, email: string): Promise<{ user: UserRow; outcome: Outcome }> {
    const { database, users, teams, clock } = this.deps
    return database.transaction(async (tx) => {
      const txUsers = users.with(tx)
      await txUsers.lockRegistrations()
      const now = new Date(clock.now())
      const linked = await txUsers.findByOidcIdentity(identity.issuer, identity.subject)
      if (linked !== undefined) return { user: linked, outcome: 'signed_in' }
      const sameEmail = await txUsers.findByLogin(email)
      // Another identity at this issuer holds the account: re-linking would lock that one out. A
      // link to an issuer no longer configured opens nothing, so a verified address may replace it.
      if (sameEmail !== undefined && sameEmail.oidcIssuer === identity.issuer && sameEmail.oidcSubject !== null) throw alreadyLinked()
      const link = { oidcIssuer: identity.issuer, oidcSubject: identity.subject }
      if (sameEmail !== undefined && sameEmail.emailVerified) {
        // The address was proven to this account, and the issuer proves it too: one person, every method works afterwards.
        const user = await txUsers.update(sameEmail.id, { ...link, updatedAt: now })
        return { user: user!, outcome: 'linked' }
      }
      if (sameEmail !== undefined) return { user: await this.claimUnverified(tx, sameEmail, link, now), outcome: 'claimed' }
      if (!(await txUsers.any())) {
        throw new AppError(403, 'FIRST_USER_REQUIRES_EMAIL', 'The first user must register with email and password.')
      }
      for (const username of usernameCandidates(identity.usernameBase)) {
        if ((await txUsers.taken('', username)).username) continue
        const user = await txUsers.insert({
          id: newId(), username, email, passwordHash: null, firstName: identity.firstName, lastName: identity.lastName,
          roleId: 'global_user', emailVerified: true, ...link, createdAt: now, updatedAt: now,
        })
        await teams.with(tx).createDefault(user.id, user.username, now)
        return { user, outcome: 'created' }
      }
      throw new Error('no free username')
    })
  }

  /**
   * The pre-hijacking rule of the provider sign-in (unverified-accounts.ts): whoever registered
   * this address never proved it, and the issuer just did. The address's owner gets the account;
   * nothing its registrant held survives — password, provider link, second factor, sessions,
   * OAuth grants, personal access tokens, links.
   */
  private async claimUnverified(tx: Db, account: UserRow, link: { oidcIssuer: string; oidcSubject: string }, now: Date): Promise<UserRow> {
    await discardUnverifiedCredentials(this.deps.held, tx, account.id, now)
    const user = await this.deps.users.with(tx).update(account.id, {
      ...link, emailVerified: true, passwordHash: null, providerUserId: null,
      failedLogins: 0, failedLoginsSince: null, lockedUntil: null, updatedAt: now, twoFactorEnabledAt: null,
    })
    return user!
  }
}

/** How an identity found its account. */
type Outcome = 'signed_in' | 'linked' | 'claimed' | 'created'

/** What the audit event adds (never a secret): a link, and whether an unverified registrant's credentials were discarded. */
const LINK_DETAILS: Record<Outcome, Record<string, boolean>> = {
  signed_in: {},
  linked: { linked: true },
  claimed: { linked: true, unverified_credentials_discarded: true },
  created: {},
}
