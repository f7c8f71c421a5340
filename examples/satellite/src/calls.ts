/**
 * The tool-call records of the instances, sent to the backend in batches.
 *
 * Each instance has its own queue: records wait at most CALL_FLUSH_MS, or go at once when
 * CALL_BATCH of them are waiting. A batch carries a fresh UUID (`batch_id`); a post that fails is
 * sent again later with the same id and the same records, so the backend, which counts a batch
 * id once, never counts a record twice. While the backend cannot be reached at most CALL_QUEUE
 * records wait per instance: beyond that the oldest are dropped, and a log line says how many.
 * A clean stop sends what is waiting.
 */
import { randomUUID } from 'node:crypto'
import { BackendError } from './backend.js'
import type { Logger } from './logger.js'
import type { ToolCallRecord } from './types.js'

/** The backend takes at most this many records per batch. */
export const CALL_BATCH = 1000
/** The most records kept waiting per instance. */
export const CALL_QUEUE = 10_000
export const CALL_FLUSH_MS = 5000

export interface CallBatch {
  batch_id: string
  calls: ToolCallRecord[]
}

export interface CallPoster {
  postCalls(instanceId: string, batch: CallBatch): Promise<unknown>
}

interface Queue {
  waiting: ToolCallRecord[]
  /** The batch being sent, or sent and not yet taken: sent again as it is until it is. */
  batch: CallBatch | undefined
  dropped: number
}

export interface CallLogOptions {
  /** How long a record waits for others before it is sent (tests shorten it). */
  flushMs?: number
}

export class CallLog {
  private readonly queues = new Map<string, Queue>()
  private timer: NodeJS.Timeout | undefined
  private sending: Promise<void> | undefined
  /** A full batch arrived while sending: send again right after. */
  private again = false
  private closed = false
  /** The last post failed: full batches wait for the next attempt instead of going at once. */
  private failing = false
  private readonly flushMs: number

  constructor(private readonly backend: CallPoster, private readonly log: Logger, options: CallLogOptions = {}) {
    this.flushMs = options.flushMs ?? CALL_FLUSH_MS
  }

  record(instanceId: string, call: ToolCallRecord): void {
    let queue = this.queues.get(instanceId)
    if (queue === undefined) {
      queue = { waiting: [], batch: undefined, dropped: 0 }
      this.queues.set(instanceId, queue)
    }
    queue.waiting.push(call)
    const excess = queue.waiting.length + (queue.batch?.calls.length ?? 0) - CALL_QUEUE
    if (excess > 0) {
      queue.waiting.splice(0, excess)
      queue.dropped += excess
    }
    if (this.closed) return
    if (queue.waiting.length >= CALL_BATCH && !this.failing) this.send()
    else this.timer ??= setTimeout(() => this.send(), this.flushMs)
  }

  /** Records waiting or being sent, all instances together (tests). */
  get pending(): number {
    let count = 0
    for (const queue of this.queues.values()) count += queue.waiting.length + (queue.batch?.calls.length ?? 0)
    return count
  }

  /** Sends everything waiting now (a clean stop), for at most `timeoutMs`. */
  async flush(timeoutMs: number): Promise<void> {
    const sent = (async () => {
      await this.sending
      this.send()
      await this.sending
    })()
    let timer: NodeJS.Timeout | undefined
    await Promise.race([sent, new Promise((resolve) => (timer = setTimeout(resolve, timeoutMs)))])
    clearTimeout(timer)
  }

  close(): void {
    this.closed = true
    clearTimeout(this.timer)
    this.timer = undefined
  }

  private send(): void {
    clearTimeout(this.timer)
    this.timer = undefined
    if (this.sending !== undefined) {
      this.again = true
      return
    }
    this.sending = this.sendAll().finally(() => {
      this.sending = undefined
      if (this.closed) return
      const again = this.again && !this.failing
      this.again = false
      if (again) {
        this.send()
      } else if (this.pending > 0) {
        this.timer ??= setTimeout(() => this.send(), this.flushMs)
      }
    })
  }

  private async sendAll(): Promise<void> {
    this.failing = false
    for (const [instanceId, queue] of [...this.queues]) {
      if (queue.dropped > 0) {
        this.log.warn(`${queue.dropped} tool call record(s) of instance ${instanceId} were dropped, the oldest first: the backend could not take them in time`)
        queue.dropped = 0
      }
      for (;;) {
        if (queue.batch === undefined) {
          if (queue.waiting.length === 0) break
          queue.batch = { batch_id: randomUUID(), calls: queue.waiting.splice(0, CALL_BATCH) }
        }
        try {
          await this.backend.postCalls(instanceId, queue.batch)
        } catch (error) {
          if (!refusedForGood(error)) {
            // Unreachable or failing: the same batch goes again later, with the same id.
            this.log.warn(`tool call records of instance ${instanceId} not sent (${messageOf(error)}); trying again with the same batch`)
            this.failing = true
            break
          }
          // 404: the instance left the document; another 4xx will not change by sending again.
          if (!(error instanceof BackendError && error.status === 404)) {
            this.log.warn(`${queue.batch.calls.length} tool call record(s) of instance ${instanceId} refused: ${messageOf(error)}`)
          }
        }
        queue.batch = undefined
      }
      if (queue.batch === undefined && queue.waiting.length === 0 && queue.dropped === 0) this.queues.delete(instanceId)
    }
  }
}

/** A 4xx other than 429: sending the same again will not help. */
function refusedForGood(error: unknown): boolean {
  return error instanceof BackendError && error.refusedForGood
}

function messageOf(error: unknown): string {
  return error instanceof Error ? error.message : String(error)
}
