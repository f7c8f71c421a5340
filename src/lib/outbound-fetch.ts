import { lookup } from 'node:dns/promises'
import { request as httpRequest, type IncomingHttpHeaders, type IncomingMessage } from 'node:http'
import { request as httpsRequest } from 'node:https'
import { isIP, type LookupFunction } from 'node:net'
import { rootCertificates } from 'node:tls'
import { specialUseKind } from './special-use-addresses.js'

/** What an outbound GET may cost at most, unless the caller says otherwise. */
export const OUTBOUND_TIMEOUT_MS = 5000
export const OUTBOUND_MAX_BYTES = 64 * 1024

export interface OutboundOptions {
  /**
   * `host` or `host:port` entries (lower case, IPv6 in brackets) whose addresses are not checked:
   * OUTBOUND_ALLOWED_HOSTS, for documents and registries served inside the operator's own network.
   */
  allowedHosts: readonly string[]
  /** CA certificates (PEM) trusted on top of Node's own store; tests pass their self-signed one. */
  ca?: readonly string[]
  /** The whole request — resolution, connection, answer and body — must finish within this. */
  timeoutMs?: number
  maxBytes?: number
  /** Resolves a host name to every address it has (default: the system resolver); tests answer for names no DNS server knows. */
  resolveHost?: (hostname: string) => Promise<ResolvedAddress[]>
}

export interface ResolvedAddress {
  address: string
  family: number
}

export interface OutboundResponse {
  status: number
  headers: IncomingHttpHeaders
  /** Read for a 200 only (any status for `fetcher`); empty for any other status. */
  body: Buffer
}

/** Per request: what `get` and `check` admit beyond the defaults. */
export interface RequestOptions {
  /**
   * Admits plain `http:` for hosts in `allowedHosts` (a registry inside the operator's own network
   * that has no certificate); every other host stays https only. Off by default: documents that
   * third parties point to are fetched over https only.
   */
  allowHttp?: boolean
}

/** A fetch-compatible function (what oauth4webapi's `customFetch` is called with). */
export type GuardedFetch = (input: string | URL | Request, init?: {
  method?: string
  headers?: Record<string, string> | Headers | Array<[string, string]>
  body?: string | URLSearchParams | null
  redirect?: string
  signal?: AbortSignal | null
}) => Promise<Response>

export type OutboundFailure = 'not_https' | 'refused_address' | 'unresolvable' | 'timeout' | 'too_large' | 'network'

/** Why an outbound request was not made or did not finish; the message is fit for the client. */
export class OutboundError extends Error {
  constructor(readonly reason: OutboundFailure, message: string) {
    super(message)
    this.name = 'OutboundError'
  }
}

/**
 * GET over https (plain http too for allowed hosts, when the caller asks) to URLs that third
 * parties choose, safe against server-side request forgery: the host name is resolved once,
 * every address it resolves to must be public (see special-use-addresses.ts) unless the host is
 * in `allowedHosts`, and the connection goes to the address that was checked — the socket's own
 * lookup answers it — so a second DNS answer cannot point elsewhere (DNS rebinding). Redirects
 * are never followed; the answer's status is returned. One fresh connection per request (no
 * pooled socket reaches an address checked for another host).
 */
export class OutboundFetch {
  private readonly timeoutMs: number
  private readonly maxBytes: number
  private readonly ca: string[] | undefined
  private readonly allowed: ReadonlySet<string>
  private readonly resolveHost: (hostname: string) => Promise<ResolvedAddress[]>

  constructor(options: OutboundOptions) {
    this.resolveHost = options.resolveHost ?? ((hostname) => lookup(hostname, { all: true, verbatim: true }))
    this.timeoutMs = options.timeoutMs ?? OUTBOUND_TIMEOUT_MS
    this.maxBytes = options.maxBytes ?? OUTBOUND_MAX_BYTES
    // Node replaces its store with `ca` when given: keep the public roots next to the extra ones.
    this.ca = options.ca === undefined || options.ca.length === 0 ? undefined : [...rootCertificates, ...options.ca]
    this.allowed = new Set(options.allowedHosts)
  }

