import type { IssuerClaims } from './issuer-client.js'

/** Who signed in at the issuer, as far as this service takes it. */
export interface OidcIdentity {
  issuer: string
  /** `sub`: unique and never reassigned within the issuer (OpenID Connect Core §2). */
  subject: string
  /** Lowercased; only an address the issuer vouches for. Null when it vouched for none. */
  email: string | null
  /** The base for a new account's username: `preferred_username` (an address's local part), else the address's local part. */
  usernameBase: string
  firstName: string | null
  lastName: string | null
}

/** Anything like an address (one @, something either side, no spaces); the users table holds at most 255 characters. */
const ADDRESS = /^[^\s@]{1,64}@[^\s@]{1,190}$/

/**
 * Whether the ID token already says what is needed (the address and its verification claim);
 * otherwise userinfo is asked.
 */
export function needsUserinfo(verifiedClaim: string) {
  return (claims: Record<string, unknown>): boolean => typeof claims.email !== 'string' || typeof claims[verifiedClaim] !== 'boolean'
}

/**
 * The identity behind verified claims. The address and its verification come as a pair from one
 * source — the ID token when it has both, else userinfo — and the address is taken only when the
 * verification claim (OpenID Connect Core §5.1 `email_verified`, or the one the operator named) is
 * the JSON value `true`: a string "true", a missing claim or an unverified address counts as none.
 */
export function identityFrom({ idToken, userinfo }: IssuerClaims, verifiedClaim: string): OidcIdentity {
  const id = idToken as Record<string, unknown>
  const info = (userinfo ?? {}) as Record<string, unknown>
  const source = needsUserinfo(verifiedClaim)(id) && userinfo !== null ? info : id
  const email = typeof source.email === 'string' && source[verifiedClaim] === true && ADDRESS.test(source.email) ? source.email.toLowerCase() : null
  const text = (name: string): string | null => {
    const value = typeof id[name] === 'string' ? id[name] : info[name]
    return typeof value === 'string' && value.trim() !== '' ? value.trim().slice(0, 100) : null
  }
  return {
    issuer: idToken.iss,
    subject: idToken.sub,
    email,
    // Entra ID and others put an address (the UPN) in preferred_username: its local part reads better.
    usernameBase: (text('preferred_username') ?? email ?? '').split('@')[0] ?? '',
    firstName: text('given_name'),
    lastName: text('family_name'),
  }
}
