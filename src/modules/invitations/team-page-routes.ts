import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import type { FastifyReply, FastifyRequest } from 'fastify'
import { Type } from 'typebox'
import { policy } from '../../auth/policies.js'
import { optionalSession, type SessionCaller } from '../../auth/sessions.js'
import { requestActor } from '../../http/current-user.js'
import { AppError, errors } from '../../http/errors.js'
import { sendPage } from '../../http/pages.js'
import type { FormTokens } from '../auth/form-tokens.js'
import { ACCOUNT_PAGES, SIGN_IN_LINK } from '../auth/page-links.js'
import type { Notice } from '../auth/pages.js'
import { assertMayAct, CROSS_SITE, CsrfToken, FORM_EXPIRED, Page, PageForms, SeeOther, staleForm } from './page-forms.js'
import { TEAM_INVITATIONS_PAGE, teamInvitationsPage, type ManagedTeam, type TeamInvitationsView } from './pages.js'

const tags = ['Teams']
const refusals = { hint: 'Go back to the team invitations page and try again.', links: [{ href: TEAM_INVITATIONS_PAGE, label: 'Team invitations' }, SIGN_IN_LINK] }
const TeamRole = Type.Union([Type.Literal('team_admin'), Type.Literal('team_user')])
const Id = Type.String({ minLength: 1, maxLength: 100 })
/** The most pending invitations one team's section lists (the API pages through more). */
const LISTED = 100

/**
 * The page where the signed-in user invites people to the teams whose members they manage (team
 * admin of a team that is not a default one), sees the pending invitations and revokes them.
 */
