import { and, asc, count, eq, sql } from 'drizzle-orm'
import { violatedUniqueIndex } from '../errors.js'
import type { Database, Db } from '../types.js'

export type InstallationRow = Database['t']['mcpInstallations']['$inferSelect']
export type InstallationPatch = Partial<Pick<InstallationRow,
  'name' | 'versionId' | 'trackLatest' | 'targetKind' | 'targetIndex' | 'transport' | 'inputs' | 'satelliteId' | 'desired' | 'network' | 'restartGeneration'
  | 'disabledTools' | 'allowedTools' | 'pinTools' | 'heldTools'>>
export type ValueRow = Database['t']['mcpInstallationValues']['$inferSelect']

/**
 * The rows of installations themselves: inserted, taken for a write, changed, deleted, and found
 * by server (the catalogue's writes follow them). The lists and the values are read elsewhere
 * (installation-pages.ts, installation-values.ts).
 */
export function installationRows(database: Database, db: Db = database.db) {
  const i = database.t.mcpInstallations
  const { dialect } = database

  return {
    /** Null when the team has an installation of that name already (the unique index decides). */
    async insert(row: InstallationRow): Promise<InstallationRow | null> {
      const [inserted] = await db.insert(i).values(row).onConflictDoNothing({ target: [i.teamId, i.name] }).returning()
      return inserted ?? null
    },

    /**
     * Takes the installation's row for the rest of the transaction (PostgreSQL; SQLite transactions
     * are serialized). `FOR NO KEY UPDATE`: writers of the installation still go one at a time, but
     * a row that only refers to it (an instance's state, a log line, a call record) can be written
     * meanwhile — its foreign-key check takes a key-share lock, which `FOR UPDATE` would block, and
     * a transaction that then writes that same row would deadlock with it.
     */
    async lock(teamId: string, id: string): Promise<InstallationRow | undefined> {
      const query = db.select().from(i).where(and(eq(i.teamId, teamId), eq(i.id, id)))
      const [row] = dialect === 'postgresql' ? await query.for('no key update') : await query
      return row
    },

    /** Takes the installation's row by id alone (a satellite's report knows no team), as `lock` does. */
    async lockById(id: string): Promise<InstallationRow | undefined> {
      const query = db.select().from(i).where(eq(i.id, id))
      const [row] = dialect === 'postgresql' ? await query.for('no key update') : await query
      return row
    },

    /** Names in the team starting with `prefix` (to pick a free default name). */
    async namesLike(teamId: string, prefix: string): Promise<string[]> {
      const rows = await db.select({ name: i.name }).from(i).where(and(eq(i.teamId, teamId), sql`${i.name} like ${`${prefix}%`}`))
      return rows.map((row) => row.name)
    },

    /**
     * Changes the row, and moves `spec_revision` when `respec` (the change alters what runs).
     * Null when the name is taken in the team ('name_taken') or the row is gone.
     */
    async update(id: string, patch: InstallationPatch, options: { respec: boolean; now: Date }): Promise<InstallationRow | 'name_taken' | null> {
      try {
        const [row] = await db
          .update(i)
          .set({ ...patch, updatedAt: options.now, ...(options.respec ? { specRevision: sql`${i.specRevision} + 1` } : {}) })
          .where(eq(i.id, id))
          .returning()
        return row ?? null
      } catch (error) {
        if (isNameTaken(error)) return 'name_taken'
        throw error
      }
    },

    async delete(id: string): Promise<InstallationRow | null> {
      const [row] = await db.delete(i).where(eq(i.id, id)).returning()
      return row ?? null
    },

    /** How many installations use a server (a server in use is not deleted). */
    async countForServer(serverId: string): Promise<number> {
      const [row] = await db.select({ n: count() }).from(i).where(eq(i.serverId, serverId))
      return row?.n ?? 0
    },

    /** Every installation of a server (to follow an edit of the server's own entry). */
    async ofServer(serverId: string): Promise<InstallationRow[]> {
      return db.select().from(i).where(eq(i.serverId, serverId)).orderBy(asc(i.id))
    },

    /** The installations that follow a server's latest version. */
    async trackingLatest(serverId: string): Promise<InstallationRow[]> {
      return db.select().from(i).where(and(eq(i.serverId, serverId), eq(i.trackLatest, true)))
    },
  }
}

/** The team's name index (PostgreSQL names the index; SQLite the columns). */
function isNameTaken(error: unknown): boolean {
  const index = violatedUniqueIndex(error)
  return index === 'mcp_installations_team_name_unique' || (index?.includes('mcp_installations.name') ?? false)
}
