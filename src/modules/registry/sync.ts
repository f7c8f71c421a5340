import { AppError, errors } from '../../http/errors.js'
import type { Clock } from '../../lib/clock.js'
import { OutboundError, type OutboundFetch } from '../../lib/outbound-fetch.js'
import { randomToken } from '../../lib/tokens.js'
import type { AuditLog } from '../audit/service.js'
import type { SettingsService } from '../settings/service.js'
import type { ImportActor, ImportCounts, RegistryImporter } from './importer.js'
import { OFFICIAL_META, type IncomingDocument } from './server-json.js'
import { isObject } from './server-json-shapes.js'
import type { SyncStateRepository } from './sync-state.js'

/**
 * The sync from an upstream MCP registry: its generic read API (`GET <base>/v0.1/servers`, paged
 * with `cursor` and `metadata.nextCursor`, narrowed with `updated_since`) is read to the end and
 * every item goes through the importer, under the same rules as an import by hand.
 */

export const UPSTREAM_URL_SETTING = 'catalogue.upstream_registry_url'
export const SYNC_INTERVAL_SETTING = 'catalogue.registry_sync_interval_minutes'

/** Items asked for per page: the most the generic registry API serves at once. */
export const SYNC_PAGE_SIZE = 100
/** A run reads at most this many pages (20 000 items), so a cursor that never ends cannot keep it going. */
export const SYNC_MAX_PAGES = 200
/** Per request to the upstream: the whole answer within 10 s, at most 8 MiB. */
export const SYNC_TIMEOUT_MS = 10_000
export const SYNC_MAX_BYTES = 8 * 1024 * 1024
/** How long a run's lease lasts without renewal; renewed after every page, so only a dead holder's runs out. */
export const SYNC_LEASE_MS = 30 * 60_000

/** The newest versions of the generic API first; `/v0` is the one registries served before `/v0.1`. */
const API_PATHS = ['v0.1', 'v0'] as const

export interface SyncOutcome {
  counts: ImportCounts
  pages: number
  /** The newest upstream `updatedAt` seen so far, as the upstream wrote it; the next run asks for changes since then. */
  next_since: string | null
}

interface Deps {
  settings: SettingsService
  state: SyncStateRepository
  importer: RegistryImporter
  /** Built with the sync's limits (SYNC_TIMEOUT_MS, SYNC_MAX_BYTES) and OUTBOUND_ALLOWED_HOSTS. */
  fetcher: OutboundFetch
  audit: AuditLog
  clock: Clock
}

/**
 * The URL's own problem — not absolute, a scheme other than http(s), credentials, a query or a
 * fragment — or the parsed URL. Whether http is admitted for its host, and where it resolves to,
 * are the fetcher's to say.
 */
