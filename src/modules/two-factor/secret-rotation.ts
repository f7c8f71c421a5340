import type { TwoFactorRepository } from '../../db/repositories/two-factor.js'
import { totpSecretBox } from './sealed-secret.js'

/**
 * Moving the sealed TOTP secrets from one ENCRYPTION_SECRET to another, inside the rotation's
 * transaction, each still bound to its user. One that opens under neither secret is named among
 * the refused, and then nothing is written. (Recovery codes are HMAC digests: they cannot be moved
 * and stop working with the old secret; their owners sign in with the app and set two-factor up
 * again to get new ones.)
 */

export interface TwoFactorReport {
  /** Opened with the old secret, sealed again with the new one. */
  reencrypted: number
  /** Already sealed with the new secret. */
  current: number
}

function opens(open: () => string): string | null {
  try {
    return open()
  } catch {
    return null
  }
}

/** Seals every TOTP secret again under `to`; writes nothing and names the refused when any opens under neither secret. */
export async function resealTwoFactorSecrets(repository: TwoFactorRepository, { from, to }: { from: string; to: string }): Promise<{ report: TwoFactorReport; refused: string[] }> {
  const previous = totpSecretBox(from)
  const next = totpSecretBox(to)
  const report: TwoFactorReport = { reencrypted: 0, current: 0 }
  const refused: string[] = []
  const writes: Array<() => Promise<boolean>> = []
  for (const { userId, secretSealed } of await repository.sealedSecrets()) {
    const secret = opens(() => previous.open(userId, secretSealed))
    if (secret !== null) writes.push(() => repository.reseal(userId, next.seal(userId, secret), secretSealed))
    else if (opens(() => next.open(userId, secretSealed)) !== null) report.current++
    else refused.push(`two-factor secret of user ${userId}`)
  }
  if (refused.length > 0) return { report, refused }
  for (const write of writes) {
    // Set up again meanwhile: throwing rolls the whole rotation back.
    if (!(await write())) throw new Error('A two-factor secret changed while it was being re-encrypted; nothing was written')
    report.reencrypted++
  }
  return { report, refused }
}
