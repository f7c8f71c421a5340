import { topics } from './topics.js'
import type { ChangeFeed } from '../types.js'

export interface KeptAnswersOptions<T> {
  /**
   * What an answer depends on: the change topics that end it (`user:<id>`, …). Without it, answers
   * are kept only by a feed that sees every change (SQLite); on PostgreSQL each read loads.
   */
  topicsOf?: (answer: T) => readonly string[]
  /** The topic families that concern these answers; other topics are ignored. */
  families?: readonly string[]
  /** The most answers kept; the oldest goes first. */
  max: number
  /** The longest an answer is kept, notifications or not. */
  maxAgeMs: number
  /** How long this answer may be kept (at most `maxAgeMs`): for answers that also follow the clock. */
  validForMs?: (answer: T) => number
  now?: () => number
}

/** What a set of kept answers has done since it began (metrics, bench). */
export interface KeptAnswersStats {
  name: string
  /** Answered from memory. */
  hits: number
  /** Read from the database, with the feed up. */
  misses: number
  /** Read from the database because the feed was down. */
  bypassed: number
  size: number
  /** Topics indexed (each names at least one kept answer). */
  topics: number
}

interface Entry<T> {
  answer: T
  topics: readonly string[]
  /** When it stops being given. */
  until: number
}

/**
 * The one way this service keeps answers in memory: read from the database, given again until a
 * change notification names what they depend on. Credential lookups (a session, an access token,
 * a satellite key, keyed by the credential's digest), the installation lists and the satellites'
 * documents all go through it: on PostgreSQL each would otherwise cost round trips, and every
 * write that can change their answer notifies in its transaction (changes.ts), the database's own
 * triggers included. On SQLite the feed compares the file's change stamp at each read instead, and
 * any change ends everything kept (`topics.everything`).
 *
 * The rules that keep an answer from outliving the row it came from:
 * - nothing is kept, and nothing is answered from memory, while the feed is not `fresh` (on
 *   PostgreSQL, down: a notification may be missed then): everything is dropped when it goes
 *   down, and kept again only after it is back;
 * - a read that a notification overtook does not keep its answer: each read takes the generation
 *   first, and every notification of these families (and every change of the feed's state) moves
 *   it;
 * - while a transaction of this instance that sent a topic is open, answers naming that topic
 *   are neither kept nor given (the database may have committed it before this instance is told);
 * - an answer is kept at most `maxAgeMs`, and at most `max` of them at once.
 * A miss (no answer) is never kept: a credential created a moment later must be found.
 */
export class KeptAnswers<T> {
  private readonly entries = new Map<string, Entry<T>>()
  private readonly byTopic = new Map<string, Set<string>>()
  private readonly held = new Map<string, number>()
  private generation = 0
  private hits = 0
  private misses = 0
  private bypassed = 0
  private readonly now: () => number
  private readonly unsubscribe: Array<() => void>

  private readonly keepable: boolean

  constructor(readonly name: string, private readonly feed: ChangeFeed, private readonly options: KeptAnswersOptions<T>) {
    this.now = options.now ?? Date.now
    this.keepable = options.topicsOf !== undefined || feed.seesEverything
    this.unsubscribe = [
      feed.subscribe((topic) => {
        if (topic === topics.everything) this.clear()
        else if (this.concerns(topic)) this.forget(topic)
      }),
      feed.onStatus(() => this.clear()),
      feed.onHold({
        hold: (topic) => {
          if (!this.concerns(topic)) return
          this.held.set(topic, (this.held.get(topic) ?? 0) + 1)
          this.forget(topic)
        },
        release: (topic) => {
          const count = this.held.get(topic)
          if (count === undefined) return
          if (count <= 1) this.held.delete(topic)
          else this.held.set(topic, count - 1)
        },
      }),
    ]
  }

