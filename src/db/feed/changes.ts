import type { HoldListener } from '../types.js'

export type { ChangeFeed, HoldListener } from '../types.js'

/** The listeners of a feed; each implementation delivers through it. */
export class Subscribers {
  private readonly topics = new Set<(topic: string) => void>()
  private readonly statuses = new Set<(up: boolean) => void>()
  private readonly holds = new Set<HoldListener>()

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

  addHold(listener: HoldListener): () => void {
    this.holds.add(listener)
    return () => void this.holds.delete(listener)
  }

  /** A transaction of this instance sent `topic` and has not ended yet. */
  hold(topic: string): void {
    for (const listener of this.holds) listener.hold(topic)
  }

  /** That transaction ended (after its topics were delivered, if it committed). */
  release(topic: string): void {
    for (const listener of this.holds) listener.release(topic)
  }

  deliver(topic: string): void {
    for (const listener of this.topics) listener(topic)
  }

  status(up: boolean): void {
    for (const listener of this.statuses) listener(up)
  }
}
