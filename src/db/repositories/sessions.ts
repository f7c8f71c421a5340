import { and, eq, lt, ne, sql } from 'drizzle-orm'
import { rowReader } from '../readers/row-reader.js'
import { families, topics, userCredentialTopics } from '../feed/topics.js'
import type { Database, Db } from '../types.js'
import { defaultTeamOfUser, type TeamRow } from './teams.js'
import type { UserRow } from './users.js'

export type SessionRow = Database['t']['sessions']['$inferSelect']

export type SessionsRepository = ReturnType<typeof sessionsRepository>

export function sessionsRepository(database: Database, executor: Db = database.db) {
  const { t } = database
  const db = executor
  // Every authenticated request runs this lookup: built once, run on the driver directly, and
  // answered again from memory while nothing it read has changed: on SQLite while nothing in the
  // database has, on PostgreSQL until a notification names the session, its user or the default
  // team (row-reader.ts, kept-answers.ts). The expiry is checked here rather than in SQL, so that
  // the answer depends on the digest alone. Every write below tells this instance what it
  // changed; the database's triggers tell every instance.
  const byDigest = rowReader(database, 'session_by_digest', { session: t.sessions, user: t.users, defaultTeam: t.teams }, (selection) => database.db
    .select(selection)
    .from(t.sessions)
    .innerJoin(t.users, eq(t.users.id, t.sessions.userId))
    .leftJoin(t.teams, defaultTeamOfUser(database))
    .where(eq(t.sessions.digest, sql.placeholder('digest'))), {
    optional: ['defaultTeam'],
    reuse: true,
    topics: {
      families: [families.session, families.user, families.team],
      of: ({ session, user, defaultTeam }) => userCredentialTopics(topics.session(session.id), user.id, defaultTeam?.id),
    },
  })
  const told = (topic: string) => database.changes.tell(db, topic)
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
      told(topics.session(id))
    },

    async deleteByDigest(digest: string): Promise<string | null> {
      const [row] = await db.delete(t.sessions).where(eq(t.sessions.digest, digest)).returning({ id: t.sessions.id, userId: t.sessions.userId })
      if (row !== undefined) told(topics.session(row.id))
      return row?.userId ?? null
    },

    /** Every session of the user, or every one but `keepId`. */
    async deleteForUser(userId: string, keepId?: string): Promise<void> {
      const where = keepId === undefined ? eq(t.sessions.userId, userId) : and(eq(t.sessions.userId, userId), ne(t.sessions.id, keepId))
      await db.delete(t.sessions).where(where)
      told(topics.user(userId))
    },

    /** Expired sessions are refused whatever is kept (their expiry is checked on every use). */
    async purgeExpired(now: Date): Promise<void> {
      await db.delete(t.sessions).where(lt(t.sessions.expiresAt, now))
    },
  }
}
