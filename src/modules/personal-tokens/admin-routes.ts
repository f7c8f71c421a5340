import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { policy } from '../../auth/policies.js'
import { userCaller } from '../../http/current-user.js'
import { OkMessage, paginate } from '../../http/envelope.js'
import { AdminTokensEnvelope, AdminTokensQuery, IdParams } from './schemas.js'
import { ownedTokenView } from './view.js'

const tags = ['Admin', 'Personal access tokens']

/**
 * Global admins' view of every user's personal access tokens. Listing needs `users.view` and
 * deleting `users.edit`, the permissions that already cover reading and changing accounts.
 */
export const adminPersonalTokenRoutes: FastifyPluginAsyncTypebox = async (app) => {
  const tokens = () => app.services.personalTokens

  app.get('/api/admin/tokens', {
    config: { auth: policy.session({ permission: 'users.view' }) },
    schema: {
      tags, summary: "Every user's personal access tokens, newest first, with their owners",
      description: 'Never the token values. Filter `user_id` for one user\'s tokens. Expired tokens stay listed (`expired: true`) for a week.',
      querystring: AdminTokensQuery, response: { 200: AdminTokensEnvelope },
    },
  }, async (request) => {
    const { limit = 20, offset = 0, user_id: userId } = request.query
    const { rows, total } = await tokens().listAll({ userId, limit, offset })
    const now = tokens().now()
    return { success: true as const, data: { tokens: rows.map((row) => ownedTokenView(row, now)), pagination: paginate(total, limit, offset) } }
  })

  app.delete('/api/admin/tokens/:id', {
    config: { auth: policy.session({ permission: 'users.edit' }) },
    schema: {
      tags, summary: "Delete any user's personal access token",
      description: 'Refused at once on every instance. 404 for an unknown id. Audit-logged (`personal_token.revoked`, reason `revoked_by_admin`, the owner as target).',
      params: IdParams, response: { 200: OkMessage },
    },
  }, async (request) => {
    await tokens().revokeAny({ userId: userCaller(request).userId, ip: request.ip }, request.params.id)
    return { success: true as const, message: 'Personal access token deleted.' }
  })
}
