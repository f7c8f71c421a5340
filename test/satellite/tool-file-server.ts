/**
 * A fixture MCP server for the tool-governance tests, built with the official SDK (a low-level
 * `Server` per session, over stateful streamable HTTP on loopback): its tools are read from the
 * JSON file it is given (`[{name, description?, inputSchema, outputSchema?, annotations?}]`) at
 * every `tools/list`, so a test changes a tool by rewriting the file — the way a server would
 * change a tool's description or schema under an installation. `announce()` tells every session
 * that the list changed (`notifications/tools/list_changed`).
 *
 * A call of any listed tool answers with the description the tool has in the file at the moment
 * of the call (so a test sees which form of the tool served it); a call of `fail` answers a result
 * marked `isError`; a call of a tool the file does not hold is a JSON-RPC error. Every call is kept
 * with its arguments, to show they reached the server (and nowhere else).
 */
import { randomUUID } from 'node:crypto'
import { readFileSync, writeFileSync } from 'node:fs'
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http'
import type { AddressInfo } from 'node:net'
import { Server } from '@modelcontextprotocol/sdk/server/index.js'
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js'
import { CallToolRequestSchema, ErrorCode, ListToolsRequestSchema, McpError, type Tool } from '@modelcontextprotocol/sdk/types.js'

export interface ToolFileServer {
  url: string
  /** Rewrites the file the tools are read from. */
  write(tools: Tool[]): void
  /** Tells every connected session that the tool list changed. */
  announce(): Promise<void>
  /** Every call the server received, with its arguments. */
  calls: Array<{ name: string; arguments: unknown }>
  /** How many `tools/list` requests it answered. */
  lists(): number
  close(): Promise<void>
}

export async function startToolFileServer(file: string, tools: Tool[]): Promise<ToolFileServer> {
  writeFileSync(file, JSON.stringify(tools))
  const read = (): Tool[] => JSON.parse(readFileSync(file, 'utf8')) as Tool[]
  const sessions = new Map<string, StreamableHTTPServerTransport>()
  const servers = new Set<Server>()
  const calls: ToolFileServer['calls'] = []
  let lists = 0

  const mcpServer = (): Server => {
    const server = new Server({ name: 'tool-file-server', version: '1.0.0' }, { capabilities: { tools: { listChanged: true } } })
    server.setRequestHandler(ListToolsRequestSchema, () => {
      lists += 1
      return { tools: read() }
    })
    server.setRequestHandler(CallToolRequestSchema, (request) => {
      calls.push({ name: request.params.name, arguments: request.params.arguments })
      const tool = read().find((candidate) => candidate.name === request.params.name)
      if (tool === undefined) throw new McpError(ErrorCode.InvalidParams, `Unknown tool ${request.params.name}`)
      if (tool.name === 'fail') return { content: [{ type: 'text', text: 'failed' }], isError: true }
      return { content: [{ type: 'text', text: `${tool.name}: ${tool.description ?? ''}` }] }
    })
    servers.add(server)
    server.onclose = () => servers.delete(server)
    return server
  }

  const handle = async (request: IncomingMessage, response: ServerResponse): Promise<void> => {
    const sessionId = request.headers['mcp-session-id']
    let transport = typeof sessionId === 'string' ? sessions.get(sessionId) : undefined
    if (transport === undefined) {
      if (typeof sessionId === 'string' || request.method !== 'POST') {
        response.writeHead(404, { 'content-type': 'application/json' }).end(JSON.stringify({ jsonrpc: '2.0', error: { code: -32001, message: 'Session not found' }, id: null }))
        return
      }
      const created = new StreamableHTTPServerTransport({ sessionIdGenerator: () => randomUUID(), onsessioninitialized: (id) => void sessions.set(id, created) })
      created.onclose = () => {
        if (created.sessionId !== undefined) sessions.delete(created.sessionId)
      }
      await mcpServer().connect(created)
      transport = created
    }
    await transport.handleRequest(request, response)
  }

  const http = createServer((request, response) => {
    handle(request, response).catch((error: unknown) => {
      if (!response.headersSent) response.writeHead(500, { 'content-type': 'text/plain' })
      response.end(String(error))
    })
  })
  await new Promise<void>((resolve, reject) => {
    http.once('error', reject)
    http.listen(0, '127.0.0.1', resolve)
  })
  return {
    url: `http://127.0.0.1:${(http.address() as AddressInfo).port}/mcp`,
    write: (next) => writeFileSync(file, JSON.stringify(next)),
    announce: async () => {
      await Promise.all([...servers].map((server) => server.sendToolListChanged().catch(() => undefined)))
    },
    calls,
    lists: () => lists,
    async close() {
      await Promise.all([...servers].map((server) => server.close().catch(() => undefined)))
      http.closeAllConnections()
      await new Promise<void>((resolve) => http.close(() => resolve()))
    },
  }
}
