import { and, count, desc, eq, gt, isNotNull, isNull, lt, lte, or, sql } from 'drizzle-orm'
import { rowReader } from '../readers/row-reader.js'
import type { Database, Db } from '../types.js'
import { defaultTeamOfUser, type TeamRow } from './teams.js'
import type { UserRow } from './users.js'

export type PersonalTokenRow = Database['t']['personalTokens']['$inferSelect']

/** A token with the user it belongs to, as global admins list them. */
export interface OwnedPersonalToken {
  token: PersonalTokenRow
  owner: { id: string; username: string; email: string }
}

/** What a bearer check needs: the token, its user and the user's default team. */
export interface LivePersonalToken {
  token: PersonalTokenRow
  user: UserRow
  defaultTeam: TeamRow | null
}

export type PersonalTokensRepository = ReturnType<typeof personalTokensRepository>

/**
 * The credential lookup, one per database, built on first use. A token bound to a team is found
 * only while its user is still a member of that team: the membership is a join of the same
 * statement, not a second query. On SQLite the answer is given again while nothing in the database
 * has changed (row-reader.ts); on PostgreSQL every call reads, so a revocation, a removal from the
 * team or a deleted user is seen by every instance at the next request, with no notification to
 * wait for. The expiry is checked by the caller, so the answer depends on the digest alone.
 */
const liveReaders = new WeakMap<Database, ReturnType<typeof liveReader>>()
const liveReader = (database: Database) => {
  const { t } = database
  return rowReader(database, 'personal_token_by_digest', { token: t.personalTokens, user: t.users, defaultTeam: t.teams }, (selection) => database.db
    .select(selection)
    .from(t.personalTokens)
    .innerJoin(t.users, eq(t.users.id, t.personalTokens.userId))
    .leftJoin(t.teams, defaultTeamOfUser(database))
    .leftJoin(t.teamMembers, and(eq(t.teamMembers.teamId, t.personalTokens.teamId), eq(t.teamMembers.userId, t.personalTokens.userId)))
    .where(and(
      eq(t.personalTokens.digest, sql.placeholder('digest')),
      or(isNull(t.personalTokens.teamId), isNotNull(t.teamMembers.userId)),
    )), { optional: ['defaultTeam'], reuse: true })
}

/** Personal access tokens: issue, list, find by digest, revoke. */
export function personalTokensRepository(database: Database, executor: Db = database.db) {
  const { t, dialect } = database
  const db = executor
  const tokens = t.personalTokens

  return {
    with: (tx: Db) => personalTokensRepository(database, tx),

    /** Serializes the token creations of one user, so the per-user limit holds under concurrency. SQLite transactions are serialized already. */
    async lockUser(userId: string): Promise<void> {
      if (dialect === 'postgresql') await db.execute(sql`select 1 from ${t.users} where ${t.users.id} = ${userId} for update`)
    },

    /** Tokens of the user not yet expired: what the per-user limit counts. */
    async countLive(userId: string, now: Date): Promise<number> {
      const [row] = await db.select({ n: count() }).from(tokens).where(and(eq(tokens.userId, userId), gt(tokens.expiresAt, now)))
      return row?.n ?? 0
    },

    async insert(row: PersonalTokenRow): Promise<void> {
      await db.insert(tokens).values(row)
    },

    /** One indexed lookup: the token with this digest, if its user is still in its team (expiry unchecked). */
    async findByDigest(digest: string): Promise<LivePersonalToken | undefined> {
      let read = liveReaders.get(database)
      if (read === undefined) liveReaders.set(database, (read = liveReader(database)))
      return read({ digest })
    },

    /** The user's tokens, newest first. */
    async listForUser(userId: string, limit: number, offset: number): Promise<{ rows: PersonalTokenRow[]; total: number }> {
      const where = eq(tokens.userId, userId)
      const rows = await db.select().from(tokens).where(where).orderBy(desc(tokens.createdAt), desc(tokens.id)).limit(limit).offset(offset)
      const [total] = await db.select({ n: count() }).from(tokens).where(where)
      return { rows, total: total?.n ?? 0 }
    },

    /** Every user's tokens (or one user's), newest first, with their owners. */
    async listAll(filter: { userId?: string; limit: number; offset: number }): Promise<{ rows: OwnedPersonalToken[]; total: number }> {
      const where = filter.userId === undefined ? undefined : eq(tokens.userId, filter.userId)
      const rows = await db
        .select({ token: tokens, owner: { id: t.users.id, username: t.users.username, email: t.users.email } })
        .from(tokens)
        .innerJoin(t.users, eq(t.users.id, tokens.userId))
        .where(where)
        .orderBy(desc(tokens.createdAt), desc(tokens.id))
        .limit(filter.limit)
        .offset(filter.offset)
      const [total] = await db.select({ n: count() }).from(tokens).where(where)
      return { rows, total: total?.n ?? 0 }
    },

    /** Deletes one token (only the user's own when `userId` is given); the row deleted, if any. */
    async delete(id: string, userId?: string): Promise<PersonalTokenRow | undefined> {
      const where = userId === undefined ? eq(tokens.id, id) : and(eq(tokens.id, id), eq(tokens.userId, userId))
      const [row] = await db.delete(tokens).where(where).returning()
      return row
    },

    /** Every token of the user (a password change or reset); how many there were. */
    async deleteForUser(userId: string): Promise<number> {
      const rows = await db.delete(tokens).where(eq(tokens.userId, userId)).returning({ id: tokens.id })
      return rows.length
    },

    /**
     * Records a use, at most once a minute per token: a conditional update, so concurrent
     * requests and instances write it once. True when this call wrote it.
     */
    async touch(id: string, now: Date, everyMs: number): Promise<boolean> {
      const rows = await db
        .update(tokens)
        .set({ lastUsedAt: now })
        .where(and(eq(tokens.id, id), or(isNull(tokens.lastUsedAt), lte(tokens.lastUsedAt, new Date(now.getTime() - everyMs)))))
        .returning({ id: tokens.id })
      return rows.length === 1
    },

    async purgeExpired(now: Date): Promise<void> {
      await db.delete(tokens).where(lt(tokens.expiresAt, now))
    },
  }
}
