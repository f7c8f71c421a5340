import * as oauth from 'oauth4webapi'
import { AppError } from '../../http/errors.js'
import { OutboundError } from '../../lib/outbound-fetch.js'

/**
 * The refusals of OpenID Connect sign-in. Their texts name what failed and why in the library's
 * own fixed words, or the issuer's error code and description (RFC 6749 §4.1.2.1); never a code,
 * token or claim.
 */

/** Off, or no issuer, client id or client secret. */
export const oidcDisabled = () => new AppError(403, 'OIDC_DISABLED', 'Sign-in with OpenID Connect is not enabled on this service.')

/** Not this browser's state, or not one the service still holds. */
export const stateMismatch = (why = 'start again') =>
  new AppError(400, 'OIDC_STATE_MISMATCH', `The sign-in request could not be matched (unknown, used or expired state); ${why}.`)

/** The issuer vouched for no address (OpenID Connect Core §5.1 `email_verified`, or the claim the operator named). */
export const emailNotAvailable = (claim: string) =>
  new AppError(400, 'OIDC_EMAIL_NOT_AVAILABLE', `The OpenID Connect issuer gave no verified email address (an email claim with ${claim} true); the scope must include email.`)

/** Re-linking would lock the other identity out of its account. */
export const alreadyLinked = () =>
  new AppError(409, 'OIDC_ALREADY_LINKED', 'This email belongs to an account linked to another identity at this OpenID Connect issuer.')

/** The sign-in failed at the issuer: 400 when this sign-in was refused, 502 when the issuer (or its configuration) is at fault. */
export const issuerFailure = (status: 400 | 502, reason: string) =>
  new AppError(status, 'OIDC_LOGIN_FAILED', `Sign-in with OpenID Connect failed: ${reason}.`)

/** The ID token failed a check (signature, iss, aud, exp, nonce …): never trusted, whatever it says. */
export const tokenInvalid = (error: unknown) => {
  const reason = error instanceof oauth.OperationProcessingError || error instanceof oauth.UnsupportedOperationError ? error.message : 'it could not be verified'
  return new AppError(400, 'OIDC_ID_TOKEN_INVALID', `The issuer's ID token was refused: ${reason}.`)
}

/** An outbound or protocol failure while talking to the issuer about `what`. */
export function issuerUnreachable(what: string, error: unknown): AppError {
  if (error instanceof AppError) return error
  const outbound = error instanceof OutboundError ? error : (error as { cause?: unknown } | undefined)?.cause
  if (outbound instanceof OutboundError) return issuerFailure(502, `${what} could not be read (${outbound.message})`)
  if (error instanceof oauth.OperationProcessingError && error.code === oauth.HTTP_REQUEST_FORBIDDEN) {
    return issuerFailure(502, `${what} is not an https URL (plain http only for hosts in OUTBOUND_ALLOWED_HOSTS)`)
  }
  if (error instanceof oauth.OperationProcessingError) return issuerFailure(502, `${what} gave an unusable answer (${error.message})`)
  if (error instanceof oauth.ResponseBodyError || error instanceof oauth.WWWAuthenticateChallengeError) return issuerFailure(502, `${what} answered ${error.status}`)
  return issuerFailure(502, `${what} could not be read`)
}
