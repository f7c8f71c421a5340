import type { SessionService } from '../../auth/sessions.js'
import { newId } from '../../db/ids.js'
import type { SessionsRepository } from '../../db/repositories/sessions.js'
import type { TwoFactorChallengeRow, TwoFactorRepository } from '../../db/repositories/two-factor.js'
import type { UserRow, UsersRepository } from '../../db/repositories/users.js'
import type { Database } from '../../db/types.js'
import type { Clock } from '../../lib/clock.js'
import { randomToken, type Digester } from '../../lib/tokens.js'
import type { AuditLog } from '../audit/service.js'
import type { SettingsService } from '../settings/service.js'
import { challengeGone, invalidCode, lockedOut, loginDisabled } from './errors.js'
import type { Failures, FailureContext } from './failures.js'
import { methodOf, type CheckedProof, type Proof, type Proofs } from './proofs.js'

/** How long the second step may wait after the password step. */
export const CHALLENGE_LIFETIME_MS = 5 * 60 * 1000

/** Wrong codes one challenge takes; then the password is asked again (the account's lockout counts on regardless). */
export const CHALLENGE_ATTEMPTS = 5

export interface SignInDeps {
  database: Database
  users: UsersRepository
  repository: TwoFactorRepository
  sessionRows: SessionsRepository
  sessions: SessionService
  settings: SettingsService
  audit: AuditLog
  clock: Clock
  digest: Digester
  proofs: Proofs
  failures: Failures
}

/** The second step's random value (for the challenge cookie) and when it ends. */
export interface Challenge {
  token: string
  expiresAt: Date
}

/** Thrown inside the transaction to roll it back (the challenge survives) when the proof was spent already. */
class Spent extends Error {}

/**
 * The second step of an email/password sign-in of an account with two-factor on. The password step
 * starts a challenge, kept in the database under the digest of a random value that only the
 * browser's cookie holds, so the second step may land on any instance; a right code ends it and
 * starts the session, as a login does.
 */
export class TwoFactorSignIn {
  constructor(private readonly deps: SignInDeps) {}

  /** After the password step: a new challenge for the user. */
  async challenge(user: UserRow): Promise<Challenge> {
    const token = randomToken()
    const now = this.deps.clock.now()
    const expiresAt = new Date(now + CHALLENGE_LIFETIME_MS)
    await this.deps.repository.insertChallenge({ id: newId(), digest: this.deps.digest(token), userId: user.id, attempts: 0, expiresAt, createdAt: new Date(now) })
    return { token, expiresAt }
  }

  /** Whether the token names a live challenge (the second step's page asks before showing its form). */
  async live(token: string | undefined): Promise<boolean> {
    return token !== undefined && token !== '' && (await this.deps.repository.findChallenge(this.deps.digest(token), new Date(this.deps.clock.now()))) !== undefined
  }

  /**
   * The second step: a right code (or recovery code) ends the challenge and starts a session. Of
   * two concurrent verifications of one challenge at most one starts a session; a TOTP code is
   * accepted once, whatever the challenge. Wrong codes count like failed logins.
   */
  async verify(token: string | undefined, proof: Proof, context: FailureContext): Promise<{ user: UserRow; session: Awaited<ReturnType<SessionService['create']>> }> {
    const { users, repository, settings, proofs, failures, clock } = this.deps
    if (!(await settings.get('global.enable_login'))) throw loginDisabled()
    const now = new Date(clock.now())
    const challenge = token === undefined || token === '' ? undefined : await repository.findChallenge(this.deps.digest(token), now)
    if (challenge === undefined) throw challengeGone()
    const user = await users.findById(challenge.userId)
    // Switched off (or reset by an admin) since the password step: the password is asked again.
    if (user === undefined || user.twoFactorEnabledAt === null) {
      await repository.deleteChallenge(challenge.id)
      throw challengeGone()
    }
    if (user.lockedUntil !== null && user.lockedUntil > now) throw lockedOut(user.lockedUntil, now)
    const checked = await proofs.check(user.id, proof, now.getTime())
    const refused = async (reason: string) => {
      const attempts = await repository.countAttempt(challenge.id)
      const spentAll = attempts >= CHALLENGE_ATTEMPTS
      if (spentAll) await repository.deleteChallenge(challenge.id)
      return failures.count(user, now, context, 'user.two_factor_failed', { reason, method: methodOf(proof), during: 'sign_in' }, spentAll ? challengeGone() : invalidCode(401))
    }
    if (checked === null) throw await refused('wrong_code')
    try {
      const session = await this.begin(user, challenge, checked, now, context)
      if (session === null) throw challengeGone()
      return { user, session }
    } catch (error) {
      if (error instanceof Spent) throw await refused(checked.kind === 'totp' ? 'reused_code' : 'wrong_code')
      throw error
    }
  }

  /** One transaction: the challenge ends, the proof is spent, the session starts. Null when another request took the challenge. */
  private async begin(user: UserRow, challenge: TwoFactorChallengeRow, checked: CheckedProof, now: Date, context: FailureContext) {
    const { database, users, repository, sessionRows, sessions, audit, proofs } = this.deps
    return database.transaction(async (tx) => {
      if (!(await repository.with(tx).consumeChallenge(challenge.id, now))) return null
      if (!(await proofs.spend(repository.with(tx), user.id, checked, now))) throw new Spent()
      // Only now, with both factors proven, is the failure count reset (the password alone does not).
      if (user.failedLogins > 0 || user.lockedUntil !== null) await users.with(tx).resetFailedLogins(user.id)
      const session = await sessions.create(user.id, sessionRows.with(tx))
      const method = methodOf(checked)
      if (checked.kind === 'recovery') {
        const left = await repository.with(tx).countRecoveryCodes(user.id)
        await audit.record('user.recovery_code_used', { actorId: user.id, ip: context.ip, target: user.id, details: { recovery_codes_left: left } }, tx)
      }
      await audit.record('user.login', { actorId: user.id, ip: context.ip, target: user.id, details: { method: 'email', two_factor: true, second_factor: method } }, tx)
      return session
    })
  }
}
