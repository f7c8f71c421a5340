import type { FastifyInstance, onRequestHookHandler, RouteOptions } from 'fastify'
import type { LimitName } from './rate-limits.js'
import type { OAuthErrorStyle } from './error-handler.js'
import { Type } from 'typebox'
import { openApiSecurity, type RoutePolicy } from '../auth/policies.js'
import { ErrorRef } from './envelope.js'

declare module 'fastify' {
  interface FastifyContextConfig {
    /** Who may call the route. Required on every route. */
    auth?: RoutePolicy
    /** Answers while the database is not set up yet (health, db setup, documentation). */
    beforeSetup?: boolean
    /** The per-IP abuse limit this route counts against. */
    limit?: LimitName
    /**
     * Set by the route guard from `limit`: the onRequest hook counts the request before it
     * authenticates the caller, so that refused credentials count against the limit too.
     */
    limiter?: onRequestHookHandler
    /**
     * `ignore`: the route's top-level body or query object may admit unknown members, which the
     * handler ignores. Only for the OAuth protocol endpoints, where RFC 6749 §3.1 and RFC 7591 §2
     * require it; every other route refuses unknown parameters. The OpenAPI operation says so
     * (`x-unknown-parameters: ignored`).
     */
    unknownParameters?: 'ignore'
    /** An OAuth protocol endpoint: every error body is RFC 6749 shaped. */
    oauthErrors?: OAuthErrorStyle
  }
}

const NO_QUERY = Type.Object({}, { additionalProperties: false })

type Schema = Record<string, unknown>

/** The path of the first node of a request schema (nested ones included) that `faulty` flags, or null. */
function faultyPath(node: unknown, path: string, faulty: (schema: Schema) => boolean): string | null {
  if (node === null || typeof node !== 'object') return null
  const schema = node as Schema
  if (faulty(schema)) return path
  const children: Array<[unknown, string]> = []
  for (const [key, value] of Object.entries((schema.properties ?? {}) as Schema)) children.push([value, `${path}.${key}`])
  for (const keyword of ['anyOf', 'oneOf', 'allOf'] as const) {
    for (const [index, value] of ((schema[keyword] ?? []) as unknown[]).entries()) children.push([value, `${path}(${keyword}[${index}])`])
  }
  if (schema.items !== undefined) children.push([schema.items, `${path}[]`])
  for (const [child, childPath] of children) {
    const found = faultyPath(child, childPath, faulty)
    if (found !== null) return found
  }
  return null
}

/** With unknown top-level parameters ignored, the objects inside must still be closed. */
function looseBelowTop(schema: Schema, part: string): string | null {
  for (const [key, value] of Object.entries((schema.properties ?? {}) as Schema)) {
    const found = faultyPath(value, `${part}.${key}`, looseObject)
    if (found !== null) return found
  }
  return null
}

/** An object with properties that would accept unknown ones. */
const looseObject = (schema: Schema): boolean =>
  schema.type === 'object' && schema.additionalProperties !== false && schema.patternProperties === undefined

/**
 * A number without a `minimum` or a `maximum`. Text coerced to a number can be as large as
 * `99999999999999999999999`; a bound keeps it from the database.
 */
function unboundedNumber(schema: Schema): boolean {
  const types = Array.isArray(schema.type) ? schema.type : [schema.type]
  const numeric = types.includes('integer') || types.includes('number')
  return numeric && schema.enum === undefined && schema.const === undefined && (schema.minimum === undefined || schema.maximum === undefined)
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
 * Boot-time checks on every route: a policy must be declared, request
 * objects (nested ones too) must refuse unknown properties, a route without query parameters
 * refuses any, and the OpenAPI `security` and error responses follow from the policy, so no
 * route states them by hand. Routes hidden from the document (Swagger UI's assets) are exempt
 * from all but the policy.
 */
export function installRouteGuard(app: FastifyInstance, { limiter }: { limiter: ((name: LimitName) => onRequestHookHandler) | null }): void {
  app.addHook('onRoute', function guard(route) {
    const defaults = (this as unknown as Record<symbol, RouteDefaults | undefined>)[kRouteDefaults]
    route.config = { ...defaults, ...route.config }
    // A policy left undefined on purpose gets the default too, never none.
    if (route.config.auth === undefined && defaults?.auth !== undefined) route.config.auth = defaults.auth
    const auth = route.config.auth
    const name = `${route.method} ${route.url}`
    if (auth === undefined) throw new Error(`Route ${name} declares no auth policy (config.auth)`)
    if (route.config.limit !== undefined && limiter !== null) route.config.limiter = limiter(route.config.limit)

    const schema = (route.schema ??= {}) as Record<string, unknown>
    if (schema.hide === true) return
    // Unknown query parameters are refused, also on routes that take none.
    schema.querystring ??= NO_QUERY
    const ignoresUnknown = route.config.unknownParameters === 'ignore'
    if (ignoresUnknown) schema['x-unknown-parameters'] = 'ignored'
    for (const part of ['body', 'querystring'] as const) {
      const loose = schema[part] === undefined ? null : ignoresUnknown ? looseBelowTop(schema[part] as Schema, part) : faultyPath(schema[part], part, looseObject)
      if (loose !== null) {
        throw new Error(`Route ${name}: the object at ${loose} must set additionalProperties: false`)
      }
    }
    // Path parameters are validated like everything else (unstorable text, lengths, formats).
    if (route.url.includes(':') && schema.params === undefined) {
      throw new Error(`Route ${name} has path parameters but no params schema`)
    }
    for (const part of ['querystring', 'params'] as const) {
      const unbounded = schema[part] === undefined ? null : faultyPath(schema[part], part, unboundedNumber)
      if (unbounded !== null) throw new Error(`Route ${name}: the number at ${unbounded} needs a minimum and a maximum`)
    }
    schema.security = openApiSecurity(auth)
    schema.response = { '4xx': ErrorRef, '5xx': ErrorRef, ...(schema.response as object | undefined) }
  })
}
