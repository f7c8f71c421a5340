import { Type } from 'typebox'
import { Ok } from '../../http/envelope.js'

const closed = { additionalProperties: false } as const

/** Six digits from the authenticator app (spaces allowed, as apps show them). */
export const TotpCode = Type.String({ minLength: 6, maxLength: 12, pattern: '^[0-9 ]+$', description: 'The six-digit code the authenticator app shows now.' })

/** A recovery code as printed (`xxxx-xxxx-xxxx`); case, spaces and hyphens do not matter. */
export const RecoveryCode = Type.String({ minLength: 12, maxLength: 40, pattern: '^[0-9A-Za-z -]+$', description: 'One of the recovery codes given when two-factor was switched on (`xxxx-xxxx-xxxx`).' })

/** The setup's one answer that holds the secret. */
export const SetupAnswer = Ok(Type.Object({
  secret: Type.String({ description: 'The TOTP secret in base32 (160 bits), for typing into an authenticator app. Shown in this answer only.' }),
  otpauth_uri: Type.String({ description: 'The `otpauth://totp/…` URI (SHA-1, 6 digits, 30 s) an authenticator app reads from a QR code.' }),
}))

/** A code from the pending secret. */
export const EnableBody = Type.Object({ code: TotpCode }, closed)

/** Enabling's one answer that holds the recovery codes. */
export const RecoveryCodesAnswer = Ok(Type.Object({
  recovery_codes: Type.Array(Type.String(), { description: 'Ten single-use codes, each a way in when the authenticator is lost. Shown in this answer only; only their digests are kept.' }),
}))

/** The password (when the account has one) and a code or recovery code. */
export const DisableBody = Type.Object({
  password: Type.Optional(Type.String({ minLength: 1, maxLength: 128, description: 'The account\'s password; required unless the account has none (it signs in through an identity provider only).' })),
  code: Type.String({ minLength: 6, maxLength: 40, pattern: '^[0-9A-Za-z -]+$', description: 'A code from the authenticator app, or one of the recovery codes.' }),
}, closed)

/** The second step: one code of either kind. */
export const VerifyBody = Type.Object({
  code: Type.Optional(TotpCode),
  recovery_code: Type.Optional(RecoveryCode),
}, { ...closed, minProperties: 1, maxProperties: 1, description: 'Either `code` or `recovery_code`, not both.' })

/** The password step's answer for an account with two-factor on: no session yet, only the challenge cookie. */
export const TwoFactorRequired = Type.Object({
  two_factor_required: Type.Literal(true, { description: 'The password was right; send a code to POST /api/auth/2fa/verify to finish signing in.' }),
}, { additionalProperties: false })

/** The user an admin's reset acts on. */
export const UserIdParams = Type.Object({ id: Type.String({ maxLength: 100 }) }, closed)
