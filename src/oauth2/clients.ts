import { SCOPES, type Scope } from '../auth/policies.js'
import type { OAuthClientRow } from '../db/repositories/oauth.js'
import { parseScope } from './scopes.js'

export type GrantType = 'authorization_code' | 'refresh_token'
export const GRANT_TYPES: readonly GrantType[] = ['authorization_code', 'refresh_token']

/** Every client is public (no secret) and must use PKCE S256. */
export interface OAuthClient {
  id: string
  name: string
  redirectUris: readonly string[]
  grantTypes: readonly GrantType[]
  /** The scopes it may ask for; also its default when a request names none. */
  scopes: readonly Scope[]
  /** Registered `client_uri` (RFC 7591 §2): its host is shown on the consent page. */
  uri?: string
  /**
   * Set for a client that is not registered here: its `id` is the URL of its Client ID Metadata
   * Document, served from this host (see client-id-documents.ts).
   */
  documentHost?: string
}

export const CLI_CLIENT_ID = 'service-gateway-cli'

/** The command-line client, defined in code. */
export const CLI_CLIENT: OAuthClient = Object.freeze({
  id: CLI_CLIENT_ID,
  name: 'Service Gateway CLI',
  redirectUris: Object.freeze(['http://localhost:8976/oauth/callback', 'http://127.0.0.1:8976/oauth/callback']),
  grantTypes: GRANT_TYPES,
  scopes: SCOPES,
})

export function clientFromRow(row: OAuthClientRow): OAuthClient {
  return {
    id: row.id,
    name: row.name,
    redirectUris: row.redirectUris.split(' '),
    grantTypes: row.grantTypes.split(' ') as GrantType[],
    scopes: parseScope(row.scope) ?? [],
    ...(row.metadata?.client_uri === undefined ? {} : { uri: row.metadata.client_uri }),
  }
}

/** The host of a client's `client_uri`, for the consent page. */
export function clientHost(client: OAuthClient): string | undefined {
  if (client.uri === undefined) return undefined
  try {
    return new URL(client.uri).host
  } catch {
    return undefined
  }
}

const LOOPBACK_HOSTS = new Set(['localhost', '127.0.0.1', '[::1]'])

/**
 * RFC 7591 registration: https anywhere, or plain http on a loopback host (RFC 8252
 * native apps); never a fragment (RFC 6749 §3.1.2), never credentials in the URL.
 */
export function acceptableRedirectUri(value: string): boolean {
  let url: URL
  try {
    url = new URL(value)
  } catch {
    return false
  }
  if (url.hash !== '' || value.includes('#') || url.username !== '' || url.password !== '') return false
  if (url.protocol === 'https:') return true
  return url.protocol === 'http:' && LOOPBACK_HOSTS.has(url.hostname)
}

/** RFC 8252 §7.3: a loopback IP literal redirect URI matches on any port (native apps pick a free one). */
const LOOPBACK_IPS = new Set(['127.0.0.1', '[::1]'])

/**
 * The registered redirect URI that `presented` stands for, or undefined: an exact match, or for a
 * `http://127.0.0.1` or `http://[::1]` URI the same URI on another port (not for `localhost`,
 * which may resolve elsewhere; RFC 8252 §8.3).
 */
export function registeredRedirectUri(registered: readonly string[], presented: string): string | undefined {
  if (registered.includes(presented)) return presented
  // Never a fragment or credentials (RFC 6749 §3.1.2), whatever the port.
  if (!acceptableRedirectUri(presented)) return undefined
  let url: URL
  try {
    url = new URL(presented)
  } catch {
    return undefined
  }
  if (url.protocol !== 'http:' || !LOOPBACK_IPS.has(url.hostname)) return undefined
  const portless = (value: URL) => `${value.protocol}//${value.hostname}${value.pathname}${value.search}`
  const match = registered.some((candidate) => {
    try {
      return portless(new URL(candidate)) === portless(url)
    } catch {
      return false
    }
  })
  // The client gets its answer at the port it is listening on.
  return match ? presented : undefined
}
