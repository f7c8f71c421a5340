import type { Db } from './types.js'

/**
 * Change notifications: how every instance of the service learns that something it may hold in
 * memory changed, at the moment the change commits. A topic is a short string naming what changed
 * (`satellite:<id>`). On PostgreSQL a notification is sent with NOTIFY in the transaction that
 * makes the change, so it is delivered when (and only if) that transaction commits, to every
 * instance listening on the database, this one included. On SQLite, where one process owns the
 * database, it is delivered in-process after the commit.
 *
 * Whatever depends on notifications must also follow `up`: while the feed is down (the listening
 * connection was lost), notifications may be missed, so caches are dropped and bypassed, and
 * rebuilt only once the feed is back.
 */
export interface ChangeFeed {
  /** Whether notifications are being received now. */
  readonly up: boolean
  /** Sends `topic`, delivered when `executor`'s transaction commits (at once outside a transaction). */
  notify(executor: Db, topic: string): Promise<void>
  /** Called with each topic delivered; answers the function that unsubscribes. Starts the feed on first use. */
  subscribe(listener: (topic: string) => void): () => void
  /** Called when the feed goes down (false) or comes back (true). */
  onStatus(listener: (up: boolean) => void): () => void
  close(): Promise<void>
}

/** The listeners of a feed; each implementation delivers through it. */
export class Subscribers {
  private readonly topics = new Set<(topic: string) => void>()
  private readonly statuses = new Set<(up: boolean) => void>()

  get size(): number {
    return this.topics.size
  }

  add(listener: (topic: string) => void): () => void {
    this.topics.add(listener)
    return () => void this.topics.delete(listener)
  }

  addStatus(listener: (up: boolean) => void): () => void {
    this.statuses.add(listener)
    return () => void this.statuses.delete(listener)
  }

  deliver(topic: string): void {
    for (const listener of this.topics) listener(topic)
  }

  status(up: boolean): void {
    for (const listener of this.statuses) listener(up)
  }
}
