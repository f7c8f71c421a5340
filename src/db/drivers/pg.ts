import { AsyncLocalStorage } from 'node:async_hooks'
import { drizzle } from 'drizzle-orm/node-postgres'
import { migrate } from 'drizzle-orm/node-postgres/migrator'
import pg from 'pg'
import { migrationsFolder } from '../../paths.js'
import { DatabaseUnavailableError } from '../errors.js'
import { PgChangeFeed } from '../feed/pg-changes.js'
import { RowStatement } from '../readers/pg-row-statement.js'
import * as schema from '../schema/pg/index.js'
import type { Database, Db, QueryTimer } from '../types.js'

/** Any constant works; it only has to be the same for every instance migrating this database. */
const MIGRATION_LOCK_ID = 0x5e71ce
/** Opening a connection, or waiting for a free one in the pool, fails after this long. */
const CONNECT_TIMEOUT_MS = 5_000
/**
 * A statement still unanswered after this long is taken for a connection that stopped answering
 * (a server that hangs, a network cut without a reset): the connection is dropped and the
 * statement fails as unavailable. The statements of a request are indexed lookups and small
 * writes; migrations run on a connection of their own, without this limit.
 */
const QUERY_TIMEOUT_MS = 10_000
/** SQLSTATE read_only_sql_transaction: a write sent to a server that is a hot standby. */
const READ_ONLY_TRANSACTION = '25006'

type Callback = (error: unknown, ...results: unknown[]) => void

/**
 * A pool client whose failures tell the database's fault from the request's. The server's own
 * answers (pg's DatabaseError: a constraint, invalid input, or the server saying it shuts down)
 * are kept as they are, with their SQLSTATE. Any other failure of a statement on a connection
 * that was lost (closed, reset, terminated, or dropped by the query timeout) becomes a
 * DatabaseUnavailableError, whatever text the driver gave it; other failures (a bug in how a
 * statement was built) stay what they are.
 */
class GuardedClient extends pg.Client {
  private lost = false
  /** Told each statement's duration; set by the pool's subclass (openPostgres). */
  protected readonly onQuery: QueryTimer | undefined

  constructor(config?: pg.ClientConfig) {
    super(config)
    const markLost = () => {
      this.lost = true
    }
    // Registered before the client's own listeners (added when it connects), so that the flag is
    // set before any pending statement is failed. The 'error' listener also keeps a connection
    // lost while the client is checked out of the pool (pg-pool listens only to idle ones) from
    // being an 'error' event nobody listens to, which would throw and end the process; the
    // statements in progress fail with the cause anyway.
    this.on('error', markLost)
    this.connection.on('error', markLost)
    this.connection.on('end', markLost)
  }

  // Every form pg supports goes through (drizzle uses the promise form, pg-pool's query the
  // callback form); a Submittable (cursor, stream) is passed on untouched.
  override query(...args: unknown[]): any {
    const last = args.length - 1
    const callback = args[last]
    if (typeof callback === 'function') {
      const timer = this.watch()
      const started = performance.now()
      args[last] = (error: unknown, ...results: unknown[]) => {
        clearTimeout(timer)
        this.onQuery?.((performance.now() - started) / 1000)
        ;(callback as Callback)(error === undefined || error === null ? error : this.classify(error), ...results)
      }
      return Reflect.apply(pg.Client.prototype.query, this, args)
    }
    const result: unknown = Reflect.apply(pg.Client.prototype.query, this, args)
    if (!(result instanceof Promise)) return result
    const timer = this.watch()
    const started = performance.now()
    return result.then(
      (value: unknown) => {
        clearTimeout(timer)
        this.onQuery?.((performance.now() - started) / 1000)
        return value
      },
      (error: unknown) => {
        clearTimeout(timer)
        this.onQuery?.((performance.now() - started) / 1000)
        throw this.classify(error)
      },
    )
  }

