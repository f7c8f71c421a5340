import { and, count, desc, eq, isNotNull, or, sql, type SQL } from 'drizzle-orm'
import { topics } from '../feed/topics.js'
import type { Database, Db } from '../types.js'
import { desiredStamps } from './desired-stamps.js'

export type UserRow = Database['t']['users']['$inferSelect']
export type NewUser = Database['t']['users']['$inferInsert']

export interface UserFilter {
  q?: string
  roleId?: UserRow['roleId']
  authMethod?: 'email' | 'provider' | 'oidc'
  limit: number
  offset: number
}

export interface LockoutPolicy {
  now: Date
  windowMs: number
  maxFailures: number
  lockMs: number
}

/** Any PostgreSQL advisory-lock key works as long as every instance uses the same one. */
const REGISTRATION_LOCK_ID = 0x5e7001
const ADMINS_LOCK_ID = 0x5e7002

export type UsersRepository = ReturnType<typeof usersRepository>

export function usersRepository(database: Database, executor: Db = database.db) {
  const { t, dialect } = database
  const db = executor
  // What the credential checks keep about a user ends with any write to its row (kept-answers.ts).
  const told = (topic: string) => database.changes.tell(db, topic)
  const lower = (column: typeof t.users.email | typeof t.users.username) => sql`lower(${column})`
  const encode = <C extends typeof t.users.failedLoginsSince | typeof t.users.lockedUntil>(value: Date, column: C) => sql.param(value, column)

  return {
    /** Same repository bound to an open transaction. */
    with: (tx: Db) => usersRepository(database, tx),

    /**
     * Serializes registrations for the rest of the transaction, so "is this the first user?"
     * and the uniqueness pre-checks cannot race. SQLite transactions are serialized
     * already.
     */
    async lockRegistrations(): Promise<void> {
      if (dialect === 'postgresql') await db.execute(sql`select pg_advisory_xact_lock(${REGISTRATION_LOCK_ID})`)
    },

    /**
     * Serializes changes that could remove a global admin (demotion, deletion) for the rest of
     * the transaction, so "is this the last admin?" and the change cannot race: two admins
     * demoting each other at once must not leave none. SQLite transactions are serialized already.
     */
    async lockAdmins(): Promise<void> {
      if (dialect === 'postgresql') await db.execute(sql`select pg_advisory_xact_lock(${ADMINS_LOCK_ID})`)
    },

    /**
     * Serializes changes to one user's credentials for the rest of the transaction (a row lock
     * taken before anything else is touched, so concurrent password resets of one user queue
     * instead of deadlocking on each other's email tokens). SQLite transactions are serialized
     * already. False when the user is gone (deleted meanwhile).
     */
    async lockUser(id: string): Promise<boolean> {
      const locked = db.select({ id: t.users.id }).from(t.users).where(eq(t.users.id, id))
      return (await (dialect === 'postgresql' ? locked.for('update') : locked)).length > 0
    },

    async any(): Promise<boolean> {
      const rows = await db.select({ id: t.users.id }).from(t.users).limit(1)
      return rows.length > 0
    },

    async findById(id: string): Promise<UserRow | undefined> {
      const [row] = await db.select().from(t.users).where(eq(t.users.id, id))
      return row
    },

    async findByProviderId(providerUserId: string): Promise<UserRow | undefined> {
      const [row] = await db.select().from(t.users).where(eq(t.users.providerUserId, providerUserId))
      return row
    },

    /** The account linked to this OpenID Connect identity (issuer and subject together). */
    async findByOidcIdentity(issuer: string, subject: string): Promise<UserRow | undefined> {
      const [row] = await db.select().from(t.users).where(and(eq(t.users.oidcIssuer, issuer), eq(t.users.oidcSubject, subject)))
      return row
    },

    /** By email (when `login` holds an @; usernames cannot) or by username, case-insensitively. */
    async findByLogin(login: string): Promise<UserRow | undefined> {
      const value = login.toLowerCase()
      const condition = value.includes('@') ? eq(lower(t.users.email), value) : eq(lower(t.users.username), value)
      const [row] = await db.select().from(t.users).where(condition)
      return row
    },

    async taken(email: string, username: string): Promise<{ email: boolean; username: boolean }> {
      const rows = await db
        .select({ email: t.users.email, username: t.users.username })
        .from(t.users)
        .where(or(eq(lower(t.users.email), email.toLowerCase()), eq(lower(t.users.username), username.toLowerCase())))
      return {
        email: rows.some((row) => row.email.toLowerCase() === email.toLowerCase()),
        username: rows.some((row) => row.username.toLowerCase() === username.toLowerCase()),
      }
    },

    async insert(user: NewUser): Promise<UserRow> {
      const [row] = await db.insert(t.users).values(user).returning()
      return row!
    },

    async update(id: string, patch: Partial<NewUser>): Promise<UserRow | undefined> {
      const [row] = await db.update(t.users).set(patch).where(eq(t.users.id, id)).returning()
      told(topics.user(id))
      return row
    },

    async delete(id: string): Promise<void> {
      // Their memberships and own values go with them: the documents of the satellites running their teams' installations change.
      await desiredStamps(database, db).ofMember(id)
      await db.delete(t.users).where(eq(t.users.id, id))
      told(topics.user(id))
    },

    async countAdmins(): Promise<number> {
      const [row] = await db.select({ n: count() }).from(t.users).where(eq(t.users.roleId, 'global_admin'))
      return row?.n ?? 0
    },

    /**
     * One atomic update counts a failed login inside the window (restarting the count
     * when the window has passed) and locks the account once the count reaches the maximum.
     * Concurrent failures cannot lose counts.
     */
    async recordFailedLogin(id: string, policy: LockoutPolicy): Promise<{ failures: number; lockedUntil: Date | null }> {
      const windowStart = encode(new Date(policy.now.getTime() - policy.windowMs), t.users.failedLoginsSince)
      const fresh = sql`(${t.users.failedLoginsSince} is null or ${t.users.failedLoginsSince} < ${windowStart})`
      const next = sql`(case when ${fresh} then 1 else ${t.users.failedLogins} + 1 end)`
      const [row] = await db
        .update(t.users)
        .set({
          failedLogins: next,
          failedLoginsSince: sql`case when ${fresh} then ${encode(policy.now, t.users.failedLoginsSince)} else ${t.users.failedLoginsSince} end`,
          lockedUntil: sql`case when ${next} >= ${policy.maxFailures} then ${encode(new Date(policy.now.getTime() + policy.lockMs), t.users.lockedUntil)} else ${t.users.lockedUntil} end`,
        })
        .where(eq(t.users.id, id))
        .returning({ failures: t.users.failedLogins, lockedUntil: t.users.lockedUntil })
      told(topics.user(id))
      return row ?? { failures: 0, lockedUntil: null }
    },

    async resetFailedLogins(id: string): Promise<void> {
      await db.update(t.users).set({ failedLogins: 0, failedLoginsSince: null, lockedUntil: null }).where(eq(t.users.id, id))
      told(topics.user(id))
    },

    /** Filtering, counting and paging happen in the database. */
    async list(filter: UserFilter): Promise<{ rows: UserRow[]; total: number }> {
      const conditions: SQL[] = []
      if (filter.q) {
        const pattern = `%${filter.q.toLowerCase().replace(/[\\%_]/g, (char) => `\\${char}`)}%`
        conditions.push(or(sql`lower(${t.users.email}) like ${pattern} escape '\\'`, sql`lower(${t.users.username}) like ${pattern} escape '\\'`)!)
      }
      if (filter.roleId) conditions.push(eq(t.users.roleId, filter.roleId))
      if (filter.authMethod === 'email') conditions.push(isNotNull(t.users.passwordHash))
      if (filter.authMethod === 'provider') conditions.push(isNotNull(t.users.providerUserId))
      if (filter.authMethod === 'oidc') conditions.push(isNotNull(t.users.oidcSubject))
      const where = conditions.length > 0 ? and(...conditions) : undefined
      const [rows, [total]] = await Promise.all([
        db.select().from(t.users).where(where).orderBy(desc(t.users.createdAt), desc(t.users.id)).limit(filter.limit).offset(filter.offset),
        db.select({ n: count() }).from(t.users).where(where),
      ])
      return { rows, total: total?.n ?? 0 }
    },
  }
}
