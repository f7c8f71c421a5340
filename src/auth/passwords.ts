import argon2 from 'argon2'

/**
 * Argon2id for passwords (and only passwords: random tokens are digested, SPEC §3.1). Hashing
 * and verifying run on libuv's thread pool, so the event loop keeps serving meanwhile.
 */
export interface Passwords {
  hash(password: string): Promise<string>
  verify(hash: string, password: string): Promise<boolean>
  /** Spends the same time as a real verify, for logins naming no account (SPEC §3.5). */
  verifyDummy(password: string): Promise<false>
}

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
    hash: (password) => argon2.hash(password, { type: argon2.argon2id }),
    verify,
    async verifyDummy(password) {
      dummy ??= argon2.hash('not-a-real-password', { type: argon2.argon2id })
      await verify(await dummy, password)
      return false
    },
  }
}
