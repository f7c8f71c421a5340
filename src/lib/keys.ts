import { hkdfSync } from 'node:crypto'

/**
 * Every key the service needs is derived from ENCRYPTION_SECRET with HKDF-SHA256 and a purpose
 * label, so one secret never serves two purposes directly.
 */
export type KeyPurpose = 'settings-encryption' | 'token-digest' | 'registration-jwt' | 'oauth-csrf' | 'form-csrf' | 'installation-values' | 'spec-hash'
  | 'satellite-key-change' | 'oauth-connections'
  | 'two-factor-secrets'
  | 'oidc-state'

export function deriveKey(secret: string, purpose: KeyPurpose): Buffer {
  return Buffer.from(hkdfSync('sha256', secret, 'service-backend', `${purpose}:v1`, 32))
}
