import type { ChangeFeed } from '../../db/feed/changes.js'
import { KeptAnswers } from '../../db/feed/kept-answers.js'
import { families, topics } from '../../db/feed/topics.js'
import type { Clock } from '../../lib/clock.js'
import { buildDocument, type BuildDeps, type BuiltDocument } from './documents.js'

/** The longest a satellite's request is held while its document does not change. */
export const MAX_WAIT_SECONDS = 30
/**
 * At most this many requests of one satellite are held at once, per instance of the service (a
 * cluster of N instances behind a load balancer may hold N times as many): a satellite needs one,
 * and a key that opens more gets its oldest answered at once rather than pinning memory and sockets.
 */
export const MAX_HELD_PER_SATELLITE = 4
/** While change notifications are down, a held request looks at the stamp this often instead. */
const DOWN_RECHECK_MS = 1_000
const TOPIC_PREFIX = families.satellite
/** Documents given from memory: one per satellite, each checked against its stamp again after a minute at most. */
const MAX_DOCUMENTS = 10_000
const DOCUMENT_MAX_AGE_MS = 60_000

export type Answer = { kind: 'document'; built: BuiltDocument } | { kind: 'unchanged'; etag: string } | { kind: 'gone' } | { kind: 'disabled' }

/** One held request: `evicted` once newer ones pushed it out, `wake` while it waits. */
interface Hold { evicted: boolean; wake: (() => void) | undefined }

/**
 * The satellites' desired-state documents: each built once per change and kept in memory, and the
 * long-polls that wait for one to change.
 *
 * A document is given from memory as a kept answer (db/feed/kept-answers.ts), until its satellite's
 * notification comes — every change moves the satellite's `desired_stamp` and notifies in its
 * transaction, also on another instance — or, on SQLite, until anything in the database changed.
 * Then the next request compares the stamp with the last build's (one indexed read): equal, that
 * build is the answer again (the notification was of a change it already holds, such as this
 * instance's own change coming back through the database); different, the document is built again.
 *
 * A build seals again only the secrets of instances that changed: an instance whose spec hash
 * (which covers its secret values) is the one of the document before, for the same public key,
 * keeps its sealed secrets.
 *
 * Held requests cost a timer and a callback each, never a database connection; one satellite
 * has at most MAX_HELD_PER_SATELLITE of them held here at once. Each satellite has a generation
 * that its notifications move (and so does every change of the feed's state), so that a change
 * that came while a held request read its document wakes it rather than being missed.
 */
export class DesiredStates {
  private readonly documents: KeptAnswers<{ satelliteId: string; built: BuiltDocument }>
  /** The last build of each satellite: compared by stamp, and what the next build starts from. */
  private readonly last = new Map<string, BuiltDocument>()
  private readonly previousSecrets = new Map<string, Map<string, { current: string[]; previous: string[] }>>()
  private readonly generations = new Map<string, number>()
  private feedGeneration = 0
  private readonly waiters = new Map<string, Set<() => void>>()
  /** Each satellite's held requests, oldest first. */
  private readonly holds = new Map<string, Hold[]>()
  private closing = false
  private readonly unsubscribe: Array<() => void>

  constructor(private readonly deps: BuildDeps & { feed: ChangeFeed; clock: Clock }) {
    this.documents = new KeptAnswers('desired-states', deps.feed, {
      families: [families.satellite], topicsOf: ({ satelliteId }) => [topics.satellite(satelliteId)], max: MAX_DOCUMENTS, maxAgeMs: DOCUMENT_MAX_AGE_MS,
    })
    this.unsubscribe = [
      deps.feed.subscribe((topic) => {
        if (topic.startsWith(TOPIC_PREFIX)) this.changed(topic.slice(TOPIC_PREFIX.length))
      }),
      deps.feed.onStatus(() => {
        this.feedGeneration++
        this.wakeAll()
      }),
      () => this.documents.close(),
    ]
  }

  /**
   * The satellite's document, or `unchanged` while its ETag equals `ifNoneMatch` — held up to
   * `waitSeconds` for a change first. `gone` when the satellite no longer exists.
   */
  async answer(satelliteId: string, ifNoneMatch: string | undefined, waitSeconds: number, aborted: () => boolean): Promise<Answer> {
    const deadline = Date.now() + Math.min(waitSeconds, MAX_WAIT_SECONDS) * 1000
    let hold: Hold | undefined
    try {
      for (;;) {
        const generation = this.generationOf(satelliteId)
        const feedGeneration = this.feedGeneration
        const built = await this.current(satelliteId)
        if (built === undefined) return { kind: 'gone' }
        if (built.disabled) return { kind: 'disabled' }
        if (ifNoneMatch === undefined || !etagMatches(ifNoneMatch, built.etag)) return { kind: 'document', built }
        const left = deadline - Date.now()
        if (left <= 0 || this.closing || aborted() || hold?.evicted === true) return { kind: 'unchanged', etag: built.etag }
        // A change that came while the document was read (or built) found no waiter to wake, and the
        // document may predate it: read again rather than wait for a change that already happened.
        if (generation !== this.generationOf(satelliteId) || feedGeneration !== this.feedGeneration) continue
        hold ??= this.hold(satelliteId)
        await this.wait(satelliteId, this.deps.feed.up ? left : Math.min(left, DOWN_RECHECK_MS), hold)
        // Pushed out by newer requests: answered as it stands, with no further reading.
        if (hold.evicted) return { kind: 'unchanged', etag: built.etag }
      }
    } finally {
      if (hold !== undefined) this.release(satelliteId, hold)
    }
  }