export const teamPageRoutes: FastifyPluginAsyncTypebox<{ forms: PageForms; tokens: FormTokens }> = async (app, { forms, tokens }) => {
  const services = () => app.services

  async function managedTeams(userId: string): Promise<ManagedTeam[]> {
    const teams = (await services().teamService.forUser(userId)).filter((team) => team.role === 'team_admin' && !team.isDefault)
    return Promise.all(teams.map(async (team) => ({
      id: team.id, name: team.name, pending: (await services().invitations.list(team.id, { status: 'pending', limit: LISTED, offset: 0 })).rows,
    })))
  }

  /** One form token serves the page's forms (invite, revoke): each is bound to the session. */
  async function render(request: FastifyRequest, reply: FastifyReply, session: SessionCaller, extra: Pick<TeamInvitationsView, 'notice' | 'created'> = {}): Promise<string> {
    const csrfToken = tokens.issue(request, reply, 'invite-to-team', session.credentialId)
    return teamInvitationsPage({ teams: await managedTeams(session.userId), inviteToken: csrfToken, revokeToken: csrfToken, ...extra })
  }

  /** The same answer as the API's route policy: a team the caller does not manage is not found (or forbidden to a member). */
  async function assertManages(session: SessionCaller, teamId: string): Promise<void> {
    if (session.role === 'global_admin') return
    const role = await services().teams.roleOf(session.userId, teamId)
    if (role === null) throw errors.notFound('Team')
    if (role !== 'team_admin') throw errors.forbidden({ required_permission: 'team.members.manage' })
  }

  /** The signed-in session behind a form, with a valid token; else the answer to give instead. */
  async function formSession(request: FastifyRequest, reply: FastifyReply, csrfToken: string | undefined): Promise<SessionCaller | FastifyReply> {
    forms.refuseCrossSite(request)
    const session = await optionalSession(services().sessions, request, reply)
    if (session === null) return reply.redirect(ACCOUNT_PAGES.signIn, 303)
    if (!tokens.valid(request, 'invite-to-team', csrfToken, session.credentialId)) {
      return forms.refuseWithPage(request, reply, staleForm(), () => render(request, reply, session, { notice: { tone: 'error', text: FORM_EXPIRED } }))
    }
    await assertMayAct(session.user, services().settings)
    return session
  }
  const isReply = (value: SessionCaller | FastifyReply): value is FastifyReply => !('kind' in value)

  app.get(TEAM_INVITATIONS_PAGE, {
    config: { auth: policy.public(), htmlRefusals: refusals },
    schema: {
      tags, summary: 'The team invitations page (HTML)',
      description: 'For each team the signed-in user is a team_admin of (not a default team): a form inviting an address with a role, and the ' +
        'pending invitations with a revoke button each. Without a session: 303 to the sign-in page. `revoked=1` adds the notice a revocation ' +
        'leads to. Programs use `/api/teams/{teamId}/invitations`.',
      querystring: Type.Object({ revoked: Type.Optional(Type.Literal('1', { description: 'Say that an invitation was just revoked.' })) }, { additionalProperties: false }),
      response: { 200: Page, 303: SeeOther },
    },
  }, async (request, reply) => {
    const session = await optionalSession(services().sessions, request, reply)
    if (session === null) return reply.redirect(ACCOUNT_PAGES.signIn, 303)
    const notice: Notice | undefined = request.query.revoked === '1' ? { tone: 'success', text: 'The invitation was revoked: its link no longer works.' } : undefined
    return sendPage(reply, 200, await render(request, reply, session, { notice }))
  })

  app.post(`${TEAM_INVITATIONS_PAGE}/invite`, {
    config: { auth: policy.public(), htmlRefusals: refusals },
    schema: {
      tags, summary: 'Invite someone from the team invitations page',
      description: 'The page\'s invite form (form-encoded): the rules of `POST /api/teams/{teamId}/invitations`. Success shows the page again with ' +
        'the invitation\'s link, this once, and whether a mail went out; a refusal (409 MEMBER_LIMIT_REACHED, ALREADY_MEMBER, INVITATION_PENDING, …) ' +
        `shows it with the reason and its status. Without a session: 303 to the sign-in page. ${CROSS_SITE}`,
      consumes: ['application/x-www-form-urlencoded'],
      body: Type.Object({
        team_id: Id, email: Type.String({ format: 'email', maxLength: 255 }), role: TeamRole, csrf_token: CsrfToken,
      }, { additionalProperties: false }),
      response: { 200: Page, 303: SeeOther },
    },
  }, async (request, reply) => {
    const session = await formSession(request, reply, request.body.csrf_token)
    if (isReply(session)) return session
    const { team_id: teamId, email, role } = request.body
    try {
      await assertManages(session, teamId)
      const created = await services().invitations.create(teamId, { email, role }, requestActor(request, session), request.id)
      const shown = { email: created.row.email, acceptUrl: created.acceptUrl, mailSent: created.mailSent }
      return sendPage(reply, 200, await render(request, reply, session, { created: shown }))
    } catch (error) {
      if (!(error instanceof AppError)) throw error
      return forms.refuseWithPage(request, reply, error, () => render(request, reply, session, { notice: { tone: 'error', text: error.message } }))
    }
  })

  app.post(`${TEAM_INVITATIONS_PAGE}/revoke`, {
    config: { auth: policy.public(), htmlRefusals: refusals },
    schema: {
      tags, summary: 'Revoke an invitation from the team invitations page',
      description: 'A revoke button (form-encoded): the rules of `DELETE /api/teams/{teamId}/invitations/{id}`; success answers 303 to the page ' +
        `with a notice, a refusal shows the page with the reason. Without a session: 303 to the sign-in page. ${CROSS_SITE}`,
      consumes: ['application/x-www-form-urlencoded'],
      body: Type.Object({ team_id: Id, invitation_id: Id, csrf_token: CsrfToken }, { additionalProperties: false }),
      response: { 303: SeeOther },
    },
  }, async (request, reply) => {
    const session = await formSession(request, reply, request.body.csrf_token)
    if (isReply(session)) return session
    const { team_id: teamId, invitation_id: id } = request.body
    try {
      await assertManages(session, teamId)
      await services().invitations.revoke(teamId, id, requestActor(request, session))
    } catch (error) {
      if (!(error instanceof AppError)) throw error
      return forms.refuseWithPage(request, reply, error, () => render(request, reply, session, { notice: { tone: 'error', text: error.message } }))
    }
    return reply.redirect(`${TEAM_INVITATIONS_PAGE}?revoked=1`, 303)
  })
}
