import type { ServerPackage, ServerRemote } from '../../formats/catalogue-entries.js'

/**
 * The inputs of an installation: every value a team may set when it runs one catalogue server at
 * one version, derived from what the version says about its packages and remotes. Pure functions:
 * no Fastify, no database; the installation routes call them with a stored version.
 *
 * Where the inputs come from. A version imported from a `server.json` document keeps that document
 * (MCP Registry format, revision 2025-12-11), which describes each value fully: description,
 * required, secret, default, choices, format. A version made by hand has only the catalogue's own
 * packages and remotes; its package environment variables and its remotes' headers and URL
 * variables are the inputs (its runtime arguments are fixed command-line words).
 *
 * What is installed is one target: one package or one remote of the version. The inputs of a
 * target, each under a key that stays the same as long as the document does:
 * - `env:<NAME>`: a package's environment variable;
 * - `arg:<name>`: a package's runtime or package argument. A named argument is keyed by its name
 *   as published, leading dashes included (`arg:--port`): it is what appears on the command line,
 *   and `-p`, `--p` and a positional `p` stay distinct. A positional argument is keyed by its
 *   `valueHint` (`arg:root_dir`), the label the format gives it;
 * - `header:<Name>`: an HTTP header of a remote or of a package's HTTP transport;
 * - `urlvar:<name>`: a `{name}` segment of a remote's or a package transport's URL.
 * An entry whose `value` is a template (`"Bearer {token}"`) is not set as a whole: each `{name}`
 * found in its `variables` is an input of its own, keyed by the entry's key followed by the
 * variable in braces (`header:Authorization{token}`; braces cannot occur in a variable's name).
 * An entry with a fixed `value` is the publisher's, not configurable, and not listed.
 */

export type { InputFormat, InputKind, InputScope, InstallationInput, InstallationTarget } from '../../formats/installation-inputs.js'
import type { InputFormat, InputKind, InstallationInput, InstallationTarget } from '../../formats/installation-inputs.js'

/** What a version says about its packages and remotes, as it stores them. */
export type InputSource =
  | { from: 'server.json'; document: Record<string, unknown> }
  | { from: 'catalogue'; packages: ServerPackage[]; remotes: ServerRemote[] }

export type Derivation =
  | { ok: true; target: InstallationTarget; inputs: InstallationInput[] }
  /** `reason` is a sentence for the team admin: why this target cannot be installed. */
  | { ok: false; target: InstallationTarget | null; reason: string }

type Json = Record<string, unknown>

const isObject = (value: unknown): value is Json => value !== null && typeof value === 'object' && !Array.isArray(value)
const objects = (value: unknown): Json[] => (Array.isArray(value) ? value.filter(isObject) : [])
const textOf = (value: unknown): string | undefined => (typeof value === 'string' ? value : undefined)
const FORMATS: readonly InputFormat[] = ['string', 'number', 'boolean', 'filepath']

/**
 * The source of a stored version: its `server.json` document when it has one (an imported
 * version), else the catalogue's packages and remotes (a version made by hand).
 */
export function inputSourceOf(version: { serverJson: Record<string, unknown> | null; packages: ServerPackage[] | null; remotes: ServerRemote[] | null }): InputSource {
  if (version.serverJson !== null) return { from: 'server.json', document: version.serverJson }
  return { from: 'catalogue', packages: version.packages ?? [], remotes: version.remotes ?? [] }
}

/** One configurable place of a target, before the scopes are applied. */
interface Candidate {
  input: Omit<InstallationInput, 'scope'>
  /** Two candidates with the same identity would be set by one value: refused (see deriveInputs). */
  identity: string
  /** Where in the source the entry is, to name it in a refusal. */
  where: string
}

/** A package or remote brought to one reading, whatever source it came from. */
export interface Entries {
  /** `packages[0]`, `remotes[1]`: the target as the source names it. */
  where: string
  environmentVariables: Json[]
  runtimeArguments: Json[]
  packageArguments: Json[]
  headers: Json[]
  url: string | undefined
  /** The URL's variables: declared on a remote; a package transport has none of its own. */
  urlVariables: Json
  /** Names a package transport's URL may refer to, filled in from the package's own inputs. */
  packageNames: Set<string>
  /** How the source spells a package's environment variables, to name one in a refusal. */
  environmentMember: 'environmentVariables' | 'environment_variables'
}

export function packagesOf(source: InputSource): unknown[] {
  if (source.from === 'catalogue') return source.packages
  return Array.isArray(source.document.packages) ? source.document.packages : []
}

export function remotesOf(source: InputSource): unknown[] {
  if (source.from === 'catalogue') return source.remotes
  return Array.isArray(source.document.remotes) ? source.document.remotes : []
}

