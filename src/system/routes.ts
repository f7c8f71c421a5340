import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { policy } from '../auth/policies.js'
import { errors } from '../http/errors.js'
import { API_VERSION } from './openapi.js'
import { packageVersion } from '../paths.js'
import type { DatabaseLifecycle } from './lifecycle.js'
import { DbSetupBody, DbStatus, Health, Ready } from './schemas.js'

const open = { auth: policy.public(), beforeSetup: true }
/** Probes: their successful answers are logged at debug level only. */
const probe = { ...open, quietLog: true }

/** Liveness, readiness, database status and setup. */
export const systemRoutes: FastifyPluginAsyncTypebox<{ lifecycle: DatabaseLifecycle }> = async (app, { lifecycle }) => {
  app.get('/api/health', {
    config: probe,
    schema: {
      tags: ['System'],
      summary: 'Liveness: the process answers (no database access)',
      description: '`version` is the running package\'s version, `api_version` the API contract\'s (the document\'s `info.version`).',
      response: { 200: Health },
    },
  }, async () => ({
    success: true as const,
    data: { status: 'ok' as const, version: packageVersion, api_version: API_VERSION, uptime_s: Math.floor(process.uptime()) },
  }))

  app.get('/api/health/ready', {
    config: probe,
    schema: { tags: ['System'], summary: 'Readiness: the database answers a query', response: { 200: Ready } },
  }, async () => {
    // Shutting down: requests are still served, but the balancer should send new ones elsewhere.
    if (lifecycle.draining) throw errors.shuttingDown()
    const { database } = lifecycle.current
    try {
      await database.ping()
    } catch {
      throw errors.databaseUnavailable()
    }
    return { success: true as const, data: { status: 'ready' as const, dialect: database.dialect } }
  })

  app.get('/api/db/status', {
    config: open,
    schema: { tags: ['Database'], summary: 'Whether a database is configured and initialized', response: { 200: DbStatus } },
  }, async () => ({ success: true as const, data: lifecycle.status() }))

  app.post('/api/db/setup', {
    config: open,
    schema: {
      tags: ['Database'],
      summary: 'Set up the database named by DATABASE_URL (setup mode only)',
      description: 'Runs migrations and seeds settings, then the API serves without a restart. The choice is remembered in DATA_DIR. A second call answers 409 ALREADY_CONFIGURED.',
      body: DbSetupBody,
      response: { 200: DbStatus },
    },
  }, async (request) => ({
    success: true as const,
    message: 'Database configured.',
    data: await lifecycle.setup(request.body.type),
  }))
}
