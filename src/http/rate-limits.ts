import rateLimit from '@fastify/rate-limit'
import type { FastifyInstance } from 'fastify'
import { AppError } from './errors.js'

/**
 * SPEC §3.5 per-IP limits. Routes name a limit in `config.limit`; the route guard turns it into
 * @fastify/rate-limit's per-route `config.rateLimit` (or nothing when RATE_LIMIT_ENABLED=false).
 */
export async function registerRateLimits(app: FastifyInstance): Promise<void> {
  await app.register(rateLimit, {
    global: false,
    errorResponseBuilder: (_request, context) =>
      new AppError(429, 'RATE_LIMITED', `Too many requests; retry in ${context.after}.`),
  })
}
