import type { TwoFactorRepository } from '../../db/repositories/two-factor.js'
import type { Digester } from '../../lib/tokens.js'
import { canonicalRecoveryCode } from './recovery-codes.js'
import type { TotpSecretBox } from './sealed-secret.js'
import { matchingStep, TOTP_CODE } from './totp.js'

/** What a person presents as the second factor. */
export type Proof = { kind: 'totp'; code: string } | { kind: 'recovery'; code: string }

/** A proof that passed the checks needing no database; spending it is what makes it count. */
export type CheckedProof = { kind: 'totp'; step: number } | { kind: 'recovery'; digest: string }

/** A field that may hold either: six digits (spaces allowed) are a TOTP code, anything else a recovery code. */
export function proofOf(code: string): Proof {
  const digits = code.replace(/\s/g, '')
  return TOTP_CODE.test(digits) ? { kind: 'totp', code: digits } : { kind: 'recovery', code }
}

/** How a proof is named in audit events (never the code itself). */
export const methodOf = (proof: Proof | CheckedProof): 'totp' | 'recovery_code' => (proof.kind === 'totp' ? 'totp' : 'recovery_code')

/**
 * Checks and spends second factors. A TOTP code is checked against the secret here, and spent by
 * recording its time step (only a later step than the last one is accepted); a recovery code is
 * spent by deleting its digest. Spending is one conditional statement, so a code raced twice is
 * accepted once.
 */
export class Proofs {
  constructor(private readonly deps: { repository: TwoFactorRepository; box: TotpSecretBox; digest: Digester }) {}

  /** The user's TOTP secret in base32, or null when there is none or it does not open (sealed under another ENCRYPTION_SECRET). */
  async secretOf(userId: string): Promise<{ secret: string; sealed: string } | null> {
    const row = await this.deps.repository.findSecret(userId)
    if (row === undefined) return null
    try {
      return { secret: this.deps.box.open(userId, row.secretSealed), sealed: row.secretSealed }
    } catch {
      return null
    }
  }

  /** Null when the proof is certainly wrong (a code of no step near `now`, text that is no recovery code). */
  async check(userId: string, proof: Proof, now: number): Promise<CheckedProof | null> {
    if (proof.kind === 'recovery') {
      const canonical = canonicalRecoveryCode(proof.code)
      return canonical === null ? null : { kind: 'recovery', digest: this.recoveryDigest(canonical) }
    }
    const found = await this.secretOf(userId)
    const step = found === null ? null : matchingStep(found.secret, proof.code, now)
    return step === null ? null : { kind: 'totp', step }
  }

  /** Spends a checked proof, inside the caller's transaction; false when it was used already (or is no code of this user). */
  spend(repository: TwoFactorRepository, userId: string, proof: CheckedProof, now: Date): Promise<boolean> {
    return proof.kind === 'totp' ? repository.useStep(userId, proof.step, now) : repository.useRecoveryCode(userId, proof.digest)
  }

  /** What is stored of a recovery code (given in canonical form). */
  recoveryDigest(canonical: string): string {
    return this.deps.digest(`recovery-code:${canonical}`)
  }
}
