/**
 * Rules for setting values beyond their type and bounds. Each answers why a value is refused (a
 * sentence fit for the client, after the key), or null when it is acceptable.
 */

/** C0 and C1 controls, DEL, and any Unicode whitespace: a browser or mail client may drop or split on them. */
const CONTROL_OR_SPACE = /[\u0000-\u001f\u007f-\u009f\s]/u

/**
 * Empty, or an absolute http(s) base URL (RFC 3986 §4.3) that links are appended to: no other
 * scheme (`javascript:` and `data:` would run in a reader's browser), no credentials (RFC 3986
 * §3.2.1 deprecates them; they mislead readers about the host), no query or fragment (a path is
 * appended), no backslash (parsers disagree on it), and no control characters or whitespace.
 */
export function baseUrlProblem(value: string): string | null {
  if (value === '') return null
  if (CONTROL_OR_SPACE.test(value)) return 'must not contain whitespace or control characters'
  if (!/^https?:\/\//i.test(value)) return 'must be empty or an absolute http:// or https:// URL'
  if (value.includes('\\')) return 'must not contain a backslash'
  let url: URL
  try {
    url = new URL(value)
  } catch {
    return 'must be a valid URL'
  }
  if (url.hostname === '') return 'must name a host'
  if (url.username !== '' || url.password !== '') return 'must not contain credentials'
  if (value.includes('?') || value.includes('#')) return 'must not have a query or a fragment'
  return null
}

/**
 * An OAuth client id or secret as RFC 6749 (Appendix A.1, A.2) defines them: visible ASCII and
 * spaces only (VSCHAR, %x20-7E). The provider client refuses anything else when it builds the
 * sign-in redirect, and the Basic authorization header could not carry it.
 */
export function clientCredentialProblem(value: string): string | null {
  return /^[\x20-\x7e]*$/.test(value) ? null : 'must hold only visible ASCII characters and spaces (RFC 6749, Appendix A)'
}

/**
 * An OpenID Connect issuer identifier (OpenID Connect Discovery 1.0 §2, §3): empty, or an absolute
 * http(s) URL with no query, fragment or credentials, whitespace or control characters. Whether
 * plain http and the address it resolves to are allowed is the outbound rules' check, at write time.
 */
export function issuerUrlProblem(value: string): string | null {
  if (value === '') return null
  if (CONTROL_OR_SPACE.test(value)) return 'must not contain whitespace or control characters'
  if (!/^https?:\/\//i.test(value)) return 'must be empty or an absolute https:// URL'
  let url: URL
  try {
    url = new URL(value)
  } catch {
    return 'must be a valid URL'
  }
  if (url.hostname === '') return 'must name a host'
  if (url.username !== '' || url.password !== '') return 'must not contain credentials'
  if (value.includes('?') || value.includes('#')) return 'must not have a query or a fragment'
  return null
}

/** A label shown on a page: one to 60 visible characters, no control characters. */
export function displayNameProblem(value: string): string | null {
  if (value.trim() === '') return 'must not be empty'
  return /[\u0000-\u001f\u007f-\u009f]/u.test(value) ? 'must not contain control characters' : null
}

/** RFC 6749 §3.3 scope tokens separated by single spaces, one of them `openid` (OpenID Connect Core §3.1.2.1). */
export function oidcScopeProblem(value: string): string | null {
  const tokens = value.split(' ')
  if (tokens.some((token) => !/^[\x21\x23-\x5b\x5d-\x7e]+$/.test(token))) return 'must be scope tokens separated by single spaces'
  return tokens.includes('openid') ? null : 'must include openid'
}

/** A JWT claim name as issuers spell them. */
export function oidcClaimNameProblem(value: string): string | null {
  return /^[A-Za-z0-9_.:-]{1,64}$/.test(value) ? null : 'must be a claim name (letters, digits, _ . : -)'
}
