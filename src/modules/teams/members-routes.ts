import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import type { FastifyRequest } from 'fastify'
import { policy } from '../../auth/policies.js'
import { teamActor } from './actor.js'
import { AddMemberBody, Done, MemberParams, MembersEnvelope, OwnerBody, RoleBody, TeamEnvelope, TeamParams } from './schemas.js'
import { memberView, teamView } from './view.js'

const tags = ['Teams']

/** Membership and ownership. */
export const teamMemberRoutes: FastifyPluginAsyncTypebox = async (app) => {
  const teams = () => app.services.teamService
  /** The members as the list answers them (owner marked). */
  const membersOf = async (request: FastifyRequest, teamId: string) => {
    const team = await teams().get(teamId, teamActor(request))
    return (await teams().members(team.id)).map((member) => memberView(member, team.ownerId))
  }

  app.get('/api/teams/:id/members', {
    config: { auth: policy.session({ teamPermission: 'team.members.view' }) },
    schema: { tags, summary: 'The members of a team', params: TeamParams, response: { 200: MembersEnvelope } },
  }, async (request) => ({ success: true as const, data: { members: await membersOf(request, request.params.id) } }))

  app.post('/api/teams/:id/members', {
    config: { auth: policy.session({ teamPermission: 'team.members.manage' }) },
    schema: {
      tags, summary: 'Add an existing user to a team',
      description: 'By email or username; 404 when no such user, 409 ALREADY_MEMBER, 409 MEMBER_LIMIT_REACHED beyond `team.member_limit`, 409 DEFAULT_TEAM for a default team.',
      params: TeamParams, body: AddMemberBody, response: { 201: MembersEnvelope },
    },
  }, async (request, reply) => {
    await teams().addMember(request.params.id, request.body.login, request.body.role)
    return reply.code(201).send({ success: true as const, message: 'Member added.', data: { members: await membersOf(request, request.params.id) } })
  })

  app.put('/api/teams/:id/members/:userId', {
    config: { auth: policy.session({ teamPermission: 'team.members.manage' }) },
    schema: {
      tags, summary: "Change a member's team role",
      description: '409 LAST_TEAM_ADMIN when demoting the last team_admin; 409 OWNER_ROLE for the owner.',
      params: MemberParams, body: RoleBody, response: { 200: Done },
    },
  }, async (request) => {
    await teams().changeRole(request.params.id, request.params.userId, request.body.role)
    return { success: true as const, message: 'Role changed.' }
  })

  app.delete('/api/teams/:id/members/:userId', {
    config: { auth: policy.session({ teamPermission: 'team.view' }) },
    schema: {
      tags, summary: 'Remove a member, or leave (your own user id)',
      description: 'Removing someone else needs team.members.manage (403 otherwise). The owner cannot be removed or leave (409 OWNER_CANNOT_LEAVE).',
      params: MemberParams, response: { 200: Done },
    },
  }, async (request) => {
    await teams().removeMember(request.params.id, request.params.userId, teamActor(request))
    return { success: true as const, message: 'Member removed.' }
  })

  app.put('/api/teams/:id/owner', {
    config: { auth: policy.session({ teamPermission: 'team.view' }) },
    schema: {
      tags, summary: 'Transfer ownership to a member (owner or global admin)',
      description: 'The new owner becomes team_admin. Not for a default team (409 DEFAULT_TEAM). Anyone else gets 403.',
      params: TeamParams, body: OwnerBody, response: { 200: TeamEnvelope },
    },
  }, async (request) => {
    const actor = teamActor(request)
    const team = await teams().transferOwnership(request.params.id, request.body.user_id, actor)
    return { success: true as const, message: 'Ownership transferred.', data: { team: teamView(team, actor.userId) } }
  })
}
