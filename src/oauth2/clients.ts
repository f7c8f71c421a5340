import { SCOPES, type Scope } from '../auth/policies.js'
import type { OAuthClientRow, OAuthRepository } from '../db/repositories/oauth.js'
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
  }
}

export async function findClient(repository: OAuthRepository, id: string): Promise<OAuthClient | null> {
  if (id === CLI_CLIENT_ID) return CLI_CLIENT
  const row = await repository.findClient(id)
  return row === undefined ? null : clientFromRow(row)
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
