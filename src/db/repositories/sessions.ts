import { and, eq, lt, ne, sql } from 'drizzle-orm'
import { rowReader } from '../row-reader.js'
import type { Database, Db } from '../types.js'
import { defaultTeamOfUser, type TeamRow } from './teams.js'
import type { UserRow } from './users.js'

export type SessionRow = Database['t']['sessions']['$inferSelect']

export type SessionsRepository = ReturnType<typeof sessionsRepository>

export function sessionsRepository(database: Database, executor: Db = database.db) {
  const { t } = database
  const db = executor
  // Every authenticated request runs this lookup: built once, run on the driver directly, and on
  // SQLite answered again while nothing in the database has changed (row-reader.ts). The expiry
  // is checked here rather than in SQL, so that the answer depends on the digest alone.
  const byDigest = rowReader(database, 'session_by_digest', { session: t.sessions, user: t.users, defaultTeam: t.teams }, (selection) => database.db
    .select(selection)
    .from(t.sessions)
    .innerJoin(t.users, eq(t.users.id, t.sessions.userId))
    .leftJoin(t.teams, defaultTeamOfUser(database))
    .where(eq(t.sessions.digest, sql.placeholder('digest'))), { optional: ['defaultTeam'], reuse: true })
  return {
    with: (tx: Db) => sessionsRepository(database, tx),

    async insert(session: SessionRow): Promise<void> {
      await db.insert(t.sessions).values(session)
    },

    /** One indexed lookup: the live session with this digest, its user and the user's default team. */
    async findLive(digest: string, now: Date): Promise<{ session: SessionRow; user: UserRow; defaultTeam: TeamRow | null } | undefined> {
      const found = await byDigest({ digest })
      return found !== undefined && found.session.expiresAt.getTime() > now.getTime() ? found : undefined
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
