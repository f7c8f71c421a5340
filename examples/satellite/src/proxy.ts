/**
 * The MCP server a client session talks to: an SDK Server whose handlers forward each request to
 * the instance's upstream Client. It offers what the upstream offers (tools, resources, prompts,
 * completions), hides the tools an admin disabled, and passes list changes and progress through.
 */
import { Server } from '@modelcontextprotocol/sdk/server/index.js'
import {
  CallToolRequestSchema,
  CallToolResultSchema,
  CompleteRequestSchema,
  ErrorCode,
  GetPromptRequestSchema,
  ListPromptsRequestSchema,
  ListResourcesRequestSchema,
  ListResourceTemplatesRequestSchema,
  ListToolsRequestSchema,
  McpError,
  ReadResourceRequestSchema,
  type ServerCapabilities,
  type ServerNotification,
  type ServerRequest,
} from '@modelcontextprotocol/sdk/types.js'
import type { RequestHandlerExtra, RequestOptions } from '@modelcontextprotocol/sdk/shared/protocol.js'
import type { ManagedInstance } from './instance.js'
import { SATELLITE_VERSION, type ListChange, type Upstream } from './upstream.js'

/** A tool call may run long; progress notifications keep it alive up to the total. */
const CALL_TIMEOUT_MS = 5 * 60_000
const CALL_TOTAL_MS = 30 * 60_000

type Extra = RequestHandlerExtra<ServerRequest, ServerNotification>

export function proxyServer(instance: ManagedInstance, upstream: Upstream): Server {
  const client = upstream.client
  const offered = client.getServerCapabilities() ?? {}
  const capabilities: ServerCapabilities = {}
  if (offered.tools !== undefined) capabilities.tools = { listChanged: true }
  if (offered.resources !== undefined) capabilities.resources = { listChanged: offered.resources.listChanged === true }
  if (offered.prompts !== undefined) capabilities.prompts = { listChanged: offered.prompts.listChanged === true }
  if (offered.completions !== undefined) capabilities.completions = {}
  const instructions = client.getInstructions()
  const server = new Server(
    { name: instance.spec.name, version: client.getServerVersion()?.version ?? SATELLITE_VERSION },
    { capabilities, ...(instructions === undefined ? {} : { instructions }) },
  )

  /** The client's cancellation and progress, carried to the upstream request. */
  const forwarded = (extra: Extra, long = false): RequestOptions => {
    const token = extra._meta?.progressToken
    return {
      signal: extra.signal,
      ...(long ? { timeout: CALL_TIMEOUT_MS, resetTimeoutOnProgress: true, maxTotalTimeout: CALL_TOTAL_MS } : {}),
      ...(token === undefined ? {} : {
        onprogress: (progress) => void extra.sendNotification({ method: 'notifications/progress', params: { ...progress, progressToken: token } }).catch(() => undefined),
      }),
    }
  }

  if (capabilities.tools !== undefined) {
    server.setRequestHandler(ListToolsRequestSchema, async (request, extra) => {
      const page = await client.listTools(request.params, forwarded(extra))
      const disabled = instance.disabledTools
      return { ...page, tools: page.tools.filter((tool) => !disabled.has(tool.name)) }
    })
    server.setRequestHandler(CallToolRequestSchema, async (request, extra) => {
      if (instance.disabledTools.has(request.params.name)) {
        throw new Answered(ErrorCode.InvalidParams, `Tool ${request.params.name} is disabled for this installation`)
      }
      // Passed through as the upstream answered it, structured content and errors included.
      return relayed(client.request({ method: 'tools/call', params: request.params }, CallToolResultSchema, forwarded(extra, true)))
    })
  }
  if (capabilities.resources !== undefined) {
    server.setRequestHandler(ListResourcesRequestSchema, (request, extra) => relayed(client.listResources(request.params, forwarded(extra))))
    server.setRequestHandler(ListResourceTemplatesRequestSchema, (request, extra) => relayed(client.listResourceTemplates(request.params, forwarded(extra))))
    server.setRequestHandler(ReadResourceRequestSchema, (request, extra) => relayed(client.readResource(request.params, forwarded(extra))))
  }
  if (capabilities.prompts !== undefined) {
    server.setRequestHandler(ListPromptsRequestSchema, (request, extra) => relayed(client.listPrompts(request.params, forwarded(extra))))
    server.setRequestHandler(GetPromptRequestSchema, (request, extra) => relayed(client.getPrompt(request.params, forwarded(extra))))
  }
  if (capabilities.completions !== undefined) {
    server.setRequestHandler(CompleteRequestSchema, (request, extra) => relayed(client.complete(request.params, forwarded(extra))))
  }
  return server
}

/**
 * An error answered with exactly this code, message and data. The SDK answers what a handler
 * throws with its `code`, `message` and `data`, but an McpError's message already starts with
 * "MCP error <code>: ", which the client's McpError adds again.
 */
class Answered extends Error {
  constructor(readonly code: number, message: string, readonly data?: unknown) {
    super(message)
  }
}

/**
 * The upstream's errors as it answered them: the Client's McpError keeps code and data, and its
 * message is the server's behind the prefix the McpError constructor added (nothing else keeps it).
 */
async function relayed<T>(answer: Promise<T>): Promise<T> {
  try {
    return await answer
  } catch (error) {
    if (!(error instanceof McpError)) throw error
    const prefix = `MCP error ${error.code}: `
    const message = error.message.startsWith(prefix) ? error.message.slice(prefix.length) : error.message
    throw new Answered(error.code, message, error.data)
  }
}

/** Tells a session's client that a list changed upstream (or that the admin changed the disabled tools). */
export async function announce(server: Server, change: ListChange): Promise<void> {
  if (change === 'tools') await server.sendToolListChanged()
  else if (change === 'resources') await server.sendResourceListChanged()
  else await server.sendPromptListChanged()
}
