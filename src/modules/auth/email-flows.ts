import type { Passwords } from '../../auth/passwords.js'
import type { Config } from '../../config.js'
import { newId } from '../../db/ids.js'
import type { EmailTokenPurpose, EmailTokensRepository } from '../../db/repositories/email-tokens.js'
import type { SessionsRepository } from '../../db/repositories/sessions.js'
import type { UserRow, UsersRepository } from '../../db/repositories/users.js'
import type { Database } from '../../db/types.js'
import { AppError } from '../../http/errors.js'
import type { Clock } from '../../lib/clock.js'
import { randomToken, type Digester } from '../../lib/tokens.js'
import type { AuditLog } from '../audit/service.js'
import type { MailService } from '../mail/service.js'
import { passwordChangedMail, passwordResetMail, verificationMail } from '../mail/templates.js'
import type { SettingsService } from '../settings/service.js'

/** Verification lives 24 hours, a reset link 1 hour; both are single use. */
export const VERIFICATION_LIFETIME_MS = 24 * 60 * 60 * 1000
export const RESET_LIFETIME_MS = 60 * 60 * 1000

const invalidToken = () => new AppError(400, 'INVALID_TOKEN', 'This link is invalid or has already been used.')

export interface EmailFlowDeps {
  database: Database
  users: UsersRepository
  tokens: EmailTokensRepository
  sessionsRepository: SessionsRepository
  passwords: Passwords
  settings: SettingsService
  mail: MailService
  audit: AuditLog
  digest: Digester
  clock: Clock
  config: Config
}

/** Email verification and password reset. */
export class EmailFlows {
  constructor(private readonly deps: EmailFlowDeps) {}

  /** Verification is mandatory only while mail can actually be sent. */
  async verificationRequired(): Promise<boolean> {
    const { settings, mail } = this.deps
    return (await settings.get('global.require_email_verification')) && (await mail.enabled())
  }

  async sendVerification(user: UserRow): Promise<void> {
    const token = await this.issue(user.id, 'verify_email', VERIFICATION_LIFETIME_MS)
    const pageUrl = await this.pageUrl()
    // The frontend's page when one is configured, else the backend's own endpoint.
    const link = pageUrl !== null
      ? `${pageUrl}/verify-email?token=${token}`
      : `${this.deps.config.publicUrl}/api/auth/email/verify?token=${token}`
    await this.deps.mail.sendBestEffort({ to: user.email, ...verificationMail({ username: user.username, link }) })
  }

  async verifyEmail(token: string): Promise<UserRow> {
    const { tokens, users, clock, digest, audit } = this.deps
    const now = new Date(clock.now())
    const row = await tokens.findByDigest(digest(token), 'verify_email')
    if (row === undefined || row.usedAt !== null || row.expiresAt <= now) throw invalidToken()
    return this.deps.database.transaction(async (tx) => {
      if (!(await tokens.with(tx).consume(row.id, now))) throw invalidToken()
      const user = await users.with(tx).update(row.userId, { emailVerified: true, updatedAt: now })
      if (user === undefined) throw invalidToken()
      await audit.record('user.email_verified', { actorId: user.id, target: user.id }, tx)
      return user
    })
  }

  /** Same answer whatever the address; a mail only for an existing, unverified account. */
  async resendVerification(email: string): Promise<void> {
    const user = await this.deps.users.findByLogin(email.toLowerCase())
    if (user !== undefined && !user.emailVerified && user.email === email.toLowerCase()) await this.sendVerification(user)
  }

  /**
   * Same answer whether or not the account exists. The mail is sent without being awaited by
   * the caller's answer, so the time taken does not tell either.
   */
  async forgotPassword(email: string): Promise<void> {
    if (!(await this.deps.mail.enabled())) {
      throw new AppError(503, 'EMAIL_DISABLED', 'Email sending is disabled on this service.')
    }
    const user = await this.deps.users.findByLogin(email.toLowerCase())
    if (user === undefined || user.email !== email.toLowerCase()) return
    const token = await this.issue(user.id, 'reset_password', RESET_LIFETIME_MS)
    const link = `${(await this.pageUrl()) ?? this.deps.config.publicUrl}/reset-password?token=${token}`
    void this.deps.mail.sendBestEffort({
      to: user.email,
      ...passwordResetMail({ username: user.username, link, expiresInMinutes: RESET_LIFETIME_MS / 60_000 }),
    })
  }

  /** Single use; every reset token of the user dies with it; every session of the user too. */
  async resetPassword(token: string, newPassword: string, ip: string): Promise<void> {
    const { tokens, users, sessionsRepository, passwords, clock, digest, database, audit, mail } = this.deps
    const now = new Date(clock.now())
    const row = await tokens.findByDigest(digest(token), 'reset_password')
    if (row === undefined || row.usedAt !== null) throw invalidToken()
    if (row.expiresAt <= now) throw new AppError(400, 'RESET_LINK_EXPIRED', 'This reset link has expired; ask for a new one.')
    const passwordHash = await passwords.hash(newPassword)
    const user = await database.transaction(async (tx) => {
      // Every reset token of the user dies with the one used: resets of one user take turns.
      await users.with(tx).lockUser(row.userId)
      if (!(await tokens.with(tx).consume(row.id, now))) throw invalidToken()
      await tokens.with(tx).consumeAllFor(row.userId, 'reset_password', now)
      await sessionsRepository.with(tx).deleteForUser(row.userId)
      const updated = await users.with(tx).update(row.userId, { passwordHash, failedLogins: 0, failedLoginsSince: null, lockedUntil: null, updatedAt: now })
      if (updated === undefined) throw invalidToken()
      await audit.record('user.password_reset', { actorId: updated.id, ip, target: updated.id }, tx)
      return updated
    })
    await mail.sendBestEffort({ to: user.email, ...passwordChangedMail({ username: user.username }) })
  }

  private async issue(userId: string, purpose: EmailTokenPurpose, lifetimeMs: number): Promise<string> {
    const token = randomToken()
    const now = this.deps.clock.now()
    await this.deps.tokens.insert({
      id: newId(), userId, purpose, digest: this.deps.digest(token),
      expiresAt: new Date(now + lifetimeMs), usedAt: null, createdAt: new Date(now),
    })
    return token
  }

  private async pageUrl(): Promise<string | null> {
    const pageUrl = (await this.deps.settings.get('global.page_url')).replace(/\/+$/, '')
    return pageUrl === '' ? null : pageUrl
  }
}
