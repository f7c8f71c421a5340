import { getTableColumns, getTableName, sql, type SQL, type Table } from 'drizzle-orm'
import { v7 as uuidv7 } from 'uuid'
import { catalogueTransaction } from '../../db/repositories/catalogue-revision.js'
import { caseKey } from '../../db/repositories/server-filters.js'
import type { Database, Db } from '../../db/types.js'
import { SeededRandom } from './random.js'
import { ServerFactory, type Planned } from './servers.js'
import { SEED_CATEGORIES } from './vocabulary.js'

/**
 * A realistic, varied and deterministic catalogue of global MCP servers, written straight to the
 * database in batches: for load tests, benchmarks and local development (`npm run seed:catalogue`).
 *
 * Every row keeps the rules the API keeps: slugs unique and derived from the name like the service
 * derives them (`name`, `name-2`, …, never a reserved path segment), tags normalized and mirrored
 * in mcp_server_tags, sort_name the lowercased name, packages and remotes valid per their schemas
 * (environment variables with their flags spelled out), updated_at never before created_at, and
 * versions with their semver precedence key and the latest mark (the highest active release, else
 * the highest active pre-release) matching the server's latest_version.
 *
 * The same seed gives the same servers (names, descriptions, tags, …); ids are fresh UUIDv7 from
 * each server's creation time, and timestamps are relative to `now`. Servers are added to whatever
 * the catalogue holds: slugs taken already get the next free suffix, and a slug taken meanwhile by
 * someone else skips that server (ON CONFLICT DO NOTHING) instead of failing the batch.
 *
 * Each batch is one catalogue transaction (the revision row first, like every catalogue writer)
 * with one insert statement per table; the database's triggers keep the full-text index and the
 * catalogue revision up to date as for any other write.
 */

export interface SeedCatalogueOptions {
  /** How many servers to add. */
  servers: number
  /** How many categories of the built-in list to use (created when missing); 24 by default. */
  categories?: number
  /** The PRNG seed; 42 by default. */
  seed?: number
  /** 0–3 versions per server (false: none); true by default. */
  versions?: boolean
  /** Servers per transaction (one insert statement per table); 1 000 by default. */
  batchSize?: number
  /** The reference time; timestamps spread over the two years before it. */
  now?: Date
  /** Called after each batch with the servers handled so far. */
  onProgress?: (done: number, total: number) => void
}

export interface SeedCatalogueResult {
  /** Servers inserted. */
  servers: number
  /** Servers skipped because their slug was taken meanwhile. */
  skipped: number
  categoriesCreated: number
  categoriesUsed: number
  tags: number
  versions: number
  ms: number
}

const DEFAULT_BATCH = 1000

/**
 * Inserts rows through one statement whose only parameter is the rows as JSON, unpacked by the
 * database (SQLite: json_each; PostgreSQL: jsonb_to_recordset with each column's type): no
 * per-value parameters to bind, so a batch of any size stays far below both parameter limits
 * (32 766 on SQLite, 65 535 on PostgreSQL), and no per-value work in the query builder, which
 * costs more than the database's own work here (about 30 s per 100 000 servers with their tags and
 * versions, measured). The column list comes from the Drizzle table: the columns the rows set
 * (the others take their defaults), never a generated one or `seq`. Values are encoded as the
 * driver would: SQLite timestamps as epoch milliseconds and booleans as 0/1 (what `->>` gives for
 * JSON true/false), PostgreSQL timestamps as ISO text; JSON columns hold the value itself.
 * Answers the ids inserted when `returning`.
 */
async function insertJson(
  database: Database,
  tx: Db,
  table: Table,
  rows: Array<Record<string, unknown>>,
  { conflictOn, returning }: { conflictOn?: string; returning?: boolean } = {},
): Promise<string[]> {
  if (rows.length === 0) return []
  const sqlite = database.dialect === 'sqlite'
  const columns = Object.entries(getTableColumns(table)).filter(([key, column]) => key !== 'seq' && column.generated === undefined && key in rows[0]!)
  const json = JSON.stringify(rows.map((row) => {
    const out: Record<string, unknown> = {}
    for (const [key, column] of columns) {
      const value = row[key]
      out[column.name] = value instanceof Date ? (sqlite ? value.getTime() : value.toISOString()) : value ?? null
    }
    return out
  }))
  const quoted = (name: string) => `"${name}"`
  const names = columns.map(([, column]) => quoted(column.name)).join(', ')
  const tail = `${conflictOn === undefined ? '' : ` on conflict (${quoted(conflictOn)}) do nothing`}${returning === true ? ' returning "id"' : ''}`
  const target = quoted(getTableName(table))
  if (sqlite) {
    // `where true`: SQLite would read `on conflict` after a bare FROM as a join constraint.
    const values = columns.map(([, column]) => `value ->> '$.${column.name}'`).join(', ')
    const query = sql`${sql.raw(`insert into ${target} (${names}) select ${values} from json_each(`)}${json}${sql.raw(`) where true${tail}`)}`
    const remote = tx as unknown as { all(query: SQL): Promise<unknown[][]>; run(query: SQL): Promise<unknown> }
    if (returning !== true) {
      await remote.run(query)
      return []
    }
    return (await remote.all(query)).map((row) => row[0] as string)
  }
  const types = columns.map(([, column]) => `${quoted(column.name)} ${column.getSQLType()}`).join(', ')
  const query = sql`${sql.raw(`insert into ${target} (${names}) select ${names} from jsonb_to_recordset(`)}${json}${sql.raw(`::jsonb) as r(${types})${tail}`)}`
  const result = await tx.execute(query)
  return returning === true ? result.rows.map((row) => (row as { id: string }).id) : []
}

