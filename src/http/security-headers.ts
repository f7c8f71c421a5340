import cors from '@fastify/cors'
import type { FastifyInstance } from 'fastify'
import helmet from 'helmet'
import { policy } from '../auth/policies.js'
import type { Config } from '../config.js'
import { setRouteDefaults } from './route-guard.js'

/**
 * Helmet's security headers on every response. Helmet is run once at boot against a
 * recording response and the resulting (static) headers are set with one call per request:
 * the same headers as the Fastify helmet plugin at a fraction of its per-request cost.
 */
export function securityHeaders(config: Config): Readonly<Record<string, string>> {
  const https = new URL(config.publicUrl).protocol === 'https:'
  const headers: Record<string, string> = {}
  const recorder = {
    setHeader: (name: string, value: string) => void (headers[name.toLowerCase()] = value),
    removeHeader: (name: string) => void delete headers[name.toLowerCase()],
  }
  helmet({
    // On a plain-http deployment, upgrading sub-requests to https or pinning HSTS would break it.
    contentSecurityPolicy: { directives: { upgradeInsecureRequests: https ? [] : null } },
    strictTransportSecurity: https,
  })(
    {} as Parameters<ReturnType<typeof helmet>>[0],
    recorder as unknown as Parameters<ReturnType<typeof helmet>>[1],
    () => {},
  )
  return Object.freeze(headers)
}

/** CORS (with credentials) only for the configured origins; none at all when there are none. */
export async function registerCors(app: FastifyInstance, config: Config): Promise<void> {
  if (config.corsOrigins.length === 0) return
  // The plugin adds its own `OPTIONS *` preflight route: public, and answering before setup.
  setRouteDefaults(app, { auth: policy.public(), beforeSetup: true })
  await app.register(cors, {
    origin: [...config.corsOrigins],
    credentials: true,
    methods: ['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE'],
    exposedHeaders: ['X-Request-Id', 'Retry-After', 'WWW-Authenticate'],
  })
  setRouteDefaults(app, {})
}
