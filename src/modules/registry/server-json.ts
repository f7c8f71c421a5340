import type { ServerRow } from '../../db/repositories/server-filters.js'
import type { VersionRow } from '../../db/repositories/server-versions.js'
import type { ServerPackage, ServerRemote } from '../catalogue/entries.js'

/**
 * The MCP Registry's `server.json` format, revision 2025-12-11, read and written by this service.
 * STUB: signatures agreed between the modules; the implementation is being written.
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

export interface DocumentProblem {
  /** Where in the document, as a JSON path from its root (`packages[0].transport.url`); `(document)` for the whole. */
  field: string
  message: string
}

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
      /** From the item's official `_meta`, else the document's own (2025-07 shape) `status`, else active. */
      status: RegistryStatus
      /** The official `_meta`'s publishedAt / updatedAt, when given. */
      publishedAt: Date | null
      updatedAt: Date | null
    }
  | { ok: false; name: string | null; problems: DocumentProblem[] }

/** The documents of an import body: one document, an array of them, or a registry list answer. */
export function documentsOf(_body: unknown): IncomingDocument[] {
  throw new Error('not implemented')
}

/** Checks one document against the 2025-12-11 rules, after up-converting the two older shapes. */
export function readServerJson(_incoming: IncomingDocument): ReadDocument {
  throw new Error('not implemented')
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

/** Maps a valid document onto the catalogue, or says why the catalogue cannot hold it. */
export function catalogueEntryOf(_read: Extract<ReadDocument, { ok: true }>): { ok: true; entry: CatalogueEntry } | { ok: false; problems: DocumentProblem[] } {
  throw new Error('not implemented')
}

/** PUBLIC_URL's host reversed: `https://platform.example.com` → `com.example.platform`. */
export function namespaceOf(_publicUrl: string): string {
  throw new Error('not implemented')
}

/** The name a server has in exported documents and in the sub-registry API. */
export function registryNameOf(server: Pick<ServerRow, 'registryName' | 'slug'>, namespace: string): string {
  return server.registryName ?? `${namespace}/${server.slug}`
}

/**
 * The 2025-12-11 document of one version of a server (`version` null: the server alone, for a
 * server without versions): the stored document with the catalogue's own fields over it, or one
 * built from the catalogue for servers created by hand. The official schema validates it.
 */
export function exportDocument(_server: ServerRow, _version: VersionRow | null, _namespace: string): ServerJson {
  throw new Error('not implemented')
}

/** The registry-managed `_meta` of a list item for one version. */
export function itemMeta(_server: ServerRow, _version: VersionRow): Record<string, unknown> {
  throw new Error('not implemented')
}
