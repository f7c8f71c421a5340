import { and, asc, desc, eq, getTableColumns, gte, inArray, isNull, ne, or, sql, type SQL } from 'drizzle-orm'
import type { Database } from '../types.js'
import { binary, serverColumns, type ServerRow } from './server-filters.js'
import type { VersionRow } from './server-versions.js'

/**
 * The catalogue as the MCP sub-registry API reads it: one entry per version of a global server.
 * Team servers never appear here, whoever asks (the API may be served to anonymous callers).
 *
 * A server's registry name is its `registry_name` (imported servers), else `<namespace>/<slug>`,
 * the name exported documents give a server created by hand. Entries are ordered by that name,
 * then the server id (two servers could share a name: a registry server named like a hand-made
 * one's `<namespace>/<slug>`), then the version newest first. (server id, precedence) is unique,
 * so the order is total and a keyset position of (name, server id, precedence) never repeats or
 * skips an entry. Every part compares byte by byte, so both dialects sort alike.
 */

export interface RegistryEntry {
  /** The registry name the order used (registry_name, else `<namespace>/<slug>`). */
  name: string
  server: ServerRow
  version: VersionRow
}

/** Where a page ended: the entry after which the next page starts. */
export interface EntryPosition {
  name: string
  serverId: string
  precedence: string
}

export interface EntryQuery {
  /** Names hand-made servers as `<namespace>/<slug>`. */
  namespace: string
  /** Start after this entry (exclusive). */
  after?: EntryPosition
  limit: number
  /** A case-insensitive substring of the registry name, the display name or the description. */
  search?: string
  /** Entries whose server or version changed at or after this instant. */
  updatedSince?: Date
  /** `latest`: only each server's latest version; anything else: that exact version string. */
  version?: string
  /** Yanked versions (the registry's `deleted`) are left out unless this is true. */
  includeDeleted: boolean
}

export type RegistryEntriesRepository = ReturnType<typeof registryEntriesRepository>

/** `%`, `_` and the escape character itself stand for themselves in a LIKE pattern. */
export const escapeLike = (text: string): string => text.replace(/[\\%_]/g, (character) => `\\${character}`)

