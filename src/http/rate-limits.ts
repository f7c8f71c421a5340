import rateLimit from '@fastify/rate-limit'
import type { FastifyInstance } from 'fastify'
import { Redis } from 'ioredis'
import type { Config } from '../config.js'
import { AppError } from './errors.js'

/**
 * SPEC §3.5 per-IP limits. Routes name a limit in `config.limit`; the route guard turns it into
 * @fastify/rate-limit's per-route `config.rateLimit` (or nothing when RATE_LIMIT_ENABLED=false).
 * With REDIS_URL the counters live in Redis and so are shared by every instance (SPEC §9); if
 * Redis cannot be reached, requests are let through rather than refused.
 */
export async function registerRateLimits(app: FastifyInstance, config: Config, nameSpace = 'service-rate-limit-'): Promise<void> {
  const redis = config.redisUrl === null
    ? null
    : new Redis(config.redisUrl, { connectTimeout: 500, maxRetriesPerRequest: 1, enableOfflineQueue: false, lazyConnect: false })
  redis?.on('error', (error) => app.log.warn({ err: error }, 'rate-limit store (Redis) unavailable'))
  if (redis !== null) app.addHook('onClose', async () => void redis.disconnect())
  await app.register(rateLimit, {
    global: false,
    ...(redis === null ? {} : { redis, nameSpace, skipOnError: true }),
    errorResponseBuilder: (_request, context) =>
      new AppError(429, 'RATE_LIMITED', `Too many requests; retry in ${context.after}.`),
  })
}
