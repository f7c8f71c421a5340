/**
 * One client session relayed to an upstream session of its own, message by message.
 *
 * The satellite does not re-implement the server: the client's JSON-RPC messages go to the
 * server and the server's come back as they were written — requests in both directions
 * (sampling, elicitation and roots reach the client that caused them), notifications (progress,
 * logging, resource updates, list changes), `logging/setLevel`, subscriptions, the capabilities
 * and protocol version the server answers to `initialize`, and errors with their code, message and
 * data. Because each client session has its own upstream session (a process of its own for a
 * package), nothing a server keeps per session is ever seen by another client.
 *
 * The satellite changes only what it must:
 * - tools the installation's policy keeps from clients (tool-policy.ts: disabled, outside the
 *   allow-list, or held because their definition is not the approved one) are left out of
 *   `tools/list`, and a `tools/call` for one is answered with an error (-32602, saying why)
 *   without reaching the server. The policy is read at each message, so a new document applies
 *   to open sessions at once. Each session keeps the definition hashes of the server's last
 *   `tools/list` answer: under pinning, a call is served only when the tool's last listed
 *   definition is the approved one (a session that has not listed yet is listed for, and a list
 *   change the server announces is listed again before the next call);
 * - the `tools` capability says `listChanged: true`, since the satellite itself announces a
 *   change of the policy;
 * - every `tools/call` is told to `called` once it is answered or refused (the tool, the outcome
 *   and the time it took; never its arguments or its result);
 * - a server-to-client message that is not a response goes out on the stream of the request it
 *   belongs to: a progress notification by its progress token, anything else on the stream of
 *   the newest request still waiting for its answer (stdio carries no other clue), or on the
 *   session's own stream (GET) when none is waiting.
 */
import type { Transport, TransportSendOptions } from '@modelcontextprotocol/sdk/shared/transport.js'
import { randomUUID } from 'node:crypto'
import {
  ErrorCode,
  isJSONRPCErrorResponse,
  isJSONRPCNotification,
  isJSONRPCRequest,
  isJSONRPCResultResponse,
  type JSONRPCMessage,
  type JSONRPCRequest,
  type RequestId,
  type Tool,
} from '@modelcontextprotocol/sdk/types.js'
import { toolDefinitionHash } from './tool-hash.js'
import { toolRefusal, type ToolPolicy } from './tool-policy.js'

/** The first protocol version whose streams begin with an event id the client can resume from. */
const RESUMABLE_SINCE = '2025-11-25'

/** What a session's tool calls come to, for the call records. */
export interface RelayedCall {
  at: Date
  tool: string
  outcome: 'ok' | 'error' | 'refused'
  duration_ms: number
}

export interface RelayPolicy {
  /** The tools the client may see and call, as the instance document says now. */
  tools(): ToolPolicy
  /** A `tools/call` was answered (or refused, or lost). */
  called?(call: RelayedCall): void
}

interface Waiting {
  method: string
  progressToken: unknown
  /** Order of arrival: the newest waiting request takes the server's unattributed messages. */
  order: number
  /** A `tools/call`: the tool's name (as a string) and when it arrived. */
  tool?: string
  arrived: number
  /** A `tools/list` that asked for a further page (its answer adds to the session's list). */
  paged?: boolean
}

/** The longest tool name a call record carries. */
const MAX_TOOL_NAME = 200
/** The most pages the satellite follows when it lists the tools for itself. */
const MAX_PAGES = 100

export class SessionRelay {
  /** Called once, when either side ended the session. */
  onclose?: () => void
  /** Client requests the server has not answered yet. */
  private readonly waiting = new Map<RequestId, Waiting>()
  private arrivals = 0
  /** Messages to the client go out one after the other, in the order the server sent them. */
  private outbound: Promise<void> = Promise.resolve()
  private ended = false
  /** The protocol version the server and the client agreed on at `initialize`. */
  protocolVersion: string | undefined
  /** Definition hash by tool name, from the server's last `tools/list` answer; undefined before one (or after a change the server announced). */
  private listed: Map<string, string> | undefined
  /** `tools/list` requests the satellite itself sent, by id. */
  private readonly ownLists = new Map<RequestId, { resolve: (result: Record<string, unknown>) => void; reject: (error: Error) => void }>()
  /** A listing of the satellite's own in progress (one at a time). */
  private listing: Promise<void> | undefined
  /** Counts the list changes the server announced: a listing that overlaps one is not trusted. */
  private listGeneration = 0

