import { createHash } from 'node:crypto'

/**
 * What people compare to tell two satellite keys apart without the key itself: `sha256:` and the
 * base64url (no padding) of the SHA-256 of the raw 32-byte X25519 public key.
 */
export function fingerprintOf(publicKey: string): string {
  return `sha256:${createHash('sha256').update(Buffer.from(publicKey, 'base64url')).digest('base64url')}`
}
