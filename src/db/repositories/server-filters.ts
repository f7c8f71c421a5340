import { and, asc, desc, eq, exists, getTableColumns, inArray, not, or, sql, type SQL } from 'drizzle-orm'
import type { Database } from '../types.js'

/** Who reads the catalogue: a global admin sees every server, anyone else the global ones and their teams'. */
export interface CatalogueViewer {
  userId: string
  isGlobalAdmin: boolean
}

export interface ServerFilter {
  categoryId?: string
  status?: 'active' | 'deprecated' | 'maintenance' | 'disabled'
  transportType?: 'stdio' | 'http' | 'sse'
  language?: string
  runtime?: string
  featured?: boolean
  tag?: string
  /** true: the latest version has a package of a type satellites run, or a remote; false: the others. */
  installable?: boolean
}

export type ServerSort = 'name' | '-created_at' | '-updated_at'

type Servers = Database['t']['mcpServers']
export type ServerRow = Omit<Servers['$inferSelect'], 'searchVector' | 'seq'>

/** Every column a server answer needs: not the PostgreSQL search vector, not the internal seq. */
export function serverColumns(database: Database) {
  const { searchVector: _vector, seq: _seq, ...columns } = getTableColumns(database.t.mcpServers)
  return columns
}

/**
 * The visibility rule and the list filters as SQL, shared by the list, the search, the counts
 * and the category counts, so that what a caller can see is decided in one place. Team servers
 * are visible to their team's members; the rule is here before team servers can be created.
 */
export function serverConditions(database: Database, viewer: CatalogueViewer, filter: ServerFilter = {}, part?: 'global' | 'team'): SQL[] {
  const { mcpServers: s, mcpServerTags: tags, teamMembers } = database.t
  const conditions: SQL[] = []
  if (!viewer.isGlobalAdmin) {
    const myTeams = database.db.select({ teamId: teamMembers.teamId }).from(teamMembers).where(eq(teamMembers.userId, viewer.userId))
    const global = eq(s.visibility, 'global')
    const mine = and(eq(s.visibility, 'team'), inArray(s.ownerTeamId, myTeams))!
    // `part` picks one side of the rule, for counts that add the two (each side then uses the
    // (visibility, owner_team_id) index instead of testing the OR on every row).
    // Both sides together (for the page itself) must not steer SQLite's planner to an OR over the
    // visibility index, which would sort every visible server before taking a page: the unary `+`
    // keeps the sort order's index in charge.
    const both = database.dialect === 'sqlite' ? sql`(+${s.visibility} = 'global' or ${mine})` : or(global, mine)!
    conditions.push(part === 'global' ? global : part === 'team' ? mine : both)
  }
  if (filter.categoryId !== undefined) conditions.push(eq(s.categoryId, filter.categoryId))
  if (filter.status !== undefined) conditions.push(eq(s.status, filter.status))
  if (filter.transportType !== undefined) conditions.push(eq(s.transportType, filter.transportType))
  if (filter.language !== undefined) conditions.push(eq(s.languageKey, caseKey(filter.language)))
  if (filter.runtime !== undefined) conditions.push(eq(s.runtimeKey, caseKey(filter.runtime)))
  if (filter.featured !== undefined) conditions.push(eq(s.featured, filter.featured))
  if (filter.tag !== undefined) {
    const tag = normalizeTag(filter.tag)
    conditions.push(exists(database.db.select({ one: sql`1` }).from(tags).where(and(eq(tags.serverId, s.id), eq(tags.tag, tag)))))
  }
  if (filter.installable !== undefined) {
    const runnable = runnableLatestVersion(database)
    conditions.push(filter.installable ? runnable : not(runnable))
  }
  return conditions
}

/**
 * The registry types a satellite fetches and starts (the reference satellite's launch.ts); it
 * refuses `nuget` and `mcpb` packages, which the catalogue holds all the same.
 */
export const SATELLITE_REGISTRY_TYPES = ['npm', 'pypi', 'oci', 'docker'] as const

/** SQL/JSON path: an element of the array whose `registry_type` is one a satellite runs. */
const packagePath = `$[*] ? (${SATELLITE_REGISTRY_TYPES.map((type) => `@.registry_type == "${type}"`).join(' || ')})`

/**
 * Whether the server has a latest version with something a satellite runs: a package of one of
 * SATELLITE_REGISTRY_TYPES, or a remote. A version without packages (or remotes) of its own runs
 * the server's, as installations read them (`version.packages ?? server.packages`). A server
 * without a latest version has nothing to install.
 */
function runnableLatestVersion(database: Database): SQL {
  const { mcpServers: s, mcpServerVersions: v } = database.t
  const packages = sql`coalesce(${v.packages}, ${s.packages})`
  const remotes = sql`coalesce(${v.remotes}, ${s.remotes})`
  const runs = database.dialect === 'sqlite'
    ? sql`(exists (select 1 from json_each(${packages}) as package where ${inArray(sql`json_extract(package.value, '$.registry_type')`, [...SATELLITE_REGISTRY_TYPES])}) or json_array_length(${remotes}) > 0)`
    : sql`(${packages} @? ${packagePath}::jsonpath or jsonb_array_length(${remotes}) > 0)`
  // The literal `is_latest` test matches the partial unique index on the latest version.
  const latest = database.dialect === 'sqlite' ? sql`${v.isLatest} = 1` : sql`${v.isLatest}`
  return exists(database.db.select({ one: sql`1` }).from(v).where(and(eq(v.serverId, s.id), latest, runs)))
}

/** Text compared byte by byte on both dialects, so that both sort alike whatever the database locale. */
export const binary = (database: Database, column: SQL | Servers['sortName']): SQL =>
  database.dialect === 'postgresql' ? sql`${column} collate "C"` : sql`${column}`

/** Each sort ends with the id, a unique tie-breaker: pages never repeat or skip a row. */
export function serverOrder(database: Database, sort: ServerSort): SQL[] {
  const s = database.t.mcpServers
  switch (sort) {
    case 'name':
      return [asc(binary(database, s.sortName)), asc(s.id)]
    case '-created_at':
      return [desc(s.createdAt), desc(s.id)]
    case '-updated_at':
      return [desc(s.updatedAt), desc(s.id)]
  }
}

/**
 * How category names, languages and runtimes compare: lowercased here, by Unicode rules
 * (`Ärzte` = `ärzte`), and stored next to the value (SQLite's lower() folds ASCII letters only,
 * so the database cannot be asked to do it).
 */
export const caseKey = (value: string): string => value.normalize('NFKC').toLowerCase()

/** Tags are trimmed, lowercased, with inner whitespace collapsed. */
export const normalizeTag = (tag: string): string => tag.trim().replace(/\s+/g, ' ').toLowerCase()
