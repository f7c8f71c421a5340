import http from 'node:http'

/**
 * A small HTTP load client for the reliability tests: real sockets (node:http, no mocks), every
 * request recorded with what became of it.
 */

/** What became of one request. */
export type OutcomeKind =
  /** an answer with a 2xx status */
  | 'ok'
  /** any other answer; `status` and `code` say which */
  | 'answered'
  /** the connection was refused (nobody listening) */
  | 'refused'
  /** the connection was reset or closed while the request was on it */
  | 'reset'
  /** no answer within the client's timeout */
  | 'timeout'
  /** any other failure of the client */
  | 'error'

export interface Outcome {
  /** What the caller called it (e.g. `register`). */
  label: string
  method: string
  path: string
  kind: OutcomeKind
  status?: number
  /** The envelope's `code` of an error answer, when it has one. */
  code?: string
  /** The parsed JSON body of the answer (undefined when it is not JSON). */
  body?: unknown
  headers?: http.IncomingHttpHeaders
  /** The client error (`code` or message) for refused, reset, timeout and error. */
  error?: string
  /** Milliseconds since the epoch (Date.now()) when the request was sent, and when it ended. */
  startedAt: number
  endedAt: number
}

export interface RequestOptions {
  label: string
  method: 'GET' | 'POST' | 'PUT' | 'DELETE'
  path: string
  body?: unknown
  cookie?: string
  /** Aborts (kind 'timeout') after this long. */
  timeoutMs?: number
}

const RESET_CODES = new Set(['ECONNRESET', 'EPIPE', 'ECONNABORTED'])

/** One request on `agent` (a keep-alive agent keeps its sockets between calls). Never throws. */
export function send(baseUrl: string, agent: http.Agent, { label, method, path, body, cookie, timeoutMs = 15_000 }: RequestOptions): Promise<Outcome> {
  const startedAt = Date.now()
  const payload = body === undefined ? undefined : Buffer.from(JSON.stringify(body))
  const headers: http.OutgoingHttpHeaders = {}
  if (payload !== undefined) {
    headers['content-type'] = 'application/json'
    headers['content-length'] = payload.length
  }
  if (cookie !== undefined) headers.cookie = cookie
  return new Promise<Outcome>((resolve) => {
    let settled = false
    const finish = (outcome: Omit<Outcome, 'label' | 'method' | 'path' | 'startedAt' | 'endedAt'>) => {
      if (settled) return
      settled = true
      clearTimeout(timer)
      resolve({ label, method, path, startedAt, endedAt: Date.now(), ...outcome })
    }
    const request = http.request(new URL(path, baseUrl), { method, agent, headers }, (response) => {
      const chunks: Buffer[] = []
      response.on('data', (chunk: Buffer) => chunks.push(chunk))
      response.on('error', (error: NodeJS.ErrnoException) => finish(failure(error)))
      response.on('end', () => {
        const status = response.statusCode ?? 0
        let parsed: unknown
        try {
          parsed = JSON.parse(Buffer.concat(chunks).toString('utf8'))
        } catch {
          parsed = undefined
        }
        const code = typeof parsed === 'object' && parsed !== null && typeof (parsed as { code?: unknown }).code === 'string'
          ? (parsed as { code: string }).code
          : undefined
        finish({ kind: status >= 200 && status < 300 ? 'ok' : 'answered', status, code, body: parsed, headers: response.headers })
      })
    })
    const timer = setTimeout(() => {
      finish({ kind: 'timeout', error: `no answer within ${timeoutMs} ms` })
      request.destroy()
    }, timeoutMs)
    request.on('error', (error: NodeJS.ErrnoException) => finish(failure(error)))
    request.end(payload)
  })
}

function failure(error: NodeJS.ErrnoException): Pick<Outcome, 'kind' | 'error'> {
  const code = error.code ?? error.message
  if (code === 'ECONNREFUSED') return { kind: 'refused', error: code }
  // Node reports a socket closed under a request as ECONNRESET ("socket hang up" or "read
  // ECONNRESET"); a write into a closed socket is EPIPE.
  if (RESET_CODES.has(code) || /socket hang up|other side closed/i.test(error.message)) return { kind: 'reset', error: `${code}: ${error.message}` }
  return { kind: 'error', error: `${code}: ${error.message}` }
}

/** The `auth_session=<value>` pair a response set, if any. */
export function sessionCookieOf(outcome: Outcome): string | undefined {
  const lines = outcome.headers?.['set-cookie'] ?? []
  const pair = lines.find((line) => line.startsWith('auth_session='))?.split(';')[0]
  return pair === undefined || pair === 'auth_session=' ? undefined : pair
}

/** Counts of outcomes by a key. */
export function tally<T>(items: readonly T[], key: (item: T) => string): Record<string, number> {
  const counts: Record<string, number> = {}
  for (const item of items) counts[key(item)] = (counts[key(item)] ?? 0) + 1
  return counts
}

export const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms))
