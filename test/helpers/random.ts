import { SeededRandom } from '../../src/cli/seed/random.js'

/** A seeded PRNG (the catalogue seed's), so that generated cases are the same on every run. */
export function prng(seed: number): () => number {
  const random = new SeededRandom(seed)
  return () => random.next()
}
