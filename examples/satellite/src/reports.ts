/**
 * What the satellite tells the backend about its instances: observed state, tool lists and log
 * lines. Each kind is sent in the background, coalesced (only the latest observed state and tool
 * list matter) or batched (logs), and retried while the backend is unreachable, so a slow
 * backend never holds up an instance.
 */
import type { Tool } from '@modelcontextprotocol/sdk/types.js'
import { BackendError, type Backend } from './backend.js'
import type { Logger } from './logger.js'
import type { LogLine, ObservedInstance, ReportedTool } from './types.js'

/** The backend takes at most this many lines per request, each at most LOG_TEXT_BYTES. */
export const LOG_BATCH = 500
export const LOG_TEXT_BYTES = 8 * 1024
/** Lines kept per instance while the backend cannot be reached; older ones are dropped. */
const LOG_QUEUE = 5000
const LOG_FLUSH_MS = 1000
const RETRY_MS = 5000
/** Observed-state changes within this window go out as one report. */
const COALESCE_MS = 100

export interface ObservedSnapshot {
  revision: string
  instances: ObservedInstance[]
}

export class Reports {
  private observedDirty = false
  private observedSending: Promise<void> | undefined
  private observedTimer: NodeJS.Timeout | undefined
  private readonly pendingTools = new Map<string, ReportedTool[]>()
  private toolsSending: Promise<void> | undefined
  private readonly logQueues = new Map<string, { lines: LogLine[]; dropped: number }>()
  private logTimer: NodeJS.Timeout | undefined
  private logsSending: Promise<void> | undefined
  private closed = false
  /** False once the backend refused `output_schema` as an unknown field (a backend from before it). */
  private backendTakesOutputSchema = true

  constructor(private readonly backend: Backend, private readonly log: Logger, private readonly snapshot: () => ObservedSnapshot | undefined) {}

  /** Something observable changed: a report of the whole current state follows shortly. */
  observedChanged(): void {
    this.observedDirty = true
    if (this.observedTimer !== undefined || this.observedSending !== undefined || this.closed) return
    this.observedTimer = setTimeout(() => {
      this.observedTimer = undefined
      this.observedSending = this.sendObserved().finally(() => {
        this.observedSending = undefined
        if (this.observedDirty) this.observedChanged()
      })
    }, COALESCE_MS)
  }

  /** The latest full tool list of an instance. */
  tools(instanceId: string, tools: readonly Tool[]): void {
    this.pendingTools.set(instanceId, tools.map(toReported))
    if (this.toolsSending === undefined && !this.closed) {
      this.toolsSending = this.sendTools().finally(() => (this.toolsSending = undefined))
    }
  }

  line(instanceId: string, stream: LogLine['stream'], text: string): void {
    let queue = this.logQueues.get(instanceId)
    if (queue === undefined) {
      queue = { lines: [], dropped: 0 }
      this.logQueues.set(instanceId, queue)
    }
    queue.lines.push({ at: new Date().toISOString(), stream, text: cut(text, LOG_TEXT_BYTES) })
    if (queue.lines.length > LOG_QUEUE) {
      queue.lines.shift()
      queue.dropped += 1
    }
    if (this.logTimer === undefined && !this.closed) this.logTimer = setTimeout(() => void this.flushLogs(), LOG_FLUSH_MS)
  }

  /** Sends what is waiting now (shutdown), for at most `timeoutMs`: an unreachable backend does not hold the exit. */
  async flush(timeoutMs: number): Promise<void> {
    clearTimeout(this.observedTimer)
    this.observedTimer = undefined
    const sent = (async () => {
      await this.observedSending
      if (this.observedDirty) await this.sendObserved()
      await this.toolsSending
      await this.flushLogs()
    })()
    let timer: NodeJS.Timeout | undefined
    await Promise.race([sent, new Promise((resolve) => (timer = setTimeout(resolve, timeoutMs)))])
    clearTimeout(timer)
  }

  close(): void {
    this.closed = true
    clearTimeout(this.observedTimer)
    clearTimeout(this.logTimer)
  }

  private async sendObserved(): Promise<void> {
    this.observedDirty = false
    const snapshot = this.snapshot()
    if (snapshot === undefined) return
    try {
      const answer = await this.backend.observedState(snapshot.revision, snapshot.instances)
      // Reports about instances the backend has moved on from (a newer spec) are expected now and then.
      if (answer.ignored > 0) this.log.info(`observed state of ${answer.ignored} instance(s) not taken: the backend has a newer document`)
    } catch (error) {
      this.log.warn(`observed-state report failed: ${messageOf(error)}`)
      if (!this.closed && !refusedForGood(error)) {
        await delay(RETRY_MS)
        this.observedDirty = true
      }
    }
  }

