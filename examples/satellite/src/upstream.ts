/**
 * One connection from the satellite to an MCP server it serves: an SDK Client over the child's
 * stdio, or over HTTP to a remote server. The satellite's HTTP front forwards its clients'
 * requests to this Client; the clients' own tokens never reach it.
 */
import { Client } from '@modelcontextprotocol/sdk/client/index.js'
import { SSEClientTransport } from '@modelcontextprotocol/sdk/client/sse.js'
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js'
import type { Transport } from '@modelcontextprotocol/sdk/shared/transport.js'
import type { FetchLike } from '@modelcontextprotocol/sdk/shared/transport.js'
import {
  isJSONRPCRequest,
  PromptListChangedNotificationSchema,
  ResourceListChangedNotificationSchema,
  ToolListChangedNotificationSchema,
  type RequestId,
  type Tool,
} from '@modelcontextprotocol/sdk/types.js'
import { ChildTransport, type ChildSpawn, type ExitInfo } from './child-transport.js'
import { guardedFetch, type EgressRule } from './egress.js'
import type { RemoteTarget } from './launch.js'
import { withLiveHeaders, type LiveHeaders } from './live-headers.js'
import { ExchangeRecord } from './remote-failures.js'

export const SATELLITE_VERSION = '0.1.0'

/** The most tools reported to the backend for one instance. */
const MAX_TOOLS = 1000

export interface UpstreamEvents {
  /** A line the process printed (stderr, or stdout that was not protocol). */
  line(stream: 'stdout' | 'stderr', text: string): void
  /** The server's tools changed (after `notifications/tools/list_changed`): the full new list. */
  tools(tools: Tool[]): void
}

export type ListChange = 'tools' | 'resources' | 'prompts'

/**
 * Where an instance's server is reached: a process to start, or a remote server. The instance's
 * own connection and each client session's connection are opened from the same source; for a
 * remote server they share its `headers`, read at every request (a rotating secret is swapped
 * there while everything keeps running).
 */
export type UpstreamSource =
  | { kind: 'process'; child: ChildSpawn }
  | { kind: 'remote'; target: Omit<RemoteTarget, 'headers'>; egress: EgressRule; headers: LiveHeaders }

export interface TransportWatch {
  /** Sees each exchange with a remote server (what its failures may say). */
  observe?: ExchangeRecord['observe']
  /**
   * A remote server ended the stream it was answering a request on, whether or not the answer
   * came (a server may end it early and answer on the stream the client resumes).
   */
  streamEnded?: (requestId: RequestId) => void
}

/** `fetch` that reports the end of each SSE stream answering a POST of requests. */
function watchingStreams(fetch: FetchLike, ended: (requestId: RequestId) => void): FetchLike {
  return async (input, init) => {
    const response = await fetch(input, init)
    if (init?.method !== 'POST' || response.body === null || !response.headers.get('content-type')?.includes('text/event-stream')) return response
    const ids = requestIdsOf(init.body)
    if (ids.length === 0) return response
    const body = response.body.pipeThrough(new TransformStream<Uint8Array, Uint8Array>({ flush: () => ids.forEach(ended) }))
    return new Response(body, { status: response.status, statusText: response.statusText, headers: response.headers })
  }
}

function requestIdsOf(body: unknown): RequestId[] {
  if (typeof body !== 'string') return []
  try {
    const parsed = JSON.parse(body) as unknown
    return (Array.isArray(parsed) ? parsed : [parsed]).filter((message) => isJSONRPCRequest(message)).map((message) => message.id)
  } catch {
    return []
  }
}

/**
 * A new, unconnected transport to the server: a new process, or a new connection (and so a new
 * MCP session) to the remote server, within its egress rule and with the instance's headers.
 */
export function openTransport(source: UpstreamSource, onLine: (stream: 'stdout' | 'stderr', text: string) => void, watch: TransportWatch = {}): Transport {
  if (source.kind === 'process') return new ChildTransport({ ...source.child, onLine })
  const { target, egress, headers } = source
  const guarded = withLiveHeaders(guardedFetch(egress, watch.observe ?? (() => undefined)), headers)
  const options = { fetch: watch.streamEnded === undefined ? guarded : watchingStreams(guarded, watch.streamEnded) }
  return target.transport === 'sse'
    ? new SSEClientTransport(new URL(target.url), options)
    : new StreamableHTTPClientTransport(new URL(target.url), options)
}

export class Upstream {
  readonly client: Client
  tools: Tool[] = []
  private readonly changeListeners = new Set<(change: ListChange) => void>()
  private readonly closeListeners = new Set<() => void>()
  /** True once stop() was called: an end after that is no crash. */
  stopping = false
  private ended = false

  /** A remote server's exchanges: what its failures may say. */
  private readonly exchanges: ExchangeRecord | undefined

