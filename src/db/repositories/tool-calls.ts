import { and, asc, desc, eq, gte, lt, sql, type SQL } from 'drizzle-orm'
import { newId } from '../ids.js'
import type { Database, Db } from '../types.js'

export type ToolCallRow = Database['t']['toolCalls']['$inferSelect']
export type ToolCallOutcome = ToolCallRow['outcome']

/** One call as a satellite reports it. */
export interface ReportedCall {
  at: Date
  userId: string | null
  clientId: string | null
  tool: string
  outcome: ToolCallOutcome
  durationMs: number
}

/** Where a batch's calls happened. */
export interface CallBatch {
  satelliteId: string
  batchId: string
  instanceId: string
  installationId: string
  teamId: string
  receivedAt: Date
  calls: readonly ReportedCall[]
}

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
/** Rows per INSERT statement: well under both drivers' parameter limits. */
const CHUNK = 500

/** The start of the hour `at` falls in. */
export const hourOf = (at: Date): Date => new Date(Math.floor(at.getTime() / HOUR_MS) * HOUR_MS)

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
     * Takes a batch in one transaction: its id first (per satellite), so that the same batch posted
     * twice, even at the same moment, is taken once — the second insert finds the first's row (on
     * PostgreSQL it waits for the first to commit) and the batch is a duplicate; then the calls and
     * their hourly figures. Answers false for a duplicate, which changes nothing.
     */
    async ingest(batch: CallBatch): Promise<boolean> {
      return database.transaction(async (tx) => {
        const taken = await tx.insert(batches)
          .values({ satelliteId: batch.satelliteId, batchId: batch.batchId, receivedAt: batch.receivedAt })
          .onConflictDoNothing()
          .returning({ batchId: batches.batchId })
        if (taken.length === 0) return false
        const rows = batch.calls.map((call) => ({
          id: newId(), satelliteId: batch.satelliteId, instanceId: batch.instanceId, installationId: batch.installationId, teamId: batch.teamId,
          userId: call.userId, clientId: call.clientId, tool: call.tool, outcome: call.outcome, durationMs: call.durationMs, at: call.at,
        }))
        if (database.dialect === 'postgresql') {
          // One statement with eleven array parameters rather than one parameter per value: the
          // server parses 11 parameters, not 11 000.
          const column = <K extends keyof (typeof rows)[number]>(key: K) => sql.param(rows.map((row) => row[key]))
          await tx.execute(sql`insert into tool_calls (id, satellite_id, instance_id, installation_id, team_id, user_id, client_id, tool, outcome, duration_ms, at)
            select * from unnest(${column('id')}::text[], ${column('satelliteId')}::text[], ${column('instanceId')}::text[], ${column('installationId')}::text[],
              ${column('teamId')}::text[], ${column('userId')}::text[], ${column('clientId')}::text[], ${column('tool')}::text[], ${column('outcome')}::text[],
              ${column('durationMs')}::integer[], ${column('at')}::timestamptz[])`)
        } else {
          // One parameter, a JSON array of rows, read by SQLite's json_each: no statement of 11 000 parameters to build and compile.
          const json = JSON.stringify(rows.map((row) => [row.id, row.satelliteId, row.instanceId, row.installationId, row.teamId, row.userId, row.clientId, row.tool, row.outcome, row.durationMs, row.at.getTime()]))
          // (The SQLite executor runs a statement with `run`; the shared type is PostgreSQL's.)
          await (tx as unknown as { run(query: SQL): unknown }).run(sql`insert into tool_calls (id, satellite_id, instance_id, installation_id, team_id, user_id, client_id, tool, outcome, duration_ms, at)
            select json_extract(value, '$[0]'), json_extract(value, '$[1]'), json_extract(value, '$[2]'), json_extract(value, '$[3]'), json_extract(value, '$[4]'),
              json_extract(value, '$[5]'), json_extract(value, '$[6]'), json_extract(value, '$[7]'), json_extract(value, '$[8]'), json_extract(value, '$[9]'),
              json_extract(value, '$[10]') from json_each(${json})`)
        }
        // Summed here first, so that each hourly row is written once, in key order (two batches
        // adding to the same rows lock them in the same order on PostgreSQL: no deadlock).
        const sums = new Map<string, typeof hours.$inferInsert>()
        for (const call of batch.calls) {
          const hour = hourOf(call.at)
          const userId = call.userId ?? ''
          const key = JSON.stringify([hour.getTime(), userId, call.tool])
          let sum = sums.get(key)
          if (sum === undefined) {
            sum = { teamId: batch.teamId, hour, installationId: batch.installationId, userId, tool: call.tool, calls: 0, ok: 0, error: 0, refused: 0, durationMsSum: 0 }
            sums.set(key, sum)
          }
          sum.calls++
          sum[call.outcome]++
          sum.durationMsSum += call.durationMs
        }
        const ordered = [...sums.entries()].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)).map(([, sum]) => sum)
        for (let i = 0; i < ordered.length; i += CHUNK) {
          await tx.insert(hours).values(ordered.slice(i, i + CHUNK)).onConflictDoUpdate({
            target: [hours.teamId, hours.hour, hours.installationId, hours.userId, hours.tool],
            set: {
              calls: sql`${hours.calls} + excluded.calls`,
              ok: sql`${hours.ok} + excluded.ok`,
              error: sql`${hours.error} + excluded.error`,
              refused: sql`${hours.refused} + excluded.refused`,
              durationMsSum: sql`${hours.durationMsSum} + excluded.duration_ms_sum`,
            },
          })
        }
        return true
      })
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
