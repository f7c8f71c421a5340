import { AsyncLocalStorage } from 'node:async_hooks'
import { mkdirSync } from 'node:fs'
import { dirname } from 'node:path'
import BetterSqlite3 from 'better-sqlite3'
import { drizzle as drizzleBetterSqlite } from 'drizzle-orm/better-sqlite3'
import { migrate } from 'drizzle-orm/better-sqlite3/migrator'
import { drizzle, type AsyncRemoteCallback } from 'drizzle-orm/sqlite-proxy'
import { migrationsFolder } from '../../paths.js'
import * as schema from '../schema/sqlite/index.js'
import { Subscribers, type ChangeFeed } from '../feed/changes.js'
import { topics } from '../feed/topics.js'
import type { Database, Db, QueryTimer, Tables } from '../types.js'

const STATEMENT_CACHE_SIZE = 500

/**
 * Statements that may write, run through any SQLite database this process opened. A change stamp
 * read in this turn of the event loop stands for the whole turn only while this count has not
 * moved (see `fresh`): two databases of one process on one file (tests run two instances so) write
 * and read in the same turn.
 */
let writesInProcess = 0

interface Holder {
  tx?: Db
  released: Promise<void>
  /** Change topics sent in this transaction, delivered once it commits. */
  changes?: string[]
}

/**
 * SQLite through better-sqlite3, exposed to Drizzle via its async proxy driver so that both
 * dialects share one async API (including `transaction(async tx => …)`, which the synchronous
 * better-sqlite3 driver cannot offer).
 */
