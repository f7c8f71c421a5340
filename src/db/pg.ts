import { AsyncLocalStorage } from 'node:async_hooks'
import { drizzle } from 'drizzle-orm/node-postgres'
import { migrate } from 'drizzle-orm/node-postgres/migrator'
import pg from 'pg'
import { migrationsFolder } from '../paths.js'
import * as schema from './schema/pg/index.js'
import type { Database, Db } from './types.js'

/** Any constant works; it only has to be the same for every instance migrating this database. */
const MIGRATION_LOCK_ID = 0x5e71ce

export interface PgOptions {
  url: string
  poolSize: number
  onError: (error: Error) => void
}

export function openPostgres({ url, poolSize, onError }: PgOptions): Database {
  const pool = new pg.Pool({
    connectionString: url,
    max: poolSize,
    connectionTimeoutMillis: 5000,
    idleTimeoutMillis: 30_000,
  })
  // An idle client losing its connection (e.g. PostgreSQL restarting) must not crash the
  // process; the pool replaces it and requests in the meantime get 503.
  pool.on('error', onError)
  const db = drizzle({ client: pool, schema })
  const inTransaction = new AsyncLocalStorage<Db>()

  return {
    dialect: 'postgresql',
    db,
    t: schema,
    transaction(fn) {
      // As on SQLite, a transaction opened inside another joins it: a second pool connection
      // would commit on its own and, with the pool exhausted, wait for ever.
      const current = inTransaction.getStore()
      if (current !== undefined) return fn(current)
      return db.transaction((tx) => inTransaction.run(tx, () => fn(tx)))
    },
    async ping() {
      await pool.query('select 1')
    },
    async migrate() {
      // Instances starting together must not migrate the same database at once.
      const lock = await pool.connect()
      try {
        await lock.query('select pg_advisory_lock($1)', [MIGRATION_LOCK_ID])
        // On the connection holding the lock: a pool of one must not wait for a second one.
        await migrate(drizzle({ client: lock }), { migrationsFolder: migrationsFolder('pg') })
      } finally {
        await lock.query('select pg_advisory_unlock($1)', [MIGRATION_LOCK_ID]).catch(() => {})
        lock.release()
      }
    },
    async close() {
      if (!pool.ended) await pool.end()
    },
  }
}
