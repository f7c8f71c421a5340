import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { policy } from '../../auth/policies.js'
import { paginate } from '../../http/envelope.js'
import { satelliteActor } from './actor.js'
import { CreatedTokenEnvelope, CreateTokenBody, Done, IdParams, TeamParams, TeamTokensQuery, TokensEnvelope, TokensQuery } from './schemas.js'
import { tokenView } from './views.js'
import type { RegistrationTokenRow } from '../../db/repositories/registration-tokens.js'
import { isoTime } from '../../lib/iso-time.js'

const tags = ['Satellites']
const shownOnce = 'The token is in this answer only: only its `id` (the JWT `jti`) is stored, so it cannot be shown again. ' +
  'It is an HS256 JWT (claims `iss`, `aud: "satellite-registration"`, `jti`, `scope`, `team_id`, `created_by`, `iat`, `exp`) with the prefix `service_satellite_<scope>_`, ' +
  'and pairs one satellite, once.'

/** Registration tokens: created by admins, handed to a satellite, spent by POST /api/satellites/register. */
export const registrationTokenRoutes: FastifyPluginAsyncTypebox = async (app) => {
  const tokens = () => app.services.registrationTokens
  const created = (token: string, row: RegistrationTokenRow) => ({
    success: true as const,
    message: 'Registration token created. Copy it now: it is not shown again.',
    data: { token, id: row.id, scope: row.scope, team_id: row.teamId, expires_at: isoTime(row.expiresAt) },
  })
  const listed = ({ rows, total }: { rows: RegistrationTokenRow[]; total: number }, limit: number, offset: number) => {
    const now = tokens().now()
    return { success: true as const, data: { tokens: rows.map((row) => tokenView(row, now)), pagination: paginate(total, limit, offset) } }
  }

  app.post('/api/satellites/global/registration-tokens', {
    config: { auth: policy.session({ permission: 'satellites.manage' }) },
    schema: {
      tags, summary: 'Create a registration token for a global satellite',
      description: `Lifetime 1 hour unless \`expires_in_hours\` (1–72) says otherwise. ${shownOnce}`,
      body: CreateTokenBody, response: { 201: CreatedTokenEnvelope },
    },
  }, async (request, reply) => {
    const { token, row } = await tokens().issue('global', null, request.body.expires_in_hours, satelliteActor(request))
    return reply.code(201).send(created(token, row))
  })

  app.post('/api/teams/:teamId/satellites/registration-tokens', {
    config: { auth: policy.session({ teamPermission: 'team.satellites.manage' }) },
    schema: {
      tags: [...tags, 'Teams'], summary: "Create a registration token for one of the team's satellites",
      description: `For the team's team_admins and global admins (404 for anyone else). Lifetime 24 hours unless \`expires_in_hours\` (1–72) says otherwise. ${shownOnce}`,
      params: TeamParams, body: CreateTokenBody, response: { 201: CreatedTokenEnvelope },
    },
  }, async (request, reply) => {
    const { token, row } = await tokens().issue('team', request.params.teamId, request.body.expires_in_hours, satelliteActor(request))
    return reply.code(201).send(created(token, row))
  })

  app.get('/api/satellites/registration-tokens', {
    config: { auth: policy.session({ permission: 'satellites.view' }) },
    schema: {
      tags, summary: 'Every registration token, newest first (never the token itself)',
      description: 'Filters: `status`, `scope`, `team_id`. Tokens are deleted 7 days after they expire.',
      querystring: TokensQuery, response: { 200: TokensEnvelope },
    },
  }, async (request) => {
    const { limit = 20, offset = 0, status, scope, team_id: teamId } = request.query
    return listed(await tokens().list({ limit, offset, status, scope, teamId }), limit, offset)
  })

  app.get('/api/teams/:teamId/satellites/registration-tokens', {
    config: { auth: policy.session({ teamPermission: 'team.satellites.view' }) },
    schema: {
      tags: [...tags, 'Teams'], summary: "The team's registration tokens, newest first",
      params: TeamParams, querystring: TeamTokensQuery, response: { 200: TokensEnvelope },
    },
  }, async (request) => {
    const { limit = 20, offset = 0, status } = request.query
    return listed(await tokens().list({ limit, offset, status, teamId: request.params.teamId }), limit, offset)
  })

  app.delete('/api/satellites/registration-tokens/:id', {
    config: { auth: policy.session() },
    schema: {
      tags, summary: 'Revoke an unused registration token',
      description: 'A global admin revokes any token, a team_admin their team\'s (404 for anyone else). ' +
        '409 TOKEN_ALREADY_USED once a satellite registered with it (delete the satellite instead); 409 TOKEN_ALREADY_REVOKED.',
      params: IdParams, response: { 200: Done },
    },
  }, async (request) => {
    await tokens().revoke(request.params.id, satelliteActor(request))
    return { success: true as const, message: 'Registration token revoked.' }
  })
}
