import { isIP } from 'node:net'
import { resolve } from 'node:path'

/** Parsers of single configuration values: each returns the value, or null (or a problem) when it is not one. */

/** The sender of every mail: `SMTP_FROM` as `Name <address>` or a bare address. */
export interface MailSender {
  name: string | null
  address: string
}

/**
 * Which peers' `X-Forwarded-*` headers to believe: none (false), the nearest N hops, the proxies at
 * these addresses/CIDRs, or (true) every hop — which lets a client name its own address.
 */
export type TrustProxy = boolean | number | readonly string[]

export type DatabaseTarget =
  | { dialect: 'sqlite'; path: string; url: string }
  | { dialect: 'postgresql'; url: string }

/** `DATABASE_URL`: the database, or the problem with the value. */
export function parseDatabaseUrl(url: string): DatabaseTarget | string {
  if (url.startsWith('sqlite:')) {
    const path = url.slice('sqlite:'.length)
    if (path === '') return 'DATABASE_URL sqlite: needs a path (or sqlite::memory:)'
    return { dialect: 'sqlite', path: path === ':memory:' ? ':memory:' : resolve(path), url }
  }
  if (/^postgres(ql)?:\/\/.+/.test(url)) {
    try {
      new URL(url)
      return { dialect: 'postgresql', url }
    } catch {
      return 'DATABASE_URL is not a valid postgres:// URL'
    }
  }
  return 'DATABASE_URL must be sqlite:<path>, sqlite::memory: or postgres://…'
}

/**
 * `Name <address>`, `"Name" <address>` or a bare address, each part at most 255 characters (the
 * length of the sender settings). The address check is deliberately loose (one @, no spaces,
 * quotes or angle brackets): the SMTP server has the last word on it.
 */
export function parseMailSender(value: string): MailSender | null {
  const named = /^([^<>]*?)\s*<([^<>]+)>$/.exec(value)
  const name = named === null ? '' : named[1]!.replace(/^"(.*)"$/, '$1').trim()
  const address = named === null ? value : named[2]!.trim()
  if (!/^[^\s@<>"]+@[^\s@<>"]+$/.test(address) || address.length > 255 || name.length > 255) return null
  return { name: name === '' ? null : name, address }
}

/**
 * An OUTBOUND_ALLOWED_HOSTS entry as the URL parser writes its host (lower case, IPv6 in
 * brackets), with its port when given — even 443, so `host:443` does not widen to every port.
 */
export function hostEntry(entry: string): string | null {
  const match = /^(\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9._-]+)(?::(\d{1,5}))?$/.exec(entry)
  if (match === null) return null
  const port = match[2] === undefined ? null : Number(match[2])
  if (port !== null && (port < 1 || port > 65535)) return null
  try {
    const { hostname } = new URL(`https://${match[1]}/`)
    return port === null ? hostname : `${hostname}:${port}`
  } catch {
    return null
  }
}

/** The address ranges proxy-addr (Fastify's `trustProxy`) knows by name. */
const PROXY_RANGE_NAMES = new Set(['loopback', 'linklocal', 'uniquelocal'])

/**
 * `TRUST_PROXY`: false (or 0), a hop count, a comma list of proxy addresses, CIDRs or range names,
 * or true (every hop) — or the problem with the value.
 */
export function parseTrustProxy(value: string): TrustProxy | string {
  const lower = value.toLowerCase()
  if (['false', 'no', '0'].includes(lower)) return false
  if (['true', 'yes'].includes(lower)) return true
  if (/^\d+$/.test(value)) {
    const hops = Number(value)
    if (hops >= 1 && hops <= 100) return hops
  } else {
    const entries = value.split(',').map((entry) => entry.trim()).filter(Boolean)
    if (entries.length > 0 && entries.every(isProxyEntry)) return entries
  }
  return `TRUST_PROXY must be false, a number of proxy hops from 1 to 100, or a comma list of proxy addresses, CIDRs and loopback/linklocal/uniquelocal, like 10.0.0.0/8,::1 (got "${value}")`
}

function isProxyEntry(entry: string): boolean {
  if (PROXY_RANGE_NAMES.has(entry)) return true
  const [address = '', prefix, extra] = entry.split('/')
  const family = isIP(address)
  if (family === 0 || extra !== undefined) return false
  if (prefix === undefined) return true
  return /^\d{1,3}$/.test(prefix) && Number(prefix) <= (family === 4 ? 32 : 128)
}

/** A URL whose host is this machine (`localhost`, `*.localhost`, 127.0.0.0/8, `[::1]`), where browsers treat plain http as secure. */
export function isLoopbackUrl(value: string): boolean {
  const { hostname } = new URL(value)
  return hostname === 'localhost' || hostname.endsWith('.localhost') || /^127(\.\d{1,3}){3}$/.test(hostname) || hostname === '[::1]'
}

export function isHttpUrl(value: string): boolean {
  try {
    const { protocol } = new URL(value)
    return protocol === 'http:' || protocol === 'https:'
  } catch {
    return false
  }
}
