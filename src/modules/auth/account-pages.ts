import formBody from '@fastify/formbody'
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import type { FastifyReply, FastifyRequest } from 'fastify'
import { Type } from 'typebox'
import { SESSION_COOKIE } from '../../auth/credentials-from-request.js'
import { policy } from '../../auth/policies.js'
import { optionalSession } from '../../auth/sessions.js'
import { AppError } from '../../http/errors.js'
import { prefersHtml, sendPage } from '../../http/pages.js'
import { Email } from '../users/schemas.js'
import { oidcSignInLink } from '../oidc-login/sign-in-link.js'
import { FormTokens, type AccountForm } from './form-tokens.js'
import { ACCOUNT_PAGES, forgotPasswordHref, RESEND_VERIFICATION_LINK, SIGN_IN_LINK } from './page-links.js'
import { setChallengeCookie } from '../two-factor/challenge-cookie.js'
import { TWO_FACTOR_PAGES } from '../two-factor/pages.js'
import { accountPage, mailRequestPage, mailRequestSentPage, signInPage, type MailRequestForm, type Notice } from './pages.js'

const tags = ['Authentication']
const Page = { description: 'An HTML page (no script, a strict Content-Security-Policy).', content: { 'text/html': { schema: Type.String() } } }
const SeeOther = Type.Null({ description: '303 with a Location header' })
const CsrfToken = Type.Optional(Type.String({ maxLength: 128, description: 'The value the page gave; a form without the right one is shown again with 403 INVALID_CSRF_TOKEN.' }))
const SIGN_IN_HINT = 'Go back to the sign-in page and try again.'
const MAIL_HINT = 'Go back to the sign-in page; if this keeps happening, ask an administrator of this service.'
const SIGNED_OUT = 'You are signed out.'
const FORM_EXPIRED = 'This form had expired or was not sent from this page; it is shown again, send it once more.'
const CROSS_SITE_DESCRIPTION = 'An `Origin` header, when sent, must be this service\'s own (any loopback spelling of a loopback `PUBLIC_URL`) ' +
  'or a configured CORS origin, else 403 FORBIDDEN (login CSRF). The form\'s `csrf_token` is a signed double submit with the `account_form` ' +
  'cookie (`HttpOnly; SameSite=Strict; Path=/api/auth`), as on the reset form; without it, or with a stale one, a browser gets the form again ' +
  '(403 INVALID_CSRF_TOKEN) and other callers the JSON envelope.'

const mailDisabled = () => new AppError(503, 'EMAIL_DISABLED', 'Email sending is disabled on this service, so no mail can be sent from this page.')

export interface AccountPagesOptions {
  /** Origins a browser's form may come from (http/origins.ts). */
  origins: ReadonlySet<string>
  /** The key of the forms' CSRF tokens. */
  formKey: Buffer
}

/**
 * The account pages a person without a frontend needs: sign in, see who is signed in, sign out,
 * ask for a reset or verification mail. Plain forms in the page layout, no script; the JSON API
 * (`/api/auth/email/*`, `/api/auth/logout`) does the same for programs.
 */
