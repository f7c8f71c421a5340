import { randomUUID } from 'node:crypto'
import { createServer } from 'node:http'
import type { AddressInfo } from 'node:net'

/**
 * The floor of the MCP path bench: an MCP endpoint over streamable HTTP that does nothing but
 * answer, at once, with what the satellite answers a `tools/call` of `echo` with (an SSE stream of
 * a priming event and the result, the session's id in its headers). The SDK client's sessions
 * against it cost what a client costs on its own: no satellite, no server behind it. The bench
 * reads its figures next to the satellite's (bench/mcp-path.ts). It prints its URL, then serves
 * until it is stopped.
 */
const SSE = { 'content-type': 'text/event-stream', 'cache-control': 'no-cache, no-transform', connection: 'keep-alive' }

let events = 0

const server = createServer((request, response) => {
  const chunks: Buffer[] = []
  request.on('data', (chunk: Buffer) => chunks.push(chunk))
  request.on('end', () => {
    if (request.method === 'GET') return void response.writeHead(405, { allow: 'POST, DELETE' }).end()
    if (request.method === 'DELETE') return void response.writeHead(200).end()
    const message = JSON.parse(Buffer.concat(chunks).toString('utf8')) as { id?: number | string; method: string; params?: { protocolVersion?: string } }
    if (message.id === undefined) return void response.writeHead(202).end()
    const result = message.method === 'initialize'
      ? { protocolVersion: message.params?.protocolVersion, capabilities: { tools: {} }, serverInfo: { name: 'mcp-floor', version: '1.0.0' } }
      : { content: [{ type: 'text', text: 'Echo: bench' }] }
    const session = typeof request.headers['mcp-session-id'] === 'string' ? request.headers['mcp-session-id'] : randomUUID()
    response.writeHead(200, { ...SSE, 'mcp-session-id': session })
    events += 2
    response.write(`id: ${events - 1}\nretry: 1000\ndata: \n\n`)
    response.end(`event: message\nid: ${events}\ndata: ${JSON.stringify({ jsonrpc: '2.0', id: message.id, result })}\n\n`)
  })
})

server.listen(0, '127.0.0.1', () => console.log(`http://127.0.0.1:${(server.address() as AddressInfo).port}/mcp`))
process.once('SIGTERM', () => server.close(() => process.exit(0)))
