import type { AbuseLimits } from '../../auth/limits.js'
import type { Passwords } from '../../auth/passwords.js'
import type { SessionService } from '../../auth/sessions.js'
import { signOutEverywhere } from '../../auth/sign-outs.js'
import { personalTokensRepository } from '../../db/repositories/personal-tokens.js'
import { violatedUniqueIndex } from '../../db/errors.js'
import { newId } from '../../db/ids.js'
import type { OAuthRepository } from '../../db/repositories/oauth.js'
import type { SessionsRepository } from '../../db/repositories/sessions.js'
import type { TeamsRepository } from '../../db/repositories/teams.js'
import type { NewUser, UserRow, UsersRepository } from '../../db/repositories/users.js'
import type { Database, Db } from '../../db/types.js'
import { AppError, errors } from '../../http/errors.js'
import type { Clock } from '../../lib/clock.js'
import type { AuditLog } from '../audit/service.js'
import type { LoginMetrics } from '../metrics/service.js'
import type { SettingsService } from '../settings/service.js'
import type { EmailFlows } from './email-flows.js'

export interface Registration {
  username: string
  email: string
  password: string
  first_name?: string
  last_name?: string
  /** The token of a team invitation to this address: the address then counts as verified (joining is a separate step). */
  invitation_token?: string
}

export interface RequestContext {
  ip: string
  /** Named by the log line of a mail the request causes, should it fail. */
  requestId?: string
}

/**
 * Starts the second step of a sign-in of an account with two-factor authentication on
 * (modules/two-factor): the random value of the challenge cookie, and when it ends.
 */
export type SecondFactorStart = (user: UserRow) => Promise<{ token: string; expiresAt: Date }>

/** A login: a session, or, for an account with two-factor on, the challenge of the second step (no session yet). */
export type LoginOutcome =
  | { user: UserRow; session: Awaited<ReturnType<SessionService['create']>>; challenge?: undefined }
  | { user: UserRow; session?: undefined; challenge: Awaited<ReturnType<SecondFactorStart>> }

export interface Deps {
  database: Database
  users: UsersRepository
  teams: TeamsRepository
  sessionsRepository: SessionsRepository
  oauth: OAuthRepository
  sessions: SessionService
  passwords: Passwords
  settings: SettingsService
  audit: AuditLog
  emailFlows: EmailFlows
  limits: AbuseLimits
  clock: Clock
  metrics: LoginMetrics
  /** The invited address of a pending invitation, null for any other token. */
  invitedAddress?: (token: string) => Promise<string | null>
  secondFactor: SecondFactorStart
}

export const loginDisabled = () => new AppError(403, 'LOGIN_DISABLED', 'Login is disabled on this service.')
const invalidCredentials = () => new AppError(401, 'INVALID_CREDENTIALS', 'Invalid login or password.')
const wrongCurrentPassword = () => new AppError(400, 'INVALID_PASSWORD', 'The current password is wrong.')
const emailTaken = () => errors.conflict('EMAIL_TAKEN', 'This email is already registered.')
const usernameTaken = () => errors.conflict('USERNAME_TAKEN', 'This username is already taken.')

/** Registration, login, logout, password change, profile. No Fastify types here. */
export class AccountService {
  constructor(private readonly deps: Deps) {}

  async register(input: Registration, context: RequestContext) {
    const { database, passwords, settings, audit, clock, sessions, emailFlows, sessionsRepository } = this.deps
    if (!(await settings.get('global.enable_email_registration'))) {
      throw new AppError(403, 'REGISTRATION_DISABLED', 'Email registration is disabled on this service.')
    }
    const email = input.email.toLowerCase()
    // Holding an invitation mailed to this very address proves it as a verification link would; any other token changes nothing.
    const invited = input.invitation_token !== undefined && (await this.deps.invitedAddress?.(input.invitation_token)) === email
    const verificationRequired = await emailFlows.verificationRequired()
    const loginEnabled = await settings.get('global.enable_login')
    // Hashing happens before the transaction: the lock below is held for milliseconds only.
    const passwordHash = await passwords.hash(input.password)
    const now = new Date(clock.now())

    const result = await database.transaction(async (tx) => {
      // The first user ever is the global admin, with a verified email.
      const user = await this.insertAccount(tx, { ...input, email }, passwordHash, now, (first) =>
        first ? { roleId: 'global_admin', emailVerified: true } : { roleId: 'global_user', emailVerified: invited })
      const pending = verificationRequired && !user.emailVerified
      // With login switched off a non-admin's session would be refused anyway.
      const signIn = !pending && (loginEnabled || user.roleId === 'global_admin')
      const session = signIn ? await sessions.create(user.id, sessionsRepository.with(tx)) : null
      await audit.record('user.registered', { actorId: user.id, ip: context.ip, target: user.id, details: { role_id: user.roleId, ...(invited ? { email_verified_by: 'invitation' } : {}) } }, tx)
      return { user, session, pending }
    }).catch((error: unknown) => {
      throw mapUserConflict(error)
    })

    if (result.pending) await emailFlows.sendVerification(result.user, context.requestId)
    return result
  }

