import semver from 'semver'

/**
 * Semantic versions (semver 2.0) for the catalogue: parsing and validation by the `semver`
 * library, strict (no leading `v` or `=`, no surrounding spaces), and a text key whose binary
 * order is semver precedence, so that the database can sort and paginate versions itself.
 *
 * The key: each of major, minor and patch as its digit count then its digits (so 10 sorts after
 * 9); then `~` for a release, or `!` and the pre-release identifiers for a pre-release (`!` < `~`:
 * a pre-release sorts below its release). Identifiers are separated by a space, lower than any
 * identifier character, so a shorter list of equal identifiers sorts first; numeric identifiers
 * are `0` + digit count + digits and alphanumeric ones `1` + their text, so numbers sort below
 * words. Build metadata is left out: it does not take part in precedence.
 */

export interface ParsedVersion {
  key: string
  prerelease: boolean
}

export function parseVersion(text: string): ParsedVersion | null {
  if (text.length > 128 || !/^\d[0-9A-Za-z.+-]*$/.test(text)) return null
  const parsed = semver.parse(text)
  if (parsed === null || parsed.raw !== text) return null
  const core = [parsed.major, parsed.minor, parsed.patch].map((n) => numeric(String(n))).join('')
  if (parsed.prerelease.length === 0) return { key: `${core}~`, prerelease: false }
  const identifiers = parsed.prerelease.map((id) => (typeof id === 'number' || /^\d+$/.test(id) ? `0${numeric(String(id))}` : `1${id}`))
  return { key: `${core}!${identifiers.join(' ')}`, prerelease: true }
}

/** Digit count (three digits) then the digits: orders every integer a 128-character version can hold. */
const numeric = (digits: string): string => `${String(digits.length).padStart(3, '0')}${digits}`
