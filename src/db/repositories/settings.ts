import { and, eq, inArray, isNull, sql } from 'drizzle-orm'
import { topics } from '../feed/topics.js'
import type { Database, Db } from '../types.js'

export interface SettingRow {
  key: string
  groupId: string
  type: 'string' | 'number' | 'boolean'
  value: string
  encrypted: boolean
  setAt: Date | null
  updatedAt: Date
}

export interface SettingWrite {
  key: string
  value: string
}

export type SettingsRepository = ReturnType<typeof settingsRepository>

const REVISION_ROW = 1

export function settingsRepository({ db, t, transaction, changes }: Database) {
  const bumpRevision = async (executor = db): Promise<number> => {
    // What this instance keeps of the settings ends at the commit (the database's trigger tells the others).
    changes.tell(executor, topics.settings)
    const [row] = await executor
      .update(t.settingsRevision)
      .set({ revision: sql`${t.settingsRevision.revision} + 1` })
      .where(eq(t.settingsRevision.id, REVISION_ROW))
      .returning({ revision: t.settingsRevision.revision })
    return row!.revision
  }

  return {
    /** Inserts the rows that do not exist yet; existing values are never overwritten. */
    async seed(rows: SettingRow[]): Promise<void> {
      await db.insert(t.settingsRevision).values({ id: REVISION_ROW, revision: 1 }).onConflictDoNothing()
      if (rows.length > 0) await db.insert(t.settings).values(rows).onConflictDoNothing()
    },

    async all(): Promise<SettingRow[]> {
      return db.select().from(t.settings)
    },

    async revision(): Promise<number> {
      const [row] = await db
        .select({ revision: t.settingsRevision.revision })
        .from(t.settingsRevision)
        .where(eq(t.settingsRevision.id, REVISION_ROW))
      return row?.revision ?? 0
    },

    /** Keys among `keys` that still hold their seeded default (never set by anyone). */
    async neverSet(keys: string[]): Promise<string[]> {
      const rows = await db
        .select({ key: t.settings.key })
        .from(t.settings)
        .where(and(inArray(t.settings.key, keys), isNull(t.settings.setAt)))
      return rows.map((row) => row.key)
    },

    /**
     * All-or-nothing: every write lands with one revision bump, or none does. `alongside` joins
     * the same transaction (the audit event of the change).
     */
    async write(writes: SettingWrite[], at: Date, alongside?: (tx: Db) => Promise<void>): Promise<number> {
      return transaction(async (tx) => {
        for (const { key, value } of writes) {
          await tx.update(t.settings).set({ value, setAt: at, updatedAt: at }).where(eq(t.settings.key, key))
        }
        await alongside?.(tx)
        return bumpRevision(tx)
      })
    },

    /**
     * Replaces sealed values in one transaction: `reseal` sees every encrypted row and answers the
     * rewrites, or throws to write nothing. A row changed by someone else since it was read (its
     * value is no longer `previous`) rolls the whole back. Values keep their `updatedAt`: the
     * plaintext did not change, only the key sealing it. `alongside` joins the same transaction
     * (other data sealed under the same secret), before these writes; throwing there writes nothing.
     */
    async reseal(reseal: (rows: SettingRow[]) => Array<SettingWrite & { previous: string }>, alongside?: (tx: Db) => Promise<void>): Promise<number> {
      return transaction(async (tx) => {
        const writes = reseal(await tx.select().from(t.settings).where(eq(t.settings.encrypted, true)))
        await alongside?.(tx)
        for (const { key, value, previous } of writes) {
          const updated = await tx
            .update(t.settings)
            .set({ value })
            .where(and(eq(t.settings.key, key), eq(t.settings.value, previous)))
            .returning({ key: t.settings.key })
          if (updated.length !== 1) throw new Error(`setting ${key} changed while it was being re-encrypted; nothing was written`)
        }
        if (writes.length > 0) await bumpRevision(tx)
        return writes.length
      })
    },
  }
}