  async get(url: URL, headers: Record<string, string> = {}, options: RequestOptions = {}): Promise<OutboundResponse> {
    this.checkScheme(url, options)
    return this.withinTimeout(async (signal, timedOut) => {
      const target = await Promise.race([this.resolve(url), timedOut])
      return Promise.race([this.fetch(url, target, headers, signal), timedOut])
    })
  }

  /**
   * The same guard as a fetch-compatible function, for libraries that take one (oauth4webapi's
   * `customFetch`): any method, headers and a string or form body; the address checked and pinned
   * as for `get`; redirects never followed (the 3xx is answered as it is); the body read whatever
   * the status (an OAuth error is a 400 with a JSON body), within the size limit. `allowHttp`
   * admits plain http for allowed hosts only, as for `get`.
   */
  fetcher(options: RequestOptions = {}): GuardedFetch {
    return async (input, init = {}) => {
      const url = new URL(typeof input === 'string' || input instanceof URL ? input : input.url)
      this.checkScheme(url, options)
      const headers: Record<string, string> = {}
      new Headers(init.headers).forEach((value, key) => { headers[key] = value })
      const body = init.body === undefined || init.body === null ? undefined : init.body.toString()
      if (body !== undefined && headers['content-type'] === undefined && init.body instanceof URLSearchParams) headers['content-type'] = 'application/x-www-form-urlencoded;charset=UTF-8'
      const answer = await this.withinTimeout(async (signal, timedOut) => {
        const target = await Promise.race([this.resolve(url), timedOut])
        return Promise.race([this.fetch(url, target, headers, signal, { method: init.method ?? 'GET', body, anyStatus: true }), timedOut])
      })
      const responseHeaders = new Headers()
      for (const [name, value] of Object.entries(answer.headers)) {
        if (Array.isArray(value)) for (const one of value) responseHeaders.append(name, one)
        else if (value !== undefined) responseHeaders.set(name, value)
      }
      const empty = answer.status === 204 || answer.status === 304 || (answer.status >= 100 && answer.status < 200)
      return new Response(empty ? null : new Uint8Array(answer.body), { status: answer.status, headers: responseHeaders })
    }
  }

  /**
   * What `get` checks before it connects — the scheme, the allowed hosts, every address the host
   * resolves to — without connecting: a URL an operator saves for later is refused at once, with
   * the reason `get` would give. Throws that OutboundError; resolves when `get` would connect.
   */
  async check(url: URL, options: RequestOptions = {}): Promise<void> {
    this.checkScheme(url, options)
    await this.withinTimeout(async (_signal, timedOut) => {
      await Promise.race([this.resolve(url), timedOut])
    })
  }

  /**
   * Whether the URL's host is in `allowedHosts`: as the URL parser writes it (lower case, IPv6 in
   * brackets), alone (every port) or with the URL's port (the scheme's default when none is written).
   */
  isAllowedHost(url: URL): boolean {
    const port = url.port !== '' ? url.port : url.protocol === 'http:' ? '80' : '443'
    return this.allowed.has(url.hostname) || this.allowed.has(`${url.hostname}:${port}`)
  }

  private checkScheme(url: URL, { allowHttp = false }: RequestOptions): void {
    if (url.protocol === 'https:') return
    if (url.protocol === 'http:' && allowHttp) {
      if (this.isAllowedHost(url)) return
      throw new OutboundError('not_https', 'plain http is used only for hosts in OUTBOUND_ALLOWED_HOSTS; any other host must be reached over https')
    }
    throw new OutboundError('not_https', 'only https URLs are fetched')
  }

  /** Runs `work` with the whole-request deadline: `timedOut` rejects, and `signal` aborts, when it passes. */
  private async withinTimeout<T>(work: (signal: AbortSignal, timedOut: Promise<never>) => Promise<T>): Promise<T> {
    const controller = new AbortController()
    const timer = setTimeout(() => controller.abort(), this.timeoutMs)
    const timedOut = new Promise<never>((_resolve, reject) => {
      controller.signal.addEventListener('abort', () => reject(new OutboundError('timeout', `no complete answer within ${this.timeoutMs / 1000} seconds`)))
    })
    // A rejection nobody awaits yet (the race settled first) is not an error.
    timedOut.catch(() => {})
    try {
      return await work(controller.signal, timedOut)
    } finally {
      clearTimeout(timer)
    }
  }

