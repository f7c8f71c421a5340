import { storableText } from '../../http/validation.js'
import { HttpUrl, normalizePackages, ServerPackage as PackageSchema, ServerRemote as RemoteSchema, type ServerPackage, type ServerRemote } from '../catalogue/entries.js'
import { parseVersion } from '../catalogue/semver-key.js'
import { checker, detailProblems, fieldOf, type DocumentProblem } from './server-json-rules.js'
import { isObject, isOlderShape, seedReleaseDate, upConverted } from './server-json-shapes.js'

/**
 * The MCP Registry's `server.json` format, revision 2025-12-11, read and written by this service:
 * which documents an import body holds, each document checked (older shapes up-converted first),
 * what a valid document becomes in the catalogue, and the document a catalogue server exports.
 */

export const SERVER_SCHEMA_URL = 'https://static.modelcontextprotocol.io/schemas/2025-12-11/server.schema.json'
/** The key of the registry-managed metadata in `_meta` of a list item. */
export const OFFICIAL_META = 'io.modelcontextprotocol.registry/official'

/** An input (argument, environment variable, header, variable) as the format defines it; kept as given. */
export type RegistryInput = Record<string, unknown>

export interface RegistryPackage {
  registryType: string
  registryBaseUrl?: string
  identifier: string
  version?: string
  fileSha256?: string
  runtimeHint?: string
  transport: { type: 'stdio' | 'streamable-http' | 'sse'; url?: string; headers?: RegistryInput[] }
  runtimeArguments?: RegistryInput[]
  packageArguments?: RegistryInput[]
  environmentVariables?: RegistryInput[]
}

export interface RegistryRemote {
  type: 'streamable-http' | 'sse'
  url: string
  headers?: RegistryInput[]
  variables?: Record<string, RegistryInput>
}

/** A document in the 2025-12-11 format (camelCase), as stored on a version and exported. */
export interface ServerJson {
  $schema?: string
  name: string
  description: string
  title?: string
  version: string
  websiteUrl?: string
  repository?: { url: string; source: string; id?: string; subfolder?: string }
  icons?: Array<{ src: string; mimeType?: string; sizes?: string[]; theme?: 'light' | 'dark' }>
  packages?: RegistryPackage[]
  remotes?: RegistryRemote[]
  _meta?: Record<string, unknown>
}

/** The lifecycle status the registry gives a version. */
export type RegistryStatus = 'active' | 'deprecated' | 'deleted'

export type { DocumentProblem } from './server-json-rules.js'

/** One document of an import body, with the registry's `_meta` when it came as a list item. */
export interface IncomingDocument {
  document: unknown
  meta?: unknown
}

export type ReadDocument =
  | {
      ok: true
      /** Up-converted from the older snake_case shapes when it came in one; `$schema` set to SERVER_SCHEMA_URL. */
      document: ServerJson
      /**
       * From the item's official `_meta` (else the same key in the document's own `_meta`), else
       * the document's own (2025-07 shape) `status`, else active.
       */
      status: RegistryStatus
      /** The official `_meta`'s publishedAt / updatedAt, when given (publishedAt: else the seed shape's release date). */
      publishedAt: Date | null
      updatedAt: Date | null
    }
  | { ok: false; name: string | null; problems: DocumentProblem[] }

type Json = Record<string, unknown>


/** A list item (`{server, _meta}`) is unwrapped; anything else is a document as it stands. */
function incomingOf(item: unknown): IncomingDocument {
  if (isObject(item) && isObject(item.server) && !('name' in item)) return { document: item.server, meta: item._meta }
  return { document: item }
}

/**
 * The documents of an import body: one document, an array of them, or a registry list answer
 * (`{servers: [{server, _meta}], metadata}`; the older list answers' bare documents too). Empty
 * for a body that is neither an object nor an array.
 */
export function documentsOf(body: unknown): IncomingDocument[] {
  if (Array.isArray(body)) return body.map(incomingOf)
  if (!isObject(body)) return []
  if (Array.isArray(body.servers)) return body.servers.map(incomingOf)
  return [incomingOf(body)]
}

/**
 * Checks one document against the 2025-12-11 rules, after up-converting the two older shapes.
 * A valid document comes back canonical: the members the format defines, the publisher's `_meta`
 * without the registry-managed key, and `$schema` naming the 2025-12-11 revision.
 */
export function readServerJson(incoming: IncomingDocument): ReadDocument {
  const given = incoming.document
  if (!isObject(given)) return { ok: false, name: null, problems: [{ field: '(document)', message: 'must be a JSON object (a server.json document)' }] }
  const older = isOlderShape(given)
  const document = older ? upConverted(given) : given
  const name = typeof document.name === 'string' && storableText(document.name) ? document.name : null
  // What no database can store (PostgreSQL's JSON refuses NUL), refused before anything else.
  const unstorable = unstorableProblem(document, [], 0)
  if (unstorable !== null) return { ok: false, name, problems: [unstorable] }
  const problems = detailProblems(document)
  if (problems.length > 0) return { ok: false, name, problems }
  const official = officialOf(incoming.meta) ?? officialOf(document._meta)
  return {
    ok: true,
    document: canonical(document),
    status: statusOf(official?.status) ?? statusOf(document.status) ?? 'active',
    publishedAt: dateOf(official?.publishedAt ?? official?.published_at) ?? (older ? seedReleaseDate(given) : null),
    updatedAt: dateOf(official?.updatedAt ?? official?.updated_at),
  }
}

