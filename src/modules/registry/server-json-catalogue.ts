import { HttpUrl, normalizePackages, ServerPackage as PackageSchema, ServerRemote as RemoteSchema, type ServerPackage, type ServerRemote } from '../catalogue/entries.js'
import { parseVersion } from '../catalogue/semver-key.js'
import { checker, fieldOf, type DocumentProblem } from './server-json-rules.js'
import type { ReadDocument, RegistryInput, RegistryPackage, ServerJson } from './server-json.js'

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

/**
 * Maps a valid document onto the catalogue, or says why the catalogue cannot hold it: a package
 * type it does not hold, an identifier or environment variable its own rules refuse (the same
 * rules as for servers created by hand), a version that is not a semantic version (versions are
 * ordered by semver precedence).
 */
export function catalogueEntryOf(read: Extract<ReadDocument, { ok: true }>): { ok: true; entry: CatalogueEntry } | { ok: false; problems: DocumentProblem[] } {
  const { document } = read
  const problems: DocumentProblem[] = []
  const parsed = parseVersion(document.version)
  if (parsed === null) {
    problems.push({ field: 'version', message: `"${document.version.slice(0, 100)}" is not a semantic version (like 1.2.0 or 2.0.0-beta.1); this catalogue orders versions by semantic version precedence` })
  }
  const registryPackages = document.packages ?? []
  if (registryPackages.length > MAX_ENTRIES) problems.push({ field: 'packages', message: `this catalogue holds at most ${MAX_ENTRIES} packages per server` })
  const packages: ServerPackage[] = []
  registryPackages.forEach((item, index) => {
    const mapped = cataloguePackage(item, index)
    if ('problems' in mapped) problems.push(...mapped.problems)
    else packages.push(mapped.package)
  })
  const remotes: ServerRemote[] = []
  ;(document.remotes ?? []).forEach((item, index) => {
    // A URL template (`https://{tenant}.example.com/mcp`) is no URL the catalogue can show or
    // connect to: such a remote stays in the stored document only.
    if (item.url.includes('{')) return
    const remote = { type: item.type, url: item.url }
    const found = checkRemote(remote, (path) => fieldOf(['remotes', index, ...path]))
    if (found.length > 0) problems.push(...found)
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
      description: document.description,
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
    },
  }
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
  return problems.length > 0 ? { problems } : { package: mapped }
}
