import type { FastifyReply, FastifyRequest } from 'fastify'
import { Type } from 'typebox'
import type { UserRow } from '../../db/repositories/users.js'
import { AppError } from '../../http/errors.js'
import { prefersHtml, sendPage } from '../../http/pages.js'
import type { SettingsService } from '../settings/service.js'
import { loginDisabled } from '../auth/service.js'

/** An HTML answer, for the pages' OpenAPI entries. */
export const Page = { description: 'An HTML page (no script, a strict Content-Security-Policy).', content: { 'text/html': { schema: Type.String() } } }
/** A redirect's answer: no body. */
export const SeeOther = Type.Null({ description: '303 with a Location header' })
/** The CSRF field every form of these pages posts. */
export const CsrfToken = Type.Optional(Type.String({ maxLength: 128, description: 'The value the page gave; a form without the right one is shown again with 403 INVALID_CSRF_TOKEN.' }))

/** Why a form is shown again after a stale token. */
export const FORM_EXPIRED = 'This form had expired or was not sent from this page; it is shown again, send it once more.'
/** The CSRF rules, as the pages' OpenAPI descriptions state them. */
export const CROSS_SITE = 'An `Origin` header, when sent, must be this service\'s own or a configured CORS origin, else 403 FORBIDDEN. The form\'s ' +
  '`csrf_token` is a signed double submit with the `account_form` cookie, as on the other account pages; without it, or with a stale one, a ' +
  'browser gets the page again (403 INVALID_CSRF_TOKEN).'

/** A form without the token its page gave (expired, or not from this service). */
export const staleForm = () => new AppError(403, 'INVALID_CSRF_TOKEN', 'This form has expired or was not sent from this service; open the page again.')

/** The refusals the invitation pages' forms share with the other account pages. */
export class PageForms {
  constructor(private readonly origins: ReadonlySet<string>) {}

  /** A form sent from another site never acts, whatever it carries. */
  refuseCrossSite(request: FastifyRequest): void {
    const origin = request.headers.origin
    if (origin !== undefined && !this.origins.has(origin)) {
      throw new AppError(403, 'FORBIDDEN', `Cross-site form refused: it was sent from ${origin}, which is not this service.`, { origin })
    }
  }

  /** A page shown again because of a refusal, with its status and code; other callers get the envelope. */
  async refuseWithPage(request: FastifyRequest, reply: FastifyReply, error: AppError, page: () => Promise<string> | string): Promise<FastifyReply> {
    if (!prefersHtml(request)) throw error
    reply.errorCode = error.code
    if (error.headers) reply.headers(error.headers)
    return sendPage(reply, error.statusCode, await page())
  }
}

/** While sign-in is switched off, a non-admin's session acts on nothing (as the route policies say). */
export async function assertMayAct(user: UserRow, settings: Pick<SettingsService, 'get'>): Promise<void> {
  if (user.roleId !== 'global_admin' && !(await settings.get('global.enable_login'))) throw loginDisabled()
}
