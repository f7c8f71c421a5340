/**
 * The only way the satellite reaches a remote MCP server: a `fetch` for the SDK's HTTP transports.
 *
 * On a satellite that serves more than one team, the URL is a team's choice and the satellite's
 * network is everyone's: the host must resolve to public addresses only (public-addresses.ts),
 * every one of them, unless the operator allows it (EGRESS_ALLOWED_HOSTS). The connection then
 * goes to an address that was checked — the socket's own lookup answers it — so a second DNS
 * answer cannot point elsewhere (DNS rebinding); TLS still verifies the host name. Redirects are
 * never followed there: a 3xx is a failure. A satellite of one team is the team's own machine and
 * reaches whatever its operator's network lets it.
 *
 * Either way, what the server answers stays between it and the SDK: an answer that is not 2xx is
 * read (to learn its size) and handed on without its body or status text, because the SDK copies
 * those into error messages that would end up in the instance's status and logs. What the
 * satellite may say of each request — its status and size, or why none — is passed to `observe`.
 */
import type { LookupAddress } from 'node:dns'
import { lookup } from 'node:dns/promises'
import { request as httpRequest, type IncomingMessage } from 'node:http'
import { request as httpsRequest } from 'node:https'
import { isIP, type LookupFunction } from 'node:net'
import { Readable, Transform, pipeline } from 'node:stream'
import type { FetchLike } from '@modelcontextprotocol/sdk/shared/transport.js'
import { nonPublicKind } from './public-addresses.js'

export interface EgressRule {
  /** True on a satellite that serves more than one team: remote hosts must be public. */
  restricted: boolean
  /** EGRESS_ALLOWED_HOSTS: `host` or `host:port` (lower case, IPv6 in brackets), reached without the check. */
  allowedHosts: readonly string[]
}

/** A team satellite's rule: its operator is the team. */
export const UNRESTRICTED: EgressRule = { restricted: false, allowedHosts: [] }

/** What one request came to: never what the server said, only how much. */
export type Exchange =
  | { kind: 'answer'; status: number; bytes: number; complete: boolean }
  | { kind: 'failure'; reason: string }

/** A request the guard refused or that did not get an answer; the message is fit for the team to read. */
export class EgressError extends Error {
  override name = 'EgressError'
}

export type Resolver = (hostname: string) => Promise<LookupAddress[]>

/** The most of a non-2xx answer read to learn its size; past it, the answer is cut off. */
const MAX_DRAINED = 1024 * 1024
/** Headers fetch itself does not let callers set; the connection's own are Node's. */
const DROPPED_HEADERS = new Set(['host', 'connection', 'content-length', 'transfer-encoding', 'keep-alive', 'upgrade', 'accept-encoding'])

const systemResolver: Resolver = (hostname) => lookup(hostname, { all: true, verbatim: true })

/** A fetch that keeps `rule`, tells `observe` what each request came to, and never follows a redirect on a restricted satellite. */
export function guardedFetch(rule: EgressRule, observe: (exchange: Exchange) => void, resolve: Resolver = systemResolver): FetchLike {
  return async (input, init = {}) => {
    const url = new URL(input)
    const signal = init.signal ?? undefined
    try {
      if (url.protocol !== 'http:' && url.protocol !== 'https:') throw new EgressError(`only http and https servers are reached (not ${url.protocol})`)
      // Resolved once and pinned on a shared satellite, allowed hosts too: what was checked (or allowed) is what is reached.
      const pinned = rule.restricted ? await addressesOf(url, resolve, !isAllowedHost(url, rule.allowedHosts)) : undefined
      signal?.throwIfAborted()
      const message = await send(url, init, pinned, signal)
      return await answer(message, rule, observe)
    } catch (error) {
      // A request abandoned by the transport (a stop) is no failure of the server.
      if (!signal?.aborted) observe({ kind: 'failure', reason: reasonOf(error) })
      throw error
    }
  }
}

/** Whether the operator allows the URL's host: alone (any port) or with the URL's port (the scheme's default when none is written). */
export function isAllowedHost(url: URL, allowedHosts: readonly string[]): boolean {
  const port = url.port !== '' ? url.port : url.protocol === 'https:' ? '443' : '80'
  return allowedHosts.includes(url.hostname) || allowedHosts.includes(`${url.hostname}:${port}`)
}

/** Every address of the URL's host; with `mustBePublic`, each one public, or an EgressError naming what it is. */
async function addressesOf(url: URL, resolve: Resolver, mustBePublic: boolean): Promise<LookupAddress[]> {
  const host = url.hostname.replace(/^\[(.*)\]$/, '$1')
  const literal = isIP(host) !== 0
  const addresses = literal ? [{ address: host, family: isIP(host) }] : await resolve(host)
  if (addresses.length === 0) throw Object.assign(new Error('no address'), { code: 'ENOTFOUND' })
  if (!mustBePublic) return addresses
  // Every address, not only the one used: a name that also points inside is refused outright.
  for (const { address } of addresses) {
    const kind = nonPublicKind(address)
    if (kind !== null) {
      throw new EgressError(`${url.hostname} ${literal ? 'is' : 'resolves to'} a non-public address (${kind}); a satellite shared by several teams ` +
        'reaches public addresses only, unless its operator allows the host (EGRESS_ALLOWED_HOSTS)')
    }
  }
  return addresses
}

