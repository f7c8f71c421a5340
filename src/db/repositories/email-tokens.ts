import { and, eq, isNull, lt } from 'drizzle-orm'
import type { Database, Db } from '../types.js'

export type EmailTokenRow = Database['t']['emailTokens']['$inferSelect']
export type EmailTokenPurpose = EmailTokenRow['purpose']

export type EmailTokensRepository = ReturnType<typeof emailTokensRepository>

export function emailTokensRepository(database: Database, executor: Db = database.db) {
  const { t } = database
  const db = executor
  return {
    with: (tx: Db) => emailTokensRepository(database, tx),

    async insert(token: EmailTokenRow): Promise<void> {
      await db.insert(t.emailTokens).values(token)
    },

    async findByDigest(digest: string, purpose: EmailTokenPurpose): Promise<EmailTokenRow | undefined> {
      const [row] = await db
        .select()
        .from(t.emailTokens)
        .where(and(eq(t.emailTokens.digest, digest), eq(t.emailTokens.purpose, purpose)))
      return row
    },

    /**
     * Single use, enforced by one conditional update: of two concurrent uses of one token,
     * exactly one gets `true`.
     */
    async consume(id: string, now: Date): Promise<boolean> {
      const rows = await db
        .update(t.emailTokens)
        .set({ usedAt: now })
        .where(and(eq(t.emailTokens.id, id), isNull(t.emailTokens.usedAt)))
        .returning({ id: t.emailTokens.id })
      return rows.length === 1
    },

    /** Every unused token of that purpose dies with the one used. */
    async consumeAllFor(userId: string, purpose: EmailTokenPurpose, now: Date): Promise<void> {
      await db
        .update(t.emailTokens)
        .set({ usedAt: now })
        .where(and(eq(t.emailTokens.userId, userId), eq(t.emailTokens.purpose, purpose), isNull(t.emailTokens.usedAt)))
    },

    async purgeExpired(now: Date): Promise<void> {
      await db.delete(t.emailTokens).where(lt(t.emailTokens.expiresAt, now))
    },
  }
}
