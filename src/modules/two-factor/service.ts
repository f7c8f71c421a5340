import type { Passwords } from '../../auth/passwords.js'
import { newId } from '../../db/ids.js'
import type { TwoFactorRepository } from '../../db/repositories/two-factor.js'
import type { UserRow, UsersRepository } from '../../db/repositories/users.js'
import type { Database } from '../../db/types.js'
import type { Clock } from '../../lib/clock.js'
import type { AuditLog } from '../audit/service.js'
import { alreadyEnabled, invalidCode, lockedOut, notEnabled, setupRequired, wrongPassword } from './errors.js'
import type { Failures, FailureContext } from './failures.js'
import { removeTwoFactor } from './removal.js'
import { methodOf, proofOf, type Proofs } from './proofs.js'
import { canonicalRecoveryCode, newRecoveryCode, RECOVERY_CODE_COUNT } from './recovery-codes.js'
import type { TotpSecretBox } from './sealed-secret.js'
import { newTotpSecret, otpauthUri } from './totp.js'

/** Built once at boot (index.ts). */
export interface EnrolmentDeps {
  database: Database
  users: UsersRepository
  repository: TwoFactorRepository
  passwords: Passwords
  audit: AuditLog
  clock: Clock
  box: TotpSecretBox
  proofs: Proofs
  failures: Failures
  /** Shown by authenticator apps above the account name: the product and this deployment's host. */
  issuer: string
}

/** A pending setup: the secret (base32) and the URI an authenticator app reads from a QR code. */
export interface PendingSetup {
  secret: string
  otpauthUri: string
}

/**
 * A user's own two-factor settings: set up (a pending secret), enable (confirm a code, get the
 * recovery codes), disable (password and a code). No Fastify types here.
 */
export class TwoFactorEnrolment {
  constructor(private readonly deps: EnrolmentDeps) {}

  /** Whether two-factor is on, and how many recovery codes are left. */
  async status(user: UserRow): Promise<{ enabled: boolean; recoveryCodesLeft: number }> {
    if (user.twoFactorEnabledAt === null) return { enabled: false, recoveryCodesLeft: 0 }
    return { enabled: true, recoveryCodesLeft: await this.deps.repository.countRecoveryCodes(user.id) }
  }

  /** A new pending secret, replacing an earlier pending one; 409 while two-factor is on. */
  async setup(user: UserRow): Promise<PendingSetup> {
    const { repository, box, clock } = this.deps
    if (user.twoFactorEnabledAt !== null) throw alreadyEnabled()
    const secret = newTotpSecret()
    await repository.putSecret(user.id, box.seal(user.id, secret), new Date(clock.now()))
    return { secret, otpauthUri: this.uri(user, secret) }
  }

  /** The pending setup again, for its owner's setup page after a wrong confirmation code; null when there is none. */
  async pending(user: UserRow): Promise<PendingSetup | null> {
    if (user.twoFactorEnabledAt !== null) return null
    const found = await this.deps.proofs.secretOf(user.id)
    return found === null ? null : { secret: found.secret, otpauthUri: this.uri(user, found.secret) }
  }

  /**
   * Confirms the pending secret with a code from it and switches two-factor on; answers the new
   * recovery codes, which are kept only as digests. The code's step counts as used.
   */
  async enable(user: UserRow, code: string, context: FailureContext): Promise<string[]> {
    const { database, users, repository, proofs, audit, clock } = this.deps
    if (user.twoFactorEnabledAt !== null) throw alreadyEnabled()
    const found = await proofs.secretOf(user.id)
    if (found === null) throw setupRequired()
    const now = clock.now()
    const checked = await proofs.check(user.id, proofOf(code), now)
    if (checked === null || checked.kind !== 'totp') throw invalidCode(400)
    const codes = Array.from({ length: RECOVERY_CODE_COUNT }, newRecoveryCode)
    const at = new Date(now)
    await database.transaction(async (tx) => {
      // Serializes this user's enables: two confirmations at once switch it on once.
      await users.with(tx).lockUser(user.id)
      const current = await users.with(tx).findById(user.id)
      if (current === undefined || current.twoFactorEnabledAt !== null) throw alreadyEnabled()
      // A setup started meanwhile replaced the secret this code was checked against.
      if ((await repository.with(tx).findSecret(user.id))?.secretSealed !== found.sealed) throw setupRequired()
      if (!(await proofs.spend(repository.with(tx), user.id, checked, at))) throw invalidCode(400)
      await repository.with(tx).replaceRecoveryCodes(user.id, codes.map((each) => ({
        id: newId(), userId: user.id, digest: proofs.recoveryDigest(canonicalRecoveryCode(each)!), createdAt: at,
      })))
      await users.with(tx).update(user.id, { twoFactorEnabledAt: at, updatedAt: at })
      await audit.record('user.two_factor_enabled', { actorId: user.id, ip: context.ip, target: user.id, details: { recovery_codes: codes.length } }, tx)
    })
    return codes
  }

  /**
   * Switches two-factor off with the password and a code (a TOTP code or a recovery code). An
   * account without a password (it signs in through an identity provider only) proves itself with
   * the code alone. Wrong passwords and codes count against the account like failed logins.
   */
  async disable(user: UserRow, input: { password?: string; code: string }, context: FailureContext): Promise<void> {
    const { passwords, proofs, failures, clock } = this.deps
    const now = new Date(clock.now())
    if (user.lockedUntil !== null && user.lockedUntil > now) throw lockedOut(user.lockedUntil, now)
    if (user.twoFactorEnabledAt === null) throw notEnabled()
    if (user.passwordHash !== null && !(input.password !== undefined && (await passwords.verify(user.passwordHash, input.password)))) {
      throw await failures.count(user, now, context, 'user.login_failed', { reason: 'wrong_password', method: 'disable_two_factor' }, wrongPassword())
    }
    const proof = proofOf(input.code)
    const checked = await proofs.check(user.id, proof, now.getTime())
    const refused = () => failures.count(user, now, context, 'user.two_factor_failed', { reason: 'wrong_code', method: methodOf(proof), during: 'disable' }, invalidCode(400))
    if (checked === null) throw await refused()
    const outcome = await removeTwoFactor(this.deps, user.id, { actorId: user.id, ip: context.ip, method: methodOf(checked) }, (repository) => proofs.spend(repository, user.id, checked, now))
    if (outcome === 'not_enabled') throw notEnabled()
    if (outcome === 'refused') throw await refused()
  }

  /**
   * Switches a user's two-factor off without their codes: a global admin for another user who lost
   * their authenticator and recovery codes, or the command-line tool. False when it was not on.
   */
  async reset(userId: string, by: { actorId: string | null; ip?: string; method: 'admin' | 'cli' }): Promise<boolean> {
    return (await removeTwoFactor(this.deps, userId, { ...by, ip: by.ip ?? null })) === 'done'
  }

  private uri(user: UserRow, secret: string): string {
    return otpauthUri(secret, this.deps.issuer, user.email)
  }
}
