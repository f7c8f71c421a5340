import formBody from '@fastify/formbody'
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import type { FastifyReply, FastifyRequest } from 'fastify'
import QRCode from 'qrcode'
import { Type } from 'typebox'
import { policy } from '../../auth/policies.js'
import { optionalSession, type SessionCaller } from '../../auth/sessions.js'
import { AppError } from '../../http/errors.js'
import { prefersHtml, sendPage } from '../../http/pages.js'
import { FormTokens, type AccountForm } from '../auth/form-tokens.js'
import { ACCOUNT_PAGES, SIGN_IN_LINK } from '../auth/page-links.js'
import { challengeToken, clearChallengeCookie } from './challenge-cookie.js'
import { proofOf } from './proofs.js'
import { recoveryCodesPage, secondStepPage, setupPage, statusPage, TWO_FACTOR_PAGES, type PageNotice } from './pages.js'

const tags = ['Authentication']
const Page = { description: 'An HTML page (no script, a strict Content-Security-Policy).', content: { 'text/html': { schema: Type.String() } } }
const SeeOther = Type.Null({ description: '303 with a Location header' })
const CsrfToken = Type.Optional(Type.String({ maxLength: 128, description: 'The value the page gave; a form without the right one is shown again with 403 INVALID_CSRF_TOKEN.' }))
const RequestId = Type.Optional(Type.String({ maxLength: 128, pattern: '^[A-Za-z0-9_-]+$', description: 'An OAuth authorization request whose consent page the sign-in started from: it continues there.' }))
const HINT = 'Go back to the sign-in page and try again.'
const FORM_EXPIRED = 'This form had expired or was not sent from this page; it is shown again, send it once more.'
const FORMS = 'Forms are form-encoded, carry the page\'s `csrf_token` (a signed double submit with the `account_form` cookie) and are refused from a foreign `Origin` (403).'

/** As the other account pages: trusted origins and the key of the forms' CSRF tokens. */
export interface TwoFactorPagesOptions {
  origins: ReadonlySet<string>
  formKey: Buffer
}

/**
 * The two-factor pages: the sign-in's second step, and the account's two-factor settings (set up
 * with a QR code, confirm, see the recovery codes once; switch off). The JSON API
 * (`/api/auth/2fa/*`) does the same for programs.
 */
