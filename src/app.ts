import cookie from '@fastify/cookie'
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox'
import Fastify, { type FastifyInstance, type FastifyPluginAsync, type FastifyServerOptions } from 'fastify'
import { authorize } from './system/authorize.js'
import { DEFAULT_LIMITS, type AbuseLimits } from './auth/limits.js'
import { limiters, registerRateLimits } from './http/rate-limits.js'
import { accountPageRoutes } from './modules/auth/account-pages.js'
import { authRoutes } from './modules/auth/routes.js'
import { providerLoginRoutes } from './modules/provider-login/routes.js'
import { oidcLoginRoutes } from './modules/oidc-login/routes.js'
import { oauthRoutes } from './oauth2/routes/index.js'
import { meRoutes } from './modules/users/routes.js'
import { teamMemberRoutes } from './modules/teams/members-routes.js'
import { teamRoutes } from './modules/teams/routes.js'
import { settingsRoutes } from './modules/settings/routes.js'
import { adminUserRoutes } from './modules/admin/users-routes.js'
import { personalTokenRoutes } from './modules/personal-tokens/routes.js'
import { adminPersonalTokenRoutes } from './modules/personal-tokens/admin-routes.js'
import { personalTokenPageRoutes } from './modules/personal-tokens/page-routes.js'
import { auditRoutes } from './modules/admin/audit-routes.js'
import { rolesRoutes } from './modules/admin/roles-routes.js'
import type { Caller, CredentialVerifiers } from './auth/caller.js'
import type { Config } from './config.js'
import { DatabaseLifecycle } from './system/lifecycle.js'
import { csrfGuard } from './http/csrf.js'
import { trustedOrigins } from './http/origins.js'
import { clientErrorHandler, coreErrorHandler, frameworkErrors, installErrorHandler, MAX_PARAM_LENGTH, raisedByCore } from './http/error-handler.js'
import { AppError, errors } from './http/errors.js'
import { installGracefulClose } from './http/graceful-close.js'
import { installJsonParser } from './http/json-body.js'
import { AccessLog, loggerOptions } from './http/logging.js'
import { registerDocumentation, registerOpenApi } from './system/openapi.js'
import { requestId } from './http/request-id.js'
import { installRouteGuard } from './http/route-guard.js'
import { requestLoggerFactory } from './http/request-logger.js'
import { keepRouteOptions, routeOptionsOf } from './http/route-options.js'
import { registerCors, securityHeaders } from './http/security-headers.js'
import { sharedSerializers } from './http/serializers.js'
import { timeoutOptions } from './http/timeouts.js'
import { trustProxyOption } from './http/trust-proxy.js'
import { installValidators } from './http/validation.js'
import { systemClock, type Clock } from './lib/clock.js'
import { deriveKey } from './lib/keys.js'
import { mailRoutes } from './modules/mail/routes.js'
import { observeRequests } from './modules/metrics/requests.js'
import { usageRoutes } from './modules/usage/routes.js'
import { metricsRoutes } from './modules/metrics/routes.js'
import { Metrics } from './modules/metrics/service.js'
import { landingRoutes } from './system/landing-routes.js'
import { systemRoutes } from './system/routes.js'
import { categoryRoutes } from './modules/catalogue/categories-routes.js'
import { serverRoutes } from './modules/catalogue/servers-routes.js'
import { installationRoutes } from './modules/installations/routes.js'
import { connectionRoutes } from './modules/connections/routes.js'
import { channelRoutes } from './modules/channel/routes.js'
import { versionRoutes } from './modules/catalogue/versions-routes.js'
import { registryImportRoutes } from './modules/registry/import-routes.js'
import { registryReadRoutes } from './modules/registry/read-routes.js'
import { registrySyncRoutes } from './modules/registry/sync-routes.js'
import { satelliteAgentRoutes } from './modules/satellites/agent-routes.js'
import { satelliteKeyRoutes } from './modules/satellites/key-routes.js'
import { satelliteOfflineRoutes } from './modules/satellites/offline-routes.js'
import { satelliteRoutes } from './modules/satellites/routes.js'
import { registrationTokenRoutes } from './modules/satellites/token-routes.js'
import { pluginsRoutes } from './plugin-host/plugins-routes.js'
import { twoFactorRoutes } from './modules/two-factor/routes.js'
import { twoFactorPageRoutes } from './modules/two-factor/page-routes.js'
import { PluginHost } from './plugin-host/host.js'
import { invitationRoutes } from './modules/invitations/routes.js'
import { invitationPageRoutes } from './modules/invitations/page-routes.js'
import { createServices, type OutboundOverrides, type Services } from './services.js'

