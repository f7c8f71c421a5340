/**
 * A remote MCP server on loopback for the satellite's egress tests, built with the official SDK:
 * streamable HTTP at `/mcp` (stateful: a session per client, with its standalone GET stream),
 * the older HTTP+SSE transport at `/sse` (+ `/messages`), a failure at `/fail` (HTTP 500 with a
 * body holding a marker), answers that are not MCP at `/garbage` (HTML said to be JSON) and
 * `/rpc-error` (a JSON-RPC error quoting the marker), a redirect at `/redirect`, and at `/refusing`
 * a stateless server whose one tool, `refuse`, is answered with a JSON-RPC error (REFUSAL). It records every request it receives (with its Authorization) and
 * counts the event streams it holds open.
 */
import { randomUUID } from 'node:crypto'
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http'
import type { AddressInfo } from 'node:net'
import { Server } from '@modelcontextprotocol/sdk/server/index.js'
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js'
import { SSEServerTransport } from '@modelcontextprotocol/sdk/server/sse.js'
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js'
import { CallToolRequestSchema, ErrorCode, ListToolsRequestSchema } from '@modelcontextprotocol/sdk/types.js'

export interface RemoteServer {
  port: number
  url(path: string): string
  /** Every request received, in order, with the Authorization header it carried. */
  requests: Array<{ method: string; path: string; host: string | undefined; authorization: string | undefined }>
  /** Event streams (GET) open right now. */
  openStreams(): number
  /** Adds a tool to every connected session: each is told its list changed. */
  addTool(name: string): void
  close(): Promise<void>
}

export interface RemoteServerOptions {
  /** Put in the body of `/fail`'s 500 answer. */
  marker?: string
  /** Where `/redirect` sends its 302. */
  redirectTo?: string
}

/** The answer body of `/fail`: the marker in 1 234 bytes of text. */
export function failureBody(marker: string): string {
  const text = `upstream database said: ${marker} `
  return text.padEnd(1234, 'x')
}

/** What `/refusing` answers a call of `refuse` with, as it goes on the wire. */
export const REFUSAL = { code: ErrorCode.InvalidParams, message: 'refuse takes no arguments', data: { argument: 'reason' } }

/**
 * A low-level SDK server: it answers what a handler throws with the thrown `code`, `message` and
 * `data` (McpServer would turn a tool's error into a result, and an McpError's message carries a prefix).
 */
function refusingServer(): Server {
  const server = new Server({ name: 'remote-refusing-test', version: '1.0.0' }, { capabilities: { tools: {} } })
  server.setRequestHandler(ListToolsRequestSchema, () => ({ tools: [{ name: 'refuse', inputSchema: { type: 'object' } }] }))
  server.setRequestHandler(CallToolRequestSchema, () => {
    throw Object.assign(new Error(REFUSAL.message), { code: REFUSAL.code, data: REFUSAL.data })
  })
  return server
}

