import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest, RouteOptions } from 'fastify'
import { isRoutePolicy } from '../auth/policies.js'
import { isCoreError, type ErrorHandler } from '../http/error-handler.js'
import { bodyValidator } from '../http/validation.js'

/**
 * The walls around an extension plugin. Fastify's encapsulation keeps a plugin's hooks,
 * decorators, parsers and error handler inside its `register(fn, { prefix })` context; this
 * module closes what encapsulation alone leaves open:
 * - routes: every route registered from a plugin's instance (or while its `register` runs) must
 *   stay under `/api/plugin/<id>`, also after the plugin's own `onRoute` hooks ran, and its
 *   policy and body limit cannot be loosened after the service checked them;
 * - nested plugins: one that throws fails its extension plugin, not the service's boot;
 * - error handlers: a plugin's handler sees its own errors, never the refusals of the core (401,
 *   403, 404, 415, 429, validation), which keep the service's envelope;
 * - the 404 handler stays the service's.
 * This is a boundary against mistakes, not a sandbox: plugin code runs in the service's process.
 */

export type PluginStatus = 'loading' | 'loaded' | 'failed' | 'disabled'

/** What a plugin route's config carries; the onRequest hook answers 404 unless it is loaded. */
export interface PluginMark {
  readonly id: string
  readonly status: PluginStatus
  /** `/api/plugin/<id>`, where all its routes live. */
  readonly prefix: string
}

declare module 'fastify' {
  interface FastifyContextConfig {
    /** Set on extension plugin routes by the plugin guard. */
    plugin?: PluginMark
  }
}

export interface GuardedPlugin extends PluginMark {
  readonly tag: string
  /** `METHOD url` of each route, HEAD excepted. */
  readonly routes: Set<string>
}

export interface GuardHost {
  /** The plugin whose `register` is running, if any. */
  readonly loading: GuardedPlugin | null
  fail(plugin: GuardedPlugin, error: unknown): void
  readonly bodyLimit: number
}

const kPluginOf = Symbol('extension plugin')
type Owned = Record<symbol, GuardedPlugin | undefined>

/** Why `url` is not a place for this plugin's routes, or null. */
function urlProblem(url: unknown, plugin: GuardedPlugin): string | null {
  if (typeof url !== 'string') return 'a route URL must be a string'
  const inside = url === plugin.prefix || url.startsWith(`${plugin.prefix}/`)
  if (!inside || /\/\.{1,2}(\/|$)/.test(url)) return `the route ${url} is outside ${plugin.prefix}/, the only prefix this plugin may use`
  return null
}

const SCHEMA_PARTS = ['body', 'querystring', 'params', 'headers'] as const

/** A plugin's schemas compile now, so that a broken one fails the plugin rather than the boot. */
function schemaProblem(schema: Record<string, unknown>, shared: Record<string, unknown>): string | null {
  const parts: Array<[string, unknown]> = SCHEMA_PARTS.filter((part) => schema[part] !== undefined).map((part) => [part, schema[part]])
  for (const [status, response] of Object.entries((schema.response ?? {}) as Record<string, unknown>)) parts.push([`response ${status}`, response])
  for (const [part, each] of parts) {
    try {
      bodyValidator(each, shared)
    } catch (error) {
      return `the ${part} schema does not compile: ${(error as Error).message}`
    }
  }
  return null
}

/** Freezes one property of a route's options at its checked value. */
const lock = (target: object, key: string, value: unknown) =>
  Object.defineProperty(target, key, { value, writable: false, enumerable: true, configurable: false })

/**
 * The root `onRoute` hook that checks every plugin route. Installed right after the core's
 * route guard (so the policy defaults are applied) and before the OpenAPI collector (so a refused
 * route never reaches the document).
 */
