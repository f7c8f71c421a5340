/**
 * Client tokens, checked by introspection at the backend (RFC 7662) and remembered for a short
 * while: at most a minute and never past the token's expiry, so a revoked token stops working
 * within a minute. Concurrent requests with one token share one introspection. Tokens are kept
 * by their SHA-256 digest, not in the clear.
 */
import { createHash } from 'node:crypto'
import type { TokenClaims } from './types.js'

/** How long an answer is trusted. */
export const CACHE_MS = 60_000
/** An inactive answer is kept shorter: it costs an attacker nothing to try fresh garbage anyway. */
const INACTIVE_MS = 10_000
const MAX_ENTRIES = 10_000

interface Entry {
  claims: TokenClaims
  until: number
}

export class TokenChecker {
  private readonly cache = new Map<string, Entry>()
  private readonly inFlight = new Map<string, Promise<TokenClaims>>()

  constructor(private readonly introspect: (token: string) => Promise<TokenClaims>, private readonly now: () => number = Date.now) {}

  /** What the backend says of `token`; `{active: false}` once it has expired. Throws when the backend cannot answer. */
  async claims(token: string): Promise<TokenClaims> {
    const key = createHash('sha256').update(token).digest('base64url')
    const cached = this.cache.get(key)
    if (cached !== undefined && cached.until > this.now()) return cached.claims
    this.cache.delete(key)
    let pending = this.inFlight.get(key)
    if (pending === undefined) {
      pending = this.introspect(token).finally(() => this.inFlight.delete(key))
      this.inFlight.set(key, pending)
    }
    const claims = await pending
    this.remember(key, claims)
    if (claims.active && claims.exp !== undefined && claims.exp * 1000 <= this.now()) return { active: false }
    return claims
  }

  private remember(key: string, claims: TokenClaims): void {
    const now = this.now()
    let until = now + (claims.active ? CACHE_MS : INACTIVE_MS)
    if (claims.active && claims.exp !== undefined) until = Math.min(until, claims.exp * 1000)
    if (until <= now) return
    if (this.cache.size >= MAX_ENTRIES) {
      // Drop the oldest entry (Map keeps insertion order).
      const oldest = this.cache.keys().next().value
      if (oldest !== undefined) this.cache.delete(oldest)
    }
    this.cache.set(key, { claims, until })
  }
}

/** The reasons a token is not admitted for an instance, as HTTP answers them. */
export type Refusal =
  | { status: 401; error: 'invalid_token'; description: string }
  | { status: 403; error: 'insufficient_scope'; description: string }

/**
 * Whether `claims` admit a client to an installation served here: an active access token (RFC 6750
 * bearer — never a refresh token, which lives for weeks) for this satellite's resource with
 * mcp:read, of the installation's team.
 */
export function refusal(claims: TokenClaims, resource: string): Refusal | undefined {
  if (!claims.active) return { status: 401, error: 'invalid_token', description: 'The token is not active.' }
  // RFC 7662 §2.2: token_type names the kind; token types are compared case-insensitively (RFC 6749 §5.1).
  if (claims.token_type?.toLowerCase() !== 'bearer') return { status: 401, error: 'invalid_token', description: 'The token is not an access token.' }
  const audiences = Array.isArray(claims.aud) ? claims.aud : claims.aud === undefined ? [] : [claims.aud]
  if (!audiences.includes(resource)) return { status: 401, error: 'invalid_token', description: `The token was not issued for ${resource}.` }
  if (!(claims.scope ?? '').split(' ').includes('mcp:read')) return { status: 403, error: 'insufficient_scope', description: 'The token lacks the mcp:read scope.' }
  return undefined
}
