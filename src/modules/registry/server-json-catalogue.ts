import { HttpUrl, normalizePackages, ServerPackage as PackageSchema, ServerRemote as RemoteSchema, type ServerPackage, type ServerRemote } from '../../formats/catalogue-entries.js'
import { documentPackageProblems } from '../../formats/package-rules.js'
import { parseVersion } from '../catalogue/semver-key.js'
import { checker, fieldOf, type DocumentProblem } from './server-json-rules.js'
import type { ReadDocument, RegistryInput, RegistryPackage, RegistryRemote, ServerJson } from './server-json.js'
import { shortened } from './server-json-shapes.js'

/**
 * A valid `server.json` document (read by server-json.ts) as the catalogue holds it: the server,
 * its packages and remotes, and the version.
 */

/** What a valid document becomes in the catalogue. */
export interface CatalogueEntry {
  registryName: string
  /** `title`, else the part of the name after the last `/`. */
  displayName: string
  description: string
  repositoryUrl: string | null
  websiteUrl: string | null
  iconUrl: string | null
  transportType: 'stdio' | 'http' | 'sse'
  packages: ServerPackage[]
  remotes: ServerRemote[]
  version: {
    version: string
    precedence: string
    prerelease: boolean
    status: 'active' | 'deprecated' | 'yanked'
    releaseDate: Date | null
  }
  /** The document as stored on the version (the canonical 2025-12-11 form). */
  document: ServerJson
  /**
   * Why packages or remotes of the document are not among `packages` / `remotes` (`field` names
   * the member at fault, e.g. `packages[1].registryType`): they are kept in `document` only.
   */
  notCatalogued: DocumentProblem[]
}

/** The registry types a document's packages may have here (the catalogue's `docker` is `oci` in the format). */
export const IMPORTED_PACKAGE_TYPES = ['npm', 'pypi', 'oci', 'nuget', 'mcpb'] as const

/** The catalogue's maximum of packages and of remotes on a server. */
const MAX_ENTRIES = 20

const checkPackage = checker(PackageSchema)
const checkRemote = checker(RemoteSchema)
const checkHttpUrl = checker(HttpUrl)

/** `url` when the catalogue can hold it as a link (http or https), else null. */
export const httpUrlOrNull = (url: string | undefined): string | null =>
  url !== undefined && checkHttpUrl(url, fieldOf).length === 0 ? url : null

const TRANSPORTS = { stdio: 'stdio', 'streamable-http': 'http', sse: 'sse' } as const

const VERSION_STATUS = { active: 'active', deprecated: 'deprecated', deleted: 'yanked' } as const

/** The catalogue's longest server description. */
const MAX_CATALOGUE_DESCRIPTION = 1000

/**
 * Maps a valid document onto the catalogue, or says why the catalogue cannot hold the server at
 * all: a version that is not a semantic version (versions are ordered by semver precedence), more
 * packages or remotes than a server may have.
 *
 * A package or remote the catalogue cannot run — a registry type it does not hold (the format
 * leaves `registryType` open: `cargo`, or the May 2025 seed's `unknown`), an identifier, an
 * environment variable or a remote its own rules refuse (the same rules as for servers created by
 * hand), or one that would make a satellite run more than the package (runtime-rules.ts: a version
 * that is not a version of its registry, a runner option, a loader-changing environment
 * variable) — does not cost the server: it is kept in the stored document, so the export gives it
 * back as published, and left out of the catalogue's packages or remotes, so installations never
 * offer it. Every such part is named in `notCatalogued`. The same rule holds whatever shape the
 * document came in, so that a document this service exports imports again.
 */
export function catalogueEntryOf(read: Extract<ReadDocument, { ok: true }>): { ok: true; entry: CatalogueEntry } | { ok: false; problems: DocumentProblem[] } {
  const { document } = read
  const problems: DocumentProblem[] = []
  const notCatalogued: DocumentProblem[] = []
  const parsed = parseVersion(document.version)
  if (parsed === null) {
    problems.push({ field: 'version', message: `"${document.version.slice(0, 100)}" is not a semantic version (like 1.2.0 or 2.0.0-beta.1); this catalogue orders versions by semantic version precedence` })
  }
  const registryPackages = document.packages ?? []
  if (registryPackages.length > MAX_ENTRIES) problems.push({ field: 'packages', message: `this catalogue holds at most ${MAX_ENTRIES} packages per server` })
  const packages: ServerPackage[] = []
  registryPackages.forEach((item, index) => {
    const mapped = cataloguePackage(item, index)
    if ('problems' in mapped) notCatalogued.push(...mapped.problems)
    else packages.push(mapped.package)
  })
  const remotes: ServerRemote[] = []
  ;(document.remotes ?? []).forEach((item, index) => {
    const remote = catalogueRemote(item)
    const found = checkRemote(remote, (path) => fieldOf(['remotes', index, ...path]))
    if (found.length > 0) notCatalogued.push(...found)
    else remotes.push(remote)
  })
  if (remotes.length > MAX_ENTRIES) problems.push({ field: 'remotes', message: `this catalogue holds at most ${MAX_ENTRIES} remotes per server` })
  if (problems.length > 0 || parsed === null) return { ok: false, problems }
  const lastPart = document.name.slice(document.name.lastIndexOf('/') + 1)
  const firstTransport = registryPackages[0]?.transport.type ?? document.remotes?.[0]?.type ?? 'stdio'
  return {
    ok: true,
    entry: {
      registryName: document.name,
      displayName: document.title !== undefined && /\S/.test(document.title) ? document.title : lastPart,
      description: shortened(read.description, MAX_CATALOGUE_DESCRIPTION),
      repositoryUrl: httpUrlOrNull(document.repository?.url),
      websiteUrl: httpUrlOrNull(document.websiteUrl),
      iconUrl: httpUrlOrNull(document.icons?.[0]?.src),
      transportType: TRANSPORTS[firstTransport],
      packages: normalizePackages(packages),
      remotes,
      version: {
        version: document.version,
        precedence: parsed.key,
        prerelease: parsed.prerelease,
        status: VERSION_STATUS[read.status],
        releaseDate: read.publishedAt,
      },
      document,
      notCatalogued,
    },
  }
}

