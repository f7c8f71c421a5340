import { createHash } from 'node:crypto'

/** RFC 7636 §4.1/§4.2: 43–128 unreserved characters (a verifier, and an S256 challenge). */
const PKCE_VALUE = /^[A-Za-z0-9\-._~]{43,128}$/

export const isPkceValue = (value: string): boolean => PKCE_VALUE.test(value)

/** RFC 7636 §4.6, S256 only. */
export const matchesChallenge = (verifier: string, challenge: string): boolean =>
  createHash('sha256').update(verifier).digest('base64url') === challenge
