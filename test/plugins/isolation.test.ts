import { fileURLToPath } from 'node:url'
import type { FastifyInstance, LightMyRequestResponse } from 'fastify'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createTestContext, type TestContext } from '../helpers/app.js'
import { DIALECTS } from '../helpers/database.js'
import { client, ROOMY_LIMITS, signUp, type Account, type Call } from '../helpers/teams.js'

/**
 * Hostile plugins (test/fixtures/plugins/hostile): each tries to reach outside its own
 * /api/plugin/<id> context. Each must fail alone, or stay contained, while the service and the
 * well-behaved plugins keep working.
 */
const HOSTILE = fileURLToPath(new URL('../fixtures/plugins/hostile', import.meta.url))
const REGISTER_TIMEOUT_MS = 300

interface Listed { id: string; status: string; error?: string; route_count: number }

function expectEnvelope(response: LightMyRequestResponse, status: number, code: string): void {
  expect(response.statusCode, response.body).toBe(status)
  expect(response.json()).toMatchObject({ success: false, code })
  expect(response.headers['x-request-id']).toEqual(expect.any(String))
}

describe.each(DIALECTS)('plugin isolation on %s', (dialect) => {
  let ctx: TestContext
  let app: FastifyInstance
  let call: Call
  let admin: Account
  let user: Account
  let plugins: Map<string, Listed>

  const get = (url: string, headers: Record<string, string> = {}) => app.inject({ method: 'GET', url, headers })

  beforeAll(async () => {
    ctx = await createTestContext(dialect)
    ;({ app } = await ctx.build({
      env: { PLUGINS_DIR: HOSTILE },
      pluginRegisterTimeoutMs: REGISTER_TIMEOUT_MS,
      limits: { ...ROOMY_LIMITS, forgotPassword: { max: 2, windowMs: 60_000 } },
    }))
    call = client(app)
    admin = await signUp(app, 'admin')
    user = await signUp(app, 'user')
    const listed = await call('GET', '/api/admin/plugins', admin)
    expect(listed.statusCode, listed.body).toBe(200)
    plugins = new Map((listed.json().data.plugins as Listed[]).map((plugin) => [plugin.id, plugin]))
  })
  afterAll(() => ctx.close())

  function expectFailed(id: string, reason: RegExp): void {
    const plugin = plugins.get(id)
    expect(plugin, id).toBeDefined()
    expect(plugin!.status, id).toBe('failed')
    expect(plugin!.error, id).toMatch(reason)
    expect(plugin!.route_count, id).toBe(0)
  }

  it('starts and serves with every hostile plugin failed and the contained ones loaded', async () => {
    expect((await get('/api/health')).statusCode).toBe(200)
    const loaded = [...plugins.values()].filter((plugin) => plugin.status === 'loaded').map((plugin) => plugin.id)
    expect(loaded.sort()).toEqual(['custom-errors', 'hooker', 'neighbour'])
    expect(plugins.get('neighbour')!.route_count).toBe(7)
  })

  describe('a route outside the plugin prefix is refused and fails its plugin only', () => {
    it('moved to /api/auth/x by the plugin\'s own onRoute hook', async () => {
      expectFailed('rewriter', /outside \/api\/plugin\/rewriter\//)
      expect(app.hasRoute({ method: 'GET', url: '/api/auth/x' })).toBe(false)
      expectEnvelope(await get('/api/auth/x'), 404, 'NOT_FOUND')
    })

    it('added on the root instance reached through the prototype chain, even when the plugin swallows the refusal', async () => {
      expectFailed('climber', /outside the plugin's own Fastify instance/)
      expect(app.hasRoute({ method: 'GET', url: '/api/users/climbed' })).toBe(false)
      const response = await get('/api/users/climbed')
      expect(response.json()).not.toHaveProperty('hijacked')
    })

    it('a register wrapped with fastify-plugin (skip-override) to run in the parent context', async () => {
      expectFailed('escapee', /must not opt out of encapsulation/)
      expect(app.hasRoute({ method: 'GET', url: '/api/auth/escaped' })).toBe(false)
      expect((await get('/api/health')).headers['x-escapee']).toBeUndefined()
    })

    it('moved under another plugin\'s prefix', async () => {
      expectFailed('squatter', /outside \/api\/plugin\/squatter\//)
      expect(app.hasRoute({ method: 'GET', url: '/api/plugin/neighbour/squatted' })).toBe(false)
      expectEnvelope(await get('/api/plugin/neighbour/squatted'), 404, 'NOT_FOUND')
    })

    it('a policy loosened by the plugin\'s onRoute hook after the check', async () => {
      expectFailed('loosener', /read only|read-only/)
      expectEnvelope(await get('/api/plugin/loosener/secret'), 404, 'NOT_FOUND')
    })

    it('a policy no helper makes, a body limit above the service\'s, a 404 handler of its own', async () => {
      expectFailed('policy-forger', /unknown policy/)
      expectEnvelope(await get('/api/plugin/policy-forger/open'), 404, 'NOT_FOUND')
      expectFailed('big-body', /bodyLimit may be at most 1048576 bytes/)
      expectFailed('not-found-setter', /404 handler/)
      expectEnvelope(await get('/api/plugin/not-found-setter/anything'), 404, 'NOT_FOUND')
    })
  })

  describe('a plugin that throws fails alone', () => {
    it('at import', () => {
      expectFailed('thrower', /^import failed: thrown at import$/)
    })

    it('in register, after adding a route: the route answers 404 and is not documented', async () => {
      expectFailed('late-thrower', /register exploded/)
      expectEnvelope(await get('/api/plugin/late-thrower/early'), 404, 'NOT_FOUND')
      const paths = Object.keys((await get('/documentation/json')).json().paths)
      expect(paths.filter((path) => path.startsWith('/api/plugin/late-thrower'))).toEqual([])
      expect(paths).toContain('/api/plugin/neighbour/probe')
    })

    it('in a nested registration it did not await', async () => {
      expectFailed('nested-thrower', /nested exploded/)
      expectEnvelope(await get('/api/plugin/nested-thrower/nested'), 404, 'NOT_FOUND')
    })

    it('with a register that never finishes', () => {
      expectFailed('sleeper', new RegExp(`did not finish within ${REGISTER_TIMEOUT_MS} ms`))
    })
  })

  describe('hooks, decorators and parsers stay inside their plugin', () => {
    it('reach the plugin\'s own routes, the ones added through fastify-plugin included', async () => {
      const response = await get('/api/plugin/hooker/probe')
      expect(response.json()).toEqual({ has_decorator: true, mark: 'marked' })
      expect(response.headers['x-hooker']).toBe('yes')
      expect(response.headers['x-hooker-fp']).toBe('yes')
      const inside = await get('/api/plugin/hooker/api/auth/fp-route')
      expect(inside.json()).toEqual({ inside: true })
    })

    it('do not reach another plugin\'s routes or the core\'s', async () => {
      const neighbour = await get('/api/plugin/neighbour/probe')
      expect(neighbour.json()).toEqual({ has_decorator: false, mark: null })
      for (const response of [neighbour, await get('/api/health'), await call('GET', '/api/users/me', user)]) {
        expect(response.headers['x-hooker']).toBeUndefined()
        expect(response.headers['x-hooker-fp']).toBeUndefined()
      }
      expect(app.hasRoute({ method: 'GET', url: '/api/auth/fp-route' })).toBe(false)
      expect((app as FastifyInstance & { hookerSecret?: number }).hookerSecret).toBeUndefined()
    })

    it('a content-type parser serves its plugin only: elsewhere text/plain stays 415', async () => {
      const text = (url: string) => app.inject({ method: 'POST', url, headers: { 'content-type': 'text/plain' }, payload: 'hello' })
      const own = await text('/api/plugin/hooker/echo')
      expect(own.statusCode, own.body).toBe(200)
      expect(own.json()).toEqual({ echoed: 'hello' })
      expectEnvelope(await text('/api/plugin/neighbour/echo'), 415, 'UNSUPPORTED_MEDIA_TYPE')
      expectEnvelope(await text('/api/auth/email/login'), 415, 'UNSUPPORTED_MEDIA_TYPE')
    })
  })

  describe('error handlers', () => {
    it('a plugin\'s own handler answers the errors of its own routes', async () => {
      const response = await get('/api/plugin/custom-errors/boom')
      expect(response.statusCode, response.body).toBe(418)
      expect(response.json()).toEqual({ success: false, error: 'custom: boom', code: 'CUSTOM_TEAPOT' })
    })

    it('the core answers its own refusals on that plugin\'s routes: 401, validation, malformed JSON', async () => {
      expectEnvelope(await get('/api/plugin/custom-errors/guarded'), 401, 'UNAUTHORIZED')
      const post = (payload: string) => app.inject({ method: 'POST', url: '/api/plugin/custom-errors/validated', headers: { 'content-type': 'application/json' }, payload })
      const invalid = await post('{"n": 99}')
      expectEnvelope(invalid, 400, 'VALIDATION_ERROR')
      expect(invalid.json().details).toEqual([expect.objectContaining({ field: 'n' })])
      expectEnvelope(await post('{"n":'), 400, 'INVALID_JSON')
    })

    it('another plugin\'s throwing handler gets the core 500 envelope with the request id, no detail, no stack', async () => {
      const response = await get('/api/plugin/neighbour/crash', { 'x-request-id': 'crash-probe-1' })
      expectEnvelope(response, 500, 'INTERNAL_ERROR')
      expect(response.json()).toEqual({ success: false, error: 'Internal server error.', code: 'INTERNAL_ERROR' })
      expect(response.headers['x-request-id']).toBe('crash-probe-1')
      expect(response.body).not.toMatch(/secret detail|\bat \w/)
    })
  })

  describe('core behaviour holds on plugin routes', () => {
    it('a route without a policy, or with one set to undefined, needs a session', async () => {
      for (const url of ['/api/plugin/neighbour/private', '/api/plugin/neighbour/undefined-policy']) {
        const anonymous = await get(url)
        expectEnvelope(anonymous, 401, 'UNAUTHORIZED')
        expect(anonymous.json().error).toMatch(/^Unauthorized: Authentication required\./)
        const signedIn = await call('GET', url, user)
        expect(signedIn.statusCode, signedIn.body).toBe(200)
        expect(signedIn.json()).toEqual({ private: true })
      }
    })

    it('401 and 403 come before the body is parsed or validated', async () => {
      const strict = (headers: Record<string, string>, payload: string | Buffer) =>
        app.inject({ method: 'POST', url: '/api/plugin/neighbour/strict', headers, payload })
      expectEnvelope(await strict({ 'content-type': 'application/json' }, '{"count":'), 401, 'UNAUTHORIZED')
      expectEnvelope(await strict({ 'content-type': 'text/plain' }, 'x'), 401, 'UNAUTHORIZED')
      expectEnvelope(await strict({ 'content-type': 'application/json' }, Buffer.alloc(2 * 1024 * 1024, 32)), 401, 'UNAUTHORIZED')
      const refused = await strict({ 'content-type': 'application/json', cookie: user.cookie }, '{"count":')
      expectEnvelope(refused, 403, 'FORBIDDEN')
      expect(refused.json().details).toEqual({ required_permission: 'settings.edit' })
      expectEnvelope(await strict({ 'content-type': 'application/json', cookie: admin.cookie }, '{"count": 11}'), 400, 'VALIDATION_ERROR')
      const accepted = await strict({ 'content-type': 'application/json', cookie: admin.cookie }, '{"count": 3}')
      expect(accepted.statusCode, accepted.body).toBe(200)
      expect(accepted.json()).toEqual({ count: 3 })
    })

    it('CSRF: a cookie-carrying unsafe request from a foreign origin is refused', async () => {
      const post = (origin: string) => app.inject({
        method: 'POST', url: '/api/plugin/neighbour/strict', payload: { count: 1 },
        headers: { cookie: admin.cookie, origin },
      })
      expectEnvelope(await post('https://evil.example'), 403, 'FORBIDDEN')
      expect((await post('http://localhost:3000')).statusCode).toBe(200)
    })

    it('request ids: a valid incoming one is echoed, otherwise one is made', async () => {
      expect((await get('/api/plugin/neighbour/probe', { 'x-request-id': 'plugin-req-7' })).headers['x-request-id']).toBe('plugin-req-7')
      const made = (await get('/api/plugin/neighbour/probe', { 'x-request-id': 'not valid!' })).headers['x-request-id']
      expect(made).toMatch(/^[0-9a-f-]{36}$/)
    })

    it('a plugin route counts against the limit it names, with 429 and Retry-After past it', async () => {
      const responses = []
      for (let index = 0; index < 3; index++) responses.push(await get('/api/plugin/neighbour/limited'))
      expect(responses.map((response) => response.statusCode)).toEqual([200, 200, 429])
      expectEnvelope(responses[2]!, 429, 'RATE_LIMITED')
      expect(Number(responses[2]!.headers['retry-after'])).toBeGreaterThan(0)
    })

    it('the document shows plugin routes under the plugin\'s tag with the security of their policy', async () => {
      const document = (await get('/documentation/json')).json()
      expect(document.paths['/api/plugin/neighbour/private'].get).toMatchObject({ tags: ['plugin:neighbour'], security: [{ cookieAuth: [] }] })
      expect(document.paths['/api/plugin/neighbour/probe'].get).toMatchObject({ tags: ['plugin:neighbour'], security: [] })
      expect(document.tags).toEqual(expect.arrayContaining([{ name: 'plugin:neighbour', description: 'Plugin Neighbour 2.1.0 — Probes for the isolation tests.' }]))
    })
  })
})
