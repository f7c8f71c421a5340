/** The abuse limits per IP and per account. Numbers are overridable (BuildOptions.limits) so tests can lower them. */
export interface RateLimit {
  max: number
  windowMs: number
}

export interface AbuseLimits {
  loginOrRegister: RateLimit
  forgotPassword: RateLimit
  token: RateLimit
  satelliteRegistration: RateLimit
  /** RFC 7591 dynamic client registration. */
  clientRegistration: RateLimit
  /** GET /api/oauth2/auth: anonymous, and each call stores a pending authorization request. */
  authorize: RateLimit
  /** Uncached Client ID Metadata Document fetches one IP may cause (each one is an outbound request). */
  clientDocumentFetch: RateLimit
  /** Uncached Client ID Metadata Document fetches of the whole instance, whatever the IPs. */
  clientDocumentFetchGlobal: RateLimit
  /** PUT /api/auth/email/change-password: each call may verify a password (a guess with a stolen session). */
  passwordChange: RateLimit
  /** Per account: failures within the window that lock the account, and for how long. */
  lockout: { maxFailures: number; windowMs: number; lockMs: number }
}

const MINUTE = 60_000

export const DEFAULT_LIMITS: AbuseLimits = {
  loginOrRegister: { max: 20, windowMs: MINUTE },
  forgotPassword: { max: 5, windowMs: 15 * MINUTE },
  token: { max: 60, windowMs: MINUTE },
  satelliteRegistration: { max: 10, windowMs: MINUTE },
  clientRegistration: { max: 10, windowMs: 60 * MINUTE },
  authorize: { max: 60, windowMs: MINUTE },
  clientDocumentFetch: { max: 10, windowMs: MINUTE },
  clientDocumentFetchGlobal: { max: 100, windowMs: MINUTE },
  passwordChange: { max: 20, windowMs: MINUTE },
  lockout: { maxFailures: 10, windowMs: 15 * MINUTE, lockMs: 15 * MINUTE },
}