/** Every target of a version: its packages in order, then its remotes. */
export function targetsOf(source: InputSource): InstallationTarget[] {
  return [
    ...packagesOf(source).map((_, index) => ({ kind: 'package' as const, index })),
    ...remotesOf(source).map((_, index) => ({ kind: 'remote' as const, index })),
  ]
}

/** The target installed when none is chosen: the first package, else the first remote. */
export function defaultTargetOf(source: InputSource): InstallationTarget | null {
  return targetsOf(source)[0] ?? null
}

/**
 * A package's transport URL may name `{port}`: by the format, such a segment is filled in from the
 * package's argument of that `valueHint` or name, or its environment variable of that name. An
 * argument named `--port` answers to `{port}` too, as the flag is commonly written.
 */
function packageNamesOf(environmentVariables: Json[], argumentLists: Json[][]): Set<string> {
  const names = new Set<string>()
  for (const variable of environmentVariables) if (typeof variable.name === 'string') names.add(variable.name)
  for (const argument of argumentLists.flat()) {
    if (typeof argument.valueHint === 'string') names.add(argument.valueHint)
    if (typeof argument.name === 'string') {
      names.add(argument.name)
      names.add(argument.name.replace(/^-+/, ''))
    }
  }
  return names
}

function documentPackage(item: Json, where: string): Entries {
  const transport = isObject(item.transport) ? item.transport : {}
  const environmentVariables = objects(item.environmentVariables)
  const runtimeArguments = objects(item.runtimeArguments)
  const packageArguments = objects(item.packageArguments)
  return {
    where,
    environmentVariables,
    runtimeArguments,
    packageArguments,
    headers: objects(transport.headers),
    url: textOf(transport.url),
    urlVariables: {},
    packageNames: packageNamesOf(environmentVariables, [runtimeArguments, packageArguments]),
    environmentMember: 'environmentVariables',
  }
}

/**
 * A catalogue package (a version made by hand): its environment variables in the format's
 * spelling. Its `runtime_args` are plain command-line words with no description of a value to
 * ask for, so they are fixed; it runs over stdio, so it has no headers or URL.
 */
function cataloguePackage(item: Json, where: string): Entries {
  const environmentVariables = objects(item.environment_variables).map((variable) => ({
    name: variable.name,
    description: variable.description,
    isRequired: variable.required,
    isSecret: variable.secret,
    default: variable.default,
  }))
  return {
    where,
    environmentVariables,
    runtimeArguments: [],
    packageArguments: [],
    headers: [],
    url: undefined,
    urlVariables: {},
    packageNames: new Set(),
    environmentMember: 'environment_variables',
  }
}

/** A remote: the catalogue keeps a remote's headers and variables in the format's own spelling. */
function remoteEntries(item: Json, where: string): Entries {
  return {
    where,
    environmentVariables: [],
    runtimeArguments: [],
    packageArguments: [],
    headers: objects(item.headers),
    url: textOf(item.url),
    urlVariables: isObject(item.variables) ? item.variables : {},
    packageNames: new Set(),
    environmentMember: 'environmentVariables',
  }
}

/**
 * The distinct `{name}` segments of a template, in order of first appearance (RFC 6570 level 1
 * expressions; a name has no whitespace and no braces, as the catalogue's variable names).
 */
export function placeholdersOf(template: string): string[] {
  return [...new Set(Array.from(template.matchAll(/\{([^\s{}]{1,128})\}/g), (match) => match[1]!))]
}

/** The document's description of one value, with the format's defaults spelled out. */
function describedInput(entry: Json, key: string, kind: InputKind): Omit<InstallationInput, 'scope'> {
  const given = textOf(entry.default)
  const choices = Array.isArray(entry.choices) ? entry.choices.filter((choice): choice is string => typeof choice === 'string') : []
  const format = FORMATS.find((each) => each === entry.format)
  return {
    key,
    kind,
    description: textOf(entry.description) ?? '',
    required: entry.isRequired === true,
    secret: entry.isSecret === true,
    ...(given === undefined ? {} : { default: given }),
    ...(choices.length === 0 ? {} : { choices }),
    ...(format === undefined ? {} : { format }),
  }
}

/**
 * The inputs of one entry (an environment variable, an argument, a header). Without `value`, the
 * entry itself is the input. With a `value`, the entry is the publisher's: only the template's
 * `{name}` segments that its `variables` declare are asked for (a segment the variables do not
 * declare stays as written, as the format says). Such a variable is secret when it says so or
 * when the whole entry is secret (the part of a secret header is secret); it is required when it
 * says so, or when the entry is required and the variable has no default to fall back on.
 */
