import { createHmac } from 'node:crypto'
import type { CookieSerializeOptions } from '@fastify/cookie'
import type { FastifyReply, FastifyRequest } from 'fastify'
import { randomToken, sameSecret } from '../../lib/tokens.js'

/** The browser's random value; a cross-site form post does not carry it (SameSite=Strict). */
const COOKIE = 'account_form'
const COOKIE_PATH = '/api/auth'
const NONCE = /^[A-Za-z0-9_-]{43}$/
/** A form left open longer is refused once, and shown again with a fresh token. */
const COOKIE_MAX_AGE_S = 60 * 60

/** Which form a token is for: a token of one form does not pass for another. */
export type AccountForm = 'sign-in' | 'sign-out' | 'forgot-password' | 'resend-verification'

/**
 * The CSRF tokens of the account pages' forms, the same signed double submit as the reset form:
 * a random value in an HttpOnly, SameSite=Strict cookie, and the form's `csrf_token`, an HMAC of
 * that value, the form's name and, for the sign-out form, the session it ends. A site that plants
 * a cookie still cannot make the matching token without the key.
 */
export class FormTokens {
  constructor(
    private readonly key: Buffer,
    private readonly cookieOptions: () => CookieSerializeOptions,
  ) {}

  /** The token for the page about to be shown; the browser's value is kept while it holds a well-formed one (two tabs both work). */
  issue(request: FastifyRequest, reply: FastifyReply, form: AccountForm, binding = ''): string {
    const held = request.cookies[COOKIE]
    const nonce = held !== undefined && NONCE.test(held) ? held : randomToken()
    reply.setCookie(COOKIE, nonce, { ...this.cookieOptions(), sameSite: 'strict', path: COOKIE_PATH, maxAge: COOKIE_MAX_AGE_S })
    return this.sign(nonce, form, binding)
  }

  /** Whether a posted form carries the token its page was given in this browser. */
  valid(request: FastifyRequest, form: AccountForm, presented: string | undefined, binding = ''): boolean {
    const nonce = request.cookies[COOKIE]
    if (nonce === undefined || !NONCE.test(nonce) || presented === undefined) return false
    return sameSecret(presented, this.sign(nonce, form, binding))
  }

  private sign(nonce: string, form: AccountForm, binding: string): string {
    return createHmac('sha256', this.key).update(`account-page.${form}.${nonce}.${binding}`).digest('base64url')
  }
}
