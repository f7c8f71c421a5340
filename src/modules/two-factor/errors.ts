import { AppError, errors } from '../../http/errors.js'

/** The refusals of the two-factor flows, in one place so their texts and codes stay alike. */

/** An admin without two-factor while `global.require_2fa_for_admins` is on. */
export const twoFactorRequired = () => new AppError(403, 'TWO_FACTOR_REQUIRED',
  'This service requires two-factor authentication for administrators: set it up (POST /api/auth/2fa/setup, or the page /api/auth/account/two-factor) before doing anything else.')

/** 401 in the sign-in step (the sign-in failed), 400 on the account's own routes (a field is wrong). */
export const invalidCode = (status: 400 | 401) => new AppError(status, 'INVALID_TWO_FACTOR_CODE', 'The code is wrong, was already used, or has expired.')

/** Setup or enable while it is on. */
export const alreadyEnabled = () => errors.conflict('TWO_FACTOR_ALREADY_ENABLED', 'Two-factor authentication is already on; switch it off first to set it up again.')

/** Disable (or an admin's reset) while it is off. */
export const notEnabled = () => errors.conflict('TWO_FACTOR_NOT_ENABLED', 'Two-factor authentication is not on for this account.')

/** Enable without a pending secret (or after another setup replaced it). */
export const setupRequired = () => errors.conflict('TWO_FACTOR_SETUP_REQUIRED', 'There is no pending two-factor setup: start one with POST /api/auth/2fa/setup, then confirm a code from it.')

/** The password given to switch two-factor off is wrong (counted like a failed login). */
export const wrongPassword = () => new AppError(400, 'INVALID_PASSWORD', 'The password is wrong.')

/** The challenge cookie is missing, unknown, expired, used, or spent its attempts: the password step is due again. */
export const challengeGone = () => errors.unauthorized('The sign-in step has expired or was already used: sign in again with your password.')

/** The login switch is off: the second step is a login too. */
export const loginDisabled = () => new AppError(403, 'LOGIN_DISABLED', 'Login is disabled on this service.')

/** The account's lockout (the one failed logins set), as the login answers it. */
export function lockedOut(until: Date, now: Date): AppError {
  const seconds = Math.max(1, Math.ceil((until.getTime() - now.getTime()) / 1000))
  return new AppError(429, 'RATE_LIMITED', 'Too many wrong passwords or codes: this account is locked for a while.').withHeaders({ 'retry-after': String(seconds) })
}
