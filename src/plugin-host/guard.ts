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
 * - the 404 handler stays the service's;
 * - the core's instances: Fastify builds a plugin's instance with `Object.create(parent)`, so the
 *   root instance is one `Object.getPrototypeOf` away. Once plugins mount, the root, the core's
 *   contexts and the host's container refuse every change (hooks, error and 404 handlers,
 *   decorators, parsers, schemas, serializers, nested registrations) while plugin code runs, and
 *   every change but a registration afterwards; the plugin that tries fails.
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
  /** The plugin whose code is running (its `register` or a nested registration), if any. */
  loading: GuardedPlugin | null
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
  // Avvio runs a nested registration after the plugin's `register` returned: it runs as its plugin.
  const wrapped = (callbackStyle
    ? function (this: unknown, instance: FastifyInstance, options: unknown, done: (error?: Error) => void) {
      const previous = host.loading
      host.loading = plugin
      try {
        fn.call(this, instance, options, (error?: Error) => {
          if (error) host.fail(plugin, error)
          done()
        })
      } catch (error) {
        host.fail(plugin, error)
        done()
      } finally {
        host.loading = previous
      }
    }
    : async function (this: unknown, instance: FastifyInstance, options: unknown) {
      const previous = host.loading
      host.loading = plugin
      try {
        await fn.call(this, instance, options)
      } catch (error) {
        host.fail(plugin, error)
      } finally {
        host.loading = previous
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
  // Own properties of the scope; the plugin's child instances inherit them. Defined, not assigned:
  // the root's sealed methods are read-only, and assignment would not shadow an inherited one.
  const own = (methods: Record<string, unknown>) => {
    for (const [name, value] of Object.entries(methods)) Object.defineProperty(scope, name, { value, writable: false, enumerable: false, configurable: false })
  }
  own({
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

/** The Fastify methods that change an instance, and through the prototype chain its descendants. */
const MUTATORS = [
  'addHook', 'setErrorHandler', 'setNotFoundHandler', 'decorate', 'decorateRequest', 'decorateReply',
  'addContentTypeParser', 'removeContentTypeParser', 'removeAllContentTypeParsers', 'addSchema', 'addHttpMethod',
  'setSchemaErrorFormatter', 'setReplySerializer', 'setValidatorCompiler', 'setSerializerCompiler',
  'setSchemaController', 'setChildLoggerFactory', 'setGenReqId', 'register',
] as const

/** The contexts Fastify created under `instance` (its `kChildren`), found by the symbol's name. */
function childrenOf(instance: FastifyInstance): FastifyInstance[] {
  const key = Object.getOwnPropertySymbols(instance).find((symbol) => symbol.description === 'fastify.children')
  const children = key === undefined ? undefined : (instance as unknown as Record<symbol, unknown>)[key]
  return Array.isArray(children) ? (children as FastifyInstance[]) : []
}

/**
 * Seals the core before the first plugin mounts: `root`, every context already under it, and
 * `container` (the host's context, the parent of every plugin's scope). Their changing methods are
 * replaced on the root itself, so that every instance reached from a plugin — its own, or an
 * ancestor through `Object.getPrototypeOf` — goes through the check:
 * - while plugin code runs, only that plugin's own instances may change;
 * - otherwise a sealed instance refuses every change but `register` (the core may still add
 *   encapsulated contexts of its own after the plugins; a new context cannot touch existing ones).
 * The refusal fails the plugin that tried, even when it swallows the error.
 */
export function sealCore(root: FastifyInstance, container: FastifyInstance, host: GuardHost): void {
  const sealed = new WeakSet<FastifyInstance>()
  const seal = (instance: FastifyInstance): void => {
    sealed.add(instance)
    for (const child of childrenOf(instance)) seal(child)
  }
  seal(root)
  seal(container)
  const methods = root as unknown as Record<string, (...args: unknown[]) => unknown>
  for (const name of MUTATORS) {
    const original = methods[name]
    if (typeof original !== 'function') continue
    Object.defineProperty(root, name, {
      configurable: false,
      writable: false,
      enumerable: false,
      value: function guardedMutator(this: FastifyInstance, ...args: unknown[]) {
        const running = host.loading
        const owner = (this as unknown as Owned)[kPluginOf]
        const refused = running !== null ? owner !== running : sealed.has(this) && name !== 'register'
        if (refused) {
          const who = running ?? owner
          const error = new Error(
            `${who === undefined || who === null ? '' : `Plugin ${who.id}: `}${name} was called on a Fastify instance that is not the plugin's own ` +
            `(the root or another context, reached through the prototype chain); hooks, error handlers and decorators stay inside the plugin's prefix`,
          )
          if (who !== undefined && who !== null) host.fail(who, error)
          throw error
        }
        return original.apply(this, args)
      },
    })
  }
}