  /**
   * A global admin with a verified email, created from the server's shell (`npm run admin:create`)
   * so that an instance reachable from the internet has its admin before anyone can register.
   * The same uniqueness rules and default team as a registration; no session, no mail, and the
   * registration switch does not apply (whoever runs it already controls the server).
   */
  async createAdmin(input: Registration): Promise<UserRow> {
    const { database, passwords, audit, clock } = this.deps
    const passwordHash = await passwords.hash(input.password)
    const now = new Date(clock.now())
    return database.transaction(async (tx) => {
      const user = await this.insertAccount(tx, { ...input, email: input.email.toLowerCase() }, passwordHash, now, () => ({ roleId: 'global_admin', emailVerified: true }))
      await audit.record('user.registered', { actorId: user.id, target: user.id, details: { role_id: user.roleId, method: 'cli' } }, tx)
      return user
    }).catch((error: unknown) => {
      throw mapUserConflict(error)
    })
  }

  /**
   * Inserts a user (`input.email` already in lower case) and their default team. Under the
   * registrations lock the uniqueness checks and the "is this the first user" question cannot
   * race another registration.
   */
  private async insertAccount(tx: Db, input: Registration, passwordHash: string, now: Date, grant: (first: boolean) => Pick<NewUser, 'roleId' | 'emailVerified'>): Promise<UserRow> {
    const txUsers = this.deps.users.with(tx)
    await txUsers.lockRegistrations()
    const taken = await txUsers.taken(input.email, input.username)
    if (taken.email) throw emailTaken()
    if (taken.username) throw usernameTaken()
    const user = await txUsers.insert({
      id: newId(),
      username: input.username,
      email: input.email,
      passwordHash,
      firstName: input.first_name ?? null,
      lastName: input.last_name ?? null,
      ...grant(!(await txUsers.any())),
      createdAt: now,
      updatedAt: now,
    })
    await this.deps.teams.with(tx).createDefault(user.id, user.username, now)
    return user
  }

  async login(login: string, password: string, context: RequestContext): Promise<LoginOutcome> {
    const { users, passwords, settings, audit, clock, sessions, emailFlows, metrics, secondFactor } = this.deps
    if (!(await settings.get('global.enable_login'))) throw loginDisabled()
    const user = await users.findByLogin(login)
    const now = new Date(clock.now())
    if (user === undefined || user.passwordHash === null) {
      // Same work, same answer as a wrong password.
      await passwords.verifyDummy(password)
      await audit.record('user.login_failed', { ip: context.ip, details: { reason: 'unknown_login' } })
      metrics.failed('unknown_login')
      throw invalidCredentials()
    }
    if (user.lockedUntil !== null && user.lockedUntil > now) {
      metrics.failed('locked')
      throw lockedOut(user.lockedUntil, now)
    }
    if (!(await passwords.verify(user.passwordHash, password))) {
      metrics.failed('wrong_password')
      throw await this.failedPasswordCheck(user, now, context, { reason: 'wrong_password' }, invalidCredentials())
    }
    if (!user.emailVerified && (await emailFlows.verificationRequired())) {
      throw new AppError(403, 'EMAIL_NOT_VERIFIED', 'Verify your email address before logging in.')
    }
    // With two-factor on, the failure count is reset only once the code is right too: a password
    // alone must not reopen the guessing of codes.
    if (user.twoFactorEnabledAt !== null) return { user, challenge: await secondFactor(user) }
    if (user.failedLogins > 0 || user.lockedUntil !== null) await users.resetFailedLogins(user.id)
    const session = await sessions.create(user.id)
    await audit.record('user.login', { actorId: user.id, ip: context.ip, target: user.id, details: { method: 'email' } })
    return { user, session }
  }

