import { Ajv, type ErrorObject } from 'ajv'
import addFormats from 'ajv-formats'
import { LRUCache } from 'lru-cache'
import { Type } from 'typebox'
import type { IncomingHttpHeaders } from 'node:http'
import { AppError } from '../http/errors.js'
import type { Clock } from '../lib/clock.js'
import { lazy } from '../lib/lazy.js'
import { OutboundError, type OutboundResponse } from '../lib/outbound-fetch.js'
import { settleClient, type ClientDescription } from './client-rules.js'
import type { OAuthClient } from './clients.js'
import type { FetchBudget } from './fetch-budget.js'
import { RegisterBody } from './schemas.js'

/**
 * Client ID Metadata Documents (draft-ietf-oauth-client-id-metadata-document): a client whose
 * `client_id` is an https URL publishes its metadata at that URL, and this service fetches it
 * instead of looking the client up among registered ones.
 */

/** Without cache headers, a document is kept this long (short: the client may change it any time). */
export const DEFAULT_DOCUMENT_TTL_MS = 5 * 60_000
/** Never longer than this, whatever the headers say (draft §5.2 lets the server bound it). */
export const MAX_DOCUMENT_TTL_MS = 24 * 3600_000
/** Documents kept at most; the least recently used go first. */
const MAX_CACHED_DOCUMENTS = 1000

/**
 * Whether `clientId` names a metadata document: an https URL with a path other than `/` (draft §3
 * requires a path; a bare origin is an ordinary, unknown, client id here).
 */
export function isClientIdUrl(clientId: string): boolean {
  if (!clientId.startsWith('https://')) return false
  try {
    const url = new URL(clientId)
    return url.protocol === 'https:' && url.pathname !== '/'
  } catch {
    return false
  }
}

/** The document could not be used; the message says why, in words fit for `error_description`. */
export class ClientDocumentRefused extends Error {
  constructor(reason: string) {
    super(describable(reason))
    this.name = 'ClientDocumentRefused'
  }
}

/** What the fetcher needs to be (src/lib/outbound-fetch.ts; tests may count its calls). */
export interface DocumentFetcher {
  get(url: URL, headers: Record<string, string>): Promise<OutboundResponse>
}

/** The metadata a document may hold: a registration body (same limits and formats) with its `client_id`. */
const DocumentSchema = Type.Object({ client_id: Type.String({ minLength: 1 }), ...RegisterBody.properties }, { additionalProperties: true })
const validateDocument = lazy(() => addFormats.default(new Ajv({ allErrors: false, strict: false })).compile(DocumentSchema))

interface Cached {
  client: OAuthClient
  expiresAt: number
}

/**
 * Fetches, checks and caches metadata documents. Built once at boot: the cache (per the
 * document's HTTP cache headers, by the injected clock) lives as long as the service; concurrent
 * requests for one URL share one fetch. Failures and invalid documents are never cached (draft §5.2).
 */
export class ClientIdDocuments {
  private readonly cache = new LRUCache<string, Cached>({ max: MAX_CACHED_DOCUMENTS })
  private readonly pending = new Map<string, Promise<OAuthClient>>()

  constructor(private readonly fetcher: DocumentFetcher, private readonly clock: Clock, private readonly budget: FetchBudget) {}

  /**
   * The client `url` describes; throws ClientDocumentRefused when it cannot be used, and a 429
   * when `ip` (or the whole instance) has spent its fetch budget. Cached documents and fetches
   * already under way cost nothing.
   */
  async client(url: string, ip?: string): Promise<OAuthClient> {
    const cached = this.cache.get(url)
    if (cached !== undefined && cached.expiresAt > this.clock.now()) return cached.client
    const inFlight = this.pending.get(url)
    if (inFlight !== undefined) return inFlight
    this.budget.take(ip)
    const fetching = this.load(url).finally(() => this.pending.delete(url))
    this.pending.set(url, fetching)
    return fetching
  }

  private async load(clientId: string): Promise<OAuthClient> {
    const url = checkedUrl(clientId)
    let response: OutboundResponse
    try {
      response = await this.fetcher.get(url, { accept: 'application/json', 'accept-encoding': 'identity' })
    } catch (error) {
      if (error instanceof OutboundError) throw new ClientDocumentRefused(error.message)
      throw error
    }
    const client = clientOf(clientId, url, response)
    const lifetime = cacheLifetime(response.headers, this.clock.now())
    if (lifetime > 0) this.cache.set(clientId, { client, expiresAt: this.clock.now() + lifetime })
    else this.cache.delete(clientId)
    return client
  }
}

/** Draft §3: no credentials, no fragment, no `.` or `..` segment (the URL parser would remove them silently). */
function checkedUrl(clientId: string): URL {
  const url = new URL(clientId)
  if (url.username !== '' || url.password !== '') throw new ClientDocumentRefused('a client_id URL must not hold a user name or password')
  if (clientId.includes('#')) throw new ClientDocumentRefused('a client_id URL must not have a fragment')
  const rawPath = clientId.slice('https://'.length).replace(/^[^/?]*/, '').split('?')[0]!
  const dotSegment = rawPath.split('/').some((segment) => /^(?:\.|%2e){1,2}$/i.test(segment))
  if (dotSegment) throw new ClientDocumentRefused('a client_id URL must not have . or .. path segments')
  return url
}

