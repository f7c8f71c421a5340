import { errors as jose, jwtVerify, SignJWT } from 'jose'
import type { Clock } from '../../lib/clock.js'

export type RegistrationScope = 'global' | 'team'

/** The claims of a registration token, exactly these. */
export interface RegistrationClaims {
  iss: string
  aud: typeof REGISTRATION_AUDIENCE
  jti: string
  scope: RegistrationScope
  team_id?: string
  created_by: string
  iat: number
  exp: number
}

/** Why a registration token was refused; the 401 names it in `details.reason`. */
export type RefusalReason =
  | 'malformed' | 'bad_signature' | 'algorithm_not_allowed' | 'wrong_issuer' | 'wrong_audience'
  | 'invalid_claims' | 'scope_mismatch' | 'expired' | 'unknown' | 'used' | 'revoked'

export const REGISTRATION_AUDIENCE = 'satellite-registration'
/** A JWT with these claims is a few hundred characters; anything far longer is not ours. */
const MAX_TOKEN_LENGTH = 4096

export type Verified = { ok: true; claims: RegistrationClaims } | { ok: false; reason: RefusalReason }

/**
 * Registration tokens are HS256 JWTs (RFC 7519) signed with a key derived from ENCRYPTION_SECRET
 * for this purpose only. The signature makes them unforgeable; the `jti` row in the database
 * makes them single-use and revocable.
 */
export class RegistrationJwt {
  constructor(private readonly key: Uint8Array, private readonly issuer: string, private readonly clock: Clock) {}

  sign(claims: Omit<RegistrationClaims, 'iss' | 'aud'>): Promise<string> {
    const { jti, iat, exp, ...rest } = claims
    return new SignJWT({ ...rest })
      .setProtectedHeader({ alg: 'HS256', typ: 'JWT' })
      .setIssuer(this.issuer)
      .setAudience(REGISTRATION_AUDIENCE)
      .setJti(jti)
      .setIssuedAt(iat)
      .setExpirationTime(exp)
      .sign(this.key)
  }

  async verify(token: string, presentedScope: RegistrationScope): Promise<Verified> {
    if (token.length > MAX_TOKEN_LENGTH) return { ok: false, reason: 'malformed' }
    let payload: Record<string, unknown>
    try {
      ;({ payload } = await jwtVerify(token, this.key, {
        algorithms: ['HS256'],
        issuer: this.issuer,
        audience: REGISTRATION_AUDIENCE,
        requiredClaims: ['jti', 'iat', 'exp'],
        currentDate: new Date(this.clock.now()),
      }))
    } catch (error) {
      return { ok: false, reason: refusalOf(error) }
    }
    const { jti, scope, team_id: teamId, created_by: createdBy } = payload
    if (typeof jti !== 'string' || typeof createdBy !== 'string' || (scope !== 'global' && scope !== 'team')) return { ok: false, reason: 'invalid_claims' }
    if ((scope === 'team') !== (typeof teamId === 'string')) return { ok: false, reason: 'invalid_claims' }
    // The prefix (service_satellite_global_/team_) must say what the signed claims say.
    if (scope !== presentedScope) return { ok: false, reason: 'scope_mismatch' }
    return { ok: true, claims: payload as unknown as RegistrationClaims }
  }
}

function refusalOf(error: unknown): RefusalReason {
  if (error instanceof jose.JWTExpired) return 'expired'
  if (error instanceof jose.JWTClaimValidationFailed) {
    if (error.claim === 'iss') return 'wrong_issuer'
    if (error.claim === 'aud') return 'wrong_audience'
    return 'invalid_claims'
  }
  if (error instanceof jose.JWSSignatureVerificationFailed) return 'bad_signature'
  if (error instanceof jose.JOSEAlgNotAllowed) return 'algorithm_not_allowed'
  // JWSInvalid, JWTInvalid, JOSENotSupported and anything else: not a token this service made.
  return 'malformed'
}