export function openSqlite(path: string, onQuery?: QueryTimer): Database {
  if (path !== ':memory:') mkdirSync(dirname(path), { recursive: true })
  const client = new BetterSqlite3(path)
  if (path !== ':memory:') client.pragma('journal_mode = WAL')
  client.pragma('foreign_keys = ON')
  client.pragma('busy_timeout = 5000')
  client.pragma('synchronous = NORMAL')

  const statements = new Map<string, BetterSqlite3.Statement>()
  const prepare = (sql: string): BetterSqlite3.Statement => {
    let statement = statements.get(sql)
    if (statement === undefined) {
      statement = client.prepare(sql)
      if (statements.size >= STATEMENT_CACHE_SIZE) statements.delete(statements.keys().next().value!)
      statements.set(sql, statement)
    }
    return statement
  }

  const context = new AsyncLocalStorage<Holder>()
  let holder: Holder | null = null
  let queue: Promise<void> = Promise.resolve()


  const run = (sql: string, params: unknown[], method: string) => {
    const statement = prepare(sql)
    if (!statement.readonly) writesInProcess++
    if (method === 'run' || !statement.reader) {
      const result = statement.run(...params)
      return { rows: [], changes: result.changes }
    }
    statement.raw(true)
    // Drizzle maps positional rows itself; `get` expects the single row, not a list.
    return method === 'get' ? { rows: statement.get(...params) as unknown[] } : { rows: statement.all(...params) }
  }

  /**
   * A statement's run, timed for the query metrics when they are on: statements run
   * synchronously, so this is their time, not the wait for a transaction before them.
   */
  const timed = <R>(run: () => R): R => {
    if (onQuery === undefined) return run()
    const started = performance.now()
    try {
      return run()
    } finally {
      onQuery((performance.now() - started) / 1000)
    }
  }

  const execute: AsyncRemoteCallback = async (sql, params, method) => {
    while (holder !== null && context.getStore() !== holder) await holder.released
    return timed(() => run(sql, params, method))
  }

  const db = drizzle(execute, { schema }) as unknown as Db

  // What the connection has seen change: total_changes() counts the rows written through it,
  // committed or not (it never goes back); data_version changes when another connection — another
  // process, a command-line tool — has committed since this one last read. Every write that could
  // alter an answer moves one of them. Read as two statements (1.6 µs)
  // rather than one select over pragma_data_version (2.2 µs): total_changes() reads no file, the
  // pragma starts the read transaction, and nothing this connection writes can come in between.
  let changesStatement: BetterSqlite3.Statement | undefined
  let versionStatement: BetterSqlite3.Statement | undefined
  let seenChanges = -1
  let seenVersion = -1
  const stampMoved = (): boolean => {
    changesStatement ??= client.prepare('select total_changes()').pluck(true)
    versionStatement ??= client.prepare('pragma data_version').pluck(true)
    const changes = changesStatement.get() as number
    const version = versionStatement.get() as number
    if (changes === seenChanges && version === seenVersion) return false
    seenChanges = changes
    seenVersion = version
    return true
  }

  // Changes are delivered in-process, after their commit. Another process on the same file (a
  // second instance, which operations.md allows, or a command-line tool) is never heard, so the
  // feed never counts as up; what is kept in memory is checked against the change stamp instead
  // (`fresh`), and a held long-poll looks again once a second.
  const subscribers = new Subscribers()
  // The stamp is read once per request and turn of the event loop: the kept reads of one request
  // (its credential, the team it names, the list it asks for) share one reading, as if they had
  // all been made when the request began. A new request (`lookAgain`), the next turn, or a write
  // by this process (counted above) makes the next kept read look again; so another process's
  // commit is seen by every request that begins after it.
  let stampReadThisTurn = false
  let writesAtStampRead = -1
  const turnEnded = () => {
    stampReadThisTurn = false
  }
  const changes: ChangeFeed = {
    up: false,
    seesEverything: true,
    fresh() {
      if (holder !== null) return false
      if (stampReadThisTurn && writesAtStampRead === writesInProcess) return true
      if (stampMoved()) subscribers.deliver(topics.everything)
      if (!stampReadThisTurn) {
        stampReadThisTurn = true
        setImmediate(turnEnded)
      }
      writesAtStampRead = writesInProcess
      return true
    },
    lookAgain() {
      writesAtStampRead = -1
    },
    async notify(executor, topic) {
      changes.tell(executor, topic)
    },
    tell(executor, topic) {
      const current = context.getStore()
      if (current !== undefined && current.tx === executor) {
        ;(current.changes ??= []).push(topic)
        subscribers.hold(topic)
      } else subscribers.deliver(topic)
    },
    subscribe: (listener) => subscribers.add(listener),
    onStatus: (listener) => subscribers.addStatus(listener),
    onHold: (listener) => subscribers.addHold(listener),
    async close() {},
  }

  return {
    dialect: 'sqlite',
    db,
    // The same rows as PostgreSQL's tables, which schema/agreement.ts holds tsc to.
    t: schema as unknown as Tables,
    changes,
    async transaction(fn) {
      const current = context.getStore()
      if (current?.tx !== undefined) return fn(current.tx)
      const previous = queue
      let release!: () => void
      const mine: Holder = { released: new Promise<void>((resolve) => (release = resolve)) }
      queue = previous.then(() => mine.released)
      await previous
      holder = mine
      try {
        const result = await context.run(mine, () =>
          (db as unknown as ReturnType<typeof drizzle>).transaction(
            (tx) => {
              mine.tx = tx as unknown as Db
              return fn(mine.tx)
            },
            { behavior: 'immediate' },
          ),
        )
        // Committed: what it changed is told now (a rolled-back transaction's changes never are).
        for (const topic of mine.changes ?? []) subscribers.deliver(topic)
        return result
      } finally {
        for (const topic of mine.changes ?? []) subscribers.release(topic)
        holder = null
        release()
        // Off until the next transaction: on Node 20 an enabled AsyncLocalStorage makes every
        // promise of every request pay for context propagation (measured: a fifth of the
        // throughput of a session-authenticated read).
        context.disable()
      }
    },
    prepareRow(_name, sql) {
      // Prepared on first use: the tables exist only once the migrations have run.
      let statement: BetterSqlite3.Statement | undefined
      return async (params) => {
        while (holder !== null && context.getStore() !== holder) await holder.released
        statement ??= client.prepare(sql).raw(true)
        return timed(() => statement!.get(...params) as unknown[] | undefined)
      }
    },
    async ping() {
      prepare('select 1').get()
    },
    async migrate() {
      migrate(drizzleBetterSqlite(client), { migrationsFolder: migrationsFolder('sqlite') })
    },
    async close() {
      if (client.open) client.close()
    },
  }
}