export const twoFactorPageRoutes: FastifyPluginAsyncTypebox<TwoFactorPagesOptions> = async (app, { origins, formKey }) => {
  await app.register(formBody)
  const services = () => app.services
  const tokens = new FormTokens(formKey, () => services().sessions.cookie)
  const htmlRefusals = { hint: HINT, links: [SIGN_IN_LINK] }

  function refuseCrossSite(request: FastifyRequest): void {
    const origin = request.headers.origin
    if (origin !== undefined && !origins.has(origin)) {
      throw new AppError(403, 'FORBIDDEN', `Cross-site form refused: it was sent from ${origin}, which is not this service.`, { origin })
    }
  }

  /** The page again with the refusal's status, for a browser; every other caller gets the envelope. */
  async function refuseWithPage(request: FastifyRequest, reply: FastifyReply, error: AppError, page: () => Promise<string> | string): Promise<FastifyReply> {
    if (!prefersHtml(request)) throw error
    reply.errorCode = error.code
    if (error.headers) reply.headers(error.headers)
    return sendPage(reply, error.statusCode, await page())
  }

  const staleForm = () => new AppError(403, 'INVALID_CSRF_TOKEN', 'This form has expired or was not sent from this service; open the page again.')
  const expired: PageNotice = { tone: 'error', text: FORM_EXPIRED }

  // The sign-in's second step.

  const renderSecondStep = (request: FastifyRequest, reply: FastifyReply, requestId: string | undefined, shown?: PageNotice) =>
    secondStepPage({ csrfToken: tokens.issue(request, reply, 'two-factor-sign-in', challengeToken(request) ?? ''), requestId, notice: shown })
  const restart = (requestId: string | undefined) => (requestId === undefined ? ACCOUNT_PAGES.signIn : `/api/oauth2/consent?request_id=${encodeURIComponent(requestId)}`)

  app.get(TWO_FACTOR_PAGES.signIn, {
    config: { auth: policy.public(), htmlRefusals },
    schema: {
      tags, summary: 'The sign-in\'s second step (HTML)',
      description: 'Where the sign-in page leads (303) when the password was right and the account has two-factor on: a form for a code from ' +
        'the authenticator app or a recovery code. Without a live `two_factor_challenge` cookie: 303 back to the sign-in page.',
      querystring: Type.Object({ request_id: RequestId }, { additionalProperties: false }),
      response: { 200: Page, 303: SeeOther },
    },
  }, async (request, reply) => {
    const requestId = request.query.request_id
    if (!(await services().twoFactor.signIn.live(challengeToken(request)))) return reply.redirect(restart(requestId), 303)
    return sendPage(reply, 200, renderSecondStep(request, reply, requestId))
  })

  app.post(TWO_FACTOR_PAGES.signIn, {
    config: { auth: policy.public(), limit: 'loginOrRegister', htmlRefusals },
    schema: {
      tags, summary: 'Finish signing in from the second step\'s page',
      description: 'The second step\'s form: `code` holds a code from the app or a recovery code. The rules of `POST /api/auth/2fa/verify` ' +
        '(wrong codes count as failed logins; 429 once the account is locked). Success: the session cookie and 303 to the account page, or to ' +
        'the OAuth consent page the sign-in started from. A wrong code shows the form again (401); a challenge that ended leads back to the ' +
        `sign-in (303). ${FORMS}`,
      consumes: ['application/x-www-form-urlencoded'],
      body: Type.Object({ code: Type.String({ minLength: 1, maxLength: 40 }), request_id: RequestId, csrf_token: CsrfToken }, { additionalProperties: false }),
      response: { 303: SeeOther },
    },
  }, async (request, reply) => {
    refuseCrossSite(request)
    const { code, request_id: requestId, csrf_token: csrfToken } = request.body
    const token = challengeToken(request)
    if (!tokens.valid(request, 'two-factor-sign-in', csrfToken, token ?? '')) {
      return refuseWithPage(request, reply, staleForm(), () => renderSecondStep(request, reply, requestId, expired))
    }
    let session
    try {
      ;({ session } = await services().twoFactor.signIn.verify(token, proofOf(code), { ip: request.ip }))
    } catch (error) {
      if (!(error instanceof AppError)) throw error
      // The challenge ended (expired, used, too many wrong codes): the password step is due again.
      if (error.code === 'UNAUTHORIZED' && prefersHtml(request)) {
        clearChallengeCookie(reply, services().sessions.cookie)
        return reply.redirect(restart(requestId), 303)
      }
      return refuseWithPage(request, reply, error, () => renderSecondStep(request, reply, requestId, { tone: 'error', text: error.message }))
    }
    clearChallengeCookie(reply, services().sessions.cookie)
    services().sessions.setCookie(reply, session.id, session.expiresAt)
    if (requestId !== undefined) {
      // The authorization request is now this session's; one that expired meanwhile is reported by the consent page itself.
      await services().oauth.consent.adopt(requestId, session.rowId).catch((error: unknown) => {
        if (!(error instanceof AppError)) throw error
      })
      return reply.redirect(restart(requestId), 303)
    }
    return reply.redirect(ACCOUNT_PAGES.account, 303)
  })

  // The account's two-factor settings.

  async function renderStatus(request: FastifyRequest, reply: FastifyReply, session: SessionCaller, shown?: PageNotice): Promise<string> {
    const { enabled, recoveryCodesLeft } = await services().twoFactor.enrolment.status(session.user)
    const required = !enabled && session.role === 'global_admin' && (await services().settings.get('global.require_2fa_for_admins'))
    const csrfToken = tokens.issue(request, reply, enabled ? 'two-factor-disable' : 'two-factor-setup', session.credentialId)
    return statusPage({ csrfToken, enabled, recoveryCodesLeft, hasPassword: session.user.passwordHash !== null, required, notice: shown })
  }

  async function renderSetup(request: FastifyRequest, reply: FastifyReply, session: SessionCaller, setup: { secret: string; otpauthUri: string }, shown?: PageNotice): Promise<string> {
    const svg = await QRCode.toString(setup.otpauthUri, { type: 'svg', errorCorrectionLevel: 'M', margin: 1 })
    const qrDataUri = `data:image/svg+xml;base64,${Buffer.from(svg).toString('base64')}`
    return setupPage({ csrfToken: tokens.issue(request, reply, 'two-factor-enable', session.credentialId), secret: setup.secret, qrDataUri, notice: shown })
  }

  app.get(TWO_FACTOR_PAGES.account, {
    config: { auth: policy.public(), htmlRefusals },
    schema: {
      tags, summary: 'The account\'s two-factor settings (HTML)',
      description: 'Linked from the account page. Off: a button that sets it up. On: how many recovery codes are left, and a form that switches ' +
        'it off (password and a code). Without a session: 303 to the sign-in page.',
      response: { 200: Page, 303: SeeOther },
    },
  }, async (request, reply) => {
    const session = await optionalSession(services().sessions, request, reply)
    if (session === null) return reply.redirect(ACCOUNT_PAGES.signIn, 303)
    return sendPage(reply, 200, await renderStatus(request, reply, session))
  })

  /** A form of the settings page: the session, the cross-site and CSRF checks, then `act`. */
  function settingsForm<B extends { csrf_token?: string }>(path: string, form: AccountForm, summary: string, description: string, body: ReturnType<typeof Type.Object>,
    act: (request: FastifyRequest, reply: FastifyReply, session: SessionCaller, fields: B) => Promise<FastifyReply>): void {
    app.post(path, {
      config: { auth: policy.public(), ...(form === 'two-factor-disable' ? { limit: 'passwordChange' as const } : {}), htmlRefusals },
      schema: { tags, summary, description: `${description} Without a session: 303 to the sign-in page. ${FORMS}`, consumes: ['application/x-www-form-urlencoded'], body, response: { 200: Page, 303: SeeOther } },
    }, async (request, reply) => {
      refuseCrossSite(request)
      const session = await optionalSession(services().sessions, request, reply)
      if (session === null) return reply.redirect(ACCOUNT_PAGES.signIn, 303)
      const fields = request.body as B
      if (!tokens.valid(request, form, fields.csrf_token, session.credentialId)) {
        return refuseWithPage(request, reply, staleForm(), () => renderStatus(request, reply, session, expired))
      }
      return act(request, reply, session, fields)
    })
  }

  settingsForm<{ csrf_token?: string }>(TWO_FACTOR_PAGES.setup, 'two-factor-setup', 'Start setting up two-factor authentication from its page',
    'Creates the pending secret (as `POST /api/auth/2fa/setup`) and answers the page with its QR code, the secret in text and a form to confirm a code.',
    Type.Object({ csrf_token: CsrfToken }, { additionalProperties: false }),
    async (request, reply, session) => {
      const { enrolment } = services().twoFactor
      try {
        return sendPage(reply, 200, await renderSetup(request, reply, session, await enrolment.setup(session.user)))
      } catch (error) {
        if (!(error instanceof AppError)) throw error
        return refuseWithPage(request, reply, error, () => renderStatus(request, reply, session, { tone: 'error', text: error.message }))
      }
    })

  settingsForm<{ code: string; csrf_token?: string }>(TWO_FACTOR_PAGES.enable, 'two-factor-enable', 'Switch two-factor authentication on from its page',
    'Confirms a code from the pending secret (as `POST /api/auth/2fa/enable`) and answers the page with the recovery codes, shown this once. ' +
    'A wrong code shows the setup page again (400).',
    Type.Object({ code: Type.String({ minLength: 1, maxLength: 40 }), csrf_token: CsrfToken }, { additionalProperties: false }),
    async (request, reply, session, { code }) => {
      const { enrolment } = services().twoFactor
      try {
        return sendPage(reply, 200, recoveryCodesPage(await enrolment.enable(session.user, code, { ip: request.ip })))
      } catch (error) {
        if (!(error instanceof AppError)) throw error
        const pending = await enrolment.pending(session.user)
        const shown: PageNotice = { tone: 'error', text: error.message }
        return refuseWithPage(request, reply, error, () => (pending === null ? renderStatus(request, reply, session, shown) : renderSetup(request, reply, session, pending, shown)))
      }
    })

  settingsForm<{ password?: string; code: string; csrf_token?: string }>(TWO_FACTOR_PAGES.disable, 'two-factor-disable', 'Switch two-factor authentication off from its page',
    'Needs the password (for an account that has one) and a code or recovery code, with the rules of `POST /api/auth/2fa/disable`. ' +
    'Answers the settings page, now off; a refusal shows the form again with its status.',
    Type.Object({ password: Type.Optional(Type.String({ maxLength: 128 })), code: Type.String({ minLength: 1, maxLength: 40 }), csrf_token: CsrfToken }, { additionalProperties: false }),
    async (request, reply, session, { password, code }) => {
      const { enrolment } = services().twoFactor
      try {
        await enrolment.disable(session.user, { password: password === '' ? undefined : password, code }, { ip: request.ip })
      } catch (error) {
        if (!(error instanceof AppError)) throw error
        return refuseWithPage(request, reply, error, () => renderStatus(request, reply, session, { tone: 'error', text: error.message }))
      }
      const user = { ...session.user, twoFactorEnabledAt: null }
      return sendPage(reply, 200, await renderStatus(request, reply, { ...session, user }, { tone: 'success', text: 'Two-factor authentication is off.' }))
    })
}