/** Deeper than this, a document is refused (the format itself nests a handful of levels). */
const MAX_DEPTH = 32

/** The first string or key a database cannot store, or a nesting too deep to walk, or null. */
function unstorableProblem(value: unknown, path: Array<string | number>, depth: number): DocumentProblem | null {
  if (typeof value === 'string') return storableText(value) ? null : { field: fieldOf(path), message: 'must not contain NUL characters or unpaired surrogates' }
  if (value === null || typeof value !== 'object') return null
  if (depth >= MAX_DEPTH) return { field: fieldOf(path), message: `is nested too deeply (more than ${MAX_DEPTH} levels)` }
  const entries: Array<[string | number, unknown]> = Array.isArray(value) ? value.map((each, index) => [index, each]) : Object.entries(value)
  for (const [key, each] of entries) {
    if (typeof key === 'string' && !storableText(key)) return { field: fieldOf([...path, key]), message: 'must not contain NUL characters or unpaired surrogates' }
    const found = unstorableProblem(each, [...path, key], depth + 1)
    if (found !== null) return found
  }
  return null
}

/** The registry-managed metadata of an item (`_meta` of a list item, or of the document itself). */
function officialOf(meta: unknown): Json | null {
  if (!isObject(meta)) return null
  const official = meta[OFFICIAL_META]
  return isObject(official) ? official : null
}

const statusOf = (value: unknown): RegistryStatus | null => (value === 'active' || value === 'deprecated' || value === 'deleted' ? value : null)

function dateOf(value: unknown): Date | null {
  if (typeof value !== 'string') return null
  const date = new Date(value)
  return Number.isNaN(date.getTime()) ? null : date
}

/** Copies the named members that are present, in that order. */
function pick(from: Json, keys: readonly string[], convert: Record<string, (value: unknown) => unknown> = {}): Json {
  const out: Json = {}
  for (const key of keys) if (from[key] !== undefined) out[key] = convert[key] === undefined ? from[key] : convert[key]!(from[key])
  return out
}

const INPUT_KEYS = ['type', 'name', 'valueHint', 'description', 'isRequired', 'isSecret', 'isRepeated', 'format', 'value', 'default', 'placeholder', 'choices', 'variables'] as const

function canonicalInput(value: unknown): RegistryInput {
  return pick(value as Json, INPUT_KEYS, { variables: canonicalVariables })
}
const canonicalInputs = (value: unknown) => (value as unknown[]).map(canonicalInput)
const canonicalVariables = (value: unknown) => Object.fromEntries(Object.entries(value as Json).map(([key, each]) => [key, canonicalInput(each)]))

const canonicalTransport = (value: unknown) => pick(value as Json, ['type', 'url', 'headers'], { headers: canonicalInputs })

const canonicalPackage = (value: unknown) => pick(value as Json, [
  'registryType', 'registryBaseUrl', 'identifier', 'version', 'fileSha256', 'runtimeHint', 'transport',
  'runtimeArguments', 'packageArguments', 'environmentVariables',
], { transport: canonicalTransport, runtimeArguments: canonicalInputs, packageArguments: canonicalInputs, environmentVariables: canonicalInputs })

const canonicalRemote = (value: unknown) => pick(value as Json, ['type', 'url', 'headers', 'variables'], { headers: canonicalInputs, variables: canonicalVariables })

/** The publisher's `_meta` without the key the registry manages; none when nothing is left. */
function publisherMeta(meta: unknown): Json | undefined {
  if (!isObject(meta)) return undefined
  const { [OFFICIAL_META]: _official, ...rest } = meta
  return Object.keys(rest).length === 0 ? undefined : structuredClone(rest)
}

/** A valid document with only the members the format defines (plus the publisher's `_meta`). */
function canonical(document: Json): ServerJson {
  const out = pick(document, ['name', 'title', 'description', 'version', 'websiteUrl', 'repository', 'icons', 'packages', 'remotes'], {
    repository: (value) => pick(value as Json, ['url', 'source', 'id', 'subfolder']),
    icons: (value) => (value as Json[]).map((icon) => pick(icon, ['src', 'mimeType', 'sizes', 'theme'])),
    packages: (value) => (value as unknown[]).map(canonicalPackage),
    remotes: (value) => (value as unknown[]).map(canonicalRemote),
  })
  const meta = publisherMeta(document._meta)
  return structuredClone({ $schema: SERVER_SCHEMA_URL, ...out, ...(meta === undefined ? {} : { _meta: meta }) }) as unknown as ServerJson
}

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