declare module 'fastify' {
  interface FastifyInstance {
    /** The services built on the database; 503 DATABASE_NOT_CONFIGURED before setup. */
    readonly services: Services
    /** Readiness answers 503 from now on, while requests are still served (a drain before closing). */
    drain(): void
  }
  interface FastifyRequest {
    /** Set by the policy hook for every non-public route. */
    caller: Caller | null
  }
}
export const BODY_LIMIT = 1024 * 1024

export interface BuildOptions {
  clock?: Clock
  logger?: FastifyServerOptions['logger']
  /** Credential checks to use instead of the built-in ones (tests of the policy mechanism). */
  credentials?: Partial<CredentialVerifiers>
  /** Abuse limits to use instead of the defaults; tests lower them. */
  limits?: Partial<AbuseLimits>
  /** Prefix of the rate-limit keys in Redis (tests keep theirs apart). */
  rateLimitNamespace?: string
  /** Extra routes registered before the app is ready (tests, benchmarks). */
  extend?: FastifyPluginAsync
  /** Outbound requests (client metadata documents): extra trusted CA certificates, a shorter timeout (tests). */
  outbound?: OutboundOverrides
  /** How often the scheduled registry sync looks whether a run is due (default every minute; tests shorten it). */
  registrySyncCheckMs?: number
  /** How often the connection refresher looks for tokens due for refresh (default every 15 s; tests shorten it). */
  connectionRefreshMs?: number
  /** How long a plugin's `register` may take (tests shorten it). */
  pluginRegisterTimeoutMs?: number
}

