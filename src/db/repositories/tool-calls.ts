import { and, asc, desc, eq, gte, lt, sql, type SQL } from 'drizzle-orm'
import { ingestPostgres, ingestSqlite, type CallBatch } from './tool-call-ingest.js'
import type { Database, Db } from '../types.js'

export type ToolCallRow = Database['t']['toolCalls']['$inferSelect']
export type { CallBatch, ReportedCall, ToolCallOutcome } from './tool-call-ingest.js'

export type UsageGroup = 'tool' | 'user' | 'installation' | 'day'

export interface UsageRow {
  /** The tool, the user id (null for calls without one), the installation id, or the day (YYYY-MM-DD, UTC). */
  key: string | null
  calls: number
  ok: number
  error: number
  refused: number
  durationMsSum: number
}

const HOUR_MS = 3600_000
const DAY_MS = 24 * HOUR_MS

export type ToolCallsRepository = ReturnType<typeof toolCallsRepository>

/** Tool calls: each batch taken once, the raw calls, and the hourly figures usage is read from. */
export function toolCallsRepository(database: Database, executor: Db = database.db) {
  const { t } = database
  const db = executor
  const calls = t.toolCalls
  const batches = t.toolCallBatches
  const hours = t.toolCallHours

  return {
    /** The team of an installation; undefined when there is none by that id. */
    async teamOfInstallation(installationId: string): Promise<string | undefined> {
      const [row] = await db.select({ teamId: t.mcpInstallations.teamId }).from(t.mcpInstallations).where(eq(t.mcpInstallations.id, installationId))
      return row?.teamId
    },

    /**
     * Takes a batch whole or not at all (one statement on PostgreSQL, one transaction on SQLite):
     * its id first (per satellite), so that the same batch posted twice, even at the same moment,
     * is taken once — the second insert finds the first's row (on PostgreSQL it waits for the
     * first to commit) and the batch is a duplicate; then the calls and their hourly figures.
     * Answers false for a duplicate, which changes nothing.
     */
    async ingest(batch: CallBatch): Promise<boolean> {
      return database.dialect === 'postgresql' ? ingestPostgres(db, batch) : ingestSqlite(database, batch)
    },

    /**
     * A team's figures for the hours starting in [from, to), grouped by `group`: every member's
     * calls, or one member's own (`userId`). Read from the hourly table alone.
     */
    async usage(teamId: string, from: Date, to: Date, group: UsageGroup, userId: string | null): Promise<UsageRow[]> {
      const keyOf: SQL = group === 'tool' ? sql`${hours.tool}`
        : group === 'user' ? sql`${hours.userId}`
          : group === 'installation' ? sql`${hours.installationId}`
            : database.dialect === 'sqlite' ? sql`(${hours.hour} / ${DAY_MS})` : sql`floor(extract(epoch from ${hours.hour}) / 86400)::bigint`
      const where = and(eq(hours.teamId, teamId), gte(hours.hour, from), lt(hours.hour, to), ...(userId === null ? [] : [eq(hours.userId, userId)]))
      const rows = await db
        .select({
          key: sql<string | number>`${keyOf}`,
          calls: sql<number>`sum(${hours.calls})`.mapWith(Number),
          ok: sql<number>`sum(${hours.ok})`.mapWith(Number),
          error: sql<number>`sum(${hours.error})`.mapWith(Number),
          refused: sql<number>`sum(${hours.refused})`.mapWith(Number),
          durationMsSum: sql<number>`sum(${hours.durationMsSum})`.mapWith(Number),
        })
        .from(hours)
        .where(where)
        .groupBy(keyOf)
      const answer = rows.map((row) => ({
        ...row,
        key: group === 'day' ? new Date(Number(row.key) * DAY_MS).toISOString().slice(0, 10) : group === 'user' && row.key === '' ? null : String(row.key),
      }))
      if (group === 'day') return answer.sort((a, b) => (a.key! < b.key! ? -1 : 1))
      return answer.sort((a, b) => b.calls - a.calls || ((a.key ?? '') < (b.key ?? '') ? -1 : (a.key ?? '') > (b.key ?? '') ? 1 : 0))
    },

    /** An installation's raw calls, newest first: all of them, or one member's own. */
    async callsOf(installationId: string, userId: string | null, limit: number, offset: number): Promise<{ rows: ToolCallRow[]; total: number }> {
      const where = userId === null ? eq(calls.installationId, installationId) : and(eq(calls.installationId, installationId), eq(calls.userId, userId))
      const [rows, [total]] = await Promise.all([
        db.select().from(calls).where(where).orderBy(desc(calls.at), desc(calls.id)).limit(limit).offset(offset),
        db.select({ n: sql<number>`count(*)`.mapWith(Number) }).from(calls).where(where),
      ])
      return { rows, total: total?.n ?? 0 }
    },

    /** Deletes raw calls and batch ids older than `rawBefore`, and hourly figures of hours before `hoursBefore`. */
    async purge(rawBefore: Date, hoursBefore: Date): Promise<void> {
      await db.delete(calls).where(lt(calls.at, rawBefore))
      await db.delete(batches).where(lt(batches.receivedAt, rawBefore))
      await db.delete(hours).where(lt(hours.hour, hoursBefore))
    },

    /** Every hourly row of a team, oldest first (tests and benchmarks). */
    async hoursOf(teamId: string): Promise<Array<typeof hours.$inferSelect>> {
      return db.select().from(hours).where(eq(hours.teamId, teamId)).orderBy(asc(hours.hour))
    },
  }
}
