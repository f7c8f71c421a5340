import { execFileSync } from 'node:child_process'
import { mkdtempSync, readFileSync, rmSync } from 'node:fs'
import type { IncomingMessage, ServerResponse } from 'node:http'
import { createServer } from 'node:https'
import type { AddressInfo } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'

/** What a path answers: a status, headers and a body, possibly late or in chunks. */
export interface Answer {
  status?: number
  headers?: Record<string, string>
  body?: string
  /** Waits this long before answering. */
  delayMs?: number
  /** Sends the body in two writes without Content-Length (chunked), so only its actual size tells. */
  chunked?: boolean
}

export type Handler = Answer | ((request: IncomingMessage, response: ServerResponse) => void)

/** An https server on 127.0.0.1 with a certificate made for this run (CN localhost; SAN localhost, documents.test and 127.0.0.1). */
export interface DocumentServer {
  /** `https://127.0.0.1:<port>` */
  origin: string
  port: number
  /** The self-signed certificate, to trust. */
  ca: string
  /** Serves `handler` at `path`; answers the full URL. */
  serve(path: string, handler: Handler): string
  /** A JSON document at `path`, with `client_id` set to its own URL unless `document` has one. */
  document(path: string, document: Record<string, unknown>, headers?: Record<string, string>): string
  /** Requests received for `path` so far. */
  hits(path: string): number
  /** Every request so far, paths in order. */
  requests: string[]
  close(): Promise<void>
}

export async function startDocumentServer(): Promise<DocumentServer> {
  const dir = mkdtempSync(join(tmpdir(), 'svc-cimd-'))
  const keyFile = join(dir, 'key.pem')
  const certFile = join(dir, 'cert.pem')
  execFileSync('openssl', [
    'req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-keyout', keyFile, '-out', certFile,
    '-subj', '/CN=localhost', '-addext', 'subjectAltName=DNS:localhost,DNS:documents.test,IP:127.0.0.1', '-days', '1',
  ], { stdio: 'ignore' })
  const key = readFileSync(keyFile, 'utf8')
  const cert = readFileSync(certFile, 'utf8')
  rmSync(dir, { recursive: true, force: true })

  const handlers = new Map<string, Handler>()
  const requests: string[] = []
  const timers = new Set<NodeJS.Timeout>()
  const server = createServer({ key, cert }, (request, response) => {
    const path = request.url ?? '/'
    requests.push(path)
    const handler = handlers.get(path) ?? { status: 404, headers: { 'content-type': 'text/plain' }, body: 'not here' }
    if (typeof handler === 'function') return handler(request, response)
    const send = () => {
      response.writeHead(handler.status ?? 200, handler.headers ?? {})
      const body = handler.body ?? ''
      if (handler.chunked === true) {
        const half = Math.floor(body.length / 2)
        response.write(body.slice(0, half))
        response.end(body.slice(half))
      } else {
        response.end(body)
      }
    }
    if (handler.delayMs === undefined) return send()
    const timer = setTimeout(() => {
      timers.delete(timer)
      if (!response.destroyed) send()
    }, handler.delayMs)
    timers.add(timer)
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const { port } = server.address() as AddressInfo
  const origin = `https://127.0.0.1:${port}`

  return {
    origin,
    port,
    ca: cert,
    requests,
    serve(path, handler) {
      handlers.set(path, handler)
      return `${origin}${path}`
    },
    document(path, document, headers = {}) {
      const url = `${origin}${path}`
      handlers.set(path, { headers: { 'content-type': 'application/json', ...headers }, body: JSON.stringify({ client_id: url, ...document }) })
      return url
    },
    hits: (path) => requests.filter((seen) => seen === path).length,
    async close() {
      for (const timer of timers) clearTimeout(timer)
      server.closeAllConnections()
      await new Promise<void>((resolve) => server.close(() => resolve()))
    },
  }
}
