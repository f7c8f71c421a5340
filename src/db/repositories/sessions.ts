import { and, eq, gt, lt, ne, sql } from 'drizzle-orm'
import { rowReader } from '../row-reader.js'
import type { Database, Db } from '../types.js'
import { defaultTeamOfUser, type TeamRow } from './teams.js'
import type { UserRow } from './users.js'

export type SessionRow = Database['t']['sessions']['$inferSelect']

export type SessionsRepository = ReturnType<typeof sessionsRepository>

export function sessionsRepository(database: Database, executor: Db = database.db) {
  const { t } = database
  const db = executor
  // Every authenticated request runs this lookup: built once, run on the driver directly.
  const live = rowReader(database, 'session_live', { session: t.sessions, user: t.users, defaultTeam: t.teams }, (selection) => database.db
    .select(selection)
    .from(t.sessions)
    .innerJoin(t.users, eq(t.users.id, t.sessions.userId))
    .leftJoin(t.teams, defaultTeamOfUser(database))
    .where(and(eq(t.sessions.digest, sql.placeholder('digest')), gt(t.sessions.expiresAt, sql.placeholder('now')))), ['defaultTeam'])
  return {
    with: (tx: Db) => sessionsRepository(database, tx),

    async insert(session: SessionRow): Promise<void> {
      await db.insert(t.sessions).values(session)
    },

    /** One indexed lookup: the live session with this digest, its user and the user's default team. */
    async findLive(digest: string, now: Date): Promise<{ session: SessionRow; user: UserRow; defaultTeam: TeamRow | null } | undefined> {
      // Placeholders bypass column encoding: SQLite stores this timestamp as epoch milliseconds.
      return live({ digest, now: database.dialect === 'sqlite' ? now.getTime() : now })
    },

    async extend(id: string, expiresAt: Date): Promise<void> {
      await db.update(t.sessions).set({ expiresAt }).where(eq(t.sessions.id, id))
    },

    async deleteByDigest(digest: string): Promise<string | null> {
      const [row] = await db.delete(t.sessions).where(eq(t.sessions.digest, digest)).returning({ userId: t.sessions.userId })
      return row?.userId ?? null
    },

    /** Every session of the user, or every one but `keepId`. */
    async deleteForUser(userId: string, keepId?: string): Promise<void> {
      const where = keepId === undefined ? eq(t.sessions.userId, userId) : and(eq(t.sessions.userId, userId), ne(t.sessions.id, keepId))
      await db.delete(t.sessions).where(where)
    },

    async purgeExpired(now: Date): Promise<void> {
      await db.delete(t.sessions).where(lt(t.sessions.expiresAt, now))
    },
  }
}