  private constructor(readonly source: UpstreamSource, private readonly transport: Transport, private readonly events: UpstreamEvents, exchanges?: ExchangeRecord) {
    this.exchanges = exchanges
    this.client = new Client({ name: 'reference-satellite', version: SATELLITE_VERSION }, { capabilities: {} })
    this.client.onclose = () => this.closed()
    this.client.setNotificationHandler(ToolListChangedNotificationSchema, async () => {
      await this.refreshTools().catch(() => undefined)
      this.changed('tools')
    })
    this.client.setNotificationHandler(ResourceListChangedNotificationSchema, () => this.changed('resources'))
    this.client.setNotificationHandler(PromptListChangedNotificationSchema, () => this.changed('prompts'))
  }

  /** Starts a package's process (as the satellite's isolation says) and connects to it over stdio. */
  static process(child: ChildSpawn, events: UpstreamEvents): Upstream {
    const source: UpstreamSource = { kind: 'process', child }
    return new Upstream(source, openTransport(source, events.line), events)
  }

  /**
   * Connects to a remote server, within `egress` (egress.ts); the headers are the instance's,
   * never a client's, and are read from `headers` at each request.
   */
  static remote(target: Omit<RemoteTarget, 'headers'>, headers: LiveHeaders, events: UpstreamEvents, egress: EgressRule): Upstream {
    const exchanges = new ExchangeRecord()
    const source: UpstreamSource = { kind: 'remote', target: { url: target.url, transport: target.transport }, egress, headers }
    return new Upstream(source, openTransport(source, events.line, { observe: exchanges.observe }), events, exchanges)
  }

  /** `initialize`, then the tool list; `signal` (a stop asked meanwhile) or the timeout abandon it. */
  async connect(timeoutMs: number, signal: AbortSignal): Promise<void> {
    const aborted = () => void this.stop()
    signal.addEventListener('abort', aborted, { once: true })
    try {
      await this.client.connect(this.transport, { timeout: timeoutMs, signal })
      await this.refreshTools()
    } catch (error) {
      await this.stop()
      // A remote server's failure is told by what happened, never by the SDK's text that quotes its answer.
      throw new Error(this.endReason() ?? (signal.aborted ? 'stopped while starting' : this.exchanges?.reason(error, timeoutMs) ?? messageOf(error)))
    } finally {
      signal.removeEventListener('abort', aborted)
    }
  }

  /** The full list, page by page, up to the number the backend takes. */
  async refreshTools(): Promise<Tool[]> {
    if (this.client.getServerCapabilities()?.tools === undefined) {
      this.tools = []
      return this.tools
    }
    const tools: Tool[] = []
    let cursor: string | undefined
    do {
      const page = await this.client.listTools(cursor === undefined ? {} : { cursor })
      tools.push(...page.tools)
      cursor = page.nextCursor
    } while (cursor !== undefined && tools.length < MAX_TOOLS)
    this.tools = tools.slice(0, MAX_TOOLS)
    return this.tools
  }

  /** Called when a list of the server changes, until the connection ends. */
  onChange(listener: (change: ListChange) => void): () => void {
    this.changeListeners.add(listener)
    return () => this.changeListeners.delete(listener)
  }

  /** Called once when the connection ends, asked or not. */
  onClose(listener: () => void): () => void {
    if (this.ended) {
      listener()
      return () => undefined
    }
    this.closeListeners.add(listener)
    return () => this.closeListeners.delete(listener)
  }

  get pid(): number | undefined {
    return this.transport instanceof ChildTransport ? this.transport.pid : undefined
  }

  get exit(): ExitInfo | undefined {
    return this.transport instanceof ChildTransport ? this.transport.exit : undefined
  }

  /** Closes the connection (and ends the process: SIGTERM, then SIGKILL). */
  async stop(): Promise<void> {
    this.stopping = true
    await this.client.close().catch(() => undefined)
    // A transport the client never connected is closed here.
    await this.transport.close().catch(() => undefined)
  }

  private changed(change: ListChange): void {
    if (change === 'tools') this.events.tools(this.tools)
    for (const listener of this.changeListeners) listener(change)
  }

  private closed(): void {
    if (this.ended) return
    this.ended = true
    for (const listener of this.closeListeners) listener()
    this.closeListeners.clear()
    this.changeListeners.clear()
  }

  /** "exited with code 1" / "ended by SIGKILL", once the process has ended. */
  endReason(): string | undefined {
    const exit = this.exit
    if (exit === undefined) return undefined
    if (exit.signal !== null) return `the server process was ended by ${exit.signal}`
    // Neither: it never started, and the spawn error says why.
    return exit.code === null ? undefined : `the server process exited with code ${exit.code}`
  }
}

function messageOf(error: unknown): string {
  return error instanceof Error ? error.message : String(error)
}
