import { STATUS_CODES } from 'node:http'
import type { FastifyReply, FastifyRequest } from 'fastify'
import { messagePage, pagePolicy, type PageLink } from '../lib/html.js'
import { errors, type AppError } from './errors.js'

declare module 'fastify' {
  interface FastifyContextConfig {
    /**
     * A route that browsers reach by following a link or submitting a form (the consent pages,
     * the links in mails, provider sign-in). Its refusals answer an HTML page, with the same status,
     * to a request that prefers text/html over application/json; `hint` tells the reader what to
     * do next, and `links` lead to the pages it names. Every other route, and every other caller,
     * gets the JSON envelope.
     */
    htmlRefusals?: { hint: string; links?: readonly PageLink[] }
  }
}

/**
 * The quality (RFC 9110 §12.5.1) that an Accept header gives `type/subtype`: the most specific
 * matching range decides; no match is 0.
 */
function quality(accept: string, type: string, subtype: string): number {
  let specificity = -1
  let q = 0
  for (const element of accept.split(',')) {
    const [range = '', ...parameters] = element.split(';').map((part) => part.trim().toLowerCase())
    const [rangeType, rangeSubtype] = range.split('/')
    const rank = rangeType === type && rangeSubtype === subtype ? 2 : rangeType === type && rangeSubtype === '*' ? 1 : range === '*/*' ? 0 : -1
    if (rank <= specificity) continue
    const weight = parameters.find((parameter) => parameter.startsWith('q='))
    const value = weight === undefined ? 1 : Number(weight.slice(2))
    specificity = rank
    q = Number.isFinite(value) ? Math.min(Math.max(value, 0), 1) : 0
  }
  return q
}

/**
 * A browser navigating or submitting a form (its Accept ranks text/html first); an API client
 * (`application/json`, `*` / `*`, or no Accept at all) is not one.
 */
export function prefersHtml(request: FastifyRequest): boolean {
  const accept = request.headers.accept
  return accept !== undefined && quality(accept, 'text', 'html') > quality(accept, 'application', 'json')
}

/** A page under the strict policy: no script, the page's own style, forms to itself and `formTargets`. */
export function sendPage(reply: FastifyReply, status: number, html: string, formTargets: readonly string[] = []): FastifyReply {
  return reply
    .code(status)
    .type('text/html; charset=utf-8')
    .header('content-security-policy', pagePolicy(formTargets))
    // Not helmet's no-referrer: under it browsers send `Origin: null` on the page's own form
    // posts, which the Origin checks must refuse. same-origin still tells other sites nothing.
    .header('referrer-policy', 'same-origin')
    .header('cache-control', 'no-store')
    .send(html)
}

const VALIDATION_TEXT = errors.validation([]).message

const TITLES: Record<string, string> = {
  VALIDATION_ERROR: 'This link or form is incomplete',
  INVALID_TOKEN: 'This link no longer works',
  RESET_LINK_EXPIRED: 'This link has expired',
  INVALID_CSRF_TOKEN: 'This form has expired',
  FORBIDDEN: 'Request refused',
  UNAUTHORIZED: 'Please sign in',
  LOGIN_DISABLED: 'Sign-in is switched off',
  RATE_LIMITED: 'Too many attempts',
  NOT_FOUND: 'Not found',
  EMAIL_DISABLED: 'Mail is switched off',
  OIDC_DISABLED: 'Single sign-on is switched off',
  OIDC_STATE_MISMATCH: 'This sign-in cannot be completed',
  OIDC_LOGIN_FAILED: 'Single sign-on failed',
  OIDC_ID_TOKEN_INVALID: 'Single sign-on failed',
  OIDC_EMAIL_NOT_AVAILABLE: 'No verified email address',
}

/** A refusal as a page: a title for its kind, its own text, and what to do next. */
export function refusalPage(error: AppError, hint?: string, links?: readonly PageLink[]): string {
  const title = TITLES[error.code] ?? (error.statusCode >= 500 ? 'The service cannot answer right now' : STATUS_CODES[error.statusCode] ?? 'Request refused')
  // A schema failure's own text names no field a reader typed; the page says what it means instead.
  const message = error.code === 'VALIDATION_ERROR' && error.message === VALIDATION_TEXT
    ? 'Part of the link or the form is missing or not valid. Open the link from the mail again, or fill in the form again.'
    : error.message
  return messagePage({ title, message, tone: 'error', hint, links })
}
