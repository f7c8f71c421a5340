import { createHmac } from 'node:crypto'
import type { CookieSerializeOptions } from '@fastify/cookie'
import type { FastifyReply, FastifyRequest } from 'fastify'
import { randomToken, sameSecret } from '../../lib/tokens.js'

const NONCE = /^[A-Za-z0-9_-]{43}$/

/** Which form a token is for: a token of one form does not pass for another. */
export type AccountForm = 'sign-in' | 'sign-out' | 'forgot-password' | 'resend-verification' | 'reset-password' | 'personal-tokens'
  | 'accept-invitation' | 'register-invited' | 'invite-to-team'
  | 'two-factor-sign-in' | 'two-factor-setup' | 'two-factor-enable' | 'two-factor-disable'

/** Where the browser's random value lives; a cross-site form post does not carry it (SameSite=Strict). */
export interface FormCookie {
  name: string
  path: string
  /** A form left open longer is refused once, and shown again with a fresh token. */
  maxAgeS: number
}

/** The account pages' cookie. */
export const ACCOUNT_FORM_COOKIE: FormCookie = { name: 'account_form', path: '/api/auth', maxAgeS: 60 * 60 }

/**
 * The CSRF tokens of the backend's own forms (the account pages and the password reset form), a
 * signed double submit: a random value in an HttpOnly, SameSite=Strict cookie, and the form's
 * `csrf_token`, an HMAC of that value, the form's name and what the form acts on (the session a
 * sign-out ends, the reset token a reset uses). A site that plants a cookie still cannot make the
 * matching token without the key.
 */
export class FormTokens {
  constructor(
    private readonly key: Buffer,
    private readonly cookieOptions: () => CookieSerializeOptions,
    private readonly cookie: FormCookie = ACCOUNT_FORM_COOKIE,
  ) {}

  /** The token for the page about to be shown; the browser's value is kept while it holds a well-formed one (two tabs both work). */
  issue(request: FastifyRequest, reply: FastifyReply, form: AccountForm, binding = ''): string {
    const held = request.cookies[this.cookie.name]
    const nonce = held !== undefined && NONCE.test(held) ? held : randomToken()
    reply.setCookie(this.cookie.name, nonce, { ...this.cookieOptions(), sameSite: 'strict', path: this.cookie.path, maxAge: this.cookie.maxAgeS })
    return this.sign(nonce, form, binding)
  }

  /** Whether a posted form carries the token its page was given in this browser. */
  valid(request: FastifyRequest, form: AccountForm, presented: string | undefined, binding = ''): boolean {
    const nonce = request.cookies[this.cookie.name]
    if (nonce === undefined || !NONCE.test(nonce) || presented === undefined) return false
    return sameSecret(presented, this.sign(nonce, form, binding))
  }

  private sign(nonce: string, form: AccountForm, binding: string): string {
    return createHmac('sha256', this.key).update(`account-page.${form}.${nonce}.${binding}`).digest('base64url')
  }
}
