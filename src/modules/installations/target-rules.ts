import { cataloguePackageProblems, documentPackageProblems, type Visibility } from '../../formats/package-rules.js'
import { envNameOfKey, envNameProblem, identifierProblem, runtimeArgsProblem, versionProblem } from '../../formats/runtime-rules.js'
import type { InstallationTarget } from '../../formats/installation-inputs.js'
import { packagesOf, type InputSource } from './inputs.js'
import type { ResolvedLaunch } from './launch-shape.js'

/**
 * The runtime rules (formats/runtime-rules.ts) where installations meet them. The catalogue
 * refuses entries that break them when they are written, but a stored entry may predate the rules,
 * and an imported document keeps the packages the catalogue refused (for its export): so a target
 * is checked again when an installation is derived from it, and every launch once more before it
 * goes into a satellite's document.
 */

type Json = Record<string, unknown>
const isObject = (value: unknown): value is Json => value !== null && typeof value === 'object' && !Array.isArray(value)

/** Why a target may not be installed (the first rule it breaks, named by its path in the source), or null. */
export function targetRuleProblem(source: InputSource, target: InstallationTarget, visibility: Visibility): string | null {
  if (target.kind !== 'package') return null
  const item = packagesOf(source)[target.index]
  if (!isObject(item)) return null
  const at = `packages[${target.index}]`
  const [first] = source.from === 'catalogue' ? cataloguePackageProblems(item, at, visibility) : documentPackageProblems(item, at, visibility)
  return first === undefined ? null : `${first.field} ${first.message}.`
}

/**
 * Why a resolved launch may not be sent to a satellite, or null: the same rules, on exactly what
 * the satellite would run — the environment it would set (secret variables included), the runner
 * options (never a slot filled from an installer's value), the version and the identifier.
 */
export function launchRuleProblem({ launch, secrets }: ResolvedLaunch, visibility: Visibility): string | null {
  if (launch.kind !== 'package') return null
  const named = (what: string, problem: string | null) => (problem === null ? null : `${what} ${problem}.`)
  for (const name of [...Object.keys(launch.env), ...secrets.map((secret) => envNameOfKey(secret.target)).filter((name) => name !== null)]) {
    const problem = named(`The environment variable ${name}:`, envNameProblem(name))
    if (problem !== null) return problem
  }
  const words = launch.runtime_args.map((arg) => (typeof arg === 'string' ? arg : null))
  if (words.includes(null)) return 'A runtime argument is filled from an installation value; runner options are fixed by the entry.'
  const refused = runtimeArgsProblem(launch.registry_type, words as string[], visibility)
  if (refused !== null) return `runtime_args[${refused.index}]: ${refused.message}.`
  return named('The package\'s identifier', identifierProblem(launch.registry_type, launch.identifier))
    ?? (launch.version === null ? null : named('The package\'s version', versionProblem(launch.registry_type, launch.version)))
}
