import type { Clock } from '../../src/lib/clock.js'

export interface ManualClock extends Clock {
  advance(ms: number): void
}

/** A clock that moves only when told to. */
export function manualClock(start = Date.parse('2026-01-01T00:00:00Z')): ManualClock {
  let current = start
  return { now: () => current, advance: (ms) => void (current += ms) }
}
