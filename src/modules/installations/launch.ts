import type { InstallationInput, InstallationTarget } from '../../formats/installation-inputs.js'
import type { Visibility } from '../../formats/package-rules.js'
import { entriesOf, packagesOf, placeholdersOf, remotesOf, type Entries, type InputSource } from './inputs.js'
import type { LaunchArg, PackageLaunch } from '../../formats/desired-state.js'
import type { ResolvedLaunch, SecretPlacement } from './launch-shape.js'
import { launchRuleProblem } from './target-rules.js'

/**
 * What a satellite runs for one instance: the target of the version with every input's value put
 * in its place. Pure: the caller gives the values (the team's and, for a member's own instance,
 * theirs), already decrypted; this decides where each goes. Values of secret inputs never land in
 * the launch itself: an entry whose value holds a secret (a secret variable, or a template with a
 * secret part) is listed in `secrets` under its key, whole, and the launch keeps its place:
 * an argument's slot holds `{secret: key}`, a URL keeps its `{name}` segment.
 */

type Json = Record<string, unknown>
const isObject = (value: unknown): value is Json => value !== null && typeof value === 'object' && !Array.isArray(value)
const textOf = (value: unknown): string | undefined => (typeof value === 'string' ? value : undefined)

export type { ResolvedLaunch, SecretPlacement } from './launch-shape.js'

/**
 * A launch, or why there is none: the target is no longer in the version (its entry changed), or
 * what it would run breaks the runtime rules (target-rules.ts). `reason` is shown to the team;
 * it never holds a value.
 */
export type Resolution = ({ ok: true } & ResolvedLaunch) | { ok: false; reason: string }

/** The value of an input: the one set, else its default; undefined when neither. */
type ValueOf = (key: string) => string | undefined

/** One entry's value, and whether a secret went into it. */
interface Filled {
  value: string
  secret: boolean
}

/**
 * Builds the launch of a target from the values. `values` maps input keys to the values in force
 * (set ones); defaults are filled in here. An optional entry with neither value nor default is
 * left out (no empty environment variable, no argument without its value). `visibility` is the
 * server's: a team's own server may give no runner options.
 */
