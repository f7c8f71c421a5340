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

/** A space-separated scope string as a set in canonical order, or null when it names an unknown scope. */
export function parseScope(value: string): Scope[] | null {
  const names = value.split(' ').filter((name) => name.length > 0)
  if (names.some((name) => !KNOWN.has(name))) return null
  return SCOPES.filter((scope) => names.includes(scope))
}

export const formatScope = (scopes: readonly string[]): string => scopes.join(' ')

export const isSubset = (inner: readonly string[], outer: readonly string[]): boolean => inner.every((scope) => outer.includes(scope))

export function describeScopes(scopes: readonly Scope[]): Array<{ name: Scope; description: string }> {
  return scopes.map((name) => ({ name, description: SCOPE_DESCRIPTIONS[name] }))
}
