import { and, asc, count, desc, inArray, sql, type SQL } from 'drizzle-orm'
import type { Database, Db } from '../types.js'
import { serverColumns, serverConditions, type CatalogueViewer, type ServerFilter, type ServerRow } from './server-filters.js'
import type { Page } from './servers.js'

/**
 * Ranked full-text search over name, tags and description, with the list filters and the
 * visibility rule. `words` are plain words (letters and digits only, lowercased; see
 * modules/catalogue/search-terms.ts), so nothing of the caller's text reaches a query parser as
 * syntax. Every word must match, as a prefix ("postg" finds PostgreSQL). Order: servers with a
 * word in the name first, then by relevance (name weighs most, then tags, then description), then id.
 *
 * SQLite: FTS5 with bm25 weights 10/4/1. PostgreSQL: the weighted `search_vector` (A/B/C) with
 * ts_rank; with pg_trgm, names within a small typo of the query match too, ranked after every
 * full-text match.
 */
/** Shorter words are matched as prefixes only: a one-letter change to a short word makes another word. */
const TYPO_MIN_LENGTH = 5

export type ServerSearch = ReturnType<typeof serverSearch>

export function serverSearch(database: Database, options: { trigram: boolean }, executor: Db = database.db) {
  const { t } = database
  const db = executor
  const s = t.mcpServers
  const columns = serverColumns(database)

  interface Plan {
    /** SQLite: the ranked FTS5 hits, joined to the servers. */
    join: { table: SQL; on: SQL } | undefined
    /** PostgreSQL: the match condition on the servers themselves. */
    match: SQL | undefined
    order: SQL[]
  }

  function sqlite(words: string[]): Plan {
    const terms = words.map((word) => `"${word}"*`)
    const all = terms.join(' AND ')
    const inName = `name : (${terms.join(' OR ')})`
    const hits = sql`(select rowid as hit, bm25(mcp_servers_fts, 10.0, 4.0, 1.0) as score from mcp_servers_fts where mcp_servers_fts match ${all}) as hits`
    return {
      join: { table: hits, on: sql`hits.hit = ${s.seq}` },
      order: [
        sql`case when ${s.seq} in (select rowid from mcp_servers_fts where mcp_servers_fts match ${inName}) then 0 else 1 end`,
        sql`hits.score`,
        asc(s.id),
      ],
      match: undefined,
    }
  }

  function postgresql(words: string[], phrase: string): Plan {
    const all = sql`to_tsquery('simple', ${words.map((word) => `${word}:*`).join(' & ')})`
    const inName = sql`to_tsquery('simple', ${words.map((word) => `${word}:*A`).join(' | ')})`
    const fullText = sql`${s.searchVector} @@ ${all}`
    // With pg_trgm, each word must still match: as a word prefix anywhere, or as a small typo of a
    // whole word of the name (strict word similarity, so fragments from inside a word do not count).
    const typo = options.trigram && words.some((word) => word.length >= TYPO_MIN_LENGTH)
      ? and(...words.map((word) => word.length >= TYPO_MIN_LENGTH
        ? sql`(${s.searchVector} @@ to_tsquery('simple', ${`${word}:*`}) or lower(${s.name}) %>> ${word})`
        : sql`${s.searchVector} @@ to_tsquery('simple', ${`${word}:*`})`))
      : undefined
    return {
      join: undefined,
      order: [
        sql`case when ${s.searchVector} @@ ${inName} then 0 when ${fullText} then 1 else 2 end`,
        desc(sql`ts_rank(${s.searchVector}, ${all})`),
        // The similarity only orders the typo matches; full-text matches skip computing it.
        ...(typo === undefined ? [] : [desc(sql`case when ${fullText} then 0 else strict_word_similarity(${phrase}, lower(${s.name})) end`)]),
        asc(s.id),
      ],
      // The typo condition admits every full-text match already (each word: prefix or typo).
      match: typo ?? fullText,
    }
  }

  return {
    with: (tx: Db) => serverSearch(database, options, tx),

    async search(words: string[], viewer: CatalogueViewer, filter: ServerFilter, limit: number, offset: number): Promise<Page<ServerRow>> {
      if (words.length === 0) return { rows: [], total: 0 }
      const plan = database.dialect === 'sqlite' ? sqlite(words) : postgresql(words, words.join(' '))
      const where = and(plan.match, ...serverConditions(database, viewer, filter))
      const { join } = plan
      const from = <Q extends { innerJoin: (table: SQL, on: SQL) => Q }>(query: Q): Q => (join === undefined ? query : query.innerJoin(join.table, join.on))
      // Ranked on narrow rows (the id, the sort keys and a window count of the matches, so the
      // match runs once), then only the page's servers are read in full.
      const ranked = await from(db.select({ id: s.id, total: sql<number>`count(*) over ()`.mapWith(Number) }).from(s).$dynamic())
        .where(where).orderBy(...plan.order).limit(limit).offset(offset)
      if (ranked.length === 0) {
        if (offset === 0) return { rows: [], total: 0 }
        const [counted] = await from(db.select({ n: count() }).from(s).$dynamic()).where(where)
        return { rows: [], total: counted?.n ?? 0 }
      }
      const position = new Map(ranked.map((hit, index) => [hit.id, index]))
      const rows = await db.select(columns).from(s).where(inArray(s.id, ranked.map((hit) => hit.id)))
      rows.sort((a, b) => position.get(a.id)! - position.get(b.id)!)
      return { rows, total: ranked[0]!.total }
    },
  }
}

/** Whether pg_trgm is installed (always false on SQLite); read once at start. */
export async function trigramAvailable(database: Database): Promise<boolean> {
  if (database.dialect !== 'postgresql') return false
  const result = await database.db.execute(sql`select 1 from pg_extension where extname = 'pg_trgm'`)
  return result.rows.length === 1
}
