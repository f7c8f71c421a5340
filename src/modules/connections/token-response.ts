import * as oauth from 'oauth4webapi'
import type { Discovery } from './discovery.js'
import type { UpstreamClient } from './registration.js'
import type { ConnectionTokens } from './tokens-box.js'

/** A token is refreshed when a fifth of its lifetime, and at most five minutes, remains. */
const MAX_MARGIN_MS = 5 * 60_000

/** When the refresher should act on a token; null when it cannot (no refresh token) or need not (no expiry). */
export function refreshAtFor(now: Date, expiresAt: Date | null, hasRefreshToken: boolean): Date | null {
  if (!hasRefreshToken || expiresAt === null) return null
  const lifetime = Math.max(0, expiresAt.getTime() - now.getTime())
  return new Date(expiresAt.getTime() - Math.min(lifetime / 5, MAX_MARGIN_MS))
}

/**
 * The stored form of a token response: the tokens, their expiry and granted scope (the requested
 * one when the server does not say, RFC 6749 §5.1) and the account, sealed; with when to refresh.
 * `previous` keeps a refresh token the server did not replace (no rotation).
 */
export function tokensFrom(
  response: oauth.TokenEndpointResponse, requestedScope: string, account: string | null, now: Date,
  seal: (tokens: ConnectionTokens) => string, previous?: ConnectionTokens,
): { sealedTokens: string; refreshAt: Date | null; tokens: ConnectionTokens } {
  const expiresAt = typeof response.expires_in === 'number' ? new Date(now.getTime() + response.expires_in * 1000) : null
  const refreshToken = response.refresh_token ?? previous?.refresh_token
  const tokens: ConnectionTokens = {
    access_token: response.access_token,
    ...(refreshToken === undefined ? {} : { refresh_token: refreshToken }),
    token_type: response.token_type,
    expires_at: expiresAt === null ? null : expiresAt.toISOString(),
    scope: response.scope ?? previous?.scope ?? requestedScope,
    account: account ?? previous?.account ?? null,
  }
  return { sealedTokens: seal(tokens), refreshAt: refreshAtFor(now, expiresAt, refreshToken !== undefined), tokens }
}

const LABEL_CLAIMS = ['email', 'preferred_username', 'name', 'sub'] as const

function labelOf(claims: Record<string, unknown> | undefined): string | null {
  if (claims === undefined) return null
  for (const claim of LABEL_CLAIMS) {
    const value = claims[claim]
    if (typeof value === 'string' && value !== '') return value.slice(0, 200)
  }
  return null
}

/**
 * Who signed in upstream, for the views: from userinfo when the server offers it and `openid` was
 * granted, else from the ID token's claims, else unknown (null). Never fails the connection.
 */
export async function accountLabel(as: oauth.AuthorizationServer, client: UpstreamClient, tokens: oauth.TokenEndpointResponse, discovery: Discovery): Promise<string | null> {
  const idClaims = oauth.getValidatedIdTokenClaims(tokens) as Record<string, unknown> | undefined
  const granted = (tokens.scope ?? '').split(' ')
  if (as.userinfo_endpoint !== undefined && (granted.includes('openid') || idClaims !== undefined)) {
    try {
      const response = await oauth.userInfoRequest(as, client.client, tokens.access_token, discovery.options(as.userinfo_endpoint))
      const subject = typeof idClaims?.sub === 'string' ? idClaims.sub : oauth.skipSubjectCheck
      const label = labelOf(await oauth.processUserInfoResponse(as, client.client, subject, response) as Record<string, unknown>)
      if (label !== null) return label
    } catch {
      // Userinfo often refuses a token meant for another resource; the ID token may still say.
    }
  }
  return labelOf(idClaims)
}
