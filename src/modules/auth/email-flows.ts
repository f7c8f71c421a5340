import type { Passwords } from '../../auth/passwords.js'
import type { Config } from '../../config.js'
import { newId } from '../../db/ids.js'
import { signOutEverywhere } from '../../auth/sign-outs.js'
import { personalTokensRepository } from '../../db/repositories/personal-tokens.js'
import type { EmailTokenPurpose, EmailTokenRow, EmailTokensRepository } from '../../db/repositories/email-tokens.js'
import type { OAuthRepository } from '../../db/repositories/oauth.js'
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
const alreadyVerified = () => new AppError(400, 'INVALID_TOKEN', 'This link was already used: the email address is verified.')

/** The backend's own pages for the mail links, by the frontend page name they stand in for. */
const BACKEND_PAGES = {
  'verify-email': '/api/auth/email/verify',
  'reset-password': '/api/auth/email/reset-password',
} as const

export interface EmailFlowDeps {
  database: Database
  users: UsersRepository
  tokens: EmailTokensRepository
  sessionsRepository: SessionsRepository
  oauth: OAuthRepository
  passwords: Passwords
  settings: SettingsService
  mail: MailService
  audit: AuditLog
  digest: Digester
  clock: Clock
  config: Config
}

const mailDisabled = () => new AppError(503, 'EMAIL_DISABLED', 'Email sending is disabled on this service.')

/** Email verification and password reset. */
export class EmailFlows {
  constructor(private readonly deps: EmailFlowDeps) {}

  /** Verification is mandatory only while mail can actually be sent. */
  async verificationRequired(): Promise<boolean> {
    const { settings, mail } = this.deps
    return (await settings.get('global.require_email_verification')) && (await mail.enabled())
  }

  /** `requestId`: the request that caused the mail, named by the log line of a failed mail. */
  async sendVerification(user: UserRow, requestId?: string): Promise<void> {
    const link = await this.link('verify-email', await this.issue(user.id, 'verify_email', VERIFICATION_LIFETIME_MS))
    await this.deps.mail.sendBestEffort({ to: user.email, ...verificationMail({ username: user.username, link }) }, { mail: 'verification', requestId })
  }

  async verifyEmail(token: string): Promise<UserRow> {
    const { tokens, users, clock, digest, audit } = this.deps
    const now = new Date(clock.now())
    const row = await tokens.findByDigest(digest(token), 'verify_email')
    if (row === undefined) throw invalidToken()
    // A link opened twice (or by a mail scanner first) is the usual replay: say it is done.
    if (row.usedAt !== null) throw (await users.findById(row.userId))?.emailVerified ? alreadyVerified() : invalidToken()
    if (row.expiresAt <= now) throw new AppError(400, 'INVALID_TOKEN', 'This verification link has expired; ask for a new one.')
    return this.deps.database.transaction(async (tx) => {
      if (!(await tokens.with(tx).consume(row.id, now))) throw invalidToken()
      const user = await users.with(tx).update(row.userId, { emailVerified: true, updatedAt: now })
      if (user === undefined) throw invalidToken()
      await audit.record('user.email_verified', { actorId: user.id, target: user.id }, tx)
      return user
    })
  }

  /** Same answer whatever the address; a mail only for an existing, unverified account. */
  /**
   * Same answer whether or not an unverified account has this address; like a reset request, the
   * mail is not awaited, so the time taken does not tell either. While mail is off nothing could be
   * sent (and verification is not required), so the caller hears that instead of a false promise.
   */
  async resendVerification(email: string, requestId?: string): Promise<void> {
    if (!(await this.deps.mail.enabled())) throw mailDisabled()
    const user = await this.deps.users.findByLogin(email.toLowerCase())
    if (user === undefined || user.emailVerified || user.email !== email.toLowerCase()) return
    const link = await this.link('verify-email', await this.issue(user.id, 'verify_email', VERIFICATION_LIFETIME_MS))
    void this.deps.mail.sendBestEffort({ to: user.email, ...verificationMail({ username: user.username, link }) }, { mail: 'verification', requestId })
  }

