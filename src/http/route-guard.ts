import type { FastifyInstance, RouteOptions } from 'fastify'
import { openApiSecurity, type RoutePolicy } from '../auth/policies.js'
import { ErrorRef } from './envelope.js'

declare module 'fastify' {
  interface FastifyContextConfig {
    /** Who may call the route (SPEC §3.2). Required on every route. */
    auth?: RoutePolicy
    /** Answers while the database is not set up yet (health, db setup, documentation). */
    beforeSetup?: boolean
  }
}

type RouteDefaults = Pick<NonNullable<RouteOptions['config']>, 'auth' | 'beforeSetup'>

const kRouteDefaults = Symbol('routeDefaults')

/**
 * Route config that every route registered in `instance` (and its children) inherits unless it
 * declares its own. For routes whose options we do not write: Swagger UI's, plugins' defaults.
 */
export function setRouteDefaults(instance: FastifyInstance, defaults: RouteDefaults): void {
  ;(instance as unknown as Record<symbol, RouteDefaults>)[kRouteDefaults] = defaults
}

/**
 * Boot-time checks on every route (SPEC §3.2, §2.2, §4.1): a policy must be declared, request
 * objects must refuse unknown properties, and the OpenAPI `security` and error responses follow
 * from the policy, so no route states them by hand.
 */
export function installRouteGuard(app: FastifyInstance): void {
  app.addHook('onRoute', function guard(route) {
    const defaults = (this as unknown as Record<symbol, RouteDefaults | undefined>)[kRouteDefaults]
    route.config = { ...defaults, ...route.config }
    const auth = route.config.auth
    const name = `${route.method} ${route.url}`
    if (auth === undefined) throw new Error(`Route ${name} declares no auth policy (config.auth)`)

    const schema = (route.schema ??= {}) as Record<string, unknown>
    for (const part of ['body', 'querystring'] as const) {
      const partSchema = schema[part] as { type?: string; additionalProperties?: unknown } | undefined
      if (partSchema?.type === 'object' && partSchema.additionalProperties !== false) {
        throw new Error(`Route ${name}: its ${part} schema must set additionalProperties: false (SPEC §2.2)`)
      }
    }
    if (schema.hide === true) return
    schema.security = openApiSecurity(auth)
    schema.response = { '4xx': ErrorRef, '5xx': ErrorRef, ...(schema.response as object | undefined) }
  })
}
