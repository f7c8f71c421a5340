import type { FastifyRequest } from 'fastify'

export const SESSION_COOKIE = 'auth_session'
export const SATELLITE_KEY_PREFIX = 'service_satkey_'
export const REGISTRATION_TOKEN_PREFIX = 'service_satellite_'
/** A personal access token (modules/personal-tokens): told apart from OAuth access tokens by its prefix, so each costs one lookup. */
export const PERSONAL_TOKEN_PREFIX = 'service_pat_'

export type PresentedCredential =
  | { kind: 'none' }
  | { kind: 'session'; id: string }
  | { kind: 'bearer'; token: string }
  | { kind: 'personal_token'; token: string }
  | { kind: 'satellite_key'; secret: string }
  | { kind: 'registration_token'; scope: 'global' | 'team'; token: string }
  | { kind: 'malformed_authorization' }

/** What the request carries, by shape alone; nothing here touches the database. */
export function presentedBearer(request: FastifyRequest): PresentedCredential {
  const header = request.headers.authorization
  if (header === undefined) return { kind: 'none' }
  const match = /^Bearer +([A-Za-z0-9\-._~+/]+=*)$/i.exec(header)
  if (match === null) return { kind: 'malformed_authorization' }
  const token = match[1]!
  if (token.startsWith(PERSONAL_TOKEN_PREFIX)) return { kind: 'personal_token', token }
  if (token.startsWith(SATELLITE_KEY_PREFIX)) return { kind: 'satellite_key', secret: token.slice(SATELLITE_KEY_PREFIX.length) }
  if (token.startsWith(REGISTRATION_TOKEN_PREFIX)) {
    const rest = token.slice(REGISTRATION_TOKEN_PREFIX.length)
    const scope = rest.startsWith('global_') ? 'global' : rest.startsWith('team_') ? 'team' : null
    if (scope === null) return { kind: 'malformed_authorization' }
    return { kind: 'registration_token', scope, token: rest.slice(scope.length + 1) }
  }
  return { kind: 'bearer', token }
}

export function presentedSession(request: FastifyRequest): PresentedCredential {
  const id = request.cookies[SESSION_COOKIE]
  return id ? { kind: 'session', id } : { kind: 'none' }
}