export function installPluginGuard(app: FastifyInstance, host: GuardHost, coreHandler: ErrorHandler): void {
  app.addHook('onRoute', function pluginGuard(this: FastifyInstance, route: RouteOptions) {
    const owner = (this as unknown as Owned)[kPluginOf]
    const plugin = owner ?? host.loading
    if (plugin === undefined || plugin === null) return
    const refuse = (problem: string): never => {
      const error = new Error(`Plugin ${plugin.id}: ${problem}`)
      host.fail(plugin, error)
      throw error
    }
    if (owner === undefined) refuse(`${route.method} ${route.url} was added outside the plugin's own Fastify instance`)
    const outside = urlProblem(route.url, plugin)
    if (outside !== null) refuse(outside)
    const config = route.config as Record<string, unknown>
    if (!isRoutePolicy(config.auth)) refuse(`${route.method} ${route.url} declares an unknown policy; use context.policy`)
    if (route.bodyLimit !== undefined && route.bodyLimit > host.bodyLimit) refuse(`${route.method} ${route.url}: bodyLimit may be at most ${host.bodyLimit} bytes`)
    const schema = route.schema as Record<string, unknown>
    const broken = schemaProblem(schema, this.getSchemas())
    if (broken !== null) refuse(`${route.method} ${route.url}: ${broken}`)

    // The plugin's own onRoute hooks run after this one: the URL they set is checked again, and
    // what was checked here cannot change.
    let url = route.url
    Object.defineProperty(route, 'url', {
      enumerable: true,
      configurable: false,
      get: () => url,
      set: (next: unknown) => {
        const problem = urlProblem(next, plugin)
        if (problem !== null) refuse(problem)
        url = next as string
      },
    })
    lock(config, 'plugin', plugin)
    for (const key of ['auth', 'limiter', 'beforeSetup', 'unknownParameters']) lock(config, key, config[key])
    lock(route, 'config', config)
    lock(route, 'bodyLimit', route.bodyLimit)
    if (route.errorHandler !== undefined) lock(route, 'errorHandler', deferringToCore(route.errorHandler as ErrorHandler, coreHandler))
    schema.tags = [plugin.tag]
    const methods = Array.isArray(route.method) ? route.method : [route.method]
    for (const method of methods) if (method !== 'HEAD') plugin.routes.add(`${method} ${url}`)
  })
}

function deferringToCore(handler: ErrorHandler, coreHandler: ErrorHandler): ErrorHandler {
  return function (this: unknown, error: FastifyError, request: FastifyRequest, reply: FastifyReply) {
    return isCoreError(error) ? coreHandler(error, request, reply) : handler.call(this, error, request, reply)
  }
}

type PluginFunction = ((instance: FastifyInstance, options: unknown, done?: (error?: Error) => void) => unknown) & Record<symbol, unknown>

/**
 * A nested plugin that fails marks its extension plugin failed and lets the boot go on (avvio
 * would otherwise abort the whole service with it). Fastify's metadata (skip-override, names,
 * dependencies) is kept, so `fastify-plugin` modules still work inside the plugin's context.
 */
function contained(fn: PluginFunction, plugin: GuardedPlugin, host: GuardHost): PluginFunction {
  const callbackStyle = fn.length >= 3 && fn.constructor.name !== 'AsyncFunction'
  const wrapped = (callbackStyle
    ? function (this: unknown, instance: FastifyInstance, options: unknown, done: (error?: Error) => void) {
      try {
        fn.call(this, instance, options, (error?: Error) => {
          if (error) host.fail(plugin, error)
          done()
        })
      } catch (error) {
        host.fail(plugin, error)
        done()
      }
    }
    : async function (this: unknown, instance: FastifyInstance, options: unknown) {
      try {
        await fn.call(this, instance, options)
      } catch (error) {
        host.fail(plugin, error)
      }
    }) as PluginFunction
  for (const symbol of Object.getOwnPropertySymbols(fn)) wrapped[symbol] = fn[symbol]
  return wrapped
}

/** Prepares a plugin's prefixed instance before its `register` runs. */
export function containScope(scope: FastifyInstance, plugin: GuardedPlugin, host: GuardHost, coreHandler: ErrorHandler): void {
  ;(scope as unknown as Owned)[kPluginOf] = plugin
  const register = scope.register
  const setErrorHandler = scope.setErrorHandler
  // Own properties of the scope; the plugin's child instances inherit them.
  Object.assign(scope, {
    register(this: FastifyInstance, fn: unknown, options?: unknown) {
      const plugin = typeof fn === 'function' ? contained(fn as PluginFunction, (this as unknown as Owned)[kPluginOf]!, host) : fn
      return (register as (fn: unknown, options?: unknown) => unknown).call(this, plugin, options)
    },
    setErrorHandler(this: FastifyInstance, handler: ErrorHandler) {
      return setErrorHandler.call(this, deferringToCore(handler, coreHandler) as Parameters<typeof setErrorHandler>[0])
    },
    setNotFoundHandler() {
      throw new Error(`Plugin ${plugin.id}: the 404 handler is the service's (unknown paths under ${plugin.prefix}/ answer its 404)`)
    },
  })
}
