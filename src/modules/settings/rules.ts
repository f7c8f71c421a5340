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
