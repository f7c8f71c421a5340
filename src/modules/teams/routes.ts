import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import type { FastifyRequest } from 'fastify'
import { policy } from '../../auth/policies.js'
import { assertTeamInReach, boundTeam } from '../../http/team-reach.js'
import { requestActor, userCaller } from '../../http/current-user.js'
import { CreateTeamBody, Done, TeamEnvelope, TeamParams, TeamsEnvelope, UpdateTeamBody } from './schemas.js'
import { teamView } from './view.js'

const tags = ['Teams']
const teamsRead = policy.dual('teams:read')
/** A bearer token bound to a team at consent reaches that team only. */
const BOUND_TEXT = 'A bearer token bound to another team at consent → 403 `FORBIDDEN` with `details.bound_team_id`, even for a member (or a global admin) of this team.'

/** Teams. Membership and permissions come from the route policy (`:id`). */
export const teamRoutes: FastifyPluginAsyncTypebox = async (app) => {
  const teams = () => app.services.teamService

  app.get('/api/teams/me/default', {
    config: { auth: teamsRead },
    schema: {
      tags, summary: "The caller's default team",
      description: 'A bearer token bound at consent to a team other than the default one → 403 `FORBIDDEN` with `details.bound_team_id`: it reaches that team only.',
      response: { 200: TeamEnvelope },
    },
  }, async (request) => {
    const actor = requestActor(request)
    const caller = userCaller(request)
    // The credential lookup carried the default team: no second query.
    const team = await teams().defaultOf(actor.userId, caller.defaultTeam)
    assertTeamInReach(caller, team.id)
    return { success: true as const, data: { team: teamView(team, actor.userId) } }
  })

  const listMine = {
    config: { auth: teamsRead },
    schema: {
      tags, summary: "The caller's teams, with their role in each (default team first)",
      description: 'A bearer token bound to a team at consent lists that team alone (none once the caller has left it); sessions and tokens bound to no team list every team of the caller.',
      response: { 200: TeamsEnvelope },
    },
  }
  const mine = async (request: FastifyRequest) => {
    const actor = requestActor(request)
    const bound = boundTeam(userCaller(request))
    // The token's team is all it reaches, so it is all its list shows.
    const list = (await teams().forUser(actor.userId)).filter((team) => bound === null || team.id === bound)
    return { success: true as const, data: { teams: list.map((team) => teamView(team, actor.userId)) } }
  }
  app.get('/api/teams/me', listMine, mine)
  app.get('/api/users/me/teams', { ...listMine, schema: { ...listMine.schema, tags: ['Users', 'Teams'] } }, mine)

  app.post('/api/teams', {
    config: { auth: policy.session({ permission: 'teams.create' }) },
    schema: {
      tags, summary: 'Create a team',
      description: 'The caller becomes its owner and team_admin. 409 TEAM_LIMIT_REACHED beyond `team.creation_limit` non-default teams. The slug comes from the name, made unique with -2, -3…, and never changes. Audit-logged (`team.created`).',
      body: CreateTeamBody, response: { 201: TeamEnvelope },
    },
  }, async (request, reply) => {
    const actor = requestActor(request)
    const team = await teams().create(actor, request.body)
    return reply.code(201).send({ success: true as const, message: 'Team created.', data: { team: teamView(team, actor.userId) } })
  })

  app.get('/api/teams/:id', {
    config: { auth: policy.dual('teams:read', { teamPermission: 'team.view' }) },
    schema: { tags, summary: 'A team the caller belongs to (404 for non-members)', description: BOUND_TEXT, params: TeamParams, response: { 200: TeamEnvelope } },
  }, async (request) => {
    const actor = requestActor(request)
    return { success: true as const, data: { team: teamView(await teams().get(request.params.id, actor), actor.userId) } }
  })

  app.put('/api/teams/:id', {
    config: { auth: policy.session({ teamPermission: 'team.edit' }) },
    schema: {
      tags, summary: 'Rename a team or change its description',
      description: 'A default team keeps its name (409 DEFAULT_TEAM); the slug never changes.',
      params: TeamParams, body: UpdateTeamBody, response: { 200: TeamEnvelope },
    },
  }, async (request) => {
    const actor = requestActor(request)
    const team = await teams().update(request.params.id, request.body, actor)
    return { success: true as const, message: 'Team updated.', data: { team: teamView(team, actor.userId) } }
  })

  app.delete('/api/teams/:id', {
    config: { auth: policy.session({ teamPermission: 'team.delete' }) },
    schema: {
      tags, summary: 'Delete a team (its owner or a global admin)',
      description: 'Not a default team (409 DEFAULT_TEAM). A team_admin who is not the owner gets 403. Audit-logged (`team.deleted`).',
      params: TeamParams, response: { 200: Done },
    },
  }, async (request) => {
    await teams().delete(request.params.id, requestActor(request))
    return { success: true as const, message: 'Team deleted.' }
  })
}
