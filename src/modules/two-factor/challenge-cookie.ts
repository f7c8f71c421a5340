import type { CookieSerializeOptions } from '@fastify/cookie'
import type { FastifyReply, FastifyRequest } from 'fastify'
import { CHALLENGE_LIFETIME_MS } from './sign-in.js'

/**
 * The cookie that carries a sign-in's second step between the password and the code: HttpOnly,
 * SameSite=Lax, sent only to /api/auth (where the second step's routes live), Secure like the
 * session cookie, and as short-lived as the challenge it names.
 */
export const CHALLENGE_COOKIE = 'two_factor_challenge'
const PATH = '/api/auth'

/** Sets the cookie for a new challenge (the password step succeeded). */
export function setChallengeCookie(reply: FastifyReply, base: CookieSerializeOptions, token: string): void {
  reply.setCookie(CHALLENGE_COOKIE, token, { ...base, httpOnly: true, sameSite: 'lax', path: PATH, maxAge: CHALLENGE_LIFETIME_MS / 1000 })
}

/** Clears it once the challenge is spent (or gone), so the browser stops sending it. */
export function clearChallengeCookie(reply: FastifyReply, base: CookieSerializeOptions): void {
  reply.setCookie(CHALLENGE_COOKIE, '', { ...base, httpOnly: true, sameSite: 'lax', path: PATH, maxAge: 0 })
}

/** The challenge's random value as the browser sent it, if any. */
export const challengeToken = (request: FastifyRequest): string | undefined => request.cookies[CHALLENGE_COOKIE]
