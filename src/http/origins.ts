import type { Config } from '../config.js'

/** The spellings of this machine's loopback address (URL host syntax: IPv6 in brackets). */
const LOOPBACK_HOSTS = ['localhost', '127.0.0.1', '[::1]']

/**
 * The origins that are this service itself: `PUBLIC_URL`'s, and, when that names a loopback host,
 * the same scheme and port under each loopback spelling. The log says where the server listens
 * (`127.0.0.1`) while the default `PUBLIC_URL` says `localhost`, and a browser opened at either
 * address is on this service — not on another site.
 */
export function ownOrigins(publicUrl: string): string[] {
  const url = new URL(publicUrl)
  if (!LOOPBACK_HOSTS.includes(url.hostname)) return [url.origin]
  return [url.origin, ...LOOPBACK_HOSTS.filter((host) => host !== url.hostname).map((host) => {
    const alias = new URL(url.origin)
    alias.hostname = host
    return alias.origin
  })]
}

/** Origins whose browser requests may act with a session: this service's own and `CORS_ORIGINS`. */
export function trustedOrigins(config: Pick<Config, 'publicUrl' | 'corsOrigins'>): ReadonlySet<string> {
  return new Set([...ownOrigins(config.publicUrl), ...config.corsOrigins])
}
