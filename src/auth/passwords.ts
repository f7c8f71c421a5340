import argon2 from 'argon2'

/**
 * Argon2id for passwords (and only passwords: random tokens are digested). Hashing
 * and verifying run on libuv's thread pool, so the event loop keeps serving meanwhile.
 */
export interface Passwords {
  hash(password: string): Promise<string>
  verify(hash: string, password: string): Promise<boolean>
  /** Spends the same time as a real verify, for logins naming no account. */
  verifyDummy(password: string): Promise<false>
}

/**
 * OWASP's recommended Argon2id configuration (19 MiB, 2 passes, 1 lane). The library default
 * (64 MiB × 4 lanes) made four concurrent logins hold 256 MiB, past the service's memory budget
 * (200 MB of RSS under load). Hashes carry their parameters, so older hashes still verify.
 */
const HASH_OPTIONS = { type: argon2.argon2id, memoryCost: 19_456, timeCost: 2, parallelism: 1 } as const

export function createPasswords(): Passwords {
  let dummy: Promise<string> | null = null
  const verify = async (hash: string, password: string) => {
    try {
      return await argon2.verify(hash, password)
    } catch {
      return false
    }
  }
  return {
    hash: (password) => argon2.hash(password, HASH_OPTIONS),
    verify,
    async verifyDummy(password) {
      dummy ??= argon2.hash('not-a-real-password', HASH_OPTIONS)
      await verify(await dummy, password)
      return false
    },
  }
}
