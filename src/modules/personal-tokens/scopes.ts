import type { Scope } from '../../auth/policies.js'

/**
 * The scopes a personal access token may carry: those of the routes it can call. Not
 * `offline_access`, which only asks an authorization server for a refresh token.
 */
export const PERSONAL_TOKEN_SCOPES = ['mcp:read', 'account:read', 'user:read', 'teams:read'] as const satisfies readonly Scope[]

export type PersonalTokenScope = (typeof PERSONAL_TOKEN_SCOPES)[number]

/** What each scope lets a token do, in the words of the tokens page. */
export const SCOPE_DESCRIPTIONS: Record<PersonalTokenScope, string> = {
  'mcp:read': 'Read MCP catalogue entries, installations and their configuration',
  'account:read': 'Read your role, permissions and account facts',
  'user:read': 'Read your profile (username, email, names)',
  'teams:read': 'Read your teams and your role in each',
}