  /** The answer for `key`: from memory when kept and still valid, otherwise `load`ed (and kept when allowed). */
  async read(key: string, load: () => Promise<T | undefined>): Promise<T | undefined> {
    if (!this.keepable) return load()
    if (!this.feed.fresh()) {
      // On SQLite a transaction is open: an ordinary read, not a feed that cannot be heard.
      if (this.feed.seesEverything) this.misses++
      else this.bypassed++
      return load()
    }
    const startedAt = this.now()
    const entry = this.entries.get(key)
    if (entry !== undefined) {
      if (this.valid(entry, startedAt)) {
        this.hits++
        return entry.answer
      }
      this.remove(key, entry)
    }
    this.misses++
    const generation = this.generation
    const answer = await load()
    // `fresh` first: on SQLite it is what tells of a change made while the answer was read.
    if (answer !== undefined && this.feed.fresh() && generation === this.generation) this.keep(key, answer, startedAt)
    return answer
  }

  /**
   * The kept answer for `key` when it may be given now, else undefined (nothing is read): for
   * checks on every request that should not cost a promise.
   */
  peek(key: string): T | undefined {
    if (!this.keepable || !this.feed.fresh()) return undefined
    const entry = this.entries.get(key)
    if (entry === undefined || !this.valid(entry, this.now())) return undefined
    this.hits++
    return entry.answer
  }

  stats(): KeptAnswersStats {
    return { name: this.name, hits: this.hits, misses: this.misses, bypassed: this.bypassed, size: this.entries.size, topics: this.byTopic.size }
  }

  /** Drops everything kept. */
  clear(): void {
    this.generation++
    this.entries.clear()
    this.byTopic.clear()
  }

  close(): void {
    for (const unsubscribe of this.unsubscribe) unsubscribe()
    this.clear()
  }

  private concerns(topic: string): boolean {
    for (const family of this.options.families ?? []) if (topic.startsWith(family)) return true
    return false
  }

  private valid(entry: Entry<T>, now: number): boolean {
    return now < entry.until && !this.isHeld(entry.topics)
  }

  private isHeld(topics: readonly string[]): boolean {
    if (this.held.size === 0) return false
    for (const topic of topics) if (this.held.has(topic)) return true
    return false
  }

  private keep(key: string, answer: T, readAt: number): void {
    const topics = this.options.topicsOf?.(answer) ?? []
    if (this.isHeld(topics)) return
    const validFor = Math.min(this.options.maxAgeMs, this.options.validForMs?.(answer) ?? Infinity)
    if (validFor <= 0) return
    const previous = this.entries.get(key)
    if (previous !== undefined) this.remove(key, previous)
    while (this.entries.size >= this.options.max) {
      const [oldestKey, oldest] = this.entries.entries().next().value!
      this.remove(oldestKey, oldest)
    }
    this.entries.set(key, { answer, topics, until: readAt + validFor })
    for (const topic of topics) {
      let keys = this.byTopic.get(topic)
      if (keys === undefined) this.byTopic.set(topic, (keys = new Set()))
      keys.add(key)
    }
  }

  private forget(topic: string): void {
    this.generation++
    const keys = this.byTopic.get(topic)
    if (keys === undefined) return
    for (const key of keys) {
      const entry = this.entries.get(key)
      if (entry !== undefined) this.remove(key, entry)
    }
    this.byTopic.delete(topic)
  }

  private remove(key: string, entry: Entry<T>): void {
    this.entries.delete(key)
    for (const topic of entry.topics) {
      const keys = this.byTopic.get(topic)
      if (keys === undefined) continue
      keys.delete(key)
      if (keys.size === 0) this.byTopic.delete(topic)
    }
  }
}

/** Every set of kept answers of a database, for its metrics. */
const registry = new WeakMap<object, Map<string, KeptAnswers<unknown>>>()

/** The kept answers named `name` of `owner` (one database), made on first use. */
export function keptAnswers<T>(owner: object, name: string, make: () => KeptAnswers<T>): KeptAnswers<T> {
  let named = registry.get(owner)
  if (named === undefined) registry.set(owner, (named = new Map()))
  let kept = named.get(name)
  if (kept === undefined) named.set(name, (kept = make() as KeptAnswers<unknown>))
  return kept as KeptAnswers<T>
}

/** The statistics of every set of kept answers of `owner`. */
export function keptAnswersStats(owner: object): KeptAnswersStats[] {
  return [...(registry.get(owner)?.values() ?? [])].map((kept) => kept.stats())
}
