/**
 * The shape of what a satellite is asked to run for one instance (launch.ts builds it; the
 * runtime rules and the desired-state document read it).
 */

/** An argv entry: a word, or the slot of a secret value (from `secrets`). */
export type LaunchArg = string | { secret: string }

export interface PackageLaunch {
  kind: 'package'
  registry_type: string
  identifier: string
  version: string | null
  runtime_hint: string | null
  runtime_args: LaunchArg[]
  package_args: LaunchArg[]
  env: Record<string, string>
  transport: { type: string; url?: string; headers?: Record<string, string> }
}

export interface RemoteLaunch {
  kind: 'remote'
  url: string
  transport: string
  headers: Record<string, string>
}

export type Launch = PackageLaunch | RemoteLaunch

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
