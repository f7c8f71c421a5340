import { KeptAnswers, keptAnswers } from '../../db/feed/kept-answers.js'
import type { EntryPosition, RegistryEntriesRepository } from '../../db/repositories/registry-entries.js'
import type { ServerRow } from '../../db/repositories/server-filters.js'
import type { VersionRow } from '../../db/repositories/server-versions.js'
import { topics } from '../../db/feed/topics.js'
import type { Database } from '../../db/types.js'
import { errors } from '../../http/errors.js'
import { storableText } from '../../http/validation.js'
import { type ServerJson } from './server-json.js'
import { exportDocument, itemMeta } from './server-json-export.js'

/**
 * This catalogue served as an MCP sub-registry, in the shapes of the MCP Registry's generic read
 * API (v0.1): lists of `{server, _meta}` items, one per version, paged by an opaque cursor.
 */

/** One item: the version's server.json and the registry-managed metadata. */
export interface RegistryItem {
  server: ServerJson
  _meta: Record<string, unknown>
}

export interface RegistryList {
  servers: RegistryItem[]
  metadata: { nextCursor?: string; count: number }
}

export interface ListRequest {
  cursor?: string
  limit: number
  search?: string
  /** RFC 3339 text, as validated by the route. */
  updatedSince?: string
  version?: string
  includeDeleted: boolean
}

/** Why a single item was not found; the API names it in its 404 body. */
export type Missing = 'server' | 'version'

const CURSOR_FORMAT = 1

/**
 * The cursor is the keyset position of the page's last item, `[format, name, server id,
 * precedence]` as JSON in base64url. It is opaque to clients (the generic API says to send back
 * exactly what was received), and carries no filters: a client sends the same query with it.
 */
export function encodeCursor(position: EntryPosition): string {
  return Buffer.from(JSON.stringify([CURSOR_FORMAT, position.name, position.serverId, position.precedence])).toString('base64url')
}

/** The position a cursor names; a 400 naming `cursor` for anything this API did not issue. */
export function decodeCursor(cursor: string): EntryPosition {
  const refuse = () => errors.validation([{ field: 'cursor', message: 'is not a cursor this API issued; send back the nextCursor of a previous answer', in: 'querystring' }])
  // Buffer.from skips characters that are not base64url: insist on the canonical spelling.
  if (!/^[A-Za-z0-9_-]+$/.test(cursor)) throw refuse()
  const bytes = Buffer.from(cursor, 'base64url')
  if (bytes.toString('base64url') !== cursor) throw refuse()
  let parsed: unknown
  try {
    parsed = JSON.parse(bytes.toString('utf8'))
  } catch {
    throw refuse()
  }
  if (!Array.isArray(parsed) || parsed.length !== 4 || parsed[0] !== CURSOR_FORMAT) throw refuse()
  const [, name, serverId, precedence] = parsed as unknown[]
  const texts = [name, serverId, precedence]
  if (!texts.every((text): text is string => typeof text === 'string' && text.length > 0 && storableText(text))) throw refuse()
  return { name: name as string, serverId: serverId as string, precedence: precedence as string }
}

/** At most this many pages kept (30 servers each by default, 100 at most), each for a minute at most. */
const MAX_CACHED_PAGES = 200
const MAX_AGE_MS = 60_000

interface Deps {
  entries: RegistryEntriesRepository
  /** Where the pages are kept: their answers end with every catalogue write (`catalogue`). */
  database: Database
  /** The namespace of hand-made servers' names (PUBLIC_URL's host reversed). */
  namespace: string
}

export class SubRegistry {
  private readonly entries: RegistryEntriesRepository
  private readonly namespace: string
  /**
   * Pages by query, kept until the catalogue changes (db/feed/kept-answers.ts): registry clients read
   * the same pages over and over (and mirrors poll them), while the catalogue changes rarely. A
   * hit is the same object, so the route can keep its serialized answer beside it.
   */
  private readonly pages: KeptAnswers<RegistryList>

  constructor({ entries, namespace, database }: Deps) {
    this.entries = entries
    this.namespace = namespace
    this.pages = keptAnswers(database, 'registry-pages', () => new KeptAnswers<RegistryList>('registry-pages', database.changes, {
      families: [topics.catalogue], topicsOf: () => [topics.catalogue], max: MAX_CACHED_PAGES, maxAgeMs: MAX_AGE_MS,
    }))
  }

  async list(request: ListRequest): Promise<RegistryList> {
    const key = JSON.stringify([request.cursor, request.limit, request.search, request.updatedSince, request.version, request.includeDeleted])
    return (await this.pages.read(key, () => this.load(request)))!
  }

  private async load(request: ListRequest): Promise<RegistryList> {
    const after = request.cursor === undefined ? undefined : decodeCursor(request.cursor)
    let updatedSince: Date | undefined
    if (request.updatedSince !== undefined) {
      updatedSince = new Date(request.updatedSince)
      // The format check admits a leap second (…:60), which Date cannot hold.
      if (Number.isNaN(updatedSince.getTime())) {
        throw errors.validation([{ field: 'updated_since', message: 'must be an RFC 3339 date-time', in: 'querystring' }])
      }
    }
    const { entries, more } = await this.entries.list({
      namespace: this.namespace, after, limit: request.limit, search: request.search, updatedSince, version: request.version, includeDeleted: request.includeDeleted,
    })
    const last = entries.at(-1)
    return {
      servers: entries.map(({ server, version }) => this.item(server, version)),
      metadata: {
        ...(more && last !== undefined ? { nextCursor: encodeCursor({ name: last.name, serverId: last.server.id, precedence: last.version.precedence }) } : {}),
        count: entries.length,
      },
    }
  }

  /** Every version of a server, newest first; 'server' when there is no such server or nothing to list. */
  async versions(registryName: string, includeDeleted: boolean): Promise<RegistryList | Missing> {
    const server = await this.entries.findServer(registryName, this.namespace)
    if (server === undefined) return 'server'
    const versions = await this.entries.versions(server.id, includeDeleted)
    // A server is in the registry through its versions: without any to show, it is not there.
    if (versions.length === 0) return 'server'
    return { servers: versions.map((version) => this.item(server, version)), metadata: { count: versions.length } }
  }

  /** One version (`latest`: the version marked latest). */
  async version(registryName: string, version: string, includeDeleted: boolean): Promise<RegistryItem | Missing> {
    const server = await this.entries.findServer(registryName, this.namespace)
    if (server === undefined) return 'server'
    const row = await this.entries.version(server.id, version, includeDeleted)
    return row === undefined ? 'version' : this.item(server, row)
  }

  private item(server: ServerRow, version: VersionRow): RegistryItem {
    return { server: exportDocument(server, version, this.namespace), _meta: itemMeta(server, version) }
  }
}
