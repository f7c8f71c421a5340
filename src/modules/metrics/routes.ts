import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { Type } from 'typebox'
import { policy } from '../../auth/policies.js'
import type { Metrics } from './service.js'

/** GET /api/metrics: the Prometheus scrape target. */
export const metricsRoutes: FastifyPluginAsyncTypebox<{ metrics: Metrics }> = async (app, { metrics }) => {
  app.get('/api/metrics', {
    // Scraped every few seconds, like a health probe: successful scrapes log at debug level.
    config: { auth: policy.metrics(), quietLog: true },
    schema: {
      tags: ['System'],
      summary: 'Metrics in the Prometheus text format',
      description:
        'The one answer that is not the JSON envelope: the Prometheus text exposition format ' +
        '(`text/plain; version=0.0.4`). Refusals are still JSON envelopes. Authenticate with ' +
        '`Authorization: Bearer <METRICS_TOKEN>` or a global admin\'s session cookie (another user\'s session: 403); ' +
        'without METRICS_TOKEN set, only admin sessions are admitted. Exported: requests by method, route pattern ' +
        'and status (`http_request_duration_seconds`), database statement times (`db_query_duration_seconds`), ' +
        'the PostgreSQL pool (`db_pool_*`), refused logins and lockouts (`auth_*`), OAuth tokens issued and revoked ' +
        '(`oauth_tokens_*`), and the process (`process_*`, `nodejs_*`, including event-loop lag). Labels never carry ' +
        'a user, a token or a raw URL.',
      response: {
        200: {
          description: 'The metrics, in the Prometheus text format 0.0.4.',
          content: { 'text/plain; version=0.0.4; charset=utf-8': { schema: Type.String() } },
        },
      },
    },
  }, async (_request, reply) => {
    reply.type(metrics.contentType)
    return metrics.scrape()
  })
}
