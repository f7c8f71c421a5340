/**
 * The headers a remote instance sends, read afresh for every request. A rotating secret (an OAuth
 * access token the backend refreshes) changes while the instance runs: the instance's own
 * connection and every client session's connection to the server share one LiveHeaders, so the
 * request after a swap carries the new value, and no MCP session is ended or restarted for it.
 */
import type { FetchLike } from '@modelcontextprotocol/sdk/shared/transport.js'

export class LiveHeaders {
  private headers: Readonly<Record<string, string>>

  constructor(initial: Record<string, string>) {
    this.headers = { ...initial }
  }

  get current(): Readonly<Record<string, string>> {
    return this.headers
  }

  /** From the next request on, these headers are sent instead. */
  replace(headers: Record<string, string>): void {
    this.headers = { ...headers }
  }
}

/** `fetch` with the current headers set on each request (over whatever the transport put there). */
export function withLiveHeaders(fetch: FetchLike, live: LiveHeaders): FetchLike {
  return (input, init) => {
    const headers = new Headers(init?.headers)
    for (const [name, value] of Object.entries(live.current)) headers.set(name, value)
    return fetch(input, { ...init, headers })
  }
}
