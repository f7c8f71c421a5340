import { and, asc, eq } from 'drizzle-orm'
import type { Database, Db } from '../types.js'

export type UpstreamClientRow = Database['t']['upstreamOauthClients']['$inferSelect']

export type UpstreamClientsRepository = ReturnType<typeof upstreamClientsRepository>

/** This backend's registrations at remote authorization servers, one per issuer. */
export function upstreamClientsRepository(database: Database, executor: Db = database.db) {
  const { t } = database
  const db = executor
  const u = t.upstreamOauthClients
  return {
    with: (tx: Db) => upstreamClientsRepository(database, tx),

    async find(issuer: string): Promise<UpstreamClientRow | undefined> {
      const [row] = await db.select().from(u).where(eq(u.issuer, issuer))
      return row
    },

    async list(): Promise<UpstreamClientRow[]> {
      return db.select().from(u).orderBy(asc(u.issuer))
    },

    /** Writes the registration of an issuer, replacing any earlier one. */
    async put(row: UpstreamClientRow): Promise<void> {
      await db.insert(u).values(row).onConflictDoUpdate({
        target: u.issuer,
        set: { method: row.method, clientId: row.clientId, clientSecretSealed: row.clientSecretSealed, tokenEndpointAuthMethod: row.tokenEndpointAuthMethod, registeredAt: row.registeredAt, updatedAt: row.updatedAt },
      })
    },

    /**
     * Keeps a dynamic registration only if no registration exists yet for the issuer: of two
     * concurrent first connects, one registration is kept and both use it. Answers the kept row.
     */
    async keepFirst(row: UpstreamClientRow): Promise<UpstreamClientRow> {
      await db.insert(u).values(row).onConflictDoNothing({ target: u.issuer })
      const [kept] = await db.select().from(u).where(eq(u.issuer, row.issuer))
      return kept ?? row
    },

    /** Forgets a dynamic registration the server no longer knows, only if it is still `clientId`. */
    async forgetDynamic(issuer: string, clientId: string): Promise<void> {
      await db.delete(u).where(and(eq(u.issuer, issuer), eq(u.clientId, clientId), eq(u.method, 'dynamic')))
    },

    async delete(issuer: string): Promise<boolean> {
      const rows = await db.delete(u).where(eq(u.issuer, issuer)).returning({ issuer: u.issuer })
      return rows.length === 1
    },

    async sealedSecrets(): Promise<Array<{ issuer: string; sealed: string }>> {
      const rows = await db.select({ issuer: u.issuer, sealed: u.clientSecretSealed }).from(u)
      return rows.filter((row): row is { issuer: string; sealed: string } => row.sealed !== null)
    },

    async reseal(issuer: string, sealed: string, previous: string): Promise<boolean> {
      const rows = await db.update(u).set({ clientSecretSealed: sealed }).where(and(eq(u.issuer, issuer), eq(u.clientSecretSealed, previous))).returning({ issuer: u.issuer })
      return rows.length === 1
    },
  }
}
