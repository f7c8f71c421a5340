import { storableText } from '../../http/validation.js'
import { detailProblems, fieldOf, type DocumentProblem } from './server-json-rules.js'
import { isObject, isOlderShape, seedReleaseDate, upConverted } from './server-json-shapes.js'

/**
 * The MCP Registry's `server.json` format, revision 2025-12-11, read and written by this service:
 * which documents an import body holds and each document checked (older shapes up-converted
 * first). What a valid document becomes in the catalogue is server-json-catalogue.ts; the
 * document a catalogue server exports, server-json-export.ts.
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
      /**
       * The server's description as published: the document's, except for an older shape whose
       * description the conversion shortened or filled in (those shapes had no length rule) —
       * then the whole text, or empty.
       */
      description: string
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
    description: older && typeof given.description === 'string' ? given.description : (document.description as string),
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
