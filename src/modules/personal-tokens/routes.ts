import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { policy } from '../../auth/policies.js'
import { userCaller } from '../../http/current-user.js'
import { OkMessage, paginate } from '../../http/envelope.js'
import { isoTime } from '../../lib/iso-time.js'
import { CreatedTokenEnvelope, CreateTokenBody, IdParams, TokensEnvelope, TokensQuery } from './schemas.js'
import { PERSONAL_TOKENS_PER_USER } from './service.js'
import { tokenView } from './view.js'

const tags = ['Personal access tokens']

/** How a token is used and what ends it, said once for the OpenAPI descriptions. */
export const TOKEN_RULES = 'Send it as `Authorization: Bearer service_pat_…` to the routes that accept a session or a bearer token; it is checked ' +
  'like an OAuth access token: the route\'s scope (else 403 `insufficient_scope`), the team it is bound to (another team → 403), the login ' +
  'switch (403 LOGIN_DISABLED except for global admins). It is refused (401) once expired, deleted, or while its owner is not a member of its ' +
  'team; it ends for good when its owner\'s password is changed or reset, or the owner (or its team) is deleted. It is not an OAuth token: ' +
  'OAuth introspection answers `active: false` for it, satellites\' MCP endpoints refuse it, and `/api/oauth2/userinfo` (OpenID Connect) refuses it.'

/** The caller's own personal access tokens: made, listed and deleted with a session (a token cannot make another). */
export const personalTokenRoutes: FastifyPluginAsyncTypebox = async (app) => {
  const tokens = () => app.services.personalTokens

  app.post('/api/users/me/tokens', {
    config: { auth: policy.session() },
    schema: {
      tags, summary: 'Create a personal access token (shown once)',
      description: `The answer carries the token once; only its HMAC digest is stored, so it cannot be shown again. At most ${PERSONAL_TOKENS_PER_USER} ` +
        'unexpired tokens per user (409 TOKEN_LIMIT_REACHED, also under concurrent creations). Audit-logged (`personal_token.created`, without the token). ' +
        TOKEN_RULES,
      body: CreateTokenBody, response: { 201: CreatedTokenEnvelope },
    },
  }, async (request, reply) => {
    const { name, scopes, team_id: teamId, expires_in_days: expiresInDays } = request.body
    const { token, row } = await tokens().create({ userId: userCaller(request).userId, ip: request.ip }, { name, scopes, teamId, expiresInDays })
    return reply.code(201).send({
      success: true as const,
      message: 'Personal access token created. Copy it now: it is not shown again.',
      data: { token, id: row.id, name: row.name, scopes: row.scope.split(' '), team_id: row.teamId, expires_at: isoTime(row.expiresAt), created_at: isoTime(row.createdAt) },
    })
  })

  app.get('/api/users/me/tokens', {
    config: { auth: policy.session() },
    schema: {
      tags, summary: "The caller's personal access tokens, newest first (never their values)",
      description: 'With `last_used_at` (recorded at most once a minute per token). Expired tokens are listed with `expired: true` for a week, then deleted.',
      querystring: TokensQuery, response: { 200: TokensEnvelope },
    },
  }, async (request) => {
    const { limit = 20, offset = 0 } = request.query
    const { rows, total } = await tokens().list(userCaller(request).userId, limit, offset)
    const now = tokens().now()
    return { success: true as const, data: { tokens: rows.map((row) => tokenView(row, now)), pagination: paginate(total, limit, offset) } }
  })

  app.delete('/api/users/me/tokens/:id', {
    config: { auth: policy.session() },
    schema: {
      tags, summary: 'Delete one of the caller\'s personal access tokens',
      description: 'Refused at once on every instance. 404 for an id that is not one of the caller\'s tokens. Audit-logged (`personal_token.revoked`, reason `revoked_by_owner`).',
      params: IdParams, response: { 200: OkMessage },
    },
  }, async (request) => {
    await tokens().revokeOwn({ userId: userCaller(request).userId, ip: request.ip }, request.params.id)
    return { success: true as const, message: 'Personal access token deleted.' }
  })
}