export function resolveLaunch(
  source: InputSource, target: InstallationTarget, transport: string, inputs: readonly InstallationInput[], values: ReadonlyMap<string, string>,
  visibility: Visibility,
): Resolution {
  const byKey = new Map(inputs.map((input) => [input.key, input]))
  const valueOf: ValueOf = (key) => values.get(key) ?? byKey.get(key)?.default
  const secretKey = (key: string): boolean => byKey.get(key)?.secret === true
  const found = entriesOf(source, target)
  if (found === null) return { ok: false, reason: `The version it runs has no ${target.kind}s[${target.index}] any more (its catalogue entry changed).` }
  const { entries } = found
  const secrets: SecretPlacement[] = []

  /** An entry (variable, header, argument) with its key: its own value, or its template filled in. */
  const fill = (entry: Json, key: string): Filled | undefined => {
    const template = textOf(entry.value)
    if (template === undefined) {
      const value = valueOf(key)
      return value === undefined ? undefined : { value, secret: secretKey(key) || entry.isSecret === true }
    }
    const variables = isObject(entry.variables) ? entry.variables : {}
    let secret = entry.isSecret === true
    let missing = false
    const value = template.replace(/\{([^\s{}]{1,128})\}/g, (whole, name: string) => {
      const variable = Object.hasOwn(variables, name) ? variables[name] : undefined
      if (!isObject(variable)) return whole
      const fixed = textOf(variable.value)
      if (fixed !== undefined) return fixed
      const part = valueOf(`${key}{${name}}`)
      if (part === undefined) {
        missing = true
        return ''
      }
      secret ||= secretKey(`${key}{${name}}`)
      return part
    })
    return missing ? undefined : { value, secret }
  }

  /** Name → value of environment variables or headers; secret ones go to `secrets`. */
  const named = (list: Json[], kind: 'env' | 'header'): Record<string, string> => {
    const out: Record<string, string> = {}
    for (const entry of list) {
      const name = textOf(entry.name)
      if (name === undefined) continue
      const filled = fill(entry, `${kind}:${name}`)
      if (filled === undefined) continue
      if (filled.secret) secrets.push({ target: `${kind}:${name}`, value: filled.value })
      else out[name] = filled.value
    }
    return out
  }

  /** argv of a list of arguments: a named one gives its name then its value, a positional one its value. */
  const argv = (list: Json[]): LaunchArg[] => {
    const out: LaunchArg[] = []
    for (const argument of list) {
      const isNamed = argument.type === 'named'
      const label = isNamed ? (textOf(argument.name) ?? '') : (textOf(argument.valueHint) ?? '')
      const key = `arg:${label}`
      const filled = fill(argument, key)
      if (filled === undefined) continue
      if (isNamed) out.push(label)
      if (filled.secret) {
        secrets.push({ target: key, value: filled.value })
        out.push({ secret: key })
      } else out.push(filled.value)
    }
    return out
  }

  /**
   * A URL's `{name}` segments: from the package's own inputs (a package transport), a fixed or
   * set URL variable, percent-encoded. A secret segment stays as written and goes to `secrets`.
   */
  const url = (template: string, packageValues: ReadonlyMap<string, string>): string => {
    let result = template
    for (const name of placeholdersOf(template)) {
      const declared = Object.hasOwn(entries.urlVariables, name) ? entries.urlVariables[name] : undefined
      const fixed = isObject(declared) ? textOf(declared.value) : undefined
      const value = fixed ?? packageValues.get(name) ?? valueOf(`urlvar:${name}`)
      if (value === undefined) continue
      if (fixed === undefined && secretKey(`urlvar:${name}`)) {
        secrets.push({ target: `urlvar:${name}`, value })
        continue
      }
      result = result.split(`{${name}}`).join(encodeURIComponent(value))
    }
    return result
  }

  if (target.kind === 'remote') {
    const item = remotesOf(source)[target.index] as Json
    return {
      ok: true,
      launch: { kind: 'remote', url: url(textOf(item.url) ?? '', new Map()), transport, headers: named(entries.headers, 'header') },
      secrets,
    }
  }

  const item = packagesOf(source)[target.index] as Json
  const catalogue = source.from === 'catalogue'
  const env = named(entries.environmentVariables, 'env')
  const runtimeArgs = catalogue ? stringsOf(item.runtime_args) : argv(entries.runtimeArguments)
  const packageArgs = argv(entries.packageArguments)
  const launch: PackageLaunch = {
    kind: 'package',
    registry_type: textOf(catalogue ? item.registry_type : item.registryType) ?? '',
    identifier: textOf(item.identifier) ?? '',
    version: textOf(item.version) ?? null,
    runtime_hint: catalogue ? null : (textOf(item.runtimeHint) ?? null),
    runtime_args: runtimeArgs,
    package_args: packageArgs,
    env,
    transport: { type: transport },
  }
  if (entries.url !== undefined) launch.transport.url = url(entries.url, packageValuesOf(entries, env, [...runtimeArgs, ...packageArgs], valueOf))
  const headers = named(entries.headers, 'header')
  if (Object.keys(headers).length > 0) launch.transport.headers = headers
  const refused = launchRuleProblem({ launch, secrets }, visibility)
  return refused === null ? { ok: true, launch, secrets } : { ok: false, reason: refused }
}

const stringsOf = (value: unknown): string[] => (Array.isArray(value) ? value.filter((item): item is string => typeof item === 'string') : [])

/**
 * The values a package transport's URL may name: its environment variables and its arguments by
 * name, by name without dashes, and by `valueHint` (as inputs.ts reads them). Secret values are
 * not put in a URL.
 */
function packageValuesOf(entries: Entries, env: Record<string, string>, _args: LaunchArg[], valueOf: ValueOf): Map<string, string> {
  const values = new Map<string, string>(Object.entries(env))
  for (const argument of [...entries.runtimeArguments, ...entries.packageArguments]) {
    const name = textOf(argument.name)
    const hint = textOf(argument.valueHint)
    const key = `arg:${argument.type === 'named' ? (name ?? '') : (hint ?? '')}`
    const value = textOf(argument.value) ?? valueOf(key)
    if (value === undefined) continue
    for (const label of [name, name?.replace(/^-+/, ''), hint]) if (label !== undefined && label !== '') values.set(label, value)
  }
  return values
}
