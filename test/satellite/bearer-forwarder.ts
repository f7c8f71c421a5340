/**
 * A loopback HTTP forwarder that adds `Authorization: Bearer <token>` to every request and
 * changes nothing else: for a client that cannot send a token (the MCP conformance suite) to
 * reach a satellite, which admits none without one. Host, Origin and every other header go
 * through as the client sent them (a test of DNS-rebinding protection depends on Host and
 * Origin), except the hop-by-hop ones (RFC 9110 §7.6.1), which belong to each connection. Bodies
 * stream both ways as they come, so event streams (SSE) are not held back, and a client that
 * goes away takes its upstream request with it.
 */
import { Agent, createServer, request as httpRequest, type IncomingMessage, type OutgoingHttpHeaders } from 'node:http'
import type { AddressInfo } from 'node:net'

export interface Forwarder {
  /** `http://127.0.0.1:<port>`; paths are forwarded as they are. */
  base: string
  close(): Promise<void>
}

const HOP_BY_HOP = new Set(['connection', 'keep-alive', 'proxy-connection', 'transfer-encoding', 'upgrade', 'te', 'trailer', 'proxy-authorization', 'proxy-authenticate'])

/** rawHeaders without the hop-by-hop ones (and those `drop` names), in the order they came. */
function endToEnd(message: IncomingMessage, drop: readonly string[] = []): string[] {
  const named = new Set([
    ...HOP_BY_HOP,
    ...drop,
    // A Connection header names further hop-by-hop headers of its own.
    ...String(message.headers.connection ?? '').split(',').map((name) => name.trim().toLowerCase()).filter((name) => name !== ''),
  ])
  const kept: string[] = []
  for (let index = 0; index < message.rawHeaders.length; index += 2) {
    const name = message.rawHeaders[index]!
    if (!named.has(name.toLowerCase())) kept.push(name, message.rawHeaders[index + 1]!)
  }
  return kept
}

/** Forwards to `target` (an origin, `http://host:port`) with `token` as the bearer token. */
export async function startBearerForwarder(target: string, token: string): Promise<Forwarder> {
  const upstream = new URL(target)
  const agent = new Agent({ keepAlive: true })
  const server = createServer((request, response) => {
    const headers = [...endToEnd(request, ['authorization']), 'Authorization', `Bearer ${token}`]
    const outgoing = httpRequest({
      host: upstream.hostname,
      port: upstream.port,
      method: request.method,
      path: request.url,
      // The client's own Host, not the satellite's address.
      setHost: false,
      headers: headers as unknown as OutgoingHttpHeaders,
      agent,
    })
    outgoing.on('response', (answer) => {
      response.writeHead(answer.statusCode ?? 502, answer.statusMessage, endToEnd(answer))
      response.flushHeaders()
      answer.pipe(response)
      answer.on('error', () => response.destroy())
    })
    outgoing.on('error', () => {
      if (!response.headersSent) response.writeHead(502, { 'content-type': 'text/plain' }).end('the forwarder could not reach the satellite')
      else response.destroy()
    })
    response.on('close', () => {
      if (!response.writableFinished) outgoing.destroy()
    })
    request.pipe(outgoing)
  })
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject)
    server.listen(0, '127.0.0.1', resolve)
  })
  return {
    base: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    close: () => new Promise<void>((resolve) => {
      server.close(() => resolve())
      server.closeAllConnections()
      agent.destroy()
    }),
  }
}