export const accountPageRoutes: FastifyPluginAsyncTypebox<AccountPagesOptions> = async (app, { origins, formKey }) => {
  // Only these routes (and the other page contexts) accept form-encoded bodies.
  await app.register(formBody)
  const services = () => app.services
  const tokens = new FormTokens(formKey, () => services().sessions.cookie)

  /** Login CSRF and friends: a form sent from another site never acts, whatever it carries. */
  function refuseCrossSite(request: FastifyRequest): void {
    const origin = request.headers.origin
    if (origin !== undefined && !origins.has(origin)) {
      throw new AppError(403, 'FORBIDDEN', `Cross-site form refused: it was sent from ${origin}, which is not this service.`, { origin })
    }
  }

  /**
   * A page shown again because of a refusal: for a browser, with the refusal's status and code
   * (the request's log line names it); every other caller gets the envelope.
   */
  function refuseWithPage(request: FastifyRequest, reply: FastifyReply, error: AppError, page: () => Promise<string> | string): Promise<FastifyReply> | FastifyReply {
    if (!prefersHtml(request)) throw error
    reply.errorCode = error.code
    if (error.headers) reply.headers(error.headers)
    return Promise.resolve(page()).then((html) => sendPage(reply, error.statusCode, html))
  }

  const staleForm = () => new AppError(403, 'INVALID_CSRF_TOKEN', 'This form has expired or was not sent from this service; open the page again.')

  /** Provider sign-in that lands on the account page, when provider login is on. */
  async function providerHref(): Promise<string | undefined> {
    const provider = services().providerLogin
    const { enabled, configured } = await provider.status()
    if (!enabled || !configured) return undefined
    const returnTo = await provider.safeReturnTo(ACCOUNT_PAGES.account)
    return `/api/auth/provider/login${returnTo === null ? '' : `?return_to=${encodeURIComponent(returnTo)}`}`
  }

  async function renderSignIn(request: FastifyRequest, reply: FastifyReply, notice?: Notice, login?: string): Promise<string> {
    const csrfToken = tokens.issue(request, reply, 'sign-in')
    const [provider, forgot, oidcLink] = await Promise.all([providerHref(), forgotPasswordHref(services().mail), oidcSignInLink(services().oidcLogin)])
    return signInPage({ csrfToken, notice, login, providerHref: provider, oidcLink, forgotHref: forgot })
  }

  app.get(ACCOUNT_PAGES.signIn, {
    config: { auth: policy.public(), htmlRefusals: { hint: SIGN_IN_HINT, links: [SIGN_IN_LINK] } },
    schema: {
      tags, summary: 'The sign-in page (HTML)',
      description: 'For a service without a frontend (`global.page_url` empty): email or username and password, posted to this URL. ' +
        'A browser that is signed in already goes on to the account page (303). With provider login on, a "Sign in with GitHub" button ' +
        '(`/api/auth/provider/login?return_to=/api/auth/account`); with OpenID Connect sign-in on, a "Sign in with <oidc.display_name>" button ' +
        '(`/api/auth/oidc/login?return_to=/api/auth/account`); while mail goes out, a "Forgot password?" link. `signed_out=1` adds ' +
        'the notice the sign-out leads to. Programs sign in with `POST /api/auth/email/login`.',
      querystring: Type.Object({ signed_out: Type.Optional(Type.Literal('1', { description: 'Say that the browser was just signed out.' })) }, { additionalProperties: false }),
      response: { 200: Page, 303: SeeOther },
    },
  }, async (request, reply) => {
    if ((await optionalSession(app.services.sessions, request, reply)) !== null) return reply.redirect(ACCOUNT_PAGES.account, 303)
    const notice: Notice | undefined = request.query.signed_out === '1' ? { tone: 'success', text: SIGNED_OUT } : undefined
    return sendPage(reply, 200, await renderSignIn(request, reply, notice))
  })

  app.post(ACCOUNT_PAGES.signIn, {
    config: { auth: policy.public(), limit: 'loginOrRegister', htmlRefusals: { hint: SIGN_IN_HINT, links: [SIGN_IN_LINK] } },
    schema: {
      tags, summary: 'Sign in from the sign-in page',
      description: 'The sign-in page\'s form (form-encoded). The same rules as `POST /api/auth/email/login`: the login switch (403 LOGIN_DISABLED), ' +
        'the account lockout (429 RATE_LIMITED with Retry-After), verification when required (403 EMAIL_NOT_VERIFIED, with a link to ask ' +
        'for a new verification mail), 401 INVALID_CREDENTIALS; a browser gets the form again with the reason and that status. Success: the ' +
        'session cookie and 303 to the account page; for an account with two-factor on, the challenge cookie and 303 to the second step\'s ' +
        'page (/api/auth/sign-in/two-factor) instead. Counts against the per-IP login limit. ' + CROSS_SITE_DESCRIPTION,
      consumes: ['application/x-www-form-urlencoded'],
      body: Type.Object({
        login: Type.String({ minLength: 1, maxLength: 255, description: 'Email or username.' }),
        password: Type.String({ minLength: 1, maxLength: 128 }),
        csrf_token: CsrfToken,
      }, { additionalProperties: false }),
      response: { 303: SeeOther },
    },
  }, async (request, reply) => {
    refuseCrossSite(request)
    const { login, password, csrf_token: csrfToken } = request.body
    if (!tokens.valid(request, 'sign-in', csrfToken)) {
      return refuseWithPage(request, reply, staleForm(), () => renderSignIn(request, reply, { tone: 'error', text: FORM_EXPIRED }, login))
    }
    let outcome
    try {
      outcome = await services().accounts.login(login, password, { ip: request.ip })
    } catch (error) {
      if (!(error instanceof AppError)) throw error
      const link = error.code === 'EMAIL_NOT_VERIFIED' && (await services().mail.enabled()) ? RESEND_VERIFICATION_LINK : undefined
      return refuseWithPage(request, reply, error, () => renderSignIn(request, reply, { tone: 'error', text: error.message, link }, login))
    }
    if (outcome.challenge !== undefined) {
      // Two-factor on: the second step's page asks for the code.
      setChallengeCookie(reply, services().sessions.cookie, outcome.challenge.token)
      return reply.redirect(TWO_FACTOR_PAGES.signIn, 303)
    }
    services().sessions.setCookie(reply, outcome.session.id, outcome.session.expiresAt)
    return reply.redirect(ACCOUNT_PAGES.account, 303)
  })

  app.get(ACCOUNT_PAGES.account, {
    config: { auth: policy.public(), htmlRefusals: { hint: SIGN_IN_HINT, links: [SIGN_IN_LINK] } },
    schema: {
      tags, summary: 'The account page (HTML): who is signed in, and sign-out',
      description: 'Names the signed-in user and offers sign-out (a form posting to `/api/auth/sign-out`). Without a session: 303 to the sign-in ' +
        'page. A non-admin\'s session while login is switched off is shown with a notice that it opens nothing else.',
      response: { 200: Page, 303: SeeOther },
    },
  }, async (request, reply) => {
    const session = await optionalSession(app.services.sessions, request, reply)
    if (session === null) return reply.redirect(ACCOUNT_PAGES.signIn, 303)
    return sendPage(reply, 200, await renderAccount(request, reply, session.user, session.credentialId))
  })

  async function renderAccount(request: FastifyRequest, reply: FastifyReply, user: { username: string; email: string; roleId: string }, sessionRowId: string, notice?: Notice): Promise<string> {
    const loginDisabled = user.roleId !== 'global_admin' && !(await services().settings.get('global.enable_login'))
    const csrfToken = tokens.issue(request, reply, 'sign-out', sessionRowId)
    return accountPage({ username: user.username, email: user.email, csrfToken, loginDisabled, notice })
  }

  app.post(ACCOUNT_PAGES.signOut, {
    config: { auth: policy.public(), htmlRefusals: { hint: SIGN_IN_HINT, links: [SIGN_IN_LINK] } },
    schema: {
      tags, summary: 'Sign out from the account page',
      description: 'The account page\'s form (form-encoded): ends the session, clears its cookie and answers 303 to the sign-in page with ' +
        '"You are signed out". Its `csrf_token` is bound to the session it ends. Without a live session there is nothing to end: the cookie ' +
        'is cleared and the answer is the same 303. Programs sign out with `POST /api/auth/logout`. ' + CROSS_SITE_DESCRIPTION,
      consumes: ['application/x-www-form-urlencoded'],
      body: Type.Object({ csrf_token: CsrfToken }, { additionalProperties: false }),
      response: { 303: SeeOther },
    },
  }, async (request, reply) => {
    refuseCrossSite(request)
    const session = await optionalSession(app.services.sessions, request, reply)
    if (session !== null) {
      if (!tokens.valid(request, 'sign-out', request.body.csrf_token, session.credentialId)) {
        return refuseWithPage(request, reply, staleForm(), () =>
          renderAccount(request, reply, session.user, session.credentialId, { tone: 'error', text: FORM_EXPIRED }))
      }
      await services().accounts.logout(request.cookies[SESSION_COOKIE], { ip: request.ip })
    }
    services().sessions.clearCookie(reply)
    return reply.redirect(`${ACCOUNT_PAGES.signIn}?signed_out=1`, 303)
  })

  mailRequestRoutes('forgot-password', ACCOUNT_PAGES.forgotPassword, {
    get: 'The forgot-password page (HTML)',
    post: 'Ask for a password reset mail from the forgot-password page',
    getDescription: 'Asks for the account\'s email address and posts it to this URL. 503 EMAIL_DISABLED (a page for a browser) while mail ' +
      'does not go out. Programs use `POST /api/auth/email/forgot-password`.',
    postDescription: 'The forgot-password form (form-encoded). Runs the reset-mail flow of `POST /api/auth/email/forgot-password` and always ' +
      'answers the same page, in the same time, whether or not an account has this address (no account enumeration); the mail goes out ' +
      'afterwards. A malformed address gets the form again (400). 503 EMAIL_DISABLED while mail does not go out. Shares the per-IP limit of ' +
      'the forgot-password and resend-verification requests. ' + CROSS_SITE_DESCRIPTION,
  }, (email, requestId) => services().emailFlows.forgotPassword(email, requestId))

  mailRequestRoutes('resend-verification', ACCOUNT_PAGES.resendVerification, {
    get: 'The page that asks for a new verification mail (HTML)',
    post: 'Ask for a new verification mail from its page',
    getDescription: 'Asks for the registered email address and posts it to this URL; linked from refused verification links and from a ' +
      'sign-in refused for an unverified address. 503 EMAIL_DISABLED (a page for a browser) while mail does not go out. Programs use ' +
      '`POST /api/auth/email/resend-verification`.',
    postDescription: 'The form (form-encoded). Sends a new verification link to an unverified account with this address, and always answers ' +
      'the same page without waiting for the mail (no account enumeration). A malformed address gets the form again (400). 503 EMAIL_DISABLED ' +
      'while mail does not go out. Shares the per-IP limit of the forgot-password and resend-verification requests. ' + CROSS_SITE_DESCRIPTION,
  }, (email, requestId) => {
    // Not awaited: how long the mail takes must not tell whether the account exists.
    void services().emailFlows.resendVerification(email, requestId).catch((error: unknown) => app.log.error({ err: error, reqId: requestId }, 'verification mail request failed'))
    return Promise.resolve()
  })

  /** GET shows the form, POST asks for the mail and answers the one page that tells nothing about the account. */
  function mailRequestRoutes(
    kind: MailRequestForm['kind'] & AccountForm,
    path: string,
    text: { get: string; post: string; getDescription: string; postDescription: string },
    request: (email: string, requestId: string) => Promise<void>,
  ): void {
    const config = { auth: policy.public(), htmlRefusals: { hint: MAIL_HINT, links: [SIGN_IN_LINK] } }
    const render = (req: FastifyRequest, reply: FastifyReply, notice?: Notice, email?: string) =>
      mailRequestPage({ kind, csrfToken: tokens.issue(req, reply, kind), notice, email })

    app.get(path, {
      config,
      schema: { tags, summary: text.get, description: text.getDescription, response: { 200: Page } },
    }, async (req, reply) => {
      if (!(await services().mail.enabled())) throw mailDisabled()
      return sendPage(reply, 200, render(req, reply))
    })

    app.post(path, {
      config: { ...config, limit: 'forgotPassword' },
      attachValidation: true,
      schema: {
        tags, summary: text.post, description: text.postDescription,
        consumes: ['application/x-www-form-urlencoded'],
        body: Type.Object({ email: Email, csrf_token: CsrfToken }, { additionalProperties: false }),
        response: { 200: Page },
      },
    }, async (req, reply) => {
      refuseCrossSite(req)
      const body = req.body as { email?: unknown; csrf_token?: unknown } | undefined
      const typed = typeof body?.email === 'string' ? body.email.slice(0, 255) : ''
      const presented = typeof body?.csrf_token === 'string' ? body.csrf_token : undefined
      if (!tokens.valid(req, kind, presented)) return refuseWithPage(req, reply, staleForm(), () => render(req, reply, { tone: 'error', text: FORM_EXPIRED }, typed))
      if (!(await services().mail.enabled())) throw mailDisabled()
      if (req.validationError) {
        const invalid = req.validationError
        if (!prefersHtml(req)) throw invalid
        reply.errorCode = 'VALIDATION_ERROR'
        return sendPage(reply, 400, render(req, reply, { tone: 'error', text: 'Enter the email address of your account, like name@example.com.' }, typed))
      }
      await request(req.body.email, req.id)
      return sendPage(reply, 200, mailRequestSentPage(kind))
    })
  }
}