  /**
   * Same answer whether or not the account exists. The mail is sent without being awaited by
   * the caller's answer, so the time taken does not tell either.
   */
  async forgotPassword(email: string, requestId?: string): Promise<void> {
    if (!(await this.deps.mail.enabled())) throw mailDisabled()
    const user = await this.deps.users.findByLogin(email.toLowerCase())
    if (user === undefined || user.email !== email.toLowerCase()) return
    const link = await this.link('reset-password', await this.issue(user.id, 'reset_password', RESET_LIFETIME_MS))
    void this.deps.mail.sendBestEffort({
      to: user.email,
      ...passwordResetMail({ username: user.username, link, expiresInMinutes: RESET_LIFETIME_MS / 60_000 }),
    }, { mail: 'password_reset', requestId })
  }

  /** Single use; every reset token of the user dies with it; every session and OAuth grant of the user too. */
  async resetPassword(token: string, newPassword: string, ip: string, requestId?: string): Promise<void> {
    const { tokens, users, sessionsRepository, oauth, passwords, clock, digest, database, audit, mail } = this.deps
    const now = new Date(clock.now())
    const row = await this.usableResetToken(token, now)
    const passwordHash = await passwords.hash(newPassword)
    const user = await database.transaction(async (tx) => {
      // Every reset token of the user dies with the one used: resets of one user take turns.
      await users.with(tx).lockUser(row.userId)
      if (!(await tokens.with(tx).consume(row.id, now))) throw invalidToken()
      await tokens.with(tx).consumeAllFor(row.userId, 'reset_password', now)
      const { oauthGrantsRevoked, personalTokensRevoked } = await signOutEverywhere({ sessions: sessionsRepository, oauth, personalTokens: personalTokensRepository(database) }, tx, row.userId, now)
      const updated = await users.with(tx).update(row.userId, { passwordHash, failedLogins: 0, failedLoginsSince: null, lockedUntil: null, updatedAt: now })
      if (updated === undefined) throw invalidToken()
      await audit.record('user.password_reset', { actorId: updated.id, ip, target: updated.id, details: { oauth_grants_revoked: oauthGrantsRevoked, personal_tokens_revoked: personalTokensRevoked } }, tx)
      return updated
    })
    await mail.sendBestEffort({ to: user.email, ...passwordChangedMail({ username: user.username }) }, { mail: 'password_changed', requestId })
  }

  /** Who a reset link is for and until when, without using it up (the reset page shows its form). */
  async checkResetToken(token: string): Promise<{ user: UserRow; expiresAt: Date }> {
    const row = await this.usableResetToken(token, new Date(this.deps.clock.now()))
    const user = await this.deps.users.findById(row.userId)
    if (user === undefined) throw invalidToken()
    return { user, expiresAt: row.expiresAt }
  }

  private async usableResetToken(token: string, now: Date): Promise<EmailTokenRow> {
    const row = await this.deps.tokens.findByDigest(this.deps.digest(token), 'reset_password')
    if (row === undefined) throw invalidToken()
    // Using one reset link uses up every other link of the user too.
    if (row.usedAt !== null) throw new AppError(400, 'INVALID_TOKEN', 'This reset link was already used; ask for a new one if you still need to change your password.')
    if (row.expiresAt <= now) throw new AppError(400, 'RESET_LINK_EXPIRED', 'This reset link has expired; ask for a new one.')
    return row
  }

  /**
   * Where a mail's link leads: the frontend's page when `global.page_url` is set, else the
   * backend's own, which shows a browser a page and answers an API client JSON at the same URL.
   */
  private async link(page: keyof typeof BACKEND_PAGES, token: string): Promise<string> {
    const pageUrl = await this.pageUrl()
    return pageUrl !== null ? `${pageUrl}/${page}?token=${token}` : `${this.deps.config.publicUrl}${BACKEND_PAGES[page]}?token=${token}`
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
