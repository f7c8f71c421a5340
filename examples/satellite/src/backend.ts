/**
 * The backend's satellite routes, as a small client. Answers are enveloped
 * (`{success, data}` / `{success: false, error, code}`); a refusal becomes a BackendError that
 * keeps the status and code so callers can tell "pair again" (401) from "disabled" (403) from
 * "try later" (anything else).
 */
import { request as httpRequest } from 'node:http'
import { request as httpsRequest } from 'node:https'
import type { DesiredState, Isolation, LogLine, ObservedInstance, ReportedTool, TokenClaims, ToolCallRecord } from './types.js'

export class BackendError extends Error {
  /** The request fields a 400 VALIDATION_ERROR names. */
  readonly fields: string[]

  constructor(readonly status: number, readonly code: string | undefined, message: string, details?: unknown) {
    super(message)
    this.fields = Array.isArray(details) ? details.flatMap((detail: { field?: unknown }) => (typeof detail?.field === 'string' ? [detail.field] : [])) : []
  }

  /**
   * The backend refused this request for good: a 4xx other than a timeout (408), a rate limit
   * (429), or a concurrent change that got in the way (409 CONFLICT: nothing was written, send it
   * again). Sending the same again would only be refused again; anything else is tried later.
   */
  get refusedForGood(): boolean {
    if (this.status < 400 || this.status >= 500) return false
    return this.status !== 408 && this.status !== 429 && !(this.status === 409 && this.code === 'CONFLICT')
  }

  /** The key is no longer valid: the satellite was deleted, or registered again elsewhere. */
  get unpaired(): boolean {
    return this.status === 401
  }

  get disabled(): boolean {
    return this.status === 403 && this.code === 'SATELLITE_DISABLED'
  }
}

/** What the satellite enforces and can run (older backends refuse these fields; see Satellite). */
export interface IsolationReport {
  isolation?: Isolation
  runtimes?: string[]
}

export interface Registration extends IsolationReport {
  name: string
  capabilities: string[]
  satellite_url: string
  public_key: string
  system_info: { os: string; arch: string; node_version: string; memory_mb: number }
}

export interface Registered {
  satellite: { id: string; name: string; satellite_type: string; team_id: string | null; status: string }
  api_key: string
}

export interface HeartbeatBody extends IsolationReport {
  status: 'active' | 'degraded' | 'error'
  system_metrics: { cpu_usage_percent: number; memory_usage_mb: number; uptime_seconds?: number }
  version?: string
}

export type KeyAuthority = { challenge?: string; proof?: string } | { registration_token?: string }

export type DesiredAnswer =
  | { changed: false }
  | { changed: true; etag: string | undefined; document: DesiredState }

/** Ordinary requests give up after this long; the long-poll gets its wait on top. */
const REQUEST_TIMEOUT_MS = 15_000

export class Backend {
  private satelliteId: string | undefined
  private apiKey: string | undefined

  /** `unpaired` hears of every 401 to the satellite's key, whichever request met it. */
  constructor(readonly baseUrl: string, private readonly unpaired: (what: string) => void = () => undefined) {}

  /** The pairing the satellite routes act for. */
  use(satelliteId: string, apiKey: string): void {
    this.satelliteId = satelliteId
    this.apiKey = apiKey
  }

  get paired(): boolean {
    return this.apiKey !== undefined
  }

  async register(registrationToken: string, body: Registration): Promise<Registered> {
    const answer = await this.call('POST', '/api/satellites/register', { token: registrationToken, body })
    return answer as Registered
  }

  /**
   * Sets the key secrets are sealed to. A first key needs nothing more; replacing one needs
   * `proof` (an answered challenge) or `registration_token` (a fresh one of the satellite's scope).
   */
  async putPublicKey(publicKey: string, authority: KeyAuthority = {}): Promise<{ public_key_fingerprint: string }> {
    return (await this.call('PUT', this.own('/public-key'), { body: { public_key: publicKey, ...authority } })) as { public_key_fingerprint: string }
  }