function entryCandidates(entry: Json, key: string, identity: string, kind: InputKind, where: string): Candidate[] {
  const template = textOf(entry.value)
  if (template === undefined) return [{ input: describedInput(entry, key, kind), identity, where }]
  const variables = isObject(entry.variables) ? entry.variables : {}
  return placeholdersOf(template).flatMap((name) => {
    const variable = Object.hasOwn(variables, name) ? variables[name] : undefined
    if (!isObject(variable) || typeof variable.value === 'string') return []
    const input = describedInput(variable, `${key}{${name}}`, kind)
    input.secret ||= entry.isSecret === true
    input.required ||= entry.isRequired === true && input.default === undefined
    return [{ input, identity: `${identity}{${name}}`, where: `${where}.variables[${JSON.stringify(name)}]` }]
  })
}

/** Why an entry of the source cannot be keyed (a stored document always names its entries). */
class UnkeyedEntry extends Error {}

function nameOf(entry: Json, member: 'name' | 'valueHint', where: string): string {
  const name = entry[member]
  if (typeof name !== 'string' || name === '') throw new UnkeyedEntry(`${where} has no ${member}, so its value cannot be named.`)
  return name
}

/**
 * A named argument is keyed by its name; a positional one by its `valueHint`. A positional
 * argument with a fixed value needs no label of its own (the format lets it go without one): the
 * variables of its template are then keyed `arg:{name}`.
 */
function argumentCandidates(argument: Json, where: string): Candidate[] {
  const label = argument.type === 'named'
    ? nameOf(argument, 'name', where)
    : typeof argument.value === 'string' ? (textOf(argument.valueHint) ?? '') : nameOf(argument, 'valueHint', where)
  return entryCandidates(argument, `arg:${label}`, `arg:${label}`, 'arg', where)
}

/**
 * A URL's `{name}` segments. Each is an input whatever the document declares: braces cannot stay
 * in a URL (RFC 3986 does not allow them), so a segment left unfilled makes the URL unusable. A
 * declared variable gives the segment its description, default and so on, and is required unless
 * it has a default; one with a fixed `value` is the publisher's. In a package transport's URL, a
 * segment that names one of the package's arguments or environment variables is filled in from
 * that input and is not asked for twice.
 */
function urlCandidates(entries: Entries): Candidate[] {
  if (entries.url === undefined) return []
  return placeholdersOf(entries.url).flatMap((name) => {
    if (entries.packageNames.has(name)) return []
    const declared = Object.hasOwn(entries.urlVariables, name) ? entries.urlVariables[name] : undefined
    const variable = isObject(declared) ? declared : {}
    if (typeof variable.value === 'string') return []
    const input = describedInput(variable, `urlvar:${name}`, 'urlvar')
    input.required ||= input.default === undefined
    return [{ input, identity: `urlvar:${name}`, where: `${entries.where}.url {${name}}` }]
  })
}

/** Every configurable place of a target, in the order of the source. */
function candidatesOf(entries: Entries, transportWhere: string): Candidate[] {
  const { where } = entries
  const env = entries.environmentVariables.flatMap((variable, index) => {
    const at = `${where}.${entries.environmentMember}[${index}]`
    const name = nameOf(variable, 'name', at)
    return entryCandidates(variable, `env:${name}`, `env:${name}`, 'env', at)
  })
  const runtime = entries.runtimeArguments.flatMap((argument, index) => argumentCandidates(argument, `${where}.runtimeArguments[${index}]`))
  const packaged = entries.packageArguments.flatMap((argument, index) => argumentCandidates(argument, `${where}.packageArguments[${index}]`))
  const headers = entries.headers.flatMap((header, index) => {
    const at = `${transportWhere}.headers[${index}]`
    const name = nameOf(header, 'name', at)
    // Header names are case-insensitive (RFC 9110 §5.1): `Authorization` and `authorization` are one header.
    return entryCandidates(header, `header:${name}`, `header:${name.toLowerCase()}`, 'header', at)
  })
  return [...env, ...runtime, ...packaged, ...headers, ...urlCandidates({ ...entries, where: transportWhere })]
}

/** The entries of one target, or null when the version has no such target. */
export function entriesOf(source: InputSource, target: InstallationTarget): { entries: Entries; transportWhere: string } | null {
  const list = target.kind === 'package' ? packagesOf(source) : remotesOf(source)
  const item = Number.isInteger(target.index) && target.index >= 0 ? list[target.index] : undefined
  if (!isObject(item)) return null
  const where = `${target.kind}s[${target.index}]`
  if (target.kind === 'remote') return { entries: remoteEntries(item, where), transportWhere: where }
  const entries = source.from === 'catalogue' ? cataloguePackage(item, where) : documentPackage(item, where)
  return { entries, transportWhere: `${where}.transport` }
}

