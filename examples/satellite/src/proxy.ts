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
        throw new McpError(ErrorCode.InvalidParams, `Tool ${request.params.name} is disabled for this installation`)
      }
      // Passed through as the upstream answered it, structured content and errors included.
      return client.request({ method: 'tools/call', params: request.params }, CallToolResultSchema, forwarded(extra, true))
    })
  }
  if (capabilities.resources !== undefined) {
    server.setRequestHandler(ListResourcesRequestSchema, (request, extra) => client.listResources(request.params, forwarded(extra)))
    server.setRequestHandler(ListResourceTemplatesRequestSchema, (request, extra) => client.listResourceTemplates(request.params, forwarded(extra)))
    server.setRequestHandler(ReadResourceRequestSchema, (request, extra) => client.readResource(request.params, forwarded(extra)))
  }
  if (capabilities.prompts !== undefined) {
    server.setRequestHandler(ListPromptsRequestSchema, (request, extra) => client.listPrompts(request.params, forwarded(extra)))
    server.setRequestHandler(GetPromptRequestSchema, (request, extra) => client.getPrompt(request.params, forwarded(extra)))
  }
  if (capabilities.completions !== undefined) {
    server.setRequestHandler(CompleteRequestSchema, (request, extra) => client.complete(request.params, forwarded(extra)))
  }
  return server
}

/** Tells a session's client that a list changed upstream (or that the admin changed the disabled tools). */
export async function announce(server: Server, change: ListChange): Promise<void> {
  if (change === 'tools') await server.sendToolListChanged()
  else if (change === 'resources') await server.sendResourceListChanged()
  else await server.sendPromptListChanged()
}
