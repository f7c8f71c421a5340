import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto'

/** 256 random bits, URL-safe: sessions, OAuth tokens, reset and verification tokens. */
export function randomToken(): string {
  return randomBytes(32).toString('base64url')
}

/**
 * Random tokens are stored only as an HMAC-SHA256 digest (keyed from
 * ENCRYPTION_SECRET) under a unique index, so verifying one is a single indexed lookup.
 * Argon2 is for passwords only.
 */
export type Digester = (token: string) => string

export function createDigester(key: Buffer): Digester {
  return (token) => createHmac('sha256', key).update(token).digest('base64url')
}

/** Compares a presented secret with the expected one in constant time (for equal lengths). */
export function sameSecret(presented: string, expected: string): boolean {
  const left = Buffer.from(presented)
  const right = Buffer.from(expected)
  return left.length === right.length && timingSafeEqual(left, right)
}