  constructor(
    private readonly client: Transport,
    private readonly server: Transport,
    private readonly policy: RelayPolicy,
    private readonly warn: (text: string) => void,
  ) {}

  /** Opens the upstream session's transport (starts its process) and wires both sides. */
  async start(): Promise<void> {
    this.server.onmessage = (message) => this.fromServer(message)
    this.server.onclose = () => void this.serverEnded()
    this.server.onerror = (error) => this.warn(`upstream: ${error.message}`)
    await this.server.start()
    this.client.onmessage = (message) => this.fromClient(message)
    await this.client.start()
  }

  /** Tells the client that a list changed (the admin changed the disabled tools). */
  listChanged(list: 'tools' | 'resources' | 'prompts'): void {
    this.toClient({ jsonrpc: '2.0', method: `notifications/${list}/list_changed` })
  }

  /**
   * The remote server ended the stream of a request before answering it (it lets the client
   * poll). The client's stream ends too, so that the client resumes with Last-Event-ID and gets
   * the answer there — as it would from the server directly. Only for clients whose streams carry
   * event ids (protocol 2025-11-25 and later); others keep their stream until the answer comes.
   */
  upstreamStreamEnded(id: RequestId): void {
    // The answer may be on its way through the transport's parser: give it a moment.
    setTimeout(() => {
      const client = this.client as Transport & { closeSSEStream?: (id: RequestId) => void }
      if (!this.ended && this.waiting.has(id) && (this.protocolVersion ?? '') >= RESUMABLE_SINCE) client.closeSSEStream?.(id)
    }, 50).unref()
  }

  /** Requests waiting for the server's answer (tests, the idle sweep). */
  get pending(): number {
    return this.waiting.size
  }

  /** Ends both sides: the upstream session (its process, or a DELETE to the remote) and the client's. */
  async close(): Promise<void> {
    if (this.ended) return
    this.ended = true
    for (const request of this.waiting.values()) this.record(request, 'error')
    this.waiting.clear()
    this.dropOwnLists()
    const server = this.server as Transport & { terminateSession?: () => Promise<void> }
    await server.terminateSession?.().catch(() => undefined)
    await Promise.all([this.server.close().catch(() => undefined), this.client.close().catch(() => undefined)])
    this.onclose?.()
  }

  /** The server ended the session (its process exited): what waits is answered before the client's session ends. */
  private async serverEnded(): Promise<void> {
    for (const [id, request] of this.waiting) {
      this.toClient({ jsonrpc: '2.0', id, error: { code: ErrorCode.ConnectionClosed, message: 'The server ended the session' } })
      this.record(request, 'error')
    }
    this.waiting.clear()
    this.dropOwnLists()
    await this.outbound
    await this.close()
  }

  private fromClient(message: JSONRPCMessage): void {
    if (isJSONRPCRequest(message)) {
      const arrived = Date.now()
      const name = message.method === 'tools/call' ? message.params?.name : undefined
      const policy = this.policy.tools()
      const judgedOnDefinition = typeof name === 'string' && policy.pinned?.has(name) === true && (policy.allowed === null || policy.allowed.has(name))
      if (judgedOnDefinition && this.listed?.has(name) !== true) {
        // Under pinning a call is judged on the definition the server lists: list first.
        void this.listTools().then(
          () => this.request(message, arrived),
          (error: unknown) => {
            this.warn(`could not list the tools before a call: ${messageOf(error)}`)
            this.request(message, arrived)
          },
        )
        return
      }
      this.request(message, arrived)
      return
    }
    // A cancelled request gets no answer: it no longer takes the server's other messages.
    if (isJSONRPCNotification(message) && message.method === 'notifications/cancelled') {
      const id = message.params?.requestId
      if (typeof id === 'string' || typeof id === 'number') {
        const request = this.waiting.get(id)
        if (request !== undefined) this.record(request, 'error')
        this.waiting.delete(id)
      }
    }
    // Notifications (initialized, cancelled, progress, roots changes) and the client's answers
    // to the server's requests go up as they are.
    this.server.send(message).catch((error: unknown) => this.warn(`could not pass a message to the server: ${messageOf(error)}`))
  }