/** The client a fetched document describes, or the reason it is refused. */
function clientOf(clientId: string, url: URL, response: OutboundResponse): OAuthClient {
  const { status, headers, body } = response
  if (status >= 300 && status < 400) throw new ClientDocumentRefused(`it answered a redirect (HTTP ${status}), and redirects are not followed`)
  if (status !== 200) throw new ClientDocumentRefused(`it answered HTTP ${status} instead of 200`)
  // Draft §4: application/json, or a more specific application/…+json type.
  const mediaType = (headers['content-type'] ?? '').split(';')[0]!.trim().toLowerCase()
  if (mediaType !== 'application/json' && !/^application\/[\w.-]+\+json$/.test(mediaType)) {
    throw new ClientDocumentRefused(`it is not served as JSON (Content-Type: ${mediaType === '' ? 'none' : mediaType.slice(0, 80)})`)
  }
  let document: unknown
  try {
    document = JSON.parse(body.toString('utf8'))
  } catch {
    throw new ClientDocumentRefused('it is not valid JSON')
  }
  if (document === null || typeof document !== 'object' || Array.isArray(document)) throw new ClientDocumentRefused('it is not a JSON object')
  const fields = document as Record<string, unknown>
  // Draft §4: simple string comparison with the URL it was fetched from.
  if (fields.client_id !== clientId) throw new ClientDocumentRefused('its client_id member is not exactly the URL it was fetched from')
  // Draft §4.1: a public document cannot carry a shared secret.
  if ('client_secret' in fields || 'client_secret_expires_at' in fields) {
    throw new ClientDocumentRefused('it holds client_secret, which a public document must not')
  }
  if (fields.token_endpoint_auth_method !== undefined && fields.token_endpoint_auth_method !== 'none') {
    throw new ClientDocumentRefused('its token_endpoint_auth_method must be none: every client of this service is public and uses PKCE')
  }
  const validate = validateDocument()
  if (!validate(fields)) throw new ClientDocumentRefused(describeProblem(validate.errors?.[0]))
  const description = fields as unknown as ClientDescription
  let settled
  try {
    settled = settleClient(description)
  } catch (error) {
    if (error instanceof AppError) throw new ClientDocumentRefused(error.message.replace(/\.$/, ''))
    throw error
  }
  return {
    id: clientId,
    // Draft §8.5: the host is what the user can check; it names the client when the document does not.
    name: description.client_name ?? url.host,
    redirectUris: settled.redirectUris,
    grantTypes: settled.grantTypes,
    scopes: settled.scopes,
    ...(description.client_uri === undefined ? {} : { uri: description.client_uri }),
    documentHost: url.host,
  }
}

function describeProblem(problem: ErrorObject | undefined): string {
  if (problem === undefined) return 'its metadata is invalid'
  const field = problem.instancePath.replace(/^\//, '').replace(/\//g, '.')
  return `its metadata is invalid: ${field === '' ? 'the document' : field} ${problem.message ?? 'is invalid'}`
}

/**
 * How long a document may be reused, from its HTTP cache headers (RFC 9111 §5.2.2, §5.3):
 * `no-store` or `no-cache` → not at all; `max-age`; else `Expires` against `Date` (or `now`
 * without one); else the short default. At most MAX_DOCUMENT_TTL_MS.
 */
export function cacheLifetime(headers: IncomingHttpHeaders, now: number): number {
  const directives = new Map<string, string | undefined>()
  for (const part of (headers['cache-control'] ?? '').split(',')) {
    const [name = '', value] = part.trim().split('=', 2)
    if (name !== '') directives.set(name.toLowerCase(), value?.replace(/^"(.*)"$/, '$1'))
  }
  if (directives.has('no-store') || directives.has('no-cache')) return 0
  let seconds: number
  if (directives.has('max-age')) {
    const value = directives.get('max-age') ?? ''
    // An invalid max-age makes the answer stale at once (RFC 9111 §4.2.1).
    seconds = /^\d+$/.test(value) ? Number(value) : 0
  } else if (headers.expires !== undefined) {
    const expires = Date.parse(headers.expires)
    const date = headers.date === undefined ? Number.NaN : Date.parse(headers.date)
    // An invalid Expires (such as 0) means already expired (RFC 9111 §5.3).
    if (Number.isNaN(expires)) return 0
    seconds = (expires - (Number.isNaN(date) ? now : date)) / 1000
  } else {
    return DEFAULT_DOCUMENT_TTL_MS
  }
  return Math.max(0, Math.min(seconds * 1000, MAX_DOCUMENT_TTL_MS))
}

/** RFC 6749 §5.2: `error_description` is printable ASCII without `"` or `\`; keep it short too. */
function describable(reason: string): string {
  const ascii = reason.replace(/[^\x20-\x7e]/g, '?').replace(/"/g, "'").replace(/\\/g, '/')
  return ascii.length > 300 ? `${ascii.slice(0, 297)}...` : ascii
}
