import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import type { FastifyReply, FastifyRequest } from 'fastify'
import { Type } from 'typebox'
import { policy } from '../../auth/policies.js'
import { optionalSession } from '../../auth/sessions.js'
import type { InvitationWithNames } from '../../db/repositories/invitations.js'
import { AppError } from '../../http/errors.js'
import { sendPage } from '../../http/pages.js'
import type { FormTokens } from '../auth/form-tokens.js'
import { ACCOUNT_PAGES, SIGN_IN_LINK } from '../auth/page-links.js'
import type { Notice } from '../auth/pages.js'
import { Password, Username } from '../users/schemas.js'
import { ACCEPT_PAGE_PREFIX } from './links.js'
import { assertMayAct, CROSS_SITE, CsrfToken, FORM_EXPIRED, Page, PageForms, SeeOther, staleForm } from './page-forms.js'
import { acceptPage, joinedPage, type AcceptState } from './pages.js'
import { TokenParams } from './schemas.js'

const tags = ['Teams']
const HINT = 'Ask the team that invited you for a new invitation, or sign in.'
const refusals = { hint: HINT, links: [SIGN_IN_LINK] }

/**
 * The page behind an invitation's link (when no frontend is configured): what it invites to, and
 * what the visitor can do — accept, sign in with the invited account, or register it.
 */
export const acceptPageRoutes: FastifyPluginAsyncTypebox<{ forms: PageForms; tokens: FormTokens }> = async (app, { forms, tokens }) => {
  const services = () => app.services
  const pathOf = (token: string) => `${ACCEPT_PAGE_PREFIX}${encodeURIComponent(token)}`

  /** The page for whoever opens it: one form token at most per page (they share the browser's cookie). */
  async function render(request: FastifyRequest, reply: FastifyReply, invitation: InvitationWithNames, token: string, notice?: Notice, username?: string): Promise<string> {
    const session = await optionalSession(services().sessions, request, reply)
    let state: AcceptState
    if (session === null) {
      const registration = await services().settings.get('global.enable_email_registration')
      state = { kind: 'signed-out', csrfToken: tokens.issue(request, reply, 'register-invited', token), registration, username }
    } else if (session.user.email.toLowerCase() !== invitation.email) {
      state = { kind: 'other-address', signedInAs: session.user.email }
    } else if (!session.user.emailVerified) {
      state = { kind: 'unverified', resendHref: (await services().mail.enabled()) ? ACCOUNT_PAGES.resendVerification : undefined }
    } else if ((await services().teams.roleOf(session.userId, invitation.teamId)) !== null) {
      state = { kind: 'member' }
    } else {
      state = { kind: 'can-accept', csrfToken: tokens.issue(request, reply, 'accept-invitation', `${session.credentialId}.${token}`) }
    }
    return acceptPage(invitation, token, state, notice)
  }

  app.get(`${ACCEPT_PAGE_PREFIX}:token`, {
    config: { auth: policy.public(), limit: 'loginOrRegister', htmlRefusals: refusals },
    schema: {
      tags, summary: 'The page of an invitation link (HTML)',
      description: 'The link of an invitation mail when `global.page_url` is empty. Shows the team, who invited, the address and the role. Signed in ' +
        'with the invited address, verified: a button that accepts. Signed in otherwise: why not (another address, an unverified one, a member ' +
        'already). Signed out: a link to the sign-in page and, while registration is open, a form that creates the account for the invited ' +
        'address (verified by the invitation). 400 INVALID_TOKEN for an unknown, accepted or revoked invitation, 400 INVITATION_EXPIRED past its ' +
        'lifetime, as pages. Counts against the per-IP login and registration limit.',
      params: TokenParams, response: { 200: Page },
    },
  }, async (request, reply) => {
    const { token } = request.params
    const invitation = await services().invitations.lookup(token)
    return sendPage(reply, 200, await render(request, reply, invitation, token))
  })

  app.post(`${ACCEPT_PAGE_PREFIX}:token`, {
    config: { auth: policy.public(), htmlRefusals: refusals },
    schema: {
      tags, summary: 'Accept an invitation from its page',
      description: 'The accept button (form-encoded): the rules of `POST /api/invitations/{token}/accept`, refusals as pages with their status. ' +
        `Without a session: 303 back to the page. Its \`csrf_token\` is bound to the session and the invitation. ${CROSS_SITE}`,
      consumes: ['application/x-www-form-urlencoded'],
      params: TokenParams, body: Type.Object({ csrf_token: CsrfToken }, { additionalProperties: false }),
      response: { 200: Page, 303: SeeOther },
    },
  }, async (request, reply) => {
    forms.refuseCrossSite(request)
    const { token } = request.params
    const session = await optionalSession(services().sessions, request, reply)
    if (session === null) return reply.redirect(pathOf(token), 303)
    if (!tokens.valid(request, 'accept-invitation', request.body.csrf_token, `${session.credentialId}.${token}`)) {
      const invitation = await services().invitations.lookup(token)
      return forms.refuseWithPage(request, reply, staleForm(), () => render(request, reply, invitation, token, { tone: 'error', text: FORM_EXPIRED }))
    }
    await assertMayAct(session.user, services().settings)
    const { teamId } = await services().invitations.accept(token, session.user, request.ip)
    const team = await services().teams.find(teamId)
    return sendPage(reply, 200, joinedPage(team?.name ?? 'the team'))
  })

  app.post(`${ACCEPT_PAGE_PREFIX}:token/register`, {
    config: { auth: policy.public(), limit: 'loginOrRegister', htmlRefusals: refusals },
    schema: {
      tags, summary: 'Register the invited address from the invitation page',
      description: 'The page\'s registration form (form-encoded): `POST /api/auth/email/register` for the invited address with this invitation, ' +
        'so the address counts as verified. It does not join the team: success signs the browser in and answers 303 back to the page, which then ' +
        'offers to accept. A refusal (409 USERNAME_TAKEN, 409 EMAIL_TAKEN, 403 REGISTRATION_DISABLED, …) shows the page again with the reason. ' +
        `Counts against the per-IP login and registration limit. ${CROSS_SITE}`,
      consumes: ['application/x-www-form-urlencoded'],
      params: TokenParams,
      body: Type.Object({ username: Username, password: Password, csrf_token: CsrfToken }, { additionalProperties: false }),
      response: { 303: SeeOther },
    },
  }, async (request, reply) => {
    forms.refuseCrossSite(request)
    const { token } = request.params
    const { username, password, csrf_token: csrfToken } = request.body
    const invitation = await services().invitations.lookup(token)
    const again = (error: AppError) => forms.refuseWithPage(request, reply, error, () => render(request, reply, invitation, token, { tone: 'error', text: error.message }, username))
    if (!tokens.valid(request, 'register-invited', csrfToken, token)) return again(staleForm())
    let session
    try {
      ;({ session } = await services().accounts.register({ username, email: invitation.email, password, invitation_token: token }, { ip: request.ip, requestId: request.id }))
    } catch (error) {
      if (!(error instanceof AppError)) throw error
      return again(error)
    }
    if (session) services().sessions.setCookie(reply, session.id, session.expiresAt)
    return reply.redirect(pathOf(token), 303)
  })
}