  async logout(sessionId: string | undefined, context: RequestContext): Promise<void> {
    if (!sessionId) return
    const userId = await this.deps.sessions.destroy(sessionId)
    if (userId !== null) await this.deps.audit.record('user.logout', { actorId: userId, ip: context.ip, target: userId })
  }

  /**
   * Every other session and every OAuth grant of the user dies; the current session stays. A wrong
   * current password counts against the account's lockout exactly like a failed login (a stolen
   * session must not become an unthrottled password oracle), and a locked account is refused here too.
   */
  async changePassword(user: UserRow, sessionRowId: string, current: string, next: string, context: RequestContext): Promise<void> {
    const { users, passwords, sessionsRepository, oauth, audit, clock } = this.deps
    const checkedAt = new Date(clock.now())
    if (user.lockedUntil !== null && user.lockedUntil > checkedAt) throw lockedOut(user.lockedUntil, checkedAt)
    if (user.passwordHash === null) throw wrongCurrentPassword()
    if (!(await passwords.verify(user.passwordHash, current))) {
      throw await this.failedPasswordCheck(user, checkedAt, context, { reason: 'wrong_password', method: 'change_password' }, wrongCurrentPassword())
    }
    const passwordHash = await passwords.hash(next)
    await this.deps.database.transaction(async (tx) => {
      const now = new Date(clock.now())
      // Like a successful login, a proven password clears the failure count.
      await users.with(tx).update(user.id, { passwordHash, failedLogins: 0, failedLoginsSince: null, lockedUntil: null, updatedAt: now })
      const { oauthGrantsRevoked, personalTokensRevoked } = await signOutEverywhere({ sessions: sessionsRepository, oauth, personalTokens: personalTokensRepository(this.deps.database) }, tx, user.id, now, sessionRowId)
      await audit.record('user.password_changed', { actorId: user.id, ip: context.ip, target: user.id, details: { oauth_grants_revoked: oauthGrantsRevoked, personal_tokens_revoked: personalTokensRevoked } }, tx)
    })
  }

  /**
   * Counts a wrong password against the account (one atomic update in the database, so the count
   * holds across instances) and audits it; the error to throw: 429 when this failure locked the
   * account (it was open when the attempt began), else `refusal`.
   */
  private async failedPasswordCheck(user: UserRow, now: Date, context: RequestContext, details: Record<string, string>, refusal: AppError): Promise<AppError> {
    const { users, audit, limits, metrics } = this.deps
    const { lockedUntil } = await users.recordFailedLogin(user.id, { now, ...limits.lockout })
    await audit.record('user.login_failed', { actorId: user.id, ip: context.ip, target: user.id, details })
    if (lockedUntil === null || lockedUntil <= now) return refusal
    metrics.lockedOut()
    return lockedOut(lockedUntil, now)
  }

  async updateProfile(user: UserRow, patch: { username?: string; first_name?: string; last_name?: string }): Promise<UserRow> {
    const { users, clock } = this.deps
    if (patch.username !== undefined && patch.username.toLowerCase() !== user.username.toLowerCase()) {
      const taken = await users.taken('', patch.username)
      if (taken.username) throw usernameTaken()
    }
    try {
      const updated = await users.update(user.id, {
        ...(patch.username !== undefined ? { username: patch.username } : {}),
        ...(patch.first_name !== undefined ? { firstName: patch.first_name } : {}),
        ...(patch.last_name !== undefined ? { lastName: patch.last_name } : {}),
        updatedAt: new Date(clock.now()),
      })
      if (updated === undefined) throw errors.notFound('User')
      return updated
    } catch (error) {
      throw mapUserConflict(error)
    }
  }
}

function lockedOut(until: Date, now: Date): AppError {
  const seconds = Math.max(1, Math.ceil((until.getTime() - now.getTime()) / 1000))
  return new AppError(429, 'RATE_LIMITED', 'Too many wrong passwords (at login or when changing it): this account is locked for a while.').withHeaders({
    'retry-after': String(seconds),
  })
}

/** A unique-index violation that slipped past the pre-check (a concurrent write) is still a 409. */
export function mapUserConflict(error: unknown): unknown {
  const index = violatedUniqueIndex(error)
  if (index === null) return error
  if (index.includes('email')) return emailTaken()
  if (index.includes('username')) return usernameTaken()
  return error
}
