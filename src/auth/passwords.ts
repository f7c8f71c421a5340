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

/**
 * At most this many hashes at once (each holds 19 MiB while it runs), whatever the size of the
 * thread pool: at most 76 MiB for a login flood. The rest wait in order.
 *
 * Memory after a flood is bounded by the thread pool, not by this limit: glibc gives each thread
 * that ran a hash its own arena, which keeps the freed 19 MiB for the next one. `npm start`
 * therefore runs libuv's pool with two threads (UV_THREADPOOL_SIZE=2, one per core of a small
 * machine), so at most two such buffers stay resident (measured: about 40 MB above idle after a
 * flood, instead of 90 MB with the default four threads). Forcing every hash onto fresh mapped
 * pages instead (MALLOC_MMAP_THRESHOLD_) bounded memory too but cost 30–40 % of login throughput
 * in page faults.
 */
const CONCURRENT_HASHES = 4

/** Runs `work` once fewer than `limit` others run. */
function limiter(limit: number) {
  let running = 0
  const waiting: Array<() => void> = []
  return async <T>(work: () => Promise<T>): Promise<T> => {
    if (running >= limit) await new Promise<void>((resolve) => waiting.push(resolve))
    running++
    try {
      return await work()
    } finally {
      running--
      waiting.shift()?.()
    }
  }
}

export function createPasswords(): Passwords {
  let dummy: Promise<string> | null = null
  const limited = limiter(CONCURRENT_HASHES)
  const verify = async (hash: string, password: string) => {
    try {
      return await limited(() => argon2.verify(hash, password))
    } catch {
      return false
    }
  }
  return {
    hash: (password) => limited(() => argon2.hash(password, HASH_OPTIONS)),
    verify,
    async verifyDummy(password) {
      dummy ??= argon2.hash('not-a-real-password', HASH_OPTIONS)
      await verify(await dummy, password)
      return false
    },
  }
}