  /** A challenge proving the current private key: a nonce sealed to it, to answer within 5 minutes. */
  async keyChallenge(): Promise<{ challenge: string; sealed: string }> {
    return (await this.call('POST', this.own('/public-key/challenge'), {})) as { challenge: string; sealed: string }
  }

  /** Tells the backend this satellite stopped cleanly: it reads offline until the next heartbeat. */
  async offline(timeoutMs: number): Promise<void> {
    await this.call('POST', this.own('/offline'), { timeoutMs })
  }

  async heartbeat(body: HeartbeatBody): Promise<{ satellite?: { satellite_type?: string }; heartbeat_interval_seconds?: number }> {
    return (await this.call('POST', this.own('/heartbeat'), { body })) as { satellite?: { satellite_type?: string }; heartbeat_interval_seconds?: number }
  }

  /**
   * One long-poll: with `etag`, the backend holds the request up to `waitSeconds` and answers
   * 304 when nothing changed. `signal` ends it early (shutdown).
   */
  async desiredState(etag: string | undefined, waitSeconds: number, signal?: AbortSignal): Promise<DesiredAnswer> {
    const headers: Record<string, string> = this.authorization()
    if (etag !== undefined) headers['if-none-match'] = etag
    const timeout = AbortSignal.timeout(REQUEST_TIMEOUT_MS + waitSeconds * 1000)
    const response = await getAlone(
      `${this.baseUrl}${this.own(`/desired-state?wait=${waitSeconds}`)}`,
      { accept: 'application/json', ...headers },
      signal === undefined ? timeout : AbortSignal.any([signal, timeout]),
    )
    if (response.status === 304) {
      await response.body?.cancel()
      return { changed: false }
    }
    if (response.status === 401) this.unpaired('desired-state')
    const document = (await unwrap(response)) as DesiredState
    return { changed: true, etag: response.headers.get('etag') ?? undefined, document }
  }

  async observedState(revision: string, instances: ObservedInstance[]): Promise<{ accepted: number; ignored: number }> {
    return (await this.call('PUT', this.own('/observed-state'), { body: { revision, instances } })) as { accepted: number; ignored: number }
  }

  async putTools(instanceId: string, tools: ReportedTool[]): Promise<void> {
    await this.call('PUT', this.own(`/instances/${encodeURIComponent(instanceId)}/tools`), { body: { tools } })
  }

  async postLogs(instanceId: string, lines: LogLine[]): Promise<void> {
    await this.call('POST', this.own(`/instances/${encodeURIComponent(instanceId)}/logs`), { body: { lines } })
  }

  /** A batch of tool-call records; a batch id the backend has seen is taken again and counted once. */
  async postCalls(instanceId: string, batch: { batch_id: string; calls: ToolCallRecord[] }): Promise<{ accepted: number; duplicate: boolean }> {
    return (await this.call('POST', this.own(`/instances/${encodeURIComponent(instanceId)}/calls`), { body: batch })) as { accepted: number; duplicate: boolean }
  }