  /** The address to connect to, checked. */
  private async resolve(url: URL): Promise<ResolvedAddress> {
    const host = url.hostname.replace(/^\[(.*)\]$/, '$1')
    const allowed = this.isAllowedHost(url)
    let addresses: ResolvedAddress[]
    const literal = isIP(host) !== 0
    if (literal) {
      addresses = [{ address: host, family: isIP(host) }]
    } else {
      try {
        addresses = await this.resolveHost(host)
      } catch {
        throw new OutboundError('unresolvable', 'its host name does not resolve')
      }
      if (addresses.length === 0) throw new OutboundError('unresolvable', 'its host name does not resolve')
    }
    if (!allowed) {
      // Every address, not just the one used: a name that also points inside is refused outright.
      for (const { address } of addresses) {
        const kind = specialUseKind(address)
        if (kind !== null) {
          throw new OutboundError('refused_address', `its host ${literal ? 'is' : 'resolves to'} a non-public address (${kind}), which this service does not connect to`)
        }
      }
    }
    return addresses[0]!
  }

  private fetch(url: URL, target: ResolvedAddress, headers: Record<string, string>, signal: AbortSignal,
    { method = 'GET', body, anyStatus = false }: { method?: string; body?: string; anyStatus?: boolean } = {}): Promise<OutboundResponse> {
    const pinned: LookupFunction = (_hostname, options, callback) => {
      if (options.all === true) (callback as (error: null, addresses: ResolvedAddress[]) => void)(null, [target])
      else callback(null, target.address, target.family)
    }
    return new Promise((resolve, reject) => {
      const options = { method, headers: body === undefined ? headers : { ...headers, 'content-length': String(Buffer.byteLength(body)) }, agent: false, lookup: pinned, signal }
      const answered = (response: IncomingMessage) => {
        const status = response.statusCode ?? 0
        if (status !== 200 && !anyStatus) {
          response.destroy()
          resolve({ status, headers: response.headers, body: Buffer.alloc(0) })
          return
        }
        const declared = Number(response.headers['content-length'])
        if (Number.isFinite(declared) && declared > this.maxBytes) {
          response.destroy()
          reject(this.tooLarge())
          return
        }
        const chunks: Buffer[] = []
        let size = 0
        response.on('data', (chunk: Buffer) => {
          size += chunk.length
          // Stop reading at the limit rather than buffer whatever the server sends.
          if (size > this.maxBytes) {
            response.destroy()
            reject(this.tooLarge())
            return
          }
          chunks.push(chunk)
        })
        response.on('end', () => resolve({ status, headers: response.headers, body: Buffer.concat(chunks) }))
        response.on('error', (error) => reject(networkError(error)))
        // Cut off before its end (settles nothing once the body is complete or refused).
        response.on('close', () => {
          if (!response.complete) reject(new OutboundError('network', 'its answer was cut off'))
        })
      }
      // Plain http only gets here for an allowed host whose caller asked for it (checkScheme).
      const outgoing = url.protocol === 'http:'
        ? httpRequest(url, options, answered)
        : httpsRequest(url, { ...options, ...(this.ca === undefined ? {} : { ca: this.ca }) }, answered)
      outgoing.on('error', (error) => reject(networkError(error)))
      outgoing.end(body)
    })
  }

  private tooLarge(): OutboundError {
    const mib = this.maxBytes / (1024 * 1024)
    const limit = Number.isInteger(mib) ? `${mib} MiB` : `${Math.floor(this.maxBytes / 1024)} KiB`
    return new OutboundError('too_large', `it is larger than ${limit}`)
  }
}

function networkError(error: Error & { code?: string }): OutboundError {
  if (error instanceof OutboundError) return error
  return new OutboundError('network', `it could not be fetched (${error.code ?? error.message})`)
}