/** The members of the format's key-value input (a header) that the catalogue holds; a variable has the same but `name` and `variables`. */
const HEADER_KEYS = ['name', 'description', 'isRequired', 'isSecret', 'format', 'value', 'default', 'placeholder', 'choices', 'variables'] as const
const VARIABLE_KEYS = HEADER_KEYS.filter((key) => key !== 'name' && key !== 'variables')

function inputOf(input: RegistryInput, keys: readonly string[]): RegistryInput {
  const out: RegistryInput = {}
  for (const key of keys) if (input[key] !== undefined) out[key] = key === 'variables' ? variablesOf(input[key]) : input[key]
  return out
}

function variablesOf(variables: unknown): Record<string, RegistryInput> {
  return Object.fromEntries(Object.entries(variables as Record<string, RegistryInput>).map(([name, each]) => [name, inputOf(each, VARIABLE_KEYS)]))
}

/** A remote of the document as the catalogue holds it: its URL as published, its headers and URL variables (the format's members only). */
function catalogueRemote(item: RegistryRemote): ServerRemote {
  return {
    type: item.type,
    url: item.url,
    ...(item.headers === undefined ? {} : { headers: item.headers.map((header) => inputOf(header, HEADER_KEYS)) }),
    ...(item.variables === undefined ? {} : { variables: variablesOf(item.variables) }),
  } as ServerRemote
}

/** An argument as command-line words: a named one's name then its value; a positional one's value, else `{valueHint}`. */
function argumentWords(argument: RegistryInput): string[] {
  const value = typeof argument.value === 'string' ? argument.value : undefined
  if (argument.type === 'named') return value === undefined ? [String(argument.name)] : [String(argument.name), value]
  return [value ?? `{${String(argument.valueHint)}}`]
}

/** One package of the document as a catalogue package, checked by the catalogue's own package rule. */
function cataloguePackage(item: RegistryPackage, index: number): { package: ServerPackage } | { problems: DocumentProblem[] } {
  const at = (...path: Array<string | number>) => fieldOf(['packages', index, ...path])
  if (!(IMPORTED_PACKAGE_TYPES as readonly string[]).includes(item.registryType)) {
    return { problems: [{ field: at('registryType'), message: `registry type "${item.registryType.slice(0, 50)}" is not one this catalogue holds (${IMPORTED_PACKAGE_TYPES.join(', ')})` }] }
  }
  // Which argument each command-line word came from, to name it when the catalogue refuses a word.
  const words: Array<{ word: string; argument: number }> = []
  item.runtimeArguments?.forEach((argument, argumentIndex) => {
    for (const word of argumentWords(argument)) words.push({ word, argument: argumentIndex })
  })
  const mapped = {
    registry_type: item.registryType,
    identifier: item.identifier,
    ...(item.version === undefined ? {} : { version: item.version }),
    ...(item.runtimeArguments === undefined ? {} : { runtime_args: words.map((each) => each.word) }),
    ...(item.environmentVariables === undefined ? {} : {
      environment_variables: item.environmentVariables.map((variable) => ({
        name: variable.name,
        ...(typeof variable.description === 'string' ? { description: variable.description } : {}),
        required: variable.isRequired === true,
        secret: variable.isSecret === true,
        ...(typeof variable.default === 'string' ? { default: variable.default } : {}),
      })),
    }),
  } as ServerPackage
  const problems = checkPackage(mapped, (path) => {
    const [member, position, ...rest] = path
    if (member === 'runtime_args') return position === undefined ? at('runtimeArguments') : at('runtimeArguments', words[Number(position)]?.argument ?? 0)
    if (member === 'environment_variables') return at('environmentVariables', ...(position === undefined ? [] : [Number(position), ...rest]))
    if (member === 'registry_type') return at('registryType')
    return at(...path)
  })
  if (problems.length > 0) return { problems }
  // What the package would make a satellite run beyond itself (a `file:` version, a runner option,
  // a loader-changing environment variable): the package is not catalogued, and installations,
  // which read the stored document, refuse it by the same rules.
  const refused = documentPackageProblems(item as unknown as Record<string, unknown>, at(), 'global')
  return refused.length > 0 ? { problems: refused } : { package: mapped }
}