export async function startRemoteServer(options: RemoteServerOptions = {}): Promise<RemoteServer> {
  const requests: RemoteServer['requests'] = []
  const servers = new Set<McpServer>()
  const streamable = new Map<string, StreamableHTTPServerTransport>()
  const sse = new Map<string, SSEServerTransport>()
  let streams = 0

  const mcpServer = (): McpServer => {
    const server = new McpServer({ name: 'remote-egress-test', version: '1.0.0' })
    server.registerTool('ping', { description: 'Answers pong' }, async () => ({ content: [{ type: 'text', text: 'pong' }] }))
    servers.add(server)
    return server
  }

  const http = createServer((request, response) => {
    handle(request, response).catch((error: unknown) => {
      if (!response.headersSent) response.writeHead(500, { 'content-type': 'text/plain' })
      response.end(String(error))
    })
  })

  async function handle(request: IncomingMessage, response: ServerResponse): Promise<void> {
    const url = new URL(request.url ?? '/', 'http://remote')
    requests.push({ method: request.method ?? 'GET', path: url.pathname, host: request.headers.host, authorization: request.headers.authorization })
    if (request.method === 'GET') {
      streams += 1
      response.once('close', () => (streams -= 1))
    }
    if (url.pathname === '/fail') {
      request.resume()
      response.writeHead(500, { 'content-type': 'text/plain' }).end(failureBody(options.marker ?? 'MARKER'))
      return
    }
    if (url.pathname === '/garbage') {
      // 200, said to be JSON, but HTML: a JSON parser's error quotes the start of it.
      request.resume()
      response.writeHead(200, { 'content-type': 'application/json' }).end(`<html>${failureBody(options.marker ?? 'MARKER')}</html>`)
      return
    }
    if (url.pathname === '/rpc-error') {
      // Every request refused with a JSON-RPC error whose message holds the marker.
      const chunks: Buffer[] = []
      for await (const chunk of request as AsyncIterable<Buffer>) chunks.push(chunk)
      const id = (JSON.parse(Buffer.concat(chunks).toString('utf8') || '{}') as { id?: unknown }).id ?? null
      response.writeHead(200, { 'content-type': 'application/json' })
        .end(JSON.stringify({ jsonrpc: '2.0', id, error: { code: -32603, message: `internal: ${options.marker ?? 'MARKER'}` } }))
      return
    }
    if (url.pathname === '/refusing') {
      // Stateless: a server and a transport per request.
      const transport = new StreamableHTTPServerTransport({ sessionIdGenerator: undefined })
      await refusingServer().connect(transport)
      await transport.handleRequest(request, response)
      return
    }
    if (url.pathname === '/redirect') {
      request.resume()
      response.writeHead(302, { location: options.redirectTo ?? '/mcp' }).end()
      return
    }
    if (url.pathname === '/sse' && request.method === 'GET') {
      const transport = new SSEServerTransport('/messages', response)
      sse.set(transport.sessionId, transport)
      transport.onclose = () => sse.delete(transport.sessionId)
      await mcpServer().connect(transport)
      return
    }
    if (url.pathname === '/messages' && request.method === 'POST') {
      const transport = sse.get(url.searchParams.get('sessionId') ?? '')
      if (transport === undefined) {
        response.writeHead(404).end()
        return
      }
      await transport.handlePostMessage(request, response)
      return
    }
    if (url.pathname !== '/mcp') {
      response.writeHead(404).end()
      return
    }
    const sessionId = request.headers['mcp-session-id']
    let transport = typeof sessionId === 'string' ? streamable.get(sessionId) : undefined
    if (transport === undefined) {
      if (typeof sessionId === 'string' || request.method !== 'POST') {
        response.writeHead(404, { 'content-type': 'application/json' }).end(JSON.stringify({ jsonrpc: '2.0', error: { code: -32001, message: 'Session not found' }, id: null }))
        return
      }
      const created = new StreamableHTTPServerTransport({
        sessionIdGenerator: () => randomUUID(),
        onsessioninitialized: (id) => void streamable.set(id, created),
      })
      created.onclose = () => {
        if (created.sessionId !== undefined) streamable.delete(created.sessionId)
      }
      await mcpServer().connect(created)
      transport = created
    }
    await transport.handleRequest(request, response)
  }

  await new Promise<void>((resolve, reject) => {
    http.once('error', reject)
    http.listen(0, '127.0.0.1', resolve)
  })
  const port = (http.address() as AddressInfo).port
  return {
    port,
    url: (path) => `http://127.0.0.1:${port}${path}`,
    requests,
    openStreams: () => streams,
    addTool(name) {
      for (const server of servers) {
        if (server.isConnected()) server.registerTool(name, { description: `Added: ${name}` }, async () => ({ content: [{ type: 'text', text: name }] }))
      }
    },
    async close() {
      await Promise.all([...servers].map((server) => server.close().catch(() => undefined)))
      http.closeAllConnections()
      await new Promise<void>((resolve) => http.close(() => resolve()))
    },
  }
}