  private watch(): NodeJS.Timeout {
    return setTimeout(() => {
      this.lost = true
      this.connection.stream.destroy(new Error(`no answer from PostgreSQL within ${QUERY_TIMEOUT_MS} ms`))
    }, QUERY_TIMEOUT_MS).unref()
  }

  private classify(error: unknown): unknown {
    if (error instanceof pg.DatabaseError) {
      if (error.code !== READ_ONLY_TRANSACTION) return error
      // This connection reached a server that takes no writes: a standby, or a primary being
      // demoted while its address moves to the promoted one. The connection is given up (the
      // pool opens the next one at the database address again) and the request is told to retry.
      this.lost = true
      return new DatabaseUnavailableError(error)
    }
    return this.lost ? new DatabaseUnavailableError(error) : error
  }
}

class GuardedPool extends pg.Pool {
  /**
   * Getting a connection fails only for want of a database: refused, timed out, too many
   * connections, a server starting up or shutting down, a pool already ended. Whatever the driver
   * raised, it becomes a DatabaseUnavailableError.
   */
  override connect(...args: unknown[]): any {
    const callback = args[0]
    if (typeof callback === 'function') {
      const guarded: Callback = (error, ...results) => (callback as Callback)(error ? new DatabaseUnavailableError(error) : error, ...results)
      return Reflect.apply(pg.Pool.prototype.connect, this, [guarded])
    }
    return (Reflect.apply(pg.Pool.prototype.connect, this, []) as Promise<pg.PoolClient>).catch((error: unknown) => {
      throw new DatabaseUnavailableError(error)
    })
  }

  /**
   * pg-pool's own query fails the statement with the raw error its client emits when the
   * connection drops, past the client's classification; this one runs the statement on a
   * checked-out GuardedClient (drizzle's queries outside transactions, the readiness ping). A
   * connection found lost is released as broken; the pool would drop it anyway.
   */
  override query(...args: unknown[]): any {
    const [first] = args
    const submittable = typeof first === 'object' && first !== null && typeof (first as { submit?: unknown }).submit === 'function'
    if (submittable || typeof args.at(-1) === 'function') return Reflect.apply(pg.Pool.prototype.query, this, args)
    return (this.connect() as Promise<pg.PoolClient>).then(async (client) => {
      let failure: unknown
      try {
        return await (Reflect.apply(client.query, client, args) as Promise<unknown>)
      } catch (error) {
        failure = error
        throw error
      } finally {
        client.release(failure instanceof DatabaseUnavailableError ? failure : undefined)
      }
    })
  }
}

export interface PgOptions {
  url: string
  poolSize: number
  onError: (error: Error) => void
  onQuery?: QueryTimer
}

/**
 * Date and time values as PostgreSQL sends them, for the columns' own decoders (as Drizzle reads
 * them); every other type through pg's parsers.
 */
const TEXT_AS_SENT = new Set([pg.types.builtins.TIMESTAMPTZ, pg.types.builtins.TIMESTAMP, pg.types.builtins.DATE, pg.types.builtins.INTERVAL, 1115, 1182, 1185, 1187, 1231])
const DRIVER_VALUES = {
  getTypeParser: (oid: number, format?: 'text' | 'binary') => (TEXT_AS_SENT.has(oid) ? (value: string) => value : pg.types.getTypeParser(oid, format as 'text')),
} as pg.CustomTypesConfig