  /** RFC 7662: what the backend knows of a client's token. The answer is not enveloped. */
  async introspect(token: string): Promise<TokenClaims> {
    const response = await reach(`${this.baseUrl}/api/oauth2/introspect`, {
      method: 'POST',
      headers: { ...this.authorization(), accept: 'application/json', 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ token }).toString(),
      signal: AbortSignal.timeout(REQUEST_TIMEOUT_MS),
    })
    const body = (await response.json().catch(() => undefined)) as (TokenClaims & { code?: string; error?: string }) | undefined
    if (response.status === 401) this.unpaired('introspection')
    if (response.status !== 200 || body === undefined || typeof body.active !== 'boolean') {
      throw new BackendError(response.status, body?.code, `introspection failed with ${response.status}`)
    }
    return body
  }

  private own(path: string): string {
    if (this.satelliteId === undefined) throw new Error('the satellite is not paired yet')
    return `/api/satellites/${encodeURIComponent(this.satelliteId)}${path}`
  }

  private authorization(): Record<string, string> {
    if (this.apiKey === undefined) throw new Error('the satellite is not paired yet')
    return { authorization: `Bearer ${this.apiKey}` }
  }

  private async call(method: string, path: string, options: { body?: unknown; token?: string; timeoutMs?: number }): Promise<unknown> {
    const headers: Record<string, string> = { accept: 'application/json' }
    if (options.body !== undefined) headers['content-type'] = 'application/json'
    Object.assign(headers, options.token === undefined ? this.authorization() : { authorization: `Bearer ${options.token}` })
    const response = await reach(`${this.baseUrl}${path}`, {
      method,
      headers,
      body: options.body === undefined ? undefined : JSON.stringify(options.body),
      signal: AbortSignal.timeout(options.timeoutMs ?? REQUEST_TIMEOUT_MS),
    })
    if (response.status === 401 && options.token === undefined) this.unpaired(`${method} ${path.replace(/^\/api\/satellites\/[^/]+/, '')}`)
    return unwrap(response)
  }
}

/** fetch, with a failure to connect said plainly ("ECONNREFUSED") instead of "fetch failed". */
async function reach(url: string, init: RequestInit): Promise<Response> {
  try {
    return await fetch(url, init)
  } catch (error) {
    if (init.signal?.aborted && (error as Error).name === 'AbortError') throw error
    const cause = (error as { cause?: { code?: string; message?: string } }).cause
    throw new Error(`cannot reach the backend at ${new URL(url).origin}: ${cause?.code ?? cause?.message ?? (error as Error).message}`)
  }
}

/**
 * A GET on a connection of its own, closed with it. The long-poll is aborted at every shutdown,
 * and Node's fetch, aborted while it opens a connection, leaves that connection open and unused:
 * a backend that is itself shutting down then waits for it (an HTTP server does not close a
 * connection that has not sent a request). One connection per poll, every 30 seconds, costs
 * nothing worth keeping it for.
 */
function getAlone(url: string, headers: Record<string, string>, signal: AbortSignal): Promise<Response> {
  const target = new URL(url)
  const send = target.protocol === 'https:' ? httpsRequest : httpRequest
  return new Promise((resolve, reject) => {
    const request = send(target, { method: 'GET', headers, agent: false, signal }, (response) => {
      const chunks: Buffer[] = []
      response.on('data', (chunk: Buffer) => chunks.push(chunk))
      response.on('error', reject)
      response.on('end', () => {
        const status = response.statusCode ?? 502
        const answered = new Headers()
        for (const [name, value] of Object.entries(response.headers)) if (typeof value === 'string') answered.set(name, value)
        resolve(new Response(status === 304 || status === 204 ? null : Buffer.concat(chunks), { status, headers: answered }))
      })
    })
    request.on('error', (error: NodeJS.ErrnoException) => {
      if (signal.aborted) reject(error)
      else reject(new Error(`cannot reach the backend at ${target.origin}: ${error.code ?? error.message}`))
    })
    request.end()
  })
}

/** The `data` of a successful answer; a BackendError for anything else. */
async function unwrap(response: Response): Promise<unknown> {
  const text = await response.text()
  let body: { success?: boolean; data?: unknown; error?: string; code?: string; details?: unknown } | undefined
  try {
    body = text === '' ? undefined : (JSON.parse(text) as typeof body)
  } catch {
    body = undefined
  }
  if (response.ok && body?.success === true) return body.data
  const reason = body?.error ?? (text.slice(0, 200) || response.statusText)
  throw new BackendError(response.status, body?.code, `${response.status} ${body?.code ?? ''} ${reason}`.replace(/\s+/g, ' ').trim(), body?.details)
}