export function registryEntriesRepository(database: Database) {
  const { db, t } = database
  const s = t.mcpServers
  const v = t.mcpServerVersions
  const columns = serverColumns(database)
  const versionColumns = getTableColumns(v)

  /** The registry name as SQL; the namespace is a parameter, cast so PostgreSQL knows its type. */
  const nameOf = (namespace: string): SQL<string> => sql<string>`coalesce(${s.registryName}, cast(${`${namespace}/`} as text) || ${s.slug})`

  const byteOrder = (expression: SQL) => binary(database, expression)

  /** A version's visibility: yanked versions only when asked for. */
  const deletedRule = (includeDeleted: boolean): SQL | undefined => (includeDeleted ? undefined : ne(v.status, 'yanked'))

  /** The version rule of the listing: each server's latest, or one exact version string. */
  const versionRule = (version: string): SQL => (version === 'latest' ? eq(v.isLatest, true) : eq(v.version, version))

  function searchRule(name: SQL<string>, search: string): SQL {
    // ASCII letters fold alike on both dialects (SQLite's lower() folds nothing else); the
    // display name is compared through its stored lowercase copy.
    const pattern = `%${escapeLike(search.toLowerCase())}%`
    return or(
      sql`lower(${name}) like ${pattern} escape '\\'`,
      sql`${s.sortName} like ${pattern} escape '\\'`,
      sql`lower(${s.description}) like ${pattern} escape '\\'`,
    )!
  }

  /** Strictly after `position` in the order (name, server id ascending; precedence descending). */
  function afterRule(name: SQL<string>, position: EntryPosition): SQL {
    const key = byteOrder(name)
    const id = byteOrder(sql`${s.id}`)
    const precedence = byteOrder(sql`${v.precedence}`)
    return sql`(${key} > ${position.name} or (${key} = ${position.name} and (${id} > ${position.serverId} or (${id} = ${position.serverId} and ${precedence} < ${position.precedence}))))`
  }

  return {
    /** One page of entries in the registry order; `limit` + 1 rows are read to learn whether more follow. */
    async list(query: EntryQuery): Promise<{ entries: RegistryEntry[]; more: boolean }> {
      const name = nameOf(query.namespace)
      const conditions: Array<SQL | undefined> = [
        eq(s.visibility, 'global'),
        // The registry leaves deleted versions out of a full listing, but an incremental reader
        // (updated_since) must learn that a version it holds was deleted.
        deletedRule(query.includeDeleted || query.updatedSince !== undefined),
      ]
      if (query.version !== undefined) conditions.push(versionRule(query.version))
      if (query.updatedSince !== undefined) conditions.push(or(gte(s.updatedAt, query.updatedSince), gte(v.updatedAt, query.updatedSince)))
      if (query.search !== undefined && query.search !== '') conditions.push(searchRule(name, query.search))
      if (query.after !== undefined) conditions.push(afterRule(name, query.after))
      // The page's keys first: the sort then carries three short columns per row instead of whole
      // servers and their stored documents, which made every page cost a sort of the catalogue.
      const keys = await db
        .select({ name, versionId: v.id })
        .from(v)
        .innerJoin(s, eq(s.id, v.serverId))
        .where(and(...conditions))
        .orderBy(asc(byteOrder(name)), asc(byteOrder(sql`${s.id}`)), desc(byteOrder(sql`${v.precedence}`)))
        .limit(query.limit + 1)
      const page = keys.slice(0, query.limit)
      if (page.length === 0) return { entries: [], more: false }
      const rows = await db
        .select({ server: columns, version: versionColumns })
        .from(v)
        .innerJoin(s, eq(s.id, v.serverId))
        .where(inArray(v.id, page.map((key) => key.versionId)))
      const byVersion = new Map(rows.map((row) => [row.version.id, row]))
      // Both reads run outside a transaction: an entry deleted between them is left out of this page.
      const entries = page.flatMap(({ name: entryName, versionId }) => {
        const row = byVersion.get(versionId)
        return row === undefined ? [] : [{ name: entryName, server: row.server, version: row.version }]
      })
      return { entries, more: keys.length > query.limit }
    },

    /**
     * The global server with this registry name: an imported server's `registry_name`, else a
     * hand-made server (no registry name) whose `<namespace>/<slug>` it is.
     */
    async findServer(registryName: string, namespace: string): Promise<ServerRow | undefined> {
      const prefix = `${namespace}/`
      const slug = registryName.startsWith(prefix) ? registryName.slice(prefix.length) : null
      const [row] = await db
        .select(columns)
        .from(s)
        .where(and(
          eq(s.visibility, 'global'),
          slug === null ? eq(s.registryName, registryName) : or(eq(s.registryName, registryName), and(isNull(s.registryName), eq(s.slug, slug))),
        ))
        // A registry name wins over a hand-made server's derived one.
        .orderBy(sql`case when ${s.registryName} is null then 1 else 0 end`)
        .limit(1)
      return row
    },

    /** The server's versions, newest first by semver precedence. */
    async versions(serverId: string, includeDeleted: boolean): Promise<VersionRow[]> {
      return db
        .select()
        .from(v)
        .where(and(eq(v.serverId, serverId), deletedRule(includeDeleted)))
        .orderBy(desc(byteOrder(sql`${v.precedence}`)))
    },

    /** One version of the server: `latest` (the version marked latest), else the exact version string. */
    async version(serverId: string, version: string, includeDeleted: boolean): Promise<VersionRow | undefined> {
      const [row] = await db
        .select()
        .from(v)
        .where(and(eq(v.serverId, serverId), versionRule(version), deletedRule(includeDeleted)))
        .limit(1)
      return row
    },
  }
}
