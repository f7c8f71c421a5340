import { invalidTarget } from './errors.js'

/**
 * RFC 8707 resource indicators. A client names the resource (an MCP server run by a satellite,
 * or this service's API) it wants a token for; the grant and its tokens are bound to it, and the
 * token's audience is that resource. A token without one is for this service's own API.
 */

/** What `resource` names: this service's API (`backend`), another resource, or nothing usable. */
export type Audience = { kind: 'backend' } | { kind: 'other'; uri: string }

/** This service's own resource identifiers: `PUBLIC_URL` and `PUBLIC_URL/api`. */
export function backendResources(issuer: string): ReadonlySet<string> {
  return new Set([issuer, `${issuer}/api`].map(normalized))
}

/** RFC 8707 §2: an absolute URI without a fragment; null when it is not one. */
export function parseResource(value: string): string | null {
  let url: URL
  try {
    url = new URL(value)
  } catch {
    return null
  }
  if (value.includes('#') || url.hash !== '') return null
  return value
}

/** The audience a stored resource (null: none asked) stands for. */
export function audienceOf(resource: string | null, backend: ReadonlySet<string>): Audience {
  if (resource === null || backend.has(normalized(resource))) return { kind: 'backend' }
  return { kind: 'other', uri: resource }
}

/** Whether a resource asked at the token endpoint is the one the grant is bound to (RFC 8707 §2.2). */
export function sameAudience(asked: string, granted: string | null, backend: ReadonlySet<string>): boolean {
  const a = audienceOf(asked, backend)
  const b = audienceOf(granted, backend)
  return a.kind === 'backend' ? b.kind === 'backend' : b.kind === 'other' && normalized(a.uri) === normalized(b.uri)
}

/** A trailing slash does not make another resource. */
function normalized(uri: string): string {
  return uri.replace(/\/+$/, '')
}

/** The token endpoint's `resource`, when sent, must name the grant's resource (RFC 8707 §2.2). */
export function checkResource(asked: string | undefined, grant: { resource: string | null }, backend: ReadonlySet<string>): void {
  if (asked === undefined) return
  if (parseResource(asked) === null) throw invalidTarget('resource must be an absolute URI without a fragment (RFC 8707).')
  if (!sameAudience(asked, grant.resource, backend)) throw invalidTarget('resource is not the one this authorization was granted for.')
}