  /** A client request, refused here or passed to the server. */
  private request(message: JSONRPCRequest, arrived: number): void {
    if (this.ended) return
    const tool = message.method === 'tools/call' && typeof message.params?.name === 'string' ? message.params.name : undefined
    const refused = tool === undefined ? undefined : toolRefusal(this.policy.tools(), tool, this.listed?.get(tool))
    if (refused !== undefined) {
      this.toClient({ jsonrpc: '2.0', id: message.id, error: { code: ErrorCode.InvalidParams, message: refused } })
      this.record({ method: message.method, progressToken: undefined, order: 0, tool, arrived }, 'refused')
      return
    }
    this.arrivals += 1
    this.waiting.set(message.id, {
      method: message.method,
      progressToken: message.params?._meta?.progressToken,
      order: this.arrivals,
      arrived,
      ...(tool === undefined ? {} : { tool }),
      ...(message.method === 'tools/list' && message.params?.cursor !== undefined ? { paged: true } : {}),
    })
    this.server.send(message).catch((error: unknown) => this.unsent(message, error))
  }

  private fromServer(message: JSONRPCMessage): void {
    if (isJSONRPCResultResponse(message) || isJSONRPCErrorResponse(message)) {
      const id = message.id
      const own = id === undefined ? undefined : this.ownLists.get(id)
      if (own !== undefined) {
        this.ownLists.delete(id!)
        if (isJSONRPCResultResponse(message)) own.resolve(message.result)
        else own.reject(new Error(`tools/list was answered with error ${message.error.code}`))
        return
      }
      const request = id === undefined ? undefined : this.waiting.get(id)
      // An answer to nothing the client asked (or asked and cancelled long ago) has nowhere to go.
      if (id === undefined || request === undefined) return
      this.waiting.delete(id)
      if (request.tool !== undefined) {
        const failed = isJSONRPCErrorResponse(message) || (message.result as { isError?: unknown }).isError === true
        this.record(request, failed ? 'error' : 'ok')
      }
      this.toClient(isJSONRPCResultResponse(message) ? this.answered(request, message) : message)
      return
    }
    // The server says its tools changed: the next call is judged on a fresh list.
    if (isJSONRPCNotification(message) && message.method === 'notifications/tools/list_changed') {
      this.listed = undefined
      this.listGeneration += 1
    }
    this.toClient(message, this.streamOf(message))
  }

  /**
   * Lists the server's tools for the satellite itself (every page), to know their definitions
   * before a call is judged. Concurrent callers share one listing.
   */
  private listTools(): Promise<void> {
    this.listing ??= (async () => {
      // A change announced while listing may have come before some page: list again (a few times at most).
      for (let attempt = 0; attempt < 3; attempt += 1) {
        const generation = this.listGeneration
        const found = new Map<string, string>()
        let cursor: string | undefined
        for (let page = 0; page < MAX_PAGES; page += 1) {
          const result = await this.ownRequest({ method: 'tools/list', ...(cursor === undefined ? {} : { params: { cursor } }) })
          for (const tool of Array.isArray(result.tools) ? result.tools : []) this.remember(found, tool)
          cursor = typeof result.nextCursor === 'string' ? result.nextCursor : undefined
          if (cursor === undefined) break
        }
        if (generation === this.listGeneration) {
          this.listed = found
          return
        }
      }
    })().finally(() => (this.listing = undefined))
    return this.listing
  }

  private ownRequest(request: { method: string; params?: Record<string, unknown> }): Promise<Record<string, unknown>> {
    const id = `satellite-${randomUUID()}`
    return new Promise((resolve, reject) => {
      if (this.ended) return reject(new Error('the session ended'))
      this.ownLists.set(id, { resolve, reject })
      this.server.send({ jsonrpc: '2.0', id, ...request }).catch((error: unknown) => {
        this.ownLists.delete(id)
        reject(error instanceof Error ? error : new Error(String(error)))
      })
    })
  }

  private dropOwnLists(): void {
    for (const own of this.ownLists.values()) own.reject(new Error('the session ended'))
    this.ownLists.clear()
  }

