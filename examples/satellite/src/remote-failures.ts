/**
 * Why a remote server could not be used, in words the team may read in the installation's status
 * and logs. Only what happened at the HTTP level is said — a status and a size, an error code, a
 * refusal, a timeout — never what the server answered: the SDK's own error texts quote the answer
 * (`Error POSTing to endpoint (HTTP 500): <body>`, a JSON parse error's excerpt, a version string),
 * and on a satellite shared by several teams that answer may come from a service no team should read.
 */
import { ErrorCode, McpError } from '@modelcontextprotocol/sdk/types.js'
import type { Exchange } from './egress.js'

/** The exchanges with one remote server, as the guarded fetch reports them. */
export class ExchangeRecord {
  private last: Exchange | undefined
  private trouble: Exchange | undefined

  readonly observe = (exchange: Exchange): void => {
    this.last = exchange
    if (exchange.kind === 'failure' || exchange.status < 200 || exchange.status >= 300) this.trouble = exchange
  }

  /** Why connecting failed with `error`, after `timeoutMs` at most. */
  reason(error: unknown, timeoutMs: number): string {
    if (error instanceof McpError && error.code === ErrorCode.RequestTimeout) return `the server did not answer within ${Math.round(timeoutMs / 1000)} s`
    if (this.trouble !== undefined) return describe(this.trouble)
    if (error instanceof McpError && error.code === ErrorCode.ConnectionClosed) return 'the connection to the server closed'
    // A JSON-RPC error the server sent: its code says enough, its message is the server's own words.
    if (error instanceof McpError) return `the server answered with MCP error ${Number.isSafeInteger(error.code) ? error.code : 'of an unknown code'}`
    if (this.last?.kind === 'answer') return `the server's answer (HTTP ${this.last.status}, ${sizeOf(this.last)}) is not usable MCP`
    return 'the connection to the server failed'
  }
}

/** "the server answered HTTP 500 (1234 bytes)", or the failure's own (safe) reason. */
export function describe(exchange: Exchange): string {
  if (exchange.kind === 'failure') return exchange.reason
  return `the server answered HTTP ${exchange.status} (${sizeOf(exchange)})`
}

/** An answer still streaming, or cut off, is as large as what was read at least. */
function sizeOf(answer: Extract<Exchange, { kind: 'answer' }>): string {
  return answer.complete ? `${answer.bytes} bytes` : `at least ${answer.bytes} bytes`
}