export function upstreamUrlForm(value: string): { url: URL } | { problem: string } {
  let url: URL
  try {
    url = new URL(value)
  } catch {
    return { problem: 'must be an absolute URL, like https://registry.modelcontextprotocol.io' }
  }
  if (url.protocol !== 'https:' && url.protocol !== 'http:') return { problem: `must be an https URL (it uses ${url.protocol.slice(0, -1)})` }
  if (url.username !== '' || url.password !== '') return { problem: 'must not carry a user name or password' }
  // The parser drops an empty query or fragment (`https://host/?`); the text still shows it.
  if (/[?#]/.test(value)) return { problem: 'must not have a query or a fragment: the sync adds its own query to <URL>/v0.1/servers' }
  return { url }
}

/** Why the fetcher refuses a URL, worded as what is wrong with the setting's value. */
function refusalText(error: OutboundError): string {
  if (error.reason === 'refused_address') return `is refused: ${error.message} (list its host in OUTBOUND_ALLOWED_HOSTS to allow it)`
  if (error.reason === 'not_https') return `is refused: ${error.message}`
  return `cannot be reached: ${error.message}`
}

export class RegistrySync {
  private readonly deps: Deps

  constructor(deps: Deps) {
    this.deps = deps
  }

  /**
   * The setting's check on save: empty (sync off) is fine; anything else must be a URL the sync
   * would fetch — https, or http for a host in OUTBOUND_ALLOWED_HOSTS, without credentials, query
   * or fragment — whose host resolves, and only to public addresses unless it is allowed.
   */
  readonly checkUrl = async (value: unknown): Promise<string | null> => {
    const text = String(value).trim()
    if (text === '') return null
    const form = upstreamUrlForm(text)
    if ('problem' in form) return form.problem
    try {
      await this.deps.fetcher.check(form.url, { allowHttp: true })
      return null
    } catch (error) {
      if (error instanceof OutboundError) return refusalText(error)
      throw error
    }
  }

  /**
   * One run. Errors: 409 SYNC_NOT_CONFIGURED (no URL), 400 UPSTREAM_URL_REFUSED (the URL breaks
   * the outbound rules), 409 SYNC_IN_PROGRESS (another run holds the lease), 502
   * UPSTREAM_REGISTRY_FAILED (the upstream did not answer a server list). What a failed run
   * imported stays; the position (`next_since`) moves only when a run reaches the end.
   */
  async run(actor: ImportActor | null): Promise<SyncOutcome> {
    const { settings, state, clock } = this.deps
    const configured = (await settings.get(UPSTREAM_URL_SETTING)).trim()
    if (configured === '') {
      throw errors.conflict('SYNC_NOT_CONFIGURED', `No upstream registry is configured: set ${UPSTREAM_URL_SETTING} to its base URL first.`)
    }
    const form = upstreamUrlForm(configured)
    if ('problem' in form) throw refused(`it ${form.problem}`)
    const base = form.url

    const token = randomToken()
    const leaseEnd = () => new Date(clock.now() + SYNC_LEASE_MS)
    if (!(await state.take(token, new Date(clock.now()), leaseEnd()))) {
      throw errors.conflict('SYNC_IN_PROGRESS', 'A sync from the upstream registry is already running (on this or another instance); try again once it has finished.')
    }
    try {
      const since = await this.resumeFrom(base)
      const counts: ImportCounts = { created: 0, updated: 0, unchanged: 0, invalid: 0 }
      let newest: { text: string; time: number } | null = null
      let apiPath: (typeof API_PATHS)[number] = API_PATHS[0]
      let cursor: string | null = null
      const cursorsSeen = new Set<string>()
      let pages = 0
      for (;;) {
        if (pages === SYNC_MAX_PAGES) {
          throw upstreamFailed(pageUrl(base, apiPath, since, cursor), `it still had more after ${SYNC_MAX_PAGES} pages of ${SYNC_PAGE_SIZE}; the servers read so far are imported`)
        }
        let url = pageUrl(base, apiPath, since, cursor)
        let response = await this.fetch(url)
        // An upstream without /v0.1 (it answers 404 there) is read through /v0 for the whole run.
        if (pages === 0 && apiPath === API_PATHS[0] && response.status === 404) {
          apiPath = API_PATHS[1]
          url = pageUrl(base, apiPath, since, cursor)
          response = await this.fetch(url)
        }
        if (response.status !== 200) throw upstreamFailed(url, `it answered HTTP ${response.status}`)
        const page = serverList(url, response.body)
        pages += 1

        const documents: IncomingDocument[] = page.items.map((item) => (isObject(item) ? { document: item.server, meta: item._meta } : { document: item }))
        if (documents.length > 0) {
          const { counts: imported } = await this.deps.importer.importAll(documents, actor ?? { userId: null, ip: null }, { audit: false })
          for (const key of Object.keys(counts) as Array<keyof ImportCounts>) counts[key] += imported[key]
        }
        for (const item of page.items) {
          const updatedAt = updatedAtOf(item)
          if (updatedAt !== null && (newest === null || updatedAt.time > newest.time)) newest = updatedAt
        }

        if (!(await state.renew(token, leaseEnd()))) throw leaseLost()
        if (page.nextCursor === null) break
        if (cursorsSeen.has(page.nextCursor)) throw upstreamFailed(url, 'it answered a nextCursor it had already given, so its list would never end')
        cursorsSeen.add(page.nextCursor)
        cursor = page.nextCursor
      }

      // Never backwards: an upstream that ignores updated_since still answers nothing newer than it has.
      const nextSince = newest !== null && (since === null || !(Date.parse(since) >= newest.time)) ? newest.text : since
      if (!(await state.finish(token, nextSince, base.href, new Date(clock.now())))) throw leaseLost()
      await this.deps.audit.record('catalogue.registry_synced', {
        actorId: actor?.userId ?? null,
        ip: actor?.ip ?? null,
        target: base.href,
        details: { upstream_url: base.href, counts, pages, next_since: nextSince, scheduled: actor === null },
      })
      return { counts, pages, next_since: nextSince }
    } finally {
      await state.release(token)
    }
  }

  /**
   * Where this run starts: the stored position, when it was reached on this same upstream, so a
   * position another upstream answered is not applied to a new one (which would skip its servers
   * changed before then).
   */
  private async resumeFrom(base: URL): Promise<string | null> {
    const { nextSince, upstreamUrl } = await this.deps.state.read()
    return nextSince !== null && upstreamUrl === base.href ? nextSince : null
  }

  private async fetch(url: URL) {
    try {
      return await this.deps.fetcher.get(url, { accept: 'application/json', 'accept-encoding': 'identity' }, { allowHttp: true })
    } catch (error) {
      if (!(error instanceof OutboundError)) throw error
      if (error.reason === 'not_https' || error.reason === 'refused_address') throw refused(error.reason === 'refused_address' ? `${error.message} (list its host in OUTBOUND_ALLOWED_HOSTS to allow it)` : error.message)
      throw upstreamFailed(url, error.message)
    }
  }
}

/** `<base>/<version>/servers?limit=100[&updated_since=…][&cursor=…]`, the base's own path kept. */
function pageUrl(base: URL, apiPath: string, since: string | null, cursor: string | null): URL {
  const url = new URL(base.href)
  url.pathname = `${url.pathname.replace(/\/+$/, '')}/${apiPath}/servers`
  url.searchParams.set('limit', String(SYNC_PAGE_SIZE))
  if (since !== null) url.searchParams.set('updated_since', since)
  if (cursor !== null) url.searchParams.set('cursor', cursor)
  return url
}

/** A page of the generic API's ServerList: `{servers: [...], metadata: {nextCursor?, count}}`. */
function serverList(url: URL, body: Buffer): { items: unknown[]; nextCursor: string | null } {
  let parsed: unknown
  try {
    parsed = JSON.parse(body.toString('utf8'))
  } catch {
    throw upstreamFailed(url, 'its answer is not JSON')
  }
  if (!isObject(parsed) || !Array.isArray(parsed.servers)) throw upstreamFailed(url, 'its answer is not a server list (no "servers" array)')
  const metadata = parsed.metadata
  if (metadata !== undefined && metadata !== null && !isObject(metadata)) throw upstreamFailed(url, 'its answer\'s "metadata" is not an object')
  const next = isObject(metadata) ? metadata.nextCursor : undefined
  if (next !== undefined && next !== null && typeof next !== 'string') throw upstreamFailed(url, 'its answer\'s "metadata.nextCursor" is not a string')
  return { items: parsed.servers, nextCursor: typeof next === 'string' && next !== '' ? next : null }
}

/** The item's official `_meta.updatedAt`, when it is a date. */
function updatedAtOf(item: unknown): { text: string; time: number } | null {
  if (!isObject(item) || !isObject(item._meta)) return null
  const official = item._meta[OFFICIAL_META]
  if (!isObject(official) || typeof official.updatedAt !== 'string') return null
  const time = Date.parse(official.updatedAt)
  return Number.isFinite(time) ? { text: official.updatedAt, time } : null
}


function refused(reason: string): AppError {
  return new AppError(400, 'UPSTREAM_URL_REFUSED', `The upstream registry URL (${UPSTREAM_URL_SETTING}) is refused: ${reason}.`)
}

function upstreamFailed(url: URL, reason: string): AppError {
  return new AppError(502, 'UPSTREAM_REGISTRY_FAILED', `The upstream registry failed: GET ${url.href}: ${reason}.`)
}

function leaseLost(): AppError {
  return errors.conflict('SYNC_IN_PROGRESS', 'This sync outlived its lease and another run took over; what it imported stays.')
}
