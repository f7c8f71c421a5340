import { and, eq, gt, isNull, lt, or, sql } from 'drizzle-orm'
import type { Database, Db } from '../types.js'

export type TwoFactorSecretRow = Database['t']['twoFactorSecrets']['$inferSelect']
export type RecoveryCodeRow = Database['t']['recoveryCodes']['$inferSelect']
export type TwoFactorChallengeRow = Database['t']['twoFactorChallenges']['$inferSelect']

export type TwoFactorRepository = ReturnType<typeof twoFactorRepository>

/**
 * TOTP secrets, recovery codes and pending sign-in challenges. Every single-use rule here is one
 * conditional statement, so two concurrent uses (on one instance or two) get one success.
 * Whether two-factor is on is the users row's `two_factor_enabled_at`, written through the users
 * repository, which tells the credential caches.
 */
export function twoFactorRepository(database: Database, executor: Db = database.db) {
  const { t } = database
  const db = executor
  return {
    with: (tx: Db) => twoFactorRepository(database, tx),

    async findSecret(userId: string): Promise<TwoFactorSecretRow | undefined> {
      const [row] = await db.select().from(t.twoFactorSecrets).where(eq(t.twoFactorSecrets.userId, userId))
      return row
    },

    /** A new pending secret, replacing any earlier one (and forgetting its last used step). */
    async putSecret(userId: string, secretSealed: string, now: Date): Promise<void> {
      await db.insert(t.twoFactorSecrets)
        .values({ userId, secretSealed, lastUsedStep: null, createdAt: now, updatedAt: now })
        .onConflictDoUpdate({ target: t.twoFactorSecrets.userId, set: { secretSealed, lastUsedStep: null, createdAt: now, updatedAt: now } })
    },

    /**
     * Records `step` as used, only when it is later than the last one used: of two uses of one code
     * (same step), raced or not, exactly one gets true.
     */
    async useStep(userId: string, step: number, now: Date): Promise<boolean> {
      const rows = await db.update(t.twoFactorSecrets)
        .set({ lastUsedStep: step, updatedAt: now })
        .where(and(eq(t.twoFactorSecrets.userId, userId), or(isNull(t.twoFactorSecrets.lastUsedStep), lt(t.twoFactorSecrets.lastUsedStep, step))))
        .returning({ userId: t.twoFactorSecrets.userId })
      return rows.length === 1
    },

    /** The secret and every recovery code of the user (two-factor switched off). */
    async deleteAll(userId: string): Promise<void> {
      await db.delete(t.recoveryCodes).where(eq(t.recoveryCodes.userId, userId))
      await db.delete(t.twoFactorSecrets).where(eq(t.twoFactorSecrets.userId, userId))
      await db.delete(t.twoFactorChallenges).where(eq(t.twoFactorChallenges.userId, userId))
    },

    /** A new set of recovery codes replaces the old one. */
    async replaceRecoveryCodes(userId: string, rows: RecoveryCodeRow[]): Promise<void> {
      await db.delete(t.recoveryCodes).where(eq(t.recoveryCodes.userId, userId))
      if (rows.length > 0) await db.insert(t.recoveryCodes).values(rows)
    },

    /** Single use: deletes the user's code with this digest; true for the one caller that deleted it. */
    async useRecoveryCode(userId: string, digest: string): Promise<boolean> {
      const rows = await db.delete(t.recoveryCodes)
        .where(and(eq(t.recoveryCodes.userId, userId), eq(t.recoveryCodes.digest, digest)))
        .returning({ id: t.recoveryCodes.id })
      return rows.length === 1
    },

    async countRecoveryCodes(userId: string): Promise<number> {
      const [row] = await db.select({ n: sql<number>`count(*)` }).from(t.recoveryCodes).where(eq(t.recoveryCodes.userId, userId))
      return Number(row?.n ?? 0)
    },

    async insertChallenge(row: TwoFactorChallengeRow): Promise<void> {
      await db.insert(t.twoFactorChallenges).values(row)
    },

    /** The live challenge with this digest. */
    async findChallenge(digest: string, now: Date): Promise<TwoFactorChallengeRow | undefined> {
      const [row] = await db.select().from(t.twoFactorChallenges)
        .where(and(eq(t.twoFactorChallenges.digest, digest), gt(t.twoFactorChallenges.expiresAt, now)))
      return row
    },

    /** Single use: true for the one caller that deleted the live challenge. */
    async consumeChallenge(id: string, now: Date): Promise<boolean> {
      const rows = await db.delete(t.twoFactorChallenges)
        .where(and(eq(t.twoFactorChallenges.id, id), gt(t.twoFactorChallenges.expiresAt, now)))
        .returning({ id: t.twoFactorChallenges.id })
      return rows.length === 1
    },

    /** Counts a wrong code against the challenge; answers the attempts so far (0: the challenge is gone). */
    async countAttempt(id: string): Promise<number> {
      const [row] = await db.update(t.twoFactorChallenges)
        .set({ attempts: sql`${t.twoFactorChallenges.attempts} + 1` })
        .where(eq(t.twoFactorChallenges.id, id))
        .returning({ attempts: t.twoFactorChallenges.attempts })
      return row?.attempts ?? 0
    },

    async deleteChallenge(id: string): Promise<void> {
      await db.delete(t.twoFactorChallenges).where(eq(t.twoFactorChallenges.id, id))
    },

    async purgeExpired(now: Date): Promise<void> {
      await db.delete(t.twoFactorChallenges).where(lt(t.twoFactorChallenges.expiresAt, now))
    },

    /** Every sealed secret, for re-encryption under a new ENCRYPTION_SECRET. */
    async sealedSecrets(): Promise<Array<{ userId: string; secretSealed: string }>> {
      return db.select({ userId: t.twoFactorSecrets.userId, secretSealed: t.twoFactorSecrets.secretSealed }).from(t.twoFactorSecrets)
    },

    /** Seals again, only if nobody changed the secret meanwhile. */
    async reseal(userId: string, sealed: string, previous: string): Promise<boolean> {
      const rows = await db.update(t.twoFactorSecrets).set({ secretSealed: sealed })
        .where(and(eq(t.twoFactorSecrets.userId, userId), eq(t.twoFactorSecrets.secretSealed, previous)))
        .returning({ userId: t.twoFactorSecrets.userId })
      return rows.length === 1
    },
  }
}