  /** Keeps the definition hash of a listed tool. */
  private remember(into: Map<string, string>, tool: unknown): void {
    const candidate = tool as Partial<Tool> | null
    if (candidate === null || typeof candidate !== 'object' || typeof candidate.name !== 'string') return
    try {
      into.set(candidate.name, toolDefinitionHash(candidate as Tool))
    } catch {
      // Not JSON the hash can be taken of: it matches no approved definition.
      into.set(candidate.name, '')
    }
  }

  /** A tool call that ended, told to the call records. */
  private record(request: Waiting, outcome: RelayedCall['outcome']): void {
    if (request.tool === undefined || request.tool === '' || this.policy.called === undefined) return
    const now = Date.now()
    try {
      this.policy.called({ at: new Date(request.arrived), tool: request.tool.slice(0, MAX_TOOL_NAME), outcome, duration_ms: Math.max(0, now - request.arrived) })
    } catch (error) {
      this.warn(`could not record a tool call: ${messageOf(error)}`)
    }
  }

  /** The server's result, with what the satellite changes in it. */
  private answered(request: Waiting, response: JSONRPCMessage & { result: Record<string, unknown> }): JSONRPCMessage {
    const result = response.result
    const method = request.method
    if (method === 'tools/list' && Array.isArray(result.tools)) {
      // A first page starts the session's list again; a further page adds to it.
      const listed = request.paged === true && this.listed !== undefined ? this.listed : new Map<string, string>()
      for (const tool of result.tools) this.remember(listed, tool)
      this.listed = listed
      const policy = this.policy.tools()
      const offered = result.tools.filter((tool: { name?: unknown }) => typeof tool?.name !== 'string' || toolRefusal(policy, tool.name, listed.get(tool.name)) === undefined)
      if (offered.length === result.tools.length) return response
      return { ...response, result: { ...result, tools: offered } }
    }
    if (method === 'initialize') {
      const version = result.protocolVersion
      const server = this.server as Transport & { setProtocolVersion?: (version: string) => void }
      if (typeof version === 'string') {
        this.protocolVersion = version
        server.setProtocolVersion?.(version)
      }
      const capabilities = result.capabilities as Record<string, unknown> | undefined
      if (capabilities?.tools !== undefined && typeof capabilities.tools === 'object') {
        return { ...response, result: { ...result, capabilities: { ...capabilities, tools: { ...capabilities.tools, listChanged: true } } } }
      }
    }
    return response
  }

  /** The client request a server message belongs with, as far as it can be told. */
  private streamOf(message: JSONRPCMessage): RequestId | undefined {
    let newest: [RequestId, Waiting] | undefined
    const token = isJSONRPCNotification(message) && message.method === 'notifications/progress' ? message.params?.progressToken : undefined
    for (const entry of this.waiting) {
      if (token !== undefined && entry[1].progressToken === token) return entry[0]
      if (newest === undefined || entry[1].order > newest[1].order) newest = entry
    }
    return newest?.[0]
  }

  /** A request the server could not be given: answered with an error, and a lost session ended. */
  private unsent(request: JSONRPCRequest, error: unknown): void {
    const waiting = this.waiting.get(request.id)
    if (waiting === undefined) return
    this.waiting.delete(request.id)
    this.record(waiting, 'error')
    this.warn(`could not pass ${request.method} to the server: ${messageOf(error)}`)
    // The transport's message may quote the server's answer; the client is told what happened only.
    this.toClient({ jsonrpc: '2.0', id: request.id, error: { code: ErrorCode.InternalError, message: 'The server could not be reached' } })
    // A remote server that forgot the session (404) will not know it again: the client starts a new one.
    if ((error as { code?: unknown }).code === 404) void this.close()
  }

  private toClient(message: JSONRPCMessage, relatedRequestId?: RequestId): void {
    const options: TransportSendOptions | undefined = relatedRequestId === undefined ? undefined : { relatedRequestId }
    this.outbound = this.outbound
      .then(() => this.client.send(message, options))
      .catch((error: unknown) => this.warn(`could not pass a message to the client: ${messageOf(error)}`))
  }
}

function messageOf(error: unknown): string {
  return error instanceof Error ? error.message : String(error)
}
