import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import type { FastifyRequest } from 'fastify'
import { policy } from '../../auth/policies.js'
import { requestActor } from '../../http/current-user.js'
import { memberViewer } from './member-viewer.js'
import { AddMemberBody, Done, MemberParams, MembersEnvelope, OwnerBody, RoleBody, TeamEnvelope, TeamParams } from './schemas.js'
import { memberView, teamView, type MemberViewer } from './view.js'

const tags = ['Teams']
const EMAIL_RULE = "A member's `email` is shown to that member and to holders of `users.view` (global admins); for anyone else it is null: " +
  'adding someone to a team needs no consent from them, so membership does not reveal their address.'

/** Membership and ownership. */
export const teamMemberRoutes: FastifyPluginAsyncTypebox = async (app) => {
  const teams = () => app.services.teamService
  /** The members as the list answers them (owner marked, addresses as `viewer` may see them). */
  const membersOf = async (request: FastifyRequest, teamId: string, viewer: MemberViewer = memberViewer(request)) => {
    const team = await teams().get(teamId, requestActor(request))
    return (await teams().members(team.id)).map((member) => memberView(member, team.ownerId, viewer))
  }

  app.get('/api/teams/:id/members', {
    config: { auth: policy.session({ teamPermission: 'team.members.view' }) },
    schema: {
      tags, summary: 'The members of a team',
      description: `${EMAIL_RULE} A non-member gets 404.`,
      params: TeamParams, response: { 200: MembersEnvelope },
    },
  }, async (request) => ({ success: true as const, data: { members: await membersOf(request, request.params.id) } }))

  app.post('/api/teams/:id/members', {
    config: { auth: policy.session({ teamPermission: 'team.members.manage' }) },
    schema: {
      tags, summary: 'Add an existing user to a team',
      description: 'By email or username; 404 when no such user, 409 ALREADY_MEMBER, 409 MEMBER_LIMIT_REACHED beyond `team.member_limit`, 409 DEFAULT_TEAM for a default team. ' +
        `Answers the members. ${EMAIL_RULE} Here the new member's address is shown too when \`login\` was that address (the caller typed it). Audit-logged (\`team.member_added\`).`,
      params: TeamParams, body: AddMemberBody, response: { 201: MembersEnvelope },
    },
  }, async (request, reply) => {
    const added = await teams().addMember(request.params.id, request.body.login, request.body.role, requestActor(request))
    const viewer = { ...memberViewer(request), ...(added.byEmail ? { typedEmailOf: added.userId } : {}) }
    return reply.code(201).send({ success: true as const, message: 'Member added.', data: { members: await membersOf(request, request.params.id, viewer) } })
  })

  app.put('/api/teams/:id/members/:userId', {
    config: { auth: policy.session({ teamPermission: 'team.members.manage' }) },
    schema: {
      tags, summary: "Change a member's team role",
      description: '409 LAST_TEAM_ADMIN when demoting the last team_admin; 409 OWNER_ROLE for the owner. Audit-logged (`team.member_role_changed`).',
      params: MemberParams, body: RoleBody, response: { 200: Done },
    },
  }, async (request) => {
    await teams().changeRole(request.params.id, request.params.userId, request.body.role, requestActor(request))
    return { success: true as const, message: 'Role changed.' }
  })

  app.delete('/api/teams/:id/members/:userId', {
    config: { auth: policy.session({ teamPermission: 'team.view' }) },
    schema: {
      tags, summary: 'Remove a member, or leave (your own user id)',
      description: 'Removing someone else needs team.members.manage (403 otherwise). The owner cannot be removed or leave (409 OWNER_CANNOT_LEAVE). ' +
        'Audit-logged (`team.member_removed`, or `team.member_left` for oneself).',
      params: MemberParams, response: { 200: Done },
    },
  }, async (request) => {
    await teams().removeMember(request.params.id, request.params.userId, requestActor(request))
    return { success: true as const, message: 'Member removed.' }
  })

  app.put('/api/teams/:id/owner', {
    config: { auth: policy.session({ teamPermission: 'team.view' }) },
    schema: {
      tags, summary: 'Transfer ownership to a member (owner or global admin)',
      description: 'The new owner becomes team_admin. Not for a default team (409 DEFAULT_TEAM). Anyone else gets 403. Audit-logged (`team.owner_transferred`).',
      params: TeamParams, body: OwnerBody, response: { 200: TeamEnvelope },
    },
  }, async (request) => {
    const actor = requestActor(request)
    const team = await teams().transferOwnership(request.params.id, request.body.user_id, actor)
    return { success: true as const, message: 'Ownership transferred.', data: { team: teamView(team, actor.userId) } }
  })
}
