import { sql } from 'drizzle-orm'
import pg from 'pg'
import { Subscribers, type ChangeFeed, type HoldListener } from './changes.js'
import type { Db } from '../types.js'

/** The one channel every instance listens on; topics travel as its payload. */
export const CHANNEL = 'service_changes'
/** How the listening connection is named in pg_stat_activity (operators, and the tests that cut it). */
export const LISTENER_APPLICATION_NAME = 'service-change-listener'
const FIRST_RETRY_MS = 250
const LAST_RETRY_MS = 5_000
const CONNECT_TIMEOUT_MS = 5_000

/**
 * The PostgreSQL change feed: NOTIFY in the committing transaction, LISTEN on one dedicated
 * connection per instance (outside the pool, which it would otherwise hold for good). When that
 * connection is lost, the feed reports itself down at once and reconnects with a growing delay;
 * once LISTEN runs again it reports itself up. A notification sent while it was down is lost,
 * which is why everything built on it drops its state when the feed goes down.
 */
export class PgChangeFeed implements ChangeFeed {
  private readonly subscribers = new Subscribers()
  private client: pg.Client | null = null
  private started = false
  private closed = false
  private retryMs = FIRST_RETRY_MS
  private retryTimer: NodeJS.Timeout | null = null
  private isUp = false
  /** Topics sent in each open transaction of this instance, told to this instance's listeners at its commit. */
  private readonly pending = new WeakMap<Db, string[]>()

  constructor(private readonly url: string, private readonly onError: (error: Error) => void) {}

  get up(): boolean {
    return this.isUp
  }

  /** Every commit notifies by itself (the listener hears it), so only whether it listens matters. */
  fresh(): boolean {
    return this.isUp
  }

  /** Nothing to do: notifications arrive by themselves. */
  lookAgain(): void {}

  readonly seesEverything = false

  /**
   * NOTIFY in `executor`'s transaction. This instance learns of its own change at the commit
   * itself (see `committed`), not only when the notification comes back through the listener a
   * moment later: a request that follows the write on this instance never sees what it replaced.
   */
  async notify(executor: Db, topic: string): Promise<void> {
    const inTransaction = this.pending.has(executor)
    if (inTransaction) this.tell(executor, topic)
    await executor.execute(sql`select pg_notify(${CHANNEL}, ${topic})`)
    if (!inTransaction) this.subscribers.deliver(topic)
  }

  /**
   * This instance's share of a notification the database sends itself (a trigger): held from now
   * until `executor`'s transaction ends (released by `committed` or `discarded`) and delivered here
   * at its commit; delivered at once outside a transaction.
   */
  tell(executor: Db, topic: string): void {
    const pending = this.pending.get(executor)
    if (pending === undefined) return this.subscribers.deliver(topic)
    pending.push(topic)
    this.subscribers.hold(topic)
  }

  /** A transaction of this instance began (db/drivers/pg.ts). */
  begin(tx: Db): void {
    this.pending.set(tx, [])
  }

  /** It committed: its topics are told here at once (and to every instance by the NOTIFY). */
  committed(tx: Db): void {
    const topics = this.pending.get(tx) ?? []
    this.pending.delete(tx)
    for (const topic of topics) this.subscribers.deliver(topic)
    for (const topic of topics) this.subscribers.release(topic)
  }

  /** It rolled back: nothing changed. */
  discarded(tx: Db): void {
    const topics = this.pending.get(tx) ?? []
    this.pending.delete(tx)
    for (const topic of topics) this.subscribers.release(topic)
  }

  subscribe(listener: (topic: string) => void): () => void {
    const unsubscribe = this.subscribers.add(listener)
    if (!this.started) {
      this.started = true
      void this.connect()
    }
    return unsubscribe
  }

  onStatus(listener: (up: boolean) => void): () => void {
    return this.subscribers.addStatus(listener)
  }

  onHold(listener: HoldListener): () => void {
    return this.subscribers.addHold(listener)
  }

  async close(): Promise<void> {
    this.closed = true
    if (this.retryTimer !== null) clearTimeout(this.retryTimer)
    const client = this.client
    this.client = null
    this.setUp(false)
    await client?.end().catch(() => {})
  }

  private async connect(): Promise<void> {
    if (this.closed) return
    const client = new pg.Client({
      connectionString: this.url, application_name: LISTENER_APPLICATION_NAME, connectionTimeoutMillis: CONNECT_TIMEOUT_MS,
      keepAlive: true, keepAliveInitialDelayMillis: 10_000,
    })
    let lost = false
    const onLost = (error?: Error) => {
      if (lost) return
      lost = true
      if (error !== undefined && !this.closed) this.onError(error)
      if (this.client === client) this.client = null
      this.setUp(false)
      void client.end().catch(() => {})
      this.retry()
    }
    client.on('error', onLost)
    client.on('end', () => onLost())
    client.on('notification', (message) => {
      if (message.channel === CHANNEL && message.payload !== undefined) this.subscribers.deliver(message.payload)
    })
    try {
      await client.connect()
      await client.query(`LISTEN ${CHANNEL}`)
    } catch (error) {
      onLost(error instanceof Error ? error : new Error(String(error)))
      return
    }
    if (this.closed || lost) {
      await client.end().catch(() => {})
      return
    }
    this.client = client
    this.retryMs = FIRST_RETRY_MS
    this.setUp(true)
  }

  private retry(): void {
    if (this.closed || this.retryTimer !== null) return
    const delay = this.retryMs
    this.retryMs = Math.min(this.retryMs * 2, LAST_RETRY_MS)
    this.retryTimer = setTimeout(() => {
      this.retryTimer = null
      void this.connect()
    }, delay)
    this.retryTimer.unref()
  }

  private setUp(up: boolean): void {
    if (this.isUp === up) return
    this.isUp = up
    this.subscribers.status(up)
  }
}
