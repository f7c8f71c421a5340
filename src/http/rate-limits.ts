import rateLimit, { type FastifyRateLimitOptions, type FastifyRateLimitStore, type FastifyRateLimitStoreCtor } from '@fastify/rate-limit'
import type { FastifyInstance, onRequestHookHandler } from 'fastify'
import type { Redis } from 'ioredis'
import { createRequire } from 'node:module'
import type { AbuseLimits } from '../auth/limits.js'
import type { Config } from '../config.js'
import { AppError } from './errors.js'

/**
 * Per-IP abuse limits. Routes name a limit in `config.limit`; every route naming the same
 * limit shares one counter per IP (login and register draw on one budget), through one limiter
 * per name that the route guard attaches (none when RATE_LIMIT_ENABLED=false).
 * With REDIS_URL the counters live in Redis and so are shared by every instance. While Redis
 * cannot be reached they are counted in this instance's memory instead (see `SharedOrLocal`).
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
    ...(redis === null ? {} : { store: sharedOrLocal(redis, nameSpace), skipOnError: true }),
    errorResponseBuilder: (_request, context) =>
      new AppError(429, 'RATE_LIMITED', `Too many requests; retry in ${context.after}.`),
  })
}

type StoreClass = new (...args: unknown[]) => FastifyRateLimitStore
const require = createRequire(import.meta.url)

/**
 * The counters' store with Redis: Redis while it answers, this instance's memory while it does
 * not (connecting, restarting, unreachable). Refusing every limited request during an outage of
 * Redis would turn it into an outage of logins; letting every one through would lift the limits
 * exactly when an attacker might cause the outage. Counting locally keeps each limit per instance:
 * with N instances a client gets at most N times its budget until Redis is back, when the shared
 * counters take over again (the local ones are kept for the next outage, expiring on their own).
 */
function sharedOrLocal(redis: Redis, nameSpace: string): FastifyRateLimitStoreCtor {
  const RedisStore = require('@fastify/rate-limit/store/RedisStore.js') as StoreClass
  const LocalStore = require('@fastify/rate-limit/store/LocalStore.js') as StoreClass
  class SharedOrLocal implements FastifyRateLimitStore {
    constructor(private readonly shared: FastifyRateLimitStore, private readonly local: FastifyRateLimitStore) {}
    incr(key: string, callback: Parameters<FastifyRateLimitStore['incr']>[1], timeWindow: number, max: number): void {
      if (redis.status !== 'ready') return this.local.incr(key, callback, timeWindow, max)
      this.shared.incr(key, (error, result) => (error === null ? callback(null, result) : this.local.incr(key, callback, timeWindow, max)), timeWindow, max)
    }
    child(routeOptions: Parameters<FastifyRateLimitStore['child']>[0]): FastifyRateLimitStore {
      return new SharedOrLocal(this.shared.child(routeOptions), this.local.child(routeOptions))
    }
  }
  return class extends SharedOrLocal {
    constructor(options: FastifyRateLimitOptions) {
      // The plugin hands its resolved parameters, these two among them (its types do not say so).
      const { continueExceeding, exponentialBackoff } = options as FastifyRateLimitOptions & { continueExceeding?: boolean; exponentialBackoff?: boolean }
      super(new RedisStore(continueExceeding, exponentialBackoff, redis, nameSpace), new LocalStore(continueExceeding, exponentialBackoff))
    }
  }
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
