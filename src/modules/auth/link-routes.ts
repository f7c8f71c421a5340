import formBody from '@fastify/formbody'
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import type { FastifyRequest } from 'fastify'
import { policy } from '../../auth/policies.js'
import { AppError, errors } from '../../http/errors.js'
import { prefersHtml, sendPage } from '../../http/pages.js'
import { userView } from '../users/view.js'
import { RESET_LIFETIME_MS } from './email-flows.js'
import { FormTokens, type FormCookie } from './form-tokens.js'
import { FORGOT_PASSWORD_LINK, RESEND_VERIFICATION_LINK, SIGN_IN_LINK } from './page-links.js'
import { emailVerifiedPage, passwordChangedPage, resetPasswordPage } from './pages.js'
import { Message, ResetBody, ResetLinkState, TokenQuery, UserEnvelope } from './schemas.js'
import { isoTime } from '../../lib/iso-time.js'

const tags = ['Authentication']
const RESET_PATH = '/api/auth/email/reset-password'
/** The reset form's CSRF cookie (form-tokens.ts): its token binds the reset token, for as long as a link lives. */
const RESET_FORM_COOKIE: FormCookie = { name: 'reset_form', path: RESET_PATH, maxAgeS: RESET_LIFETIME_MS / 1000 }
const VERIFY_HINT = 'If your address is verified, sign in; if it still needs verifying, ask for a new verification mail.'
const RESET_HINT = 'Ask for a new password reset mail if you still need to change your password, or sign in.'
/** The refusal pages' hints name these pages; they are a click away. */
const VERIFY_LINKS = [SIGN_IN_LINK, RESEND_VERIFICATION_LINK]
const RESET_LINKS = [FORGOT_PASSWORD_LINK, SIGN_IN_LINK]

const isForm = (request: FastifyRequest): boolean =>
  request.headers['content-type']?.startsWith('application/x-www-form-urlencoded') === true

/**
 * The links in verification and reset mails, when no frontend is configured: a browser
 * (`Accept` preferring text/html) gets pages, every other caller the JSON API, at the same URLs.
 */
export const emailLinkRoutes: FastifyPluginAsyncTypebox<{ origins: ReadonlySet<string>; formKey: Buffer }> = async (app, { origins, formKey }) => {
  const flows = () => app.services.emailFlows
  // The reset page's form posts a form-encoded body; only these routes accept one.
  await app.register(formBody)

  const formTokens = new FormTokens(formKey, () => app.services.sessions.cookie, RESET_FORM_COOKIE)

  app.get('/api/auth/email/verify', {
    config: { auth: policy.public(), htmlRefusals: { hint: VERIFY_HINT, links: VERIFY_LINKS } },
    schema: {
      tags, summary: 'Verify an email address (single-use link, 24 hours)',
      description: 'The link of the verification mail when `global.page_url` is empty. Opening it verifies the address at once. ' +
        'A browser (`Accept` preferring text/html) gets a page saying so, and its refusals as pages with the same status; every other ' +
        'caller gets JSON. 400 INVALID_TOKEN for an unknown, expired or used link (a used one says the address is already verified). ' +
        'The pages link to the sign-in page (`/api/auth/sign-in`), the refusals also to a new verification mail (`/api/auth/resend-verification`).',
      querystring: TokenQuery, response: { 200: UserEnvelope },
    },
  }, async (request, reply) => {
    const user = await flows().verifyEmail(request.query.token)
    if (prefersHtml(request)) return sendPage(reply, 200, emailVerifiedPage(user.email))
    return { success: true as const, message: 'Email verified.', data: { user: userView(user) } }
  })

  app.get(RESET_PATH, {
    config: { auth: policy.public(), htmlRefusals: { hint: RESET_HINT, links: RESET_LINKS } },
    schema: {
      tags, summary: 'Check a password reset link; for a browser, the reset form',
      description: 'The link of the reset mail when `global.page_url` is empty. It does not use the link up. A browser (`Accept` preferring ' +
        'text/html) gets a form that asks for the new password twice and posts to this URL; every other caller gets until when the link ' +
        'works. 400 RESET_LINK_EXPIRED past its lifetime, 400 INVALID_TOKEN when unknown or used (as pages for a browser, with links to a new ' +
        'reset mail, `/api/auth/forgot-password`, and to the sign-in page).',
      querystring: TokenQuery, response: { 200: ResetLinkState },
    },
  }, async (request, reply) => {
    const { token } = request.query
    const { user, expiresAt } = await flows().checkResetToken(token)
    if (!prefersHtml(request)) return { success: true as const, data: { expires_at: isoTime(expiresAt) } }
    const csrfToken = formTokens.issue(request, reply, 'reset-password', token)
    return sendPage(reply, 200, resetPasswordPage({ token, csrfToken, username: user.username }))
  })

  app.post(RESET_PATH, {
    config: { auth: policy.public(), limit: 'loginOrRegister', htmlRefusals: { hint: RESET_HINT, links: RESET_LINKS } },
    schema: {
      tags, summary: 'Set a new password with a reset token',
      description: 'JSON, or the reset page\'s form (form-encoded, with its `csrf_token`; an `Origin`, when sent, must be this service\'s own). ' +
        'Single use, 1 hour; every reset link of the user dies with it, and every session and OAuth grant (access and refresh tokens) of the user ends. 400 RESET_LINK_EXPIRED past its ' +
        'lifetime, 400 INVALID_TOKEN when unknown or used, 400 VALIDATION_ERROR when `new_password_confirm` differs, 403 INVALID_CSRF_TOKEN ' +
        'for a form without a valid `csrf_token`. A browser (`Accept` preferring text/html) gets pages: done (with a link to the sign-in ' +
        'page), the form again with the problem, or the refusal with the same status.',
      consumes: ['application/json', 'application/x-www-form-urlencoded'],
      body: ResetBody, response: { 200: Message },
    },
  }, async (request, reply) => {
    const { token, new_password: password, new_password_confirm: confirm, csrf_token: csrfToken } = request.body
    const form = isForm(request)
    if (form) {
      const origin = request.headers.origin
      if (origin !== undefined && !origins.has(origin)) {
        throw new AppError(403, 'FORBIDDEN', `Cross-site form refused: it was sent from ${origin}, which is not this service.`, { origin })
      }
      if (!formTokens.valid(request, 'reset-password', csrfToken, token)) {
        throw new AppError(403, 'INVALID_CSRF_TOKEN', 'This form has expired or was not sent from this service; open the link from the mail again.')
      }
    }
    if (confirm !== undefined && confirm !== password) {
      const differ = errors.validation([{ field: 'new_password_confirm', message: 'must equal new_password', in: 'body' }], 'The two passwords differ; type the same one twice.')
      if (!form || !prefersHtml(request)) throw differ
      const { user } = await flows().checkResetToken(token)
      reply.errorCode = differ.code
      return sendPage(reply, 400, resetPasswordPage({ token, csrfToken: csrfToken!, username: user.username, error: differ.message }))
    }
    await flows().resetPassword(token, password, request.ip, request.id)
    if (form) reply.clearCookie(RESET_FORM_COOKIE.name, { path: RESET_FORM_COOKIE.path })
    if (prefersHtml(request)) return sendPage(reply, 200, passwordChangedPage())
    return { success: true as const, message: 'Password changed. Log in with the new password.' }
  })
}
