import type { FastifyInstance, FastifyRequest } from 'fastify'

type RouteOptions = FastifyRequest['routeOptions']

declare module 'fastify' {
  interface FastifyRequest {
    /** The first read of `routeOptions`, kept by `routeOptionsOf`. */
    keptRouteOptions: RouteOptions | null
  }
}

/**
 * The matched route's options. Fastify builds `request.routeOptions` anew, a dozen fields, on
 * every read; the request hook, the error handler, the metrics and the access line each read it,
 * so the first read is kept for the rest of the request.
 */
export function routeOptionsOf(request: FastifyRequest): RouteOptions {
  return (request.keptRouteOptions ??= request.routeOptions)
}

/** Declares the kept options on every request (one object shape for all of them). */
export function keepRouteOptions(app: FastifyInstance): void {
  app.decorateRequest('keptRouteOptions', null)
}
