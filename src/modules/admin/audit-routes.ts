import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { policy } from '../../auth/policies.js'
import type { AuditRow } from '../../db/repositories/audit.js'
import { paginate } from '../../http/envelope.js'
import { AuditPage, AuditQuery } from './schemas.js'
import { isoTime } from '../../lib/iso-time.js'

function auditEventView(event: AuditRow) {
  return {
    id: event.id,
    type: event.type,
    actor_id: event.actorId,
    ip: event.ip,
    target: event.target,
    details: event.details ?? {},
    created_at: isoTime(event.createdAt),
  }
}

/** The security events, newest first. */
export const auditRoutes: FastifyPluginAsyncTypebox = async (app) => {
  app.get('/api/admin/audit-log', {
    config: { auth: policy.session({ permission: 'audit.view' }) },
    schema: {
      tags: ['Admin'], summary: 'Security events, newest first, filtered and paginated',
      description: '`type` and `actor_id` match exactly; `since` keeps events at or after that instant.',
      querystring: AuditQuery, response: { 200: AuditPage },
    },
  }, async (request) => {
    const { limit = 20, offset = 0, type, actor_id: actorId, since } = request.query
    const filter = { type, actorId, since: since === undefined ? undefined : new Date(since), limit, offset }
    const { rows, total } = await app.services.auditEvents.list(filter)
    return { success: true as const, data: { events: rows.map(auditEventView), pagination: paginate(total, limit, offset) } }
  })
}
