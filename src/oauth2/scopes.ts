import { SCOPES, type Scope } from '../auth/policies.js'

/** The scopes, in the words the consent page shows. */
export const SCOPE_DESCRIPTIONS: Record<Scope, string> = {
  'mcp:read': 'Read MCP catalogue entries, installations and configurations',
  'account:read': 'Read your account details',
  'user:read': 'Read your profile (name, username and email address)',
  'teams:read': 'Read the teams you belong to',
  'offline_access': 'Stay signed in: keep access after this hour without asking you again',
}

const KNOWN = new Set<string>(SCOPES)

/** RFC 6749 §3.3 scope-token: 1*( %x21 / %x23-5B / %x5D-7E ), printable ASCII but space, `"` and `\`. */
const SCOPE_TOKEN = /^[\x21\x23-\x5B\x5D-\x7E]+$/

const namesOf = (value: string): string[] => value.split(' ').filter((name) => name.length > 0)

/** A stored scope string (a request's, a grant's) as a set in canonical order, or null when it names an unknown scope. */
export function parseScope(value: string): Scope[] | null {
  const names = namesOf(value)
  if (names.some((name) => !KNOWN.has(name))) return null
  return SCOPES.filter((scope) => names.includes(scope))
}

/**
 * The scopes this service knows among those a client asked for, in canonical order; unknown names
 * are dropped rather than refused. RFC 6749 §3.3 lets a server ignore part of a request, and the
 * granted scope in its answer tells the client what it got; MCP clients copy a protected
 * resource's own `scopes_supported` into their requests, which would otherwise always fail. Null
 * when a name breaks the scope-token syntax: such a string is malformed, not merely unknown, and is
 * still refused. Repeated spaces between names are tolerated.
 */
export function knownRequestedScopes(value: string): Scope[] | null {
  const names = namesOf(value)
  if (names.some((name) => !SCOPE_TOKEN.test(name))) return null
  return SCOPES.filter((scope) => names.includes(scope))
}

/**
 * The scopes a request gets: the known part of `requested`, or `fallback` — what omitting the
 * scope gives — when it names none of them (RFC 6749 §3.3 lets a server use a default then).
 * Null when `requested` is malformed.
 */
export function scopesOrDefault(requested: string | undefined, fallback: readonly Scope[]): Scope[] | null {
  if (requested === undefined) return [...fallback]
  const known = knownRequestedScopes(requested)
  if (known === null) return null
  return known.length > 0 ? known : [...fallback]
}

/** Why a scope string is malformed, for an error description. */
export const MALFORMED_SCOPE = 'scope must be space-separated names of printable ASCII characters without double quotes or backslashes (RFC 6749 section 3.3)'

export const formatScope = (scopes: readonly string[]): string => scopes.join(' ')

export const isSubset = (inner: readonly string[], outer: readonly string[]): boolean => inner.every((scope) => outer.includes(scope))

/** What the consent page knows of a request when it describes its scopes. */
export interface ScopeContext {
  /** The name of the team the grant will be bound to (the preselected one). */
  team?: string
  /**
   * Whom the token is for: this service's API, a satellite's MCP endpoints (by name), or another
   * resource (by its identifier).
   */
  audience?: { kind: 'backend' } | { kind: 'satellite'; name: string } | { kind: 'other'; uri: string }
}

/**
 * `mcp:read` in the words of what the token will do: a token for a satellite's MCP endpoints
 * works there and nowhere else (its audience), and only for the team it is bound to.
 */
function mcpReadDescription({ team, audience }: ScopeContext): string {
  const whose = team === undefined ? 'your team' : `team ${team}`
  if (audience?.kind === 'satellite') return `Use the MCP servers of ${whose} on satellite ${audience.name}`
  if (audience?.kind === 'other') return `Use the MCP servers of ${whose} at ${audience.uri}`
  if (team !== undefined) return `Read MCP catalogue entries, and the installations of team ${team} and their configurations`
  return SCOPE_DESCRIPTIONS['mcp:read']
}

export function describeScopes(scopes: readonly Scope[], context: ScopeContext = {}): Array<{ name: Scope; description: string }> {
  return scopes.map((name) => ({ name, description: name === 'mcp:read' ? mcpReadDescription(context) : SCOPE_DESCRIPTIONS[name] }))
}
