import rateLimit from '@fastify/rate-limit'
import type { FastifyInstance, onRequestHookHandler } from 'fastify'
import type { AbuseLimits } from '../auth/limits.js'
import type { Config } from '../config.js'
import { AppError } from './errors.js'

/**
 * Per-IP abuse limits. Routes name a limit in `config.limit`; every route naming the same
 * limit shares one counter per IP (login and register draw on one budget), through one limiter
 * per name that the route guard attaches (none when RATE_LIMIT_ENABLED=false).
 * With REDIS_URL the counters live in Redis and so are shared by every instance; if
 * Redis cannot be reached, requests are let through rather than refused.
 */
export async function registerRateLimits(app: FastifyInstance, config: Config, nameSpace = 'service-rate-limit-'): Promise<void> {
  // ioredis loads only when counters are shared (a sizeable module otherwise held for nothing).
  const redis = config.redisUrl === null
    ? null
    : new (await import('ioredis')).Redis(config.redisUrl, { connectTimeout: 500, maxRetriesPerRequest: 1, enableOfflineQueue: false, lazyConnect: false })
  redis?.on('error', (error) => app.log.warn({ err: error }, 'rate-limit store (Redis) unavailable'))
  if (redis !== null) app.addHook('onClose', async () => void redis.disconnect())
  await app.register(rateLimit, {
    global: false,
    ...(redis === null ? {} : { redis, nameSpace, skipOnError: true }),
    errorResponseBuilder: (_request, context) =>
      new AppError(429, 'RATE_LIMITED', `Too many requests; retry in ${context.after}.`),
  })
}

export type LimitName = Exclude<keyof AbuseLimits, 'lockout'>

/** One shared onRequest limiter per limit name, made on first use. */
export function limiters(app: FastifyInstance, limits: AbuseLimits): (name: LimitName) => onRequestHookHandler {
  const made = new Map<LimitName, onRequestHookHandler>()
  return (name) => {
    let limiter = made.get(name)
    if (limiter === undefined) {
      const { max, windowMs } = limits[name]
      limiter = app.rateLimit({ max, timeWindow: windowMs, keyGenerator: (request) => `${name}:${request.ip}` })
      made.set(name, limiter)
    }
    return limiter
  }
}