function missingTarget(source: InputSource, target: InstallationTarget): string {
  const count = (target.kind === 'package' ? packagesOf(source) : remotesOf(source)).length
  const plural = target.kind === 'package' ? 'packages' : 'remotes'
  return `This version has ${count} ${count === 1 ? target.kind : plural}, so there is no ${plural}[${String(target.index)}] to install.`
}

/**
 * The inputs of one target of a version (by default the first package, else the first remote),
 * each scoped to the team unless its key is among `userScopedKeys` (chosen by the team admin);
 * keys there that the target does not have change nothing (see unknownInputKeys).
 *
 * Keys are unique within a target. When two entries of a document would produce the same key
 * (two environment variables of one name, a runtime and a package argument of one name, two
 * headers differing only in case), one value would silently have to serve both, or one of them
 * would go unset: the target is refused instead, with a reason naming the key and both entries,
 * and the team can install another target of the version.
 */
export function deriveInputs(source: InputSource, options: { target?: InstallationTarget; userScopedKeys?: readonly string[] } = {}): Derivation {
  const target = options.target ?? defaultTargetOf(source)
  if (target === null) return { ok: false, target: null, reason: 'This version has neither a package nor a remote, so there is nothing to install.' }
  const found = entriesOf(source, target)
  if (found === null) return { ok: false, target, reason: missingTarget(source, target) }
  let candidates: Candidate[]
  try {
    candidates = candidatesOf(found.entries, found.transportWhere)
  } catch (error) {
    if (error instanceof UnkeyedEntry) return { ok: false, target, reason: error.message }
    throw error
  }
  const duplicate = firstDuplicate(candidates)
  if (duplicate !== null) return { ok: false, target, reason: duplicate }
  const userScoped = new Set(options.userScopedKeys ?? [])
  return {
    ok: true,
    target,
    inputs: candidates.map(({ input }) => ({ ...input, scope: userScoped.has(input.key) ? 'user' : 'team' })),
  }
}

function firstDuplicate(candidates: Candidate[]): string | null {
  const seen = new Map<string, Candidate>()
  for (const candidate of candidates) {
    const earlier = seen.get(candidate.identity)
    if (earlier !== undefined) {
      return `${earlier.where} and ${candidate.where} both give the input "${candidate.input.key}"; ` +
        'one value cannot be meant for both, so this target cannot be installed (another package or remote of the version may be).'
    }
    seen.set(candidate.identity, candidate)
  }
  return null
}

/** The keys among `keys` that name no input of the target (to refuse a list of user-scoped keys with a typo). */
export function unknownInputKeys(inputs: readonly InstallationInput[], keys: readonly string[]): string[] {
  const known = new Set(inputs.map((input) => input.key))
  return [...new Set(keys)].filter((key) => !known.has(key))
}

/** The registry types a satellite knows how to fetch and start (the catalogue's own). */
const RUNNABLE_REGISTRY_TYPES = new Set(['npm', 'pypi', 'docker', 'oci', 'nuget', 'mcpb'])
const TRANSPORTS = new Set(['stdio', 'streamable-http', 'sse'])

/**
 * How a target is reached (`stdio`, `streamable-http` or `sse`), or why it cannot run at all: a
 * package of a registry type no satellite fetches (the stored document keeps such packages, the
 * catalogue does not run them), or a transport the MCP specification does not define. A catalogue
 * package (made by hand) has no transport of its own: `catalogueTransport` (the server's
 * `transport_type`) is used.
 */
export function targetTransport(source: InputSource, target: InstallationTarget, catalogueTransport: string): { ok: true; transport: string } | { ok: false; reason: string } {
  const list = target.kind === 'package' ? packagesOf(source) : remotesOf(source)
  const item = list[target.index]
  if (!isObject(item)) return { ok: false, reason: missingTarget(source, target) }
  const where = `${target.kind}s[${target.index}]`
  let transport: string | undefined
  if (target.kind === 'remote') transport = textOf(item.type)
  else if (source.from === 'catalogue') {
    transport = catalogueTransport === 'http' ? 'streamable-http' : catalogueTransport
  } else {
    const registryType = textOf(item.registryType)
    if (registryType === undefined || !RUNNABLE_REGISTRY_TYPES.has(registryType)) {
      return { ok: false, reason: `${where} is a package of registry type ${JSON.stringify(registryType ?? null)}, which no satellite knows how to fetch and run.` }
    }
    transport = isObject(item.transport) ? textOf(item.transport.type) : undefined
  }
  if (transport === undefined || !TRANSPORTS.has(transport)) {
    return { ok: false, reason: `${where} has the transport ${JSON.stringify(transport ?? null)}; a satellite speaks stdio, streamable-http and sse.` }
  }
  return { ok: true, transport }
}
