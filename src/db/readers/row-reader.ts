import { getTableColumns, Placeholder, type Table } from 'drizzle-orm'
import type { AnyPgColumn } from 'drizzle-orm/pg-core'
import { KeptAnswers, keptAnswers } from '../feed/kept-answers.js'
import type { Database } from '../types.js'

/** How many answers of one lookup are kept in memory, and for how long at most. */
export const KEPT_ANSWERS_MAX = 10_000
export const KEPT_ANSWERS_MAX_AGE_MS = 60_000

export interface ReaderOptions<O, A> {
  /** Tables that come from a left join: null when their primary key is. */
  optional?: readonly O[]
  /**
   * Answer again with the row read for the same parameter until a change ends it (kept-answers.ts).
   * Keyed by the parameters' values, for lookups whose answer depends on nothing else (no clock: the caller
   * checks expiry itself). Answers are frozen, since requests share them.
   *
   * On PostgreSQL, where another instance's commit is known only by its notification, answers are
   * kept only when `topics` says which notifications end them; without it every call reads there,
   * while SQLite, which sees every change by its stamp, keeps them regardless.
   */
  reuse?: boolean
  /** The change topics an answer depends on (`user:<id>`, …); see kept-answers.ts. */
  topics?: { families: readonly string[]; of: (answer: A) => readonly string[] }
}

/** A selection of whole tables, e.g. `{ session: t.sessions, user: t.users }`. */
type Parts = Record<string, Table>
type Rows<P extends Parts> = { [K in keyof P]: P[K]['$inferSelect'] }

/**
 * The credential lookups every authenticated request makes, run on the driver directly: the SQL
 * is the query builder's (built once, from a flat selection of every column of each table, in
 * order), the statement is prepared once (better-sqlite3) or named and described once (pg, see
 * pg-row-statement.ts), and its array row is decoded here with each column's own decoder, as
 * Drizzle would. This removes Drizzle's per-call work (about a tenth of a session read's CPU).
 * Tables named in `optional` come from a left join: they are null when their primary key is.
 */
type Answer<P extends Parts, O extends keyof P> = Omit<Rows<P>, O> & { [K in O]: Rows<P>[K] | null }

export function rowReader<P extends Parts, O extends keyof P = never>(
  database: Database,
  name: string,
  parts: P,
  build: (selection: Record<string, AnyPgColumn>) => { toSQL(): { sql: string; params: unknown[] } },
  { optional = [], reuse = false, topics }: ReaderOptions<O, Answer<P, O>> = {},
): (values: Record<string, unknown>) => Promise<Answer<P, O> | undefined> {
  const layout: Array<{ part: string; key: string; column: AnyPgColumn }> = []
  const selection: Record<string, AnyPgColumn> = {}
  for (const [part, table] of Object.entries(parts)) {
    for (const [key, column] of Object.entries(getTableColumns(table))) {
      selection[`${part}.${key}`] = column as AnyPgColumn
      layout.push({ part, key, column: column as AnyPgColumn })
    }
  }
  const query = build(selection).toSQL()
  // The statement's parameters: placeholders are filled per call (as given: no column encoding),
  // the rest are the query's own constants, already encoded.
  const params = query.params.map((param): { name: string } | { value: unknown } => (param instanceof Placeholder ? { name: String(param.name) } : { value: param }))
  const bind = (values: Record<string, unknown>) => params.map((param) => ('name' in param ? values[param.name] : param.value))
  const keyIndex = new Map((optional as readonly string[]).map((part) => [part, layout.findIndex((field) => field.part === part && field.column.primary)]))
  const decode = (row: unknown[]) => {
    const result: Record<string, Record<string, unknown> | null> = {}
    for (const part of Object.keys(parts)) result[part] = keyIndex.has(part) && row[keyIndex.get(part)!] === null ? null : {}
    for (let index = 0; index < layout.length; index++) {
      const { part, key, column } = layout[index]!
      const target = result[part]
      if (target === null) continue
      const value = row[index]
      target![key] = value === null ? null : column.mapFromDriverValue(value)
    }
    return result
  }
  const frozen = (row: unknown[]) => {
    const answer = decode(row)
    for (const part of Object.values(answer)) if (part !== null) Object.freeze(part)
    return Object.freeze(answer)
  }
  if (reuse) {
    const keyNames = params.flatMap((param) => ('name' in param ? [param.name] : []))
    const keyOf = (values: Record<string, unknown>) => keyNames.map((keyName) => String(values[keyName])).join('\n')
    const read = database.prepareRow(name, query.sql)
    const kept = keptAnswers(database, name, () => new KeptAnswers(name, database.changes, {
      families: topics?.families, topicsOf: topics?.of as never, max: KEPT_ANSWERS_MAX, maxAgeMs: KEPT_ANSWERS_MAX_AGE_MS,
    }))
    return ((values: Record<string, unknown>) => kept.read(keyOf(values), async () => {
      const row = await read(bind(values))
      return row === undefined ? undefined : frozen(row)
    })) as never
  }
  const read = database.prepareRow(name, query.sql)
  return (async (values: Record<string, unknown>) => {
    const row = await read(bind(values))
    return row === undefined ? undefined : decode(row)
  }) as never
}