  private async sendTools(): Promise<void> {
    while (this.pendingTools.size > 0 && !this.closed) {
      const [instanceId, tools] = this.pendingTools.entries().next().value as [string, ReportedTool[]]
      this.pendingTools.delete(instanceId)
      try {
        await this.putTools(instanceId, tools)
      } catch (error) {
        if (!gone(error)) this.log.warn(`tool report for instance ${instanceId} failed: ${messageOf(error)}`)
        if (refusedForGood(error)) continue
        // Keep it unless a newer list arrived meanwhile, and try again later.
        if (!this.pendingTools.has(instanceId)) this.pendingTools.set(instanceId, tools)
        await delay(RETRY_MS)
      }
    }
  }

  /**
   * Sends a tool list with each tool's `output_schema`. A backend from before that field refuses
   * it (400 VALIDATION_ERROR naming it): the list is sent again without it, and so are all later ones.
   */
  private async putTools(instanceId: string, tools: ReportedTool[]): Promise<void> {
    const plain = (): ReportedTool[] => tools.map(({ output_schema: _dropped, ...tool }) => tool)
    if (!this.backendTakesOutputSchema) return this.backend.putTools(instanceId, plain())
    try {
      await this.backend.putTools(instanceId, tools)
    } catch (error) {
      const refused = error instanceof BackendError && error.status === 400 && error.code === 'VALIDATION_ERROR' &&
        error.fields.some((field) => field.endsWith('.output_schema'))
      if (!refused) throw error
      this.backendTakesOutputSchema = false
      this.log.warn('the backend does not know the output_schema of tools yet; reporting tools without it')
      await this.backend.putTools(instanceId, plain())
    }
  }

  private flushLogs(): Promise<void> {
    clearTimeout(this.logTimer)
    this.logTimer = undefined
    if (this.logsSending !== undefined) return this.logsSending
    this.logsSending = this.sendLogs().finally(() => {
      this.logsSending = undefined
      const waiting = [...this.logQueues.values()].some((queue) => queue.lines.length > 0)
      if (waiting && !this.closed && this.logTimer === undefined) this.logTimer = setTimeout(() => void this.flushLogs(), RETRY_MS)
    })
    return this.logsSending
  }

  private async sendLogs(): Promise<void> {
    for (const [instanceId, queue] of this.logQueues) {
      if (queue.dropped > 0) {
        queue.lines.unshift({ at: new Date().toISOString(), stream: 'event', text: `${queue.dropped} older log lines were dropped while the backend could not be reached` })
        queue.dropped = 0
      }
      while (queue.lines.length > 0) {
        const batch = queue.lines.slice(0, LOG_BATCH)
        try {
          await this.backend.postLogs(instanceId, batch)
        } catch (error) {
          if (!refusedForGood(error)) return // unreachable: keep the lines, try again later
          // 404: the instance left the document (deleted, moved) before its last lines went out.
          if (!gone(error)) this.log.warn(`log lines for instance ${instanceId} refused: ${messageOf(error)}`)
        }
        queue.lines.splice(0, batch.length)
      }
      this.logQueues.delete(instanceId)
    }
  }
}

/** A 4xx other than 429: sending the same again will not help. */
function refusedForGood(error: unknown): boolean {
  return error instanceof BackendError && error.refusedForGood
}

function gone(error: unknown): boolean {
  return error instanceof BackendError && error.status === 404
}

function toReported(tool: Tool): ReportedTool {
  return {
    name: tool.name,
    ...(tool.title === undefined ? {} : { title: tool.title }),
    ...(tool.description === undefined ? {} : { description: tool.description }),
    input_schema: tool.inputSchema,
    ...(tool.outputSchema === undefined ? {} : { output_schema: tool.outputSchema }),
    ...(tool.annotations === undefined ? {} : { annotations: tool.annotations }),
  }
}

/** `text` cut to at most `bytes` bytes of UTF-8, on a character boundary. */
export function cut(text: string, bytes: number): string {
  if (text.length * 3 <= bytes || Buffer.byteLength(text) <= bytes) return text
  const room = new Uint8Array(bytes - 3)
  const { read } = new TextEncoder().encodeInto(text, room)
  return `${text.slice(0, read)}…`
}

function delay(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms))
}

function messageOf(error: unknown): string {
  return error instanceof Error ? error.message : String(error)
}
