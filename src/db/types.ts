import type { NodePgDatabase } from 'drizzle-orm/node-postgres'
import type { ChangeFeed } from './changes.js'
import type * as pgSchema from './schema/pg/index.js'

export type Dialect = 'sqlite' | 'postgresql'

/**
 * The tables, typed once. Both schema folders export the same names with the same row types
 * (SQLite columns use `timestamp_ms` and `boolean` modes), so repositories are written once
 * against this shape; at run time each dialect's own table objects and query builder are used,
 * and the shared test suite runs every repository on both.
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
  /**
   * SQLite only: a read like `prepareRow` whose decoded answer for a key is given again, without
   * reading the row, for as long as nothing in the database has changed since — neither a write
   * through this process's connection nor a commit by any other connection or process. Each call
   * reads a change stamp first (one statement, one read transaction); only when it moved, or the
   * key has no answer, is the row read, in one read transaction with a new stamp, so the answer
   * kept is that stamp's. A change made before a request is seen by that request. Answers are
   * shared: `decode` must freeze them.
   * PostgreSQL has no such check (another instance's commit leaves no trace in this one).
   */
  prepareReusedRow?<T extends object>(name: string, sql: string, decode: (row: unknown[]) => T): (key: string, params: unknown[]) => Promise<T | undefined>
  /** The connection pool's state; PostgreSQL only (SQLite has one connection). */
  poolStats?(): PoolStats
  /** One trivial round trip; throws when the database does not answer. */
  ping(): Promise<void>
  migrate(): Promise<void>
  close(): Promise<void>
}
