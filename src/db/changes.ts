export type { ChangeFeed } from './types.js'

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
