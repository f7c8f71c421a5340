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
 * - tools an admin disabled are left out of `tools/list` and a `tools/call` for one is answered
 *   with an error without reaching the server;
 * - the `tools` capability says `listChanged: true`, since the satellite itself announces a
 *   change of the disabled tools;
 * - a server-to-client message that is not a response goes out on the stream of the request it
 *   belongs to: a progress notification by its progress token, anything else on the stream of
 *   the newest request still waiting for its answer (stdio carries no other clue), or on the
 *   session's own stream (GET) when none is waiting.
 */
import type { Transport, TransportSendOptions } from '@modelcontextprotocol/sdk/shared/transport.js'
import {
  ErrorCode,
  isJSONRPCErrorResponse,
  isJSONRPCNotification,
  isJSONRPCRequest,
  isJSONRPCResultResponse,
  type JSONRPCMessage,
  type JSONRPCRequest,
  type RequestId,
} from '@modelcontextprotocol/sdk/types.js'

/** The first protocol version whose streams begin with an event id the client can resume from. */
const RESUMABLE_SINCE = '2025-11-25'

export interface RelayPolicy {
  /** Tools the client may neither see nor call. */
  disabledTools(): ReadonlySet<string>
}

interface Waiting {
  method: string
  progressToken: unknown
  /** Order of arrival: the newest waiting request takes the server's unattributed messages. */
  order: number
}

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
    const server = this.server as Transport & { terminateSession?: () => Promise<void> }
    await server.terminateSession?.().catch(() => undefined)
    await Promise.all([this.server.close().catch(() => undefined), this.client.close().catch(() => undefined)])
    this.onclose?.()
  }

  /** The server ended the session (its process exited): what waits is answered before the client's session ends. */
  private async serverEnded(): Promise<void> {
    for (const id of this.waiting.keys()) {
      this.toClient({ jsonrpc: '2.0', id, error: { code: ErrorCode.ConnectionClosed, message: 'The server ended the session' } })
    }
    this.waiting.clear()
    await this.outbound
    await this.close()
  }

  private fromClient(message: JSONRPCMessage): void {
    if (isJSONRPCRequest(message)) {
      const refused = this.refusal(message)
      if (refused !== undefined) {
        this.toClient({ jsonrpc: '2.0', id: message.id, error: { code: ErrorCode.InvalidParams, message: refused } })
        return
      }
      this.arrivals += 1
      this.waiting.set(message.id, { method: message.method, progressToken: message.params?._meta?.progressToken, order: this.arrivals })
      this.server.send(message).catch((error: unknown) => this.unsent(message, error))
      return
    }
    // A cancelled request gets no answer: it no longer takes the server's other messages.
    if (isJSONRPCNotification(message) && message.method === 'notifications/cancelled') {
      const id = message.params?.requestId
      if (typeof id === 'string' || typeof id === 'number') this.waiting.delete(id)
    }
    // Notifications (initialized, cancelled, progress, roots changes) and the client's answers
    // to the server's requests go up as they are.
    this.server.send(message).catch((error: unknown) => this.warn(`could not pass a message to the server: ${messageOf(error)}`))
  }

  private fromServer(message: JSONRPCMessage): void {
    if (isJSONRPCResultResponse(message) || isJSONRPCErrorResponse(message)) {
      const id = message.id
      const request = id === undefined ? undefined : this.waiting.get(id)
      // An answer to nothing the client asked (or asked and cancelled long ago) has nowhere to go.
      if (id === undefined || request === undefined) return
      this.waiting.delete(id)
      this.toClient(isJSONRPCResultResponse(message) ? this.answered(request.method, message) : message)
      return
    }
    this.toClient(message, this.streamOf(message))
  }

  /** Why a request is answered here instead of reaching the server, if it is. */
  private refusal(request: JSONRPCRequest): string | undefined {
    if (request.method !== 'tools/call') return undefined
    const name = request.params?.name
    if (typeof name === 'string' && this.policy.disabledTools().has(name)) return `Tool ${name} is disabled for this installation`
    return undefined
  }

  /** The server's result, with what the satellite changes in it. */
  private answered(method: string, response: JSONRPCMessage & { result: Record<string, unknown> }): JSONRPCMessage {
    const result = response.result
    if (method === 'tools/list' && Array.isArray(result.tools)) {
      const disabled = this.policy.disabledTools()
      if (disabled.size === 0) return response
      return { ...response, result: { ...result, tools: result.tools.filter((tool: { name?: unknown }) => typeof tool.name !== 'string' || !disabled.has(tool.name)) } }
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
    if (!this.waiting.delete(request.id)) return
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
