import { getTableColumns, Placeholder, type Table } from 'drizzle-orm'
import type { AnyPgColumn } from 'drizzle-orm/pg-core'
import type { Database } from './types.js'

export interface ReaderOptions<O> {
  /** Tables that come from a left join: null when their primary key is. */
  optional?: readonly O[]
  /**
   * Answer again with the last row read for the same parameter while the database provably has
   * not changed since (`Database.prepareReusedRow`: SQLite only). For lookups with one parameter
   * whose answer depends on nothing else (no clock: the caller checks expiry itself). Answers
   * are frozen, since requests share them.
   */
  reuse?: boolean
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
export function rowReader<P extends Parts, O extends keyof P = never>(
  database: Database,
  name: string,
  parts: P,
  build: (selection: Record<string, AnyPgColumn>) => { toSQL(): { sql: string; params: unknown[] } },
  { optional = [], reuse = false }: ReaderOptions<O> = {},
): (values: Record<string, unknown>) => Promise<(Omit<Rows<P>, O> & { [K in O]: Rows<P>[K] | null }) | undefined> {
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
  if (reuse) {
    const named = params.filter((param) => 'name' in param)
    if (named.length !== 1) throw new Error(`rowReader ${name}: a reused answer is keyed by one parameter, not ${named.length}`)
    const keyName = (named[0] as { name: string }).name
    const reused = database.prepareReusedRow?.(name, query.sql, (row) => {
      const answer = decode(row)
      for (const part of Object.values(answer)) if (part !== null) Object.freeze(part)
      return Object.freeze(answer)
    })
    if (reused !== undefined) return ((values: Record<string, unknown>) => reused(String(values[keyName]), bind(values))) as never
  }
  const read = database.prepareRow(name, query.sql)
  return (async (values: Record<string, unknown>) => {
    const row = await read(bind(values))
    return row === undefined ? undefined : decode(row)
  }) as never
}