/** A ready Fastify instance: no listen, no process access (STYLE 1). */
export async function buildApp(config: Config, options: BuildOptions = {}): Promise<FastifyInstance> {
  const clock = options.clock ?? systemClock
  const limits: AbuseLimits = { ...DEFAULT_LIMITS, ...options.limits }
  const headers = securityHeaders(config)
  const app = Fastify({
    logger: options.logger ?? loggerOptions(config),
    logController: new AccessLog(),
    childLoggerFactory: requestLoggerFactory,
    schemaController: { compilersFactory: { buildSerializer: sharedSerializers } },
    genReqId: requestId,
    requestIdHeader: false,
    bodyLimit: BODY_LIMIT,
    trustProxy: trustProxyOption(config.trustProxy),
    ...timeoutOptions(config),
    // Long path parameters reach the schemas; past this, the router refuses them (400 envelope).
    routerOptions: { maxParamLength: MAX_PARAM_LENGTH },
    frameworkErrors: frameworkErrors(headers),
    clientErrorHandler: clientErrorHandler(headers),
    // Requests arriving while closing get the envelope from the onRequest hook instead.
    return503OnClosing: false,
    forceCloseConnections: 'idle',
  }).withTypeProvider<TypeBoxTypeProvider>()

  for (const warning of config.warnings) app.log.warn(warning)

  const metrics = new Metrics()
  const lifecycle = new DatabaseLifecycle(config, app.log, async (database) => {
    const services = await createServices(database, {
      config, clock, log: app.log, credentials: options.credentials, limits, outbound: options.outbound, pluginSettings: plugins.settings(), metrics,
      registrySyncCheckMs: options.registrySyncCheckMs, connectionRefreshMs: options.connectionRefreshMs,
    })
    await plugins.recordLoads(services.audit)
    metrics.watchPool(database)
    metrics.watchKeptAnswers(database)
    return services
  }, metrics.queries)
  const plugins = new PluginHost({
    dir: config.pluginsDir,
    disabled: config.pluginsDisabled,
    log: app.log,
    clock,
    services: () => lifecycle.current,
    bodyLimit: BODY_LIMIT,
    coreErrorHandler: coreErrorHandler(BODY_LIMIT),
    registerTimeoutMs: options.pluginRegisterTimeoutMs,
  })
  app.decorate('services', { getter: () => lifecycle.current })
  app.decorate('drain', () => {
    lifecycle.draining = true
  })
  app.decorateRequest('caller', null)
  keepRouteOptions(app)
  app.decorateReply('errorCode', null)

  installValidators(app)
  installErrorHandler(app, { bodyLimit: BODY_LIMIT, hidden: (url) => plugins.hides(url) })
  // Before @fastify/swagger: the guards write each route's `security` and tags that the document
  // shows, and a route they refuse never reaches it.
  installRouteGuard(app, { limiter: config.rateLimitEnabled ? limiters(app, limits) : null })
  plugins.install(app)
  // JSON only; the OAuth endpoints add form bodies in their own context.
  app.removeContentTypeParser('text/plain')
  installJsonParser(app)

  await app.register(cookie)
  await registerCors(app, config)
  await registerRateLimits(app, config, options.rateLimitNamespace)
  await registerOpenApi(app, config, plugins)

  // The one onRequest hook: headers every answer carries, the setup gate, then the route policy.
  // Callback style keeps public routes free of promise overhead.
  const crossSite = csrfGuard(config)
  const isClosing = installGracefulClose(app)
  app.addHook('onRequest', (request, reply, done) => {
    reply.headers(headers)
    reply.header('x-request-id', request.id)
    // Errors raised here are the core's: a plugin's own error handler passes them on unchanged.
    const refuse = (error: Error) => done(raisedByCore(error))
    if (isClosing()) return refuse(errors.shuttingDown())
    if (request.is404) return done()
    const { auth, beforeSetup, limiter, plugin } = routeOptionsOf(request).config
    // The routes of a plugin that failed after adding them do not exist.
    if (plugin !== undefined && plugin.status !== 'loaded') return refuse(errors.routeNotFound(request.method, request.url))
    if (lifecycle.ready) lifecycle.current.database.changes.lookAgain()
    else if (beforeSetup !== true) return refuse(errors.databaseNotConfigured())
    const crossSiteRefusal = crossSite(request)
    if (crossSiteRefusal !== null) return refuse(crossSiteRefusal)
    const policy = auth === undefined || auth.kind === 'public' ? null : auth
    const admit = (): AppError | Promise<Caller | null> => (policy === null ? Promise.resolve(null) : authorize(request, reply, policy, lifecycle.current))
    const admitted = (caller: Caller | null) => {
      request.caller = caller
      done()
    }
    if (limiter === undefined) {
      if (policy === null) return done()
      // Without a limit to count first, a request presenting no credential is refused at once.
      const outcome = admit()
      return outcome instanceof AppError ? refuse(outcome) : void outcome.then(admitted, refuse)
    }
    ;(limiter.call(app, request, reply, () => {}) as unknown as Promise<void>)
      .then(() => {
        const outcome = admit()
        if (outcome instanceof AppError) throw outcome
        return outcome
      })
      .then(admitted, refuse)
  })
  // Held long-polls answer at once when closing begins, instead of holding the close up to their wait.
  app.addHook('preClose', async () => lifecycle.releaseHeld())
  app.addHook('onClose', () => lifecycle.close())
  observeRequests(app, metrics.requests)

  try {
    await app.register(systemRoutes, { lifecycle })
    await app.register(landingRoutes, { lifecycle })
    await app.register(metricsRoutes, { metrics })
    await app.register(mailRoutes)
    await registerDocumentation(app, lifecycle, config)
    // One key signs the CSRF tokens of every form the backend serves (form-tokens.ts).
    const forms = { origins: trustedOrigins(config), formKey: deriveKey(config.encryptionSecret, 'form-csrf') }
    await app.register(authRoutes, forms)
    await app.register(accountPageRoutes, forms)
    await app.register(twoFactorRoutes, forms)
    await app.register(twoFactorPageRoutes, forms)
    await app.register(providerLoginRoutes)
    await app.register(oidcLoginRoutes)
    await app.register(oauthRoutes)
    await app.register(meRoutes)
    await app.register(teamRoutes)
    await app.register(teamMemberRoutes)
    await app.register(invitationRoutes)
    await app.register(invitationPageRoutes, forms)
    await app.register(settingsRoutes)
    await app.register(adminUserRoutes)
    await app.register(auditRoutes)
    await app.register(rolesRoutes)
    await app.register(categoryRoutes)
    await app.register(serverRoutes)
    await app.register(versionRoutes)
    await app.register(registryReadRoutes, { publicUrl: config.publicUrl })
    await app.register(registryImportRoutes)
    await app.register(registrySyncRoutes)
    await app.register(registrationTokenRoutes)
    await app.register(satelliteAgentRoutes)
    await app.register(installationRoutes)
    await app.register(connectionRoutes)
    await app.register(channelRoutes)
    await app.register(usageRoutes)
    await app.register(satelliteKeyRoutes)
    await app.register(satelliteOfflineRoutes)
    await app.register(satelliteRoutes)
    await app.register(personalTokenRoutes)
    await app.register(adminPersonalTokenRoutes)
    await app.register(personalTokenPageRoutes, forms)
    await app.register(pluginsRoutes, { plugins })
    // Last: extension plugins mount beside the finished core.
    await plugins.mount(app)
    if (options.extend) await app.register(options.extend)
    await lifecycle.start()
    await app.ready()
  } catch (error) {
    await app.close().catch(() => {})
    throw error
  }
  return app
}