async function ensureCategories(database: Database, count: number, now: Date): Promise<{ created: number; ids: Map<string, string>; seeded: string[] }> {
  const { db, t } = database
  const wanted = SEED_CATEGORIES.slice(0, count)
  let created = 0
  if (wanted.length > 0) {
    const rows = await catalogueTransaction(database, (tx) => tx.insert(t.mcpCategories).values(wanted.map((category, i) => ({
      id: uuidv7(), name: category.name, nameKey: caseKey(category.name), description: category.description, icon: category.icon, sortOrder: (i + 1) * 10, createdAt: now, updatedAt: now,
    }))).onConflictDoNothing().returning({ id: t.mcpCategories.id }))
    created = rows.length
  }
  const all = await db.select({ id: t.mcpCategories.id, name: t.mcpCategories.name }).from(t.mcpCategories)
  const byName = new Map(all.map((row) => [caseKey(row.name), row.id]))
  const ids = new Map<string, string>()
  for (const category of wanted) ids.set(category.name.toLowerCase(), byName.get(caseKey(category.name))!)
  return { created, ids, seeded: [...ids.values()] }
}

/** One transaction: the servers whose slug is still free, then their tags and versions. */
async function insertBatch(database: Database, batch: Planned[]): Promise<{ servers: number; tags: number; versions: number }> {
  const { t } = database
  return catalogueTransaction(database, async (tx: Db) => {
    const inserted = await insertJson(database, tx, t.mcpServers, batch.map((p) => p.server), { conflictOn: 'slug', returning: true })
    const kept = new Set(inserted)
    const mine = kept.size === batch.length ? batch : batch.filter((p) => kept.has(p.server.id))
    const tags = mine.flatMap((p) => p.server.tags.map((tag) => ({ serverId: p.server.id, tag })))
    const versions = mine.flatMap((p) => p.versions)
    await insertJson(database, tx, t.mcpServerTags, tags)
    await insertJson(database, tx, t.mcpServerVersions, versions)
    return { servers: mine.length, tags: tags.length, versions: versions.length }
  })
}

/** Adds `options.servers` global servers (with tags, categories and versions) to the catalogue. */
export async function seedCatalogue(database: Database, options: SeedCatalogueOptions): Promise<SeedCatalogueResult> {
  const began = performance.now()
  const total = Math.max(0, Math.floor(options.servers))
  const categoryCount = Math.min(Math.max(0, options.categories ?? 24), SEED_CATEGORIES.length)
  const now = options.now ?? new Date()
  const batchSize = Math.max(1, options.batchSize ?? DEFAULT_BATCH)

  const categories = await ensureCategories(database, categoryCount, now)
  const { db, t } = database
  const taken = (await db.select({ slug: t.mcpServers.slug }).from(t.mcpServers)).map((row) => row.slug)
  const factory = new ServerFactory(new SeededRandom(options.seed ?? 42), categories.ids, categories.seeded, taken, options.versions ?? true, now.getTime(), total)

  const result: SeedCatalogueResult = { servers: 0, skipped: 0, categoriesCreated: categories.created, categoriesUsed: categories.seeded.length, tags: 0, versions: 0, ms: 0 }
  // The next batch is generated while the database writes the previous one (PostgreSQL works in
  // a process of its own; on SQLite, which writes in this thread, this changes nothing).
  let pending: Promise<void> = Promise.resolve()
  for (let done = 0; done < total;) {
    const size = Math.min(batchSize, total - done)
    const first = done
    const batch = Array.from({ length: size }, (_, i) => factory.make(first + i))
    await pending
    done += size
    pending = insertBatch(database, batch).then((written) => {
      result.servers += written.servers
      result.skipped += size - written.servers
      result.tags += written.tags
      result.versions += written.versions
      options.onProgress?.(first + size, total)
    })
  }
  await pending
  // Fresh planner statistics after a bulk load (PostgreSQL's autovacuum would get there later).
  if (database.dialect === 'postgresql' && result.servers > 0) {
    await db.execute(sql`analyze mcp_servers, mcp_server_tags, mcp_server_versions, mcp_categories`)
  }
  result.ms = performance.now() - began
  return result
}

/** Every server in the catalogue, for reports. */
export async function catalogueSize(database: Database): Promise<number> {
  const { db, t } = database
  const [row] = await db.select({ n: sql<number>`count(*)`.mapWith(Number) }).from(t.mcpServers)
  return row?.n ?? 0
}
