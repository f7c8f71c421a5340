import { envNameProblem, identifierProblem, runtimeArgsProblem, versionProblem } from './runtime-rules.js'

/**
 * The runtime rules (runtime-rules.ts) applied to a whole package, in either of the two shapes a
 * package is stored in: the catalogue's own (`registry_type`, `runtime_args` as argv words,
 * `environment_variables`) and the MCP Registry's `server.json` (`registryType`,
 * `runtimeArguments` as argument objects, `environmentVariables`). Each problem names the member
 * at fault by its path in that shape (`packages[0].version`, `packages[1].runtimeArguments[0]`).
 *
 * `packageArguments` are not looked at: they go to the package itself, after the runner's `--`,
 * and what a package does with its own arguments is the package's business.
 */

export interface RuleProblem {
  field: string
  message: string
}

export type Visibility = 'global' | 'team'

type Json = Record<string, unknown>
const isObject = (value: unknown): value is Json => value !== null && typeof value === 'object' && !Array.isArray(value)
const objects = (value: unknown): Json[] => (Array.isArray(value) ? value.filter(isObject) : [])

/** The checks both shapes share: identifier, version and environment names. */
function common(registryType: string, item: Json, at: string, envMember: string, problems: RuleProblem[]): void {
  if (typeof item.identifier === 'string') {
    const problem = identifierProblem(registryType, item.identifier)
    if (problem !== null) problems.push({ field: `${at}.identifier`, message: problem })
  }
  if (typeof item.version === 'string') {
    const problem = versionProblem(registryType, item.version)
    if (problem !== null) problems.push({ field: `${at}.version`, message: problem })
  }
  objects(item[envMember]).forEach((variable, index) => {
    if (typeof variable.name !== 'string') return
    const problem = envNameProblem(variable.name)
    if (problem !== null) problems.push({ field: `${at}.${envMember}[${index}].name`, message: problem })
  })
}

/** A package in the catalogue's shape (a server's or a hand-made version's `packages[i]`). */
export function cataloguePackageProblems(item: Json, at: string, visibility: Visibility): RuleProblem[] {
  const registryType = typeof item.registry_type === 'string' ? item.registry_type : ''
  const problems: RuleProblem[] = []
  common(registryType, item, at, 'environment_variables', problems)
  const words = Array.isArray(item.runtime_args) ? item.runtime_args.map(String) : []
  const refused = runtimeArgsProblem(registryType, words, visibility)
  if (refused !== null) problems.push({ field: `${at}.runtime_args[${refused.index}]`, message: refused.message })
  return problems
}

/**
 * The argv words of server.json runtime arguments, with the argument each came from. A runtime
 * argument must be fixed by the entry: one without a `value` would be an input, and a word an
 * installer types before the package is a word the runner reads as an option or as the package.
 */
function documentWords(argumentsList: Json[], at: string, problems: RuleProblem[]): Array<{ word: string; argument: number }> {
  const words: Array<{ word: string; argument: number }> = []
  argumentsList.forEach((argument, index) => {
    const value = typeof argument.value === 'string' ? argument.value : undefined
    if (value === undefined) {
      problems.push({ field: `${at}.runtimeArguments[${index}]`, message: 'a runtime argument must have a fixed value: runner options are not set by whoever installs the server' })
      return
    }
    if (argument.type === 'named') words.push({ word: String(argument.name), argument: index })
    words.push({ word: value, argument: index })
  })
  return words
}

/** A package in server.json's shape (`packages[i]` of a stored or imported document). */
export function documentPackageProblems(item: Json, at: string, visibility: Visibility): RuleProblem[] {
  const registryType = typeof item.registryType === 'string' ? item.registryType : ''
  const problems: RuleProblem[] = []
  common(registryType, item, at, 'environmentVariables', problems)
  const runtimeArguments = objects(item.runtimeArguments)
  if (visibility === 'team' && runtimeArguments.length > 0) {
    problems.push({ field: `${at}.runtimeArguments`, message: "a team's server may not give runtime arguments (options of the runner, npx, uvx or docker)" })
    return problems
  }
  const words = documentWords(runtimeArguments, at, problems)
  const refused = runtimeArgsProblem(registryType, words.map((each) => each.word), visibility)
  if (refused !== null) problems.push({ field: `${at}.runtimeArguments[${words[refused.index]?.argument ?? 0}]`, message: refused.message })
  return problems
}

/** A package of either shape: the catalogue's when it has `registry_type`, else server.json's. */
export function packageProblems(item: unknown, at: string, visibility: Visibility): RuleProblem[] {
  if (!isObject(item)) return []
  return 'registry_type' in item ? cataloguePackageProblems(item, at, visibility) : documentPackageProblems(item, at, visibility)
}
