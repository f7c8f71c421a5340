import { fileURLToPath } from 'node:url'
import type { FastifyInstance, FastifyPluginAsync, LightMyRequestResponse } from 'fastify'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { policy } from '../../src/auth/policies.js'
import { createTestContext, type TestContext } from '../helpers/app.js'
import { DIALECTS } from '../helpers/database.js'
import { captureLogs, type LogCapture } from '../helpers/log-capture.js'
import { client, ROOMY_LIMITS, signUp, type Account, type Call } from '../helpers/teams.js'
import { stolen } from '../fixtures/plugins/prototype-chain/climb.js'

/**
 * A plugin walks Object.getPrototypeOf(scope) up to the root Fastify instance (and the host's
 * container) and tries to add a hook reading every request's cookies, replace the error handler
 * and decorate every request — directly in `register`, and from a nested registration. None of it
 * may reach the core, routes added after the plugins, unknown paths or another plugin; the
 * plugin fails with the reason in the log and in GET /api/admin/plugins.
 */
const PLUGINS = fileURLToPath(new URL('../fixtures/plugins/prototype-chain', import.meta.url))

interface Listed { id: string; status: string; error?: string; route_count: number }

/** Routes registered after the plugins, in the root context (as `buildApp`'s `extend` does). */
const laterRoutes: FastifyPluginAsync = async (app) => {
  app.get('/api/test/later', { config: { auth: policy.public() } }, async () => ({ later: true }))
  app.get('/api/test/later-crash', { config: { auth: policy.public() } }, async () => {
    throw new Error('later crashed')
  })
}

describe.each(DIALECTS)('plugins cannot reach the root instance through the prototype chain on %s', (dialect) => {
  let ctx: TestContext
  let app: FastifyInstance
  let call: Call
  let admin: Account
  let logs: LogCapture
  let plugins: Map<string, Listed>

  const withCookie = (url: string): Promise<LightMyRequestResponse> => app.inject({ method: 'GET', url, headers: { cookie: admin.cookie } })

  beforeAll(async () => {
    stolen.length = 0
    logs = captureLogs('info')
    ctx = await createTestContext(dialect)
    ;({ app } = await ctx.build({ env: { PLUGINS_DIR: PLUGINS }, limits: ROOMY_LIMITS, logger: logs.logger, extend: laterRoutes }))
    call = client(app)
    admin = await signUp(app, 'chain_admin')
    const listed = await call('GET', '/api/admin/plugins', admin)
    expect(listed.statusCode, listed.body).toBe(200)
    plugins = new Map((listed.json().data.plugins as Listed[]).map((plugin) => [plugin.id, plugin]))
  })
  afterAll(() => ctx.close())

  it('fails each climbing plugin, with the reason in the list and the log; the others load', () => {
    for (const id of ['climber-direct', 'climber-nested']) {
      const plugin = plugins.get(id)
      expect(plugin, id).toMatchObject({ status: 'failed', route_count: 0 })
      expect(plugin!.error, id).toMatch(/not the plugin's own \(the root or another context, reached through the prototype chain\)/)
      expect(logs.text(), id).toContain(`plugin ${id} failed and is skipped`)
    }
    expect(plugins.get('witness')).toMatchObject({ status: 'loaded', route_count: 2 })
  })

  it('no hook of theirs sees a request: core, later, unknown and other plugins\' routes, with cookies', async () => {
    const responses = [
      await withCookie('/api/users/me'),
      await withCookie('/api/test/later'),
      await withCookie('/api/nowhere'),
      await withCookie('/api/plugin/witness/probe'),
      await withCookie('/api/plugin/climber-direct/probe'),
    ]
    expect(responses.map((response) => response.statusCode)).toEqual([200, 200, 404, 200, 404])
    for (const response of responses) expect(response.headers['x-stolen-by'], response.body).toBeUndefined()
    expect(stolen).toEqual([])
  })

  it('no request is decorated by them', async () => {
    expect((await withCookie('/api/plugin/witness/probe')).json()).toEqual({ decorated: [] })
  })

  it('errors keep the core envelope everywhere', async () => {
    for (const url of ['/api/test/later-crash', '/api/plugin/witness/crash']) {
      const response = await withCookie(url)
      expect(response.statusCode, url).toBe(500)
      expect(response.json()).toEqual({ success: false, error: 'Internal server error.', code: 'INTERNAL_ERROR' })
    }
    const unknown = await withCookie('/api/nowhere')
    expect(unknown.json()).toMatchObject({ success: false, code: 'NOT_FOUND' })
  })
})
