import { connect } from 'node:net'

export interface RawResponse {
  status: number
  headers: Record<string, string>
  body: string
}

/**
 * One HTTP/1.1 request written byte for byte on a socket (no client library normalizes the
 * target), answered until the server closes the connection.
 */
export function rawRequest(port: number, target: string, { method = 'GET', timeoutMs = 5000 } = {}): Promise<RawResponse> {
  return new Promise((resolve, reject) => {
    const socket = connect({ port, host: '127.0.0.1' })
    const chunks: Buffer[] = []
    const timer = setTimeout(() => {
      socket.destroy()
      reject(new Error(`no complete answer within ${timeoutMs} ms to ${method} ${target.slice(0, 80)}`))
    }, timeoutMs)
    socket.on('data', (chunk) => chunks.push(chunk))
    socket.on('error', (error) => {
      // A server that answers and then resets still answered; judge what arrived.
      if (chunks.length === 0) {
        clearTimeout(timer)
        reject(error)
      }
    })
    socket.on('close', () => {
      clearTimeout(timer)
      try {
        resolve(parseResponse(Buffer.concat(chunks).toString('utf8')))
      } catch (error) {
        reject(error)
      }
    })
    socket.write(`${method} ${target} HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n`)
  })
}

function parseResponse(text: string): RawResponse {
  const end = text.indexOf('\r\n\r\n')
  if (end === -1) throw new Error(`not an HTTP response: ${JSON.stringify(text.slice(0, 200))}`)
  const [statusLine, ...lines] = text.slice(0, end).split('\r\n')
  const status = Number(/^HTTP\/1\.[01] (\d{3})/.exec(statusLine ?? '')?.[1])
  const headers: Record<string, string> = {}
  for (const line of lines) {
    const colon = line.indexOf(':')
    if (colon > 0) headers[line.slice(0, colon).trim().toLowerCase()] = line.slice(colon + 1).trim()
  }
  let body = text.slice(end + 4)
  if (/chunked/i.test(headers['transfer-encoding'] ?? '')) body = unchunk(body)
  return { status, headers, body }
}

function unchunk(body: string): string {
  let out = ''
  let rest = body
  for (;;) {
    const lineEnd = rest.indexOf('\r\n')
    const size = parseInt(rest.slice(0, lineEnd), 16)
    if (!(size > 0)) return out
    out += rest.slice(lineEnd + 2, lineEnd + 2 + size)
    rest = rest.slice(lineEnd + 2 + size + 2)
  }
}