export function openPostgres({ url, poolSize, onError, onQuery }: PgOptions): Database {
  const pool = new GuardedPool({
    connectionString: url,
    max: poolSize,
    Client: onQuery === undefined ? GuardedClient : class TimedClient extends GuardedClient {
      protected override readonly onQuery = onQuery
    },
    connectionTimeoutMillis: CONNECT_TIMEOUT_MS,
    idleTimeoutMillis: 30_000,
    // TCP keepalive, so that a peer gone without a word (a failover, a cut network) is noticed
    // on idle connections too.
    keepAlive: true,
    keepAliveInitialDelayMillis: 10_000,
  })
  // An idle client losing its connection (e.g. PostgreSQL restarting) must not crash the
  // process; the pool replaces it and requests in the meantime get 503.
  pool.on('error', onError)
  const db = drizzle({ client: pool, schema })
  const inTransaction = new AsyncLocalStorage<Db>()
  // While no transaction is open the storage is disabled: on Node 20 an enabled
  // AsyncLocalStorage makes every promise of every request pay for context propagation.
  let open = 0
  // A drizzle instance per pooled connection, for its transactions: made on first use, kept with it.
  const onConnection = new WeakMap<pg.PoolClient, Db>()

  const changes = new PgChangeFeed(url, onError)

  return {
    dialect: 'postgresql',
    db,
    t: schema,
    changes,
    prepareRow(name, sql) {
      const statement = new RowStatement(name, sql, (oid) => DRIVER_VALUES.getTypeParser(oid, 'text') as (text: string) => unknown)
      return async (values) => {
        const execution = statement.run(values)
        const client = (await pool.connect()) as pg.PoolClient
        let failure: unknown
        try {
          return await new Promise<unknown[] | undefined>((resolve, reject) => {
            client.query(execution as never, ((error: Error | null, row?: unknown[]) => (error ? reject(error) : resolve(row))) as never)
          })
        } catch (error) {
          failure = error
          throw error
        } finally {
          client.release(failure instanceof DatabaseUnavailableError ? failure : undefined)
        }
      }
    },
    async transaction(fn) {
      // As on SQLite, a transaction opened inside another joins it: a second pool connection
      // would commit on its own and, with the pool exhausted, wait for one.
      const current = inTransaction.getStore()
      if (current !== undefined) return fn(current)
      // The connection is checked out here rather than by drizzle, whose pool path gives it back
      // only once BEGIN succeeded: a connection lost during BEGIN would leak from the pool for
      // good. Released in every case; the pool drops it when it is broken.
      const client = await pool.connect()
      open++
      try {
        let session = onConnection.get(client)
        if (session === undefined) onConnection.set(client, (session = drizzle({ client, schema })))
        let opened: Db | undefined
        try {
          const result = await session.transaction((tx) => {
            opened = tx
            changes.begin(tx)
            return inTransaction.run(tx, () => fn(tx))
          })
          if (opened !== undefined) changes.committed(opened)
          return result
        } catch (error) {
          if (opened !== undefined) changes.discarded(opened)
          throw error
        }
      } finally {
        client.release()
        if (--open === 0) inTransaction.disable()
      }
    },
    poolStats: () => ({ total: pool.totalCount, idle: pool.idleCount, waiting: pool.waitingCount, max: poolSize }),
    async ping() {
      await pool.query('select 1')
    },
    async migrate() {
      // On a connection of its own, outside the pool: a pool of one must not wait for a second
      // connection, and migrating (or waiting for another instance's migration) may take longer
      // than the query timeout of the pool's connections.
      const lock = new pg.Client({ connectionString: url, connectionTimeoutMillis: CONNECT_TIMEOUT_MS })
      // A lost connection fails the statement in progress; without a listener it would also throw.
      lock.on('error', () => {})
      // Like the pool's: a connection that cannot be opened is the database's absence, whatever
      // the driver raised (the start-up retries on it, db/drivers/start-failure.ts words it).
      await lock.connect().catch((error: unknown) => {
        throw new DatabaseUnavailableError(error)
      })
      try {
        // Instances starting together must not migrate the same database at once.
        await lock.query('select pg_advisory_lock($1)', [MIGRATION_LOCK_ID])
        await migrate(drizzle({ client: lock }), { migrationsFolder: migrationsFolder('pg') })
      } finally {
        await lock.query('select pg_advisory_unlock($1)', [MIGRATION_LOCK_ID]).catch(() => {})
        await lock.end().catch(() => {})
      }
    },
    async close() {
      await changes.close()
      if (!pool.ended) await pool.end()
    },
  }
}