/** The request, on a connection of its own to a `pinned` address when there is one. */
function send(url: URL, init: RequestInit, pinned: LookupAddress[] | undefined, signal: AbortSignal | undefined): Promise<IncomingMessage> {
  const headers: Record<string, string> = {}
  new Headers(init.headers).forEach((value, name) => {
    if (!DROPPED_HEADERS.has(name)) headers[name] = value
  })
  const body = bodyOf(init.body)
  // The checked addresses and nothing else; Node asks for all of them when it races IPv4 and IPv6.
  const lookup: LookupFunction | undefined = pinned === undefined ? undefined : (_hostname, options, callback) => {
    if (options.all === true) (callback as (error: null, addresses: LookupAddress[]) => void)(null, pinned)
    else callback(null, pinned[0]!.address, pinned[0]!.family)
  }
  // No shared agent: no pooled socket, connected for another request, is ever reused.
  const options = { method: init.method ?? 'GET', headers, agent: false as const, signal, ...(lookup === undefined ? {} : { lookup }) }
  return new Promise((resolve, reject) => {
    const request = (url.protocol === 'https:' ? httpsRequest : httpRequest)(url, options, resolve)
    request.on('error', reject)
    request.end(body)
  })
}

function bodyOf(body: RequestInit['body']): string | Uint8Array | undefined {
  if (body === undefined || body === null) return undefined
  if (typeof body === 'string' || body instanceof Uint8Array) return body
  if (body instanceof ArrayBuffer) return new Uint8Array(body)
  if (body instanceof URLSearchParams) return body.toString()
  throw new EgressError('the request body is of a kind this satellite does not send')
}

/** The web Response the SDK reads: a 2xx with its body streamed (and counted), anything else without one. */
async function answer(message: IncomingMessage, rule: EgressRule, observe: (exchange: Exchange) => void): Promise<Response> {
  const status = message.statusCode ?? 0
  const exchange = { kind: 'answer' as const, status, bytes: 0, complete: false }
  if (status >= 300 && status < 400 && status !== 304 && rule.restricted) {
    message.destroy()
    throw new EgressError(`the server answered with a redirect, which is not followed (HTTP ${status})`)
  }
  if (status < 200 || status > 599) {
    message.destroy()
    throw new EgressError(`the server answered with an invalid HTTP status (${status})`)
  }
  const headers = new Headers()
  for (const [name, value] of Object.entries(message.headers)) {
    for (const each of Array.isArray(value) ? value : value === undefined ? [] : [value]) {
      // A value fetch would not carry (Node's parser is more lenient) is left out, not a failure.
      try {
        headers.append(name, each)
      } catch {
        continue
      }
    }
  }
  observe(exchange)
  if (status >= 300 || status === 204 || status === 205) {
    await drain(message, exchange)
    return new Response(null, { status, headers })
  }
  const counted = new Transform({
    transform(chunk: Buffer, _encoding, done) {
      exchange.bytes += chunk.length
      done(null, chunk)
    },
    flush(done) {
      exchange.complete = true
      done()
    },
  })
  // An error on either side (an abort, a connection cut) ends both, and the web stream with them.
  pipeline(message, counted, () => undefined)
  return new Response(Readable.toWeb(counted) as ReadableStream<Uint8Array>, { status, headers })
}

/** Reads an answer to its end (or to MAX_DRAINED) for its size, keeping nothing of it. */
function drain(message: IncomingMessage, exchange: { bytes: number; complete: boolean }): Promise<void> {
  return new Promise((resolve) => {
    message.on('data', (chunk: Buffer) => {
      exchange.bytes += chunk.length
      if (exchange.bytes > MAX_DRAINED) {
        message.destroy()
        resolve()
      }
    })
    message.on('end', () => {
      exchange.complete = true
      resolve()
    })
    message.on('close', () => resolve())
    message.on('error', () => resolve())
  })
}

/** Why a request failed, in words fit for the team: an error code, never a message that may quote the server. */
function reasonOf(error: unknown): string {
  if (error instanceof EgressError) return error.message
  const code = (error as { code?: unknown } | undefined)?.code
  const safe = typeof code === 'string' && /^[A-Z0-9_]{2,64}$/.test(code) ? code : undefined
  if (safe === 'ENOTFOUND' || safe === 'EAI_AGAIN' || safe === 'EAI_NODATA') return `the server's host name does not resolve (${safe})`
  return `the server could not be reached (${safe ?? 'network error'})`
}
