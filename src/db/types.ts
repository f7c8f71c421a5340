import type { NodePgDatabase } from 'drizzle-orm/node-postgres'
import type * as pgSchema from './schema/pg/index.js'

export type Dialect = 'sqlite' | 'postgresql'

/**
 * The tables, typed once. Both schema folders export the same names with the same row types
 * (SQLite columns use `timestamp_ms` and `boolean` modes; schema/agreement.ts fails the build
 * where they part), so repositories are written once against this shape; at run time each
 * dialect's own table objects and query builder are used, and the shared test suite runs every
 * repository on both.
 */
export type Tables = typeof pgSchema

/** A query executor: the database itself or an open transaction. */
export type Db = NodePgDatabase<Tables>

/** Told how long each statement took, in seconds (metrics); called for every statement, so it must be cheap. */
export type QueryTimer = (seconds: number) => void

/** The connections of a pool, right now. */
export interface PoolStats {
  total: number
  idle: number
  /** Checkouts waiting because every connection is in use. */
  waiting: number
  max: number
}

export interface Database {
  readonly dialect: Dialect
  readonly db: Db
  readonly t: Tables
  /** Change notifications between instances (and within this one); see changes.ts. */
  readonly changes: ChangeFeed
  /**
   * Runs `fn` in one transaction. On SQLite, where one connection serves every request,
   * transactions are serialized and statements from outside an open transaction wait for it,
   * so nothing leaks into (or is rolled back with) someone else's transaction.
   */
  transaction<T>(fn: (tx: Db) => Promise<T>): Promise<T>
  /**
   * A read prepared once on the driver (better-sqlite3's statement, pg's named statement):
   * positional parameters in, the first row as an array of driver values out, undefined for
   * none. For the few lookups every request makes (see row-reader.ts); outside transactions.
   */
  prepareRow(name: string, sql: string): (params: unknown[]) => Promise<unknown[] | undefined>
  /** The connection pool's state; PostgreSQL only (SQLite has one connection). */
  poolStats?(): PoolStats
  /** One trivial round trip; throws when the database does not answer. */
  ping(): Promise<void>
  migrate(): Promise<void>
  close(): Promise<void>
}

/**
 * Change notifications: how every instance of the service learns that something it may hold in
 * memory changed, at the moment the change commits. A topic is a short string naming what changed
 * (`satellite:<id>`). On PostgreSQL a notification is sent with NOTIFY in the transaction that
 * makes the change, so it is delivered when (and only if) that transaction commits, to every
 * instance listening on the database, this one included. On SQLite it is delivered in-process
 * after the commit: another process sharing the file is not heard, so that feed is never `up`.
 *
 * Whatever depends on notifications must also follow `up`: while the feed is down (the listening
 * connection was lost), notifications may be missed, so caches are dropped and bypassed, and
 * rebuilt only once the feed is back.
 */
export interface ChangeFeed {
  /**
   * Whether every writer's notifications reach this instance by themselves: PostgreSQL while its
   * listening connection is up; never on SQLite, where another process on the same file is heard
   * only by `fresh` (a held long-poll looks again now and then).
   */
  readonly up: boolean
  /**
   * Whether answers kept in memory may be given now, after bringing the feed up to date. PostgreSQL:
   * while `up`. SQLite: unless a transaction is open (its writes are nobody else's yet), after
   * comparing the database's change stamp, which moves with every write of this process and every
   * commit of another; when it moved, `everything` is delivered first. Cheap: called on every kept read
   * (SQLite reads the stamp once for the kept reads of one request, see `lookAgain`).
   */
  fresh(): boolean
  /**
   * A request begins: the next `fresh` brings the feed up to date again rather than trusting what
   * it learned earlier in this turn of the event loop (SQLite reads its change stamp once per turn
   * and request; PostgreSQL hears every change by itself and does nothing here).
   */
  lookAgain(): void
  /**
   * Whether `fresh` sees every change to the database (SQLite), so that an answer may be kept even
   * with no topic naming what it depends on. On PostgreSQL only topics end kept answers.
   */
  readonly seesEverything: boolean
  /** Sends `topic`, delivered when `executor`'s transaction commits (at once outside a transaction). */
  notify(executor: Db, topic: string): Promise<void>
  /**
   * Delivers `topic` to this instance only, as `notify` would: for the topics the database's own
   * triggers send to every instance (topics.ts). Costs no statement.
   */
  tell(executor: Db, topic: string): void
  /** Called with each topic delivered; answers the function that unsubscribes. Starts the feed on first use. */
  subscribe(listener: (topic: string) => void): () => void
  /** Called when the feed goes down (false) or comes back (true). */
  onStatus(listener: (up: boolean) => void): () => void
  /**
   * Told of each topic sent by a transaction of this instance while that transaction is open:
   * `hold` when it is sent, `release` once the transaction ended (after the topic was delivered,
   * if it committed). Meanwhile the database may already hold the change (its commit is under
   * way) while this instance has not been told yet, so what the topic names is not answered from
   * memory.
   */
  onHold(listener: HoldListener): () => void
  close(): Promise<void>
}

export interface HoldListener {
  hold(topic: string): void
  release(topic: string): void
}
