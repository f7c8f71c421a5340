import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { policy } from '../../auth/policies.js'
import { currentUser, requestActor } from '../../http/current-user.js'
import { paginate } from '../../http/envelope.js'
import { teamView } from '../teams/view.js'
import {
  AcceptedEnvelope, CreatedEnvelope, CreateInvitationBody, Done, InvitationParams, InvitationsEnvelope, InvitationsQuery,
  PublicInvitationEnvelope, TeamParams, TokenParams,
} from './schemas.js'
import { invitationView, publicInvitationView } from './views.js'

const tags = ['Teams']
const manage = policy.session({ teamPermission: 'team.members.manage' })
const SEATS = 'A pending invitation (neither accepted, revoked nor expired) holds a seat: members plus pending invitations stay within `team.member_limit`.'
const TOKEN_ERRORS = '400 INVALID_TOKEN for an unknown, accepted or revoked invitation (the text says which), 400 INVITATION_EXPIRED past its 7 days.'

/** Invitations to a team by email: its admins invite, list and revoke; the invited person looks and accepts. */
export const invitationRoutes: FastifyPluginAsyncTypebox = async (app) => {
  const invitations = () => app.services.invitations

  app.post('/api/teams/:teamId/invitations', {
    config: { auth: manage },
    schema: {
      tags, summary: 'Invite someone to the team by email',
      description: 'A single-use invitation, valid 7 days, for the address and team role given. When mail sending is on (`global.send_mail` and SMTP ' +
        'configured) the address gets a mail with the link; `mail_sent` says whether it went out. `accept_url` carries the token and is in this ' +
        'answer only (it is stored as a digest): pass it on yourself when mail is off. The link leads to `<global.page_url>/invitations/<token>` when ' +
        'a frontend is configured, else to this service\'s accept page `/api/auth/invitations/<token>`. ' + SEATS + ' 409 MEMBER_LIMIT_REACHED past it, ' +
        '409 ALREADY_MEMBER when an account with this address is a member, 409 INVITATION_PENDING when the address has a pending invitation to the team ' +
        '(revoke it to send a new one), 409 DEFAULT_TEAM for a default team. Audit-logged (`invitation.created`, with the address and role).',
      params: TeamParams, body: CreateInvitationBody, response: { 201: CreatedEnvelope },
    },
  }, async (request, reply) => {
    const created = await invitations().create(request.params.teamId, request.body, requestActor(request), request.id)
    return reply.code(201).send({
      success: true as const,
      message: created.mailSent ? 'Invitation created and mailed.' : 'Invitation created; no mail was sent: pass the link on yourself.',
      data: { invitation: invitationView(created.row, invitations().now()), accept_url: created.acceptUrl, mail_sent: created.mailSent },
    })
  })

  app.get('/api/teams/:teamId/invitations', {
    config: { auth: manage },
    schema: {
      tags, summary: "The team's invitations, newest first (never a token)",
      description: 'Pending invitations unless `status` asks for others (`all` for every one). Invitations are deleted a week after they expire.',
      params: TeamParams, querystring: InvitationsQuery, response: { 200: InvitationsEnvelope },
    },
  }, async (request) => {
    const { limit = 20, offset = 0, status = 'pending' } = request.query
    const { rows, total } = await invitations().list(request.params.teamId, { limit, offset, status: status === 'all' ? undefined : status })
    const now = invitations().now()
    return { success: true as const, data: { invitations: rows.map((row) => invitationView(row, now)), pagination: paginate(total, limit, offset) } }
  })

  app.delete('/api/teams/:teamId/invitations/:id', {
    config: { auth: manage },
    schema: {
      tags, summary: 'Revoke an invitation',
      description: 'Its link stops working and its seat is freed. 404 for an id that is not an invitation of this team; 409 TOKEN_ALREADY_USED once ' +
        'accepted (remove the member instead), 409 TOKEN_ALREADY_REVOKED. Audit-logged (`invitation.revoked`).',
      params: InvitationParams, response: { 200: Done },
    },
  }, async (request) => {
    await invitations().revoke(request.params.teamId, request.params.id, requestActor(request))
    return { success: true as const, message: 'Invitation revoked.' }
  })

  app.get('/api/invitations/:token', {
    config: { auth: policy.public(), limit: 'loginOrRegister' },
    schema: {
      tags, summary: 'What an invitation link invites to (public)',
      description: 'For the page that shows the invitation before it is accepted: the team, who invited, the invited address and role, and until ' +
        `when it works. Does not use it up. ${TOKEN_ERRORS} Counts against the per-IP login and registration limit.`,
      params: TokenParams, response: { 200: PublicInvitationEnvelope },
    },
  }, async (request) => ({ success: true as const, data: publicInvitationView(await invitations().lookup(request.params.token)) }))

  app.post('/api/invitations/:token/accept', {
    config: { auth: policy.session() },
    schema: {
      tags, summary: 'Accept an invitation: join the team',
      description: 'The caller joins the team with the invited role when their account\'s address is the invited one (compared case-insensitively) and ' +
        'verified: 403 INVITATION_EMAIL_MISMATCH for another address, 403 EMAIL_NOT_VERIFIED for an unverified one. Single use: of concurrent ' +
        `acceptances one succeeds. ${TOKEN_ERRORS} 409 ALREADY_MEMBER when the caller is a member already (the invitation is left as it is, ` +
        'and holds no seat); 409 MEMBER_LIMIT_REACHED when the limit was lowered below the seats taken. A person without an account registers ' +
        'first (`POST /api/auth/email/register` with `invitation_token`, which verifies the invited address), then accepts. ' +
        'Answers the team. Audit-logged (`invitation.accepted` and `team.member_added`).',
      params: TokenParams, response: { 200: AcceptedEnvelope },
    },
  }, async (request) => {
    const user = await currentUser(request, app.services.users)
    const { teamId } = await invitations().accept(request.params.token, user, request.ip)
    const actor = requestActor(request)
    return { success: true as const, message: 'Invitation accepted.', data: { team: teamView(await app.services.teamService.get(teamId, actor), actor.userId) } }
  })
}
