import { LRUCache } from 'lru-cache'
import type { RateLimit } from '../auth/limits.js'
import { oauthError } from '../http/errors.js'
import type { Clock } from '../lib/clock.js'

/** How many uncached metadata-document fetches one IP, and the whole instance, may cause per window. */
export interface FetchBudgetLimits {
  perIp: RateLimit
  global: RateLimit
}

interface Window {
  start: number
  count: number
}

/** IPs whose windows are tracked at once; the least recently seen are forgotten first. */
const MAX_TRACKED_IPS = 10_000

/**
 * Bounds the outbound requests that anonymous callers can cause by naming Client ID Metadata
 * Documents: each distinct uncached URL is one fetch, so a caller cycling through URLs would
 * otherwise make this service fetch on its behalf as fast as it can ask. Fixed windows, counted
 * in this instance (the fetches are this instance's). Null limits (RATE_LIMIT_ENABLED=false):
 * no bound.
 */
export class FetchBudget {
  private readonly windows = new LRUCache<string, Window>({ max: MAX_TRACKED_IPS })
  private global: Window = { start: 0, count: 0 }

  constructor(private readonly limits: FetchBudgetLimits | null, private readonly clock: Clock) {}

  /** Takes one fetch for `ip` (none known: the global bound only); throws a 429 when a bound is spent. */
  take(ip: string | undefined): void {
    if (this.limits === null) return
    const now = this.clock.now()
    const own = ip === undefined ? undefined : this.current(this.windows.get(ip), this.limits.perIp, now)
    this.global = this.current(this.global, this.limits.global, now)
    if (own !== undefined && own.count >= this.limits.perIp.max) throw spent(own, this.limits.perIp, now)
    if (this.global.count >= this.limits.global.max) throw spent(this.global, this.limits.global, now)
    this.global.count += 1
    if (own !== undefined) {
      own.count += 1
      this.windows.set(ip!, own)
    }
  }

  private current(window: Window | undefined, limit: RateLimit, now: number): Window {
    return window === undefined || now - window.start >= limit.windowMs ? { start: now, count: 0 } : window
  }
}

/** RFC 6749 §4.1.2.1 `temporarily_unavailable`, as a 429 with Retry-After (the client is not known yet: no redirect). */
function spent(window: Window, limit: RateLimit, now: number) {
  const seconds = Math.max(1, Math.ceil((window.start + limit.windowMs - now) / 1000))
  return oauthError(429, 'temporarily_unavailable', `Too many client metadata documents to fetch right now; retry in ${seconds} seconds.`, 'RATE_LIMITED')
    .withHeaders({ 'retry-after': String(seconds) })
}
