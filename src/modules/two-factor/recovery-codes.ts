import { randomInt } from 'node:crypto'

/**
 * Recovery codes: ten single-use codes of 60 random bits each, written `xxxx-xxxx-xxxx` in
 * Crockford's base32 (no i, l, o or u), so they are read and typed without confusion. Only their
 * HMAC digests are stored.
 */
const ALPHABET = '0123456789abcdefghjkmnpqrstvwxyz'
const GROUPS = 3
const GROUP_LENGTH = 4

/** How many codes one enabling gives. */
export const RECOVERY_CODE_COUNT = 10

/** A new random code, `xxxx-xxxx-xxxx`. */
export function newRecoveryCode(): string {
  const groups: string[] = []
  for (let g = 0; g < GROUPS; g++) {
    let group = ''
    for (let i = 0; i < GROUP_LENGTH; i++) group += ALPHABET[randomInt(ALPHABET.length)]
    groups.push(group)
  }
  return groups.join('-')
}

/**
 * The canonical form that is digested: lower case without separators, with the letters Crockford's
 * base32 reads as digits (i, l → 1; o → 0). Null for anything that cannot be a recovery code.
 */
export function canonicalRecoveryCode(typed: string): string | null {
  const canonical = typed.toLowerCase().replace(/[\s-]/g, '').replace(/[il]/g, '1').replace(/o/g, '0')
  if (canonical.length !== GROUPS * GROUP_LENGTH) return null
  for (const character of canonical) if (!ALPHABET.includes(character)) return null
  return canonical
}
