import cors from '@fastify/cors'
import helmet from '@fastify/helmet'
import type { FastifyInstance } from 'fastify'
import type { Config } from '../config.js'

/** SPEC §8: helmet's headers everywhere; CORS (with credentials) only for configured origins. */
export async function registerSecurityHeaders(app: FastifyInstance, config: Config): Promise<void> {
  const https = new URL(config.publicUrl).protocol === 'https:'
  await app.register(helmet, {
    global: true,
    // On a plain-http deployment, upgrading sub-requests to https or pinning HSTS would break it.
    contentSecurityPolicy: { directives: { upgradeInsecureRequests: https ? [] : null } },
    strictTransportSecurity: https,
  })
  if (config.corsOrigins.length > 0) {
    await app.register(cors, {
      origin: [...config.corsOrigins],
      credentials: true,
      methods: ['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE'],
      exposedHeaders: ['X-Request-Id', 'Retry-After', 'WWW-Authenticate'],
    })
  }
}