  /** The current document (built, or kept while it is current); undefined when the satellite is gone. */
  async current(satelliteId: string): Promise<BuiltDocument | undefined> {
    return (await this.documents.read(satelliteId, () => this.load(satelliteId)))?.built
  }

  private async load(satelliteId: string): Promise<{ satelliteId: string; built: BuiltDocument } | undefined> {
    const { channel } = this.deps
    const last = this.last.get(satelliteId)
    if (last !== undefined) {
      const stamp = await channel.stamp(satelliteId)
      if (stamp === undefined) return this.forget(satelliteId)
      if (stamp === last.stamp) return { satelliteId, built: last }
    }
    const satellite = await channel.satellite(satelliteId)
    if (satellite === undefined) return this.forget(satelliteId)
    const built = await buildDocument(this.deps, satellite, last)
    // The instances left out read `failed` for their own teams; the document goes out regardless.
    await channel.recordUnresolved(satelliteId, built.stamp, built.placedInstallations, built.unresolved, new Date(this.deps.clock.now()))
    this.rememberSecrets(satelliteId, built)
    // Unless a build from a later stamp finished first.
    const latest = this.last.get(satelliteId)
    if (latest === undefined || latest.stamp <= built.stamp) this.last.set(satelliteId, built)
    return { satelliteId, built }
  }

  /** How many requests are held now (metrics, tests). */
  get held(): number {
    let count = 0
    for (const set of this.waiters.values()) count += set.size
    return count
  }

  /** Answers every held request now (the service is closing) and stops listening. */
  close(): void {
    this.closing = true
    for (const unsubscribe of this.unsubscribe) unsubscribe()
    this.wakeAll()
  }

  /**
   * Log lines are masked with the secret values of the spec before too: the process that ran it
   * may still print one until the satellite restarts it. One build back, kept in memory only.
   */
  private rememberSecrets(satelliteId: string, built: BuiltDocument): void {
    const before = this.previousSecrets.get(satelliteId)
    const now = new Map<string, { current: string[]; previous: string[] }>()
    for (const [instanceId, facts] of built.instances) {
      const earlier = before?.get(instanceId)
      const same = earlier !== undefined && earlier.current.join('\n') === facts.secretValues.join('\n')
      const previous = earlier === undefined ? [] : same ? earlier.previous : earlier.current
      now.set(instanceId, { current: facts.secretValues, previous })
      if (previous.length > 0) facts.maskedValues = [...new Set([...facts.secretValues, ...previous])]
    }
    this.previousSecrets.set(satelliteId, now)
  }

  /** The satellite is gone: nothing of it is kept. */
  private forget(satelliteId: string): undefined {
    this.last.delete(satelliteId)
    this.previousSecrets.delete(satelliteId)
    return undefined
  }

  private changed(satelliteId: string): void {
    this.generations.set(satelliteId, this.generationOf(satelliteId) + 1)
    const waiting = this.waiters.get(satelliteId)
    if (waiting !== undefined) for (const wake of [...waiting]) wake()
  }

  private generationOf(satelliteId: string): number {
    return this.generations.get(satelliteId) ?? 0
  }

  private wait(satelliteId: string, ms: number, hold: Hold): Promise<void> {
    return new Promise((resolve) => {
      let set = this.waiters.get(satelliteId)
      if (set === undefined) this.waiters.set(satelliteId, (set = new Set()))
      const wake = () => {
        clearTimeout(timer)
        set.delete(wake)
        if (set.size === 0 && this.waiters.get(satelliteId) === set) this.waiters.delete(satelliteId)
        hold.wake = undefined
        resolve()
      }
      const timer = setTimeout(wake, ms)
      set.add(wake)
      hold.wake = wake
    })
  }

  /** Counts a request as held; past the limit, the oldest one held is pushed out and answered now. */
  private hold(satelliteId: string): Hold {
    const hold: Hold = { evicted: false, wake: undefined }
    let holds = this.holds.get(satelliteId)
    if (holds === undefined) this.holds.set(satelliteId, (holds = []))
    holds.push(hold)
    while (holds.length > MAX_HELD_PER_SATELLITE) {
      const oldest = holds.shift()!
      oldest.evicted = true
      oldest.wake?.()
    }
    return hold
  }

  private release(satelliteId: string, hold: Hold): void {
    const holds = this.holds.get(satelliteId)
    if (holds === undefined) return
    const at = holds.indexOf(hold)
    if (at >= 0) holds.splice(at, 1)
    if (holds.length === 0) this.holds.delete(satelliteId)
  }

  private wakeAll(): void {
    for (const set of [...this.waiters.values()]) for (const wake of [...set]) wake()
  }
}

/** `If-None-Match` holds one ETag or a list of them (RFC 9110, section 13.1.2); `*` matches any. */
function etagMatches(header: string, etag: string): boolean {
  return header.split(',').some((candidate) => {
    const trimmed = candidate.trim()
    return trimmed === '*' || trimmed === etag || trimmed === `W/${etag}`
  })
}
