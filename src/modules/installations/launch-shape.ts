import type { Launch } from '../../formats/desired-state.js'

/**
 * The shape of what a satellite is asked to run for one instance (launch.ts builds it; the
 * runtime rules and the desired-state document read it). The launch itself is the document's
 * (formats/desired-state.ts); the secret values beside it are in the clear, to be sealed.
 */

/** A secret value and where it goes (`env:X`, `arg:k`, `header:Y`, `urlvar:n`). */
export interface SecretPlacement {
  target: string
  value: string
  /**
   * A value renewed while the instance runs (an OAuth access token): left out of spec_hash, so a
   * new one reaches the satellite without restarting anything.
   */
  rotating?: true
}

export interface ResolvedLaunch {
  launch: Launch
  secrets: SecretPlacement[]
}
