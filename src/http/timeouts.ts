import type { ServerOptions } from 'node:http'
import type { Config } from '../config.js'

/**
 * How often Node looks for requests past their bound. Its default (30 s) would let a 1 s bound run
 * for 31 s; once a second keeps every bound within a second of its value, for a walk over the
 * open connections.
 */
const TIMEOUT_CHECK_MS = 1000

export interface TimeoutOptions {
  requestTimeout: number
  connectionTimeout: number
  http: ServerOptions
}

/**
 * Bounds on slow clients (a body trickling in a byte at a time, headers that never end, a socket
 * left silent). Node's `requestTimeout` and `headersTimeout` bound receiving the request: a
 * handler may take longer to answer (a long-poll), which only the idle bound (`connectionTimeout`,
 * no byte either way) limits. A request past its bound gets 408 REQUEST_TIMEOUT and its connection
 * is closed (http/error-handler.ts, clientErrorHandler).
 */
export function timeoutOptions(config: Config): TimeoutOptions {
  return {
    requestTimeout: config.requestTimeoutMs,
    connectionTimeout: config.connectionTimeoutMs,
    http: { headersTimeout: config.headersTimeoutMs, connectionsCheckingInterval: TIMEOUT_CHECK_MS },
  }
}
