import { createHash } from 'node:crypto'

/**
 * What people compare to tell two satellite keys apart without the key itself: `sha256:` and the
 * base64url (no padding) of the SHA-256 of the raw 32-byte X25519 public key. It is also what a
 * member's own value records as the key it was set for.
 */
export function fingerprintOf(publicKey: string): string {
  return `sha256:${createHash('sha256').update(Buffer.from(publicKey, 'base64url')).digest('base64url')}`
}

/** The fingerprint of a satellite's key, or null while it has none. */
export function keyFingerprint(publicKey: string | null): string | null {
  return publicKey === null ? null : fingerprintOf(publicKey)
}
