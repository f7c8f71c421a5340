import { createHash } from 'node:crypto'

/**
 * A satellite public key's fingerprint: `sha256:` and the base64url (no padding) of the SHA-256
 * of the raw 32-byte key. Short enough to compare by eye, and what a member's own value records
 * as the key it was set for; null when the satellite has no key.
 */
export function keyFingerprint(publicKey: string | null): string | null {
  if (publicKey === null) return null
  return `sha256:${createHash('sha256').update(Buffer.from(publicKey, 'base64url')).digest('base64url')}`
}
