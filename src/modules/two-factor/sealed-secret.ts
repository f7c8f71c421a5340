import { deriveKey } from '../../lib/keys.js'
import { createSecretBox } from '../../lib/secret-box.js'

/**
 * TOTP secrets at rest: AES-256-GCM under a key derived from ENCRYPTION_SECRET for them alone,
 * with the user id as associated data, so a sealed secret copied to another user's row does not open.
 */
export interface TotpSecretBox {
  seal(userId: string, secretBase32: string): string
  open(userId: string, sealed: string): string
}

const associatedData = (userId: string) => `two-factor-secret\n${userId}`

/** The box of the TOTP secrets under one ENCRYPTION_SECRET. */
export function totpSecretBox(encryptionSecret: string): TotpSecretBox {
  const box = createSecretBox(deriveKey(encryptionSecret, 'two-factor-secrets'))
  return {
    seal: (userId, secret) => box.seal(secret, associatedData(userId)),
    open: (userId, sealed) => box.open(sealed, associatedData(userId)),
  }
}
