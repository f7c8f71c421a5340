import { Secret, TOTP } from 'otpauth'

/**
 * TOTP (RFC 6238) through the `otpauth` library: SHA-1, six digits, 30-second steps, the
 * parameters every authenticator app understands. A code is accepted one step either side of now
 * (RFC 6238 §5.2 allows for clock drift); which step it matched is what makes a code single use.
 */
const ALGORITHM = 'SHA1'
const DIGITS = 6
const PERIOD_S = 30
const WINDOW = 1

/** A six-digit code, as typed (spaces are dropped before). */
export const TOTP_CODE = /^[0-9]{6}$/

function totp(secretBase32: string, issuer = '', label = ''): TOTP {
  return new TOTP({ issuer, label, algorithm: ALGORITHM, digits: DIGITS, period: PERIOD_S, secret: Secret.fromBase32(secretBase32) })
}

/** A new secret of 160 bits (RFC 4226 §4 recommends them), in base32 as authenticator apps take it. */
export function newTotpSecret(): string {
  return new Secret({ size: 20 }).base32
}

/** The `otpauth://totp/...` URI an authenticator app reads from the QR code. */
export function otpauthUri(secretBase32: string, issuer: string, label: string): string {
  return totp(secretBase32, issuer, label).toString()
}

/** The time step `code` belongs to, within one step of `now`; null when it matches none. */
export function matchingStep(secretBase32: string, code: string, now: number): number | null {
  if (!TOTP_CODE.test(code)) return null
  const generator = totp(secretBase32)
  const delta = generator.validate({ token: code, timestamp: now, window: WINDOW })
  return delta === null ? null : generator.counter({ timestamp: now }) + delta
}
