import { Writable } from 'node:stream'
import type { FastifyPluginAsync } from 'fastify'
import { Type } from 'typebox'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { policy } from '../../src/auth/policies.js'
import { Ok, PaginationQuery } from '../../src/http/envelope.js'
import { loggerOptions } from '../../src/http/logging.js'
import { createTestContext, testConfig, type TestApp, type TestContext } from '../helpers/app.js'
import { DIALECTS } from '../helpers/database.js'

const Echo = Ok(Type.Unknown())
const open = { auth: policy.public() }

const conventionRoutes: FastifyPluginAsync = async (app) => {
  app.post('/api/test/echo', {
    config: open,
    schema: {
      tags: ['Test'],
      summary: 'echo',
      body: Type.Object(
        {
          email: Type.String({ format: 'email', maxLength: 255 }),
          age: Type.Optional(Type.Integer({ minimum: 0 })),
          flag: Type.Optional(Type.Boolean()),
        },
        { additionalProperties: false },
      ),
      response: { 200: Echo },
    },
  }, async (request) => ({ success: true as const, data: request.body }))

  app.get('/api/test/list', {
    config: open,
    schema: { tags: ['Test'], summary: 'list', querystring: Type.Object(PaginationQuery, { additionalProperties: false }), response: { 200: Echo } },
  }, async (request) => ({ success: true as const, data: request.query }))

  app.get('/api/test/items/:id', {
    config: open,
    schema: { tags: ['Test'], summary: 'item', params: Type.Object({ id: Type.String({ maxLength: 100 }) }), response: { 200: Echo } },
  }, async (request) => ({ success: true as const, data: request.params }))

  app.get('/api/test/crash', { config: open, schema: { tags: ['Test'], summary: 'crash', response: { 200: Echo } } }, async () => {
    throw new Error('database password is hunter2')
  })

  app.post('/api/test/duplicate', { config: open, schema: { tags: ['Test'], summary: 'dup', response: { 200: Echo } } }, async () => {
    const { db, t } = app.services.database
    const row = { key: 'test.duplicate', groupId: 'test', type: 'string' as const, value: '""', encrypted: false, setAt: null, updatedAt: new Date() }
    await db.insert(t.settings).values(row)
    await db.insert(t.settings).values(row)
    return { success: true as const, data: null }
  })

  app.post('/api/test/orphan', { config: open, schema: { tags: ['Test'], summary: 'orphan', response: { 200: Echo } } }, async () => {
    const { db, t } = app.services.database
    const now = new Date()
    await db.insert(t.sessions).values({ id: 'orphan', digest: 'orphan-digest', userId: 'no-such-user', expiresAt: now, createdAt: now })
    return { success: true as const, data: null }
  })

  app.post('/api/test/log-secrets', { config: open, schema: { tags: ['Test'], summary: 'log', response: { 200: Echo } } }, async (request) => {
    request.log.info({ login: { password: 'pw-secret-0', token: 'tok-secret-1' }, refresh_token: 'tok-secret-5' }, 'handling a login')
    return { success: true as const, data: null }
  })
}

describe.each(DIALECTS)('HTTP conventions on %s', (dialect) => {
  let ctx: TestContext
  let subject: TestApp
  const logLines: string[] = []

  beforeAll(async () => {
    ctx = await createTestContext(dialect)
    const stream = new Writable({ write(chunk, _encoding, done) { logLines.push(String(chunk)); done() } })
    subject = await ctx.build({
      extend: conventionRoutes,
      // The app's own logger options (level, redaction), writing into this array.
      logger: { ...(loggerOptions(testConfig({ LOG_LEVEL: 'info' })) as object), stream },
    })
  })
  afterAll(() => ctx.close())

  const post = (url: string, payload: string, contentType = 'application/json') =>
    subject.app.inject({ method: 'POST', url, headers: { 'content-type': contentType }, payload })

  it('unknown routes answer 404 in the envelope', async () => {
    const response = await subject.app.inject({ method: 'GET', url: '/api/does-not-exist?x=1' })
    expect(response.statusCode).toBe(404)
    expect(response.json()).toEqual({ success: false, error: "Route GET /api/does-not-exist not found; the API's routes are listed at /documentation.", code: 'NOT_FOUND' })
  })

  it('a valid JSON body reaches the handler', async () => {
    const response = await post('/api/test/echo', JSON.stringify({ email: 'a@example.com', age: 3 }))
    expect(response.statusCode).toBe(200)
    expect(response.json()).toEqual({ success: true, data: { email: 'a@example.com', age: 3 } })
  })

  it.each(['text/plain', 'application/x-www-form-urlencoded', 'multipart/form-data; boundary=x', 'application/xml'])(
    '415 UNSUPPORTED_MEDIA_TYPE for %s',
    async (contentType) => {
      const response = await post('/api/test/echo', 'email=a@example.com', contentType)
      expect(response.statusCode).toBe(415)
      expect(response.json()).toMatchObject({ success: false, code: 'UNSUPPORTED_MEDIA_TYPE' })
    },
  )

  it.each(['{"email": ', '{email: "x"}', "{'a':1}", '{"email":"a@example.com"}}'])('400 INVALID_JSON for %s', async (payload) => {
    const response = await post('/api/test/echo', payload)
    expect(response.statusCode).toBe(400)
    expect(response.json()).toMatchObject({ success: false, code: 'INVALID_JSON' })
  })

  it('400 INVALID_JSON for an empty JSON body', async () => {
    expect((await post('/api/test/echo', '')).json().code).toBe('INVALID_JSON')
  })

  it('400 VALIDATION_ERROR lists every failing field', async () => {
    const response = await post('/api/test/echo', JSON.stringify({ age: -1, flag: 'yes', extra: 1 }))
    expect(response.statusCode).toBe(400)
    const body = response.json()
    expect(body).toMatchObject({ success: false, code: 'VALIDATION_ERROR' })
    const fields = body.details.map((detail: { field: string }) => detail.field).sort()
    expect(fields).toEqual(['age', 'email', 'extra', 'flag'])
    for (const detail of body.details) expect(detail.message).toEqual(expect.any(String))
  })

  it('unknown body properties are refused, not stripped', async () => {
    const response = await post('/api/test/echo', JSON.stringify({ email: 'a@example.com', role: 'global_admin' }))
    expect(response.statusCode).toBe(400)
    expect(response.json().details).toEqual([{ field: 'role', message: 'is not allowed', in: 'body' }])
  })

  it('body values are not coerced: a string is not a boolean or a number', async () => {
    expect((await post('/api/test/echo', JSON.stringify({ email: 'a@example.com', flag: 'true' }))).statusCode).toBe(400)
    expect((await post('/api/test/echo', JSON.stringify({ email: 'a@example.com', age: '3' }))).statusCode).toBe(400)
  })

  it.each(['null', '[]', '"text"', '42'])('a JSON body that is not an object (%s) is a validation error', async (payload) => {
    const response = await post('/api/test/echo', payload)
    expect(response.statusCode).toBe(400)
    expect(['VALIDATION_ERROR', 'INVALID_JSON']).toContain(response.json().code)
  })

  it('strings with null bytes, unicode and huge lengths get a 4xx, never a 5xx', async () => {
    for (const email of ['a\u0000@example.com', '😀@例え.jp', `${'a'.repeat(300)}@example.com`]) {
      const response = await post('/api/test/echo', JSON.stringify({ email }))
      expect(response.statusCode).toBeGreaterThanOrEqual(400)
      expect(response.statusCode).toBeLessThan(500)
    }
  })

  it('query strings are coerced to their types and unknown parameters are refused', async () => {
    const ok = await subject.app.inject({ method: 'GET', url: '/api/test/list?limit=5&offset=10' })
    expect(ok.json().data).toEqual({ limit: 5, offset: 10 })
    const defaults = await subject.app.inject({ method: 'GET', url: '/api/test/list' })
    expect(defaults.json().data).toEqual({ limit: 20, offset: 0 })
    const unknown = await subject.app.inject({ method: 'GET', url: '/api/test/list?limit=5&sort=name' })
    expect(unknown.statusCode).toBe(400)
    expect(unknown.json().details).toEqual([{ field: 'sort', message: 'is not allowed', in: 'querystring' }])
    for (const bad of ['limit=0', 'limit=101', 'offset=-1', 'limit=abc']) {
      const response = await subject.app.inject({ method: 'GET', url: `/api/test/list?${bad}` })
      expect(response.statusCode).toBe(400)
      expect(response.json().code).toBe('VALIDATION_ERROR')
    }
  })

  it('an over-long path parameter is a 400 in the envelope, not the router\'s own answer', async () => {
    const response = await subject.app.inject({ method: 'GET', url: `/api/test/items/${'x'.repeat(150)}` })
    expect(response.statusCode).toBe(400)
    expect(response.json()).toMatchObject({ success: false, code: 'VALIDATION_ERROR', details: [{ field: 'id', in: 'params' }] })
  })

  it('a route without query parameters refuses any', async () => {
    const response = await subject.app.inject({ method: 'GET', url: '/api/health?verbose=1' })
    expect(response.statusCode).toBe(400)
    expect(response.json().details).toEqual([{ field: 'verbose', message: 'is not allowed', in: 'querystring' }])
  })

  it('413 PAYLOAD_TOO_LARGE over 1 MiB, and exactly 1 MiB still passes the limit', async () => {
    const over = await post('/api/test/echo', JSON.stringify({ email: 'x'.repeat(1024 * 1024) }))
    expect(over.statusCode).toBe(413)
    expect(over.json()).toMatchObject({ success: false, code: 'PAYLOAD_TOO_LARGE' })
    const body = JSON.stringify({ email: '' })
    const atLimit = JSON.stringify({ email: 'y'.repeat(1024 * 1024 - body.length) })
    expect(Buffer.byteLength(atLimit)).toBe(1024 * 1024)
    expect((await post('/api/test/echo', atLimit)).statusCode).toBe(400) // schema (maxLength), not size
  })

  it('X-Request-Id: generated when absent, echoed when valid, replaced when not', async () => {
    const generated = await subject.app.inject({ method: 'GET', url: '/api/health' })
    expect(generated.headers['x-request-id']).toMatch(/^[0-9a-f-]{36}$/)
    const echoed = await subject.app.inject({ method: 'GET', url: '/api/health', headers: { 'x-request-id': 'trace-abc.123' } })
    expect(echoed.headers['x-request-id']).toBe('trace-abc.123')
    const hostile = await subject.app.inject({ method: 'GET', url: '/api/health', headers: { 'x-request-id': 'bad id\u0000<script>' } })
    expect(hostile.headers['x-request-id']).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/)
    // Generated ids never repeat.
    const ids = await Promise.all(Array.from({ length: 20 }, async () => (await subject.app.inject({ method: 'GET', url: '/api/health' })).headers['x-request-id']))
    expect(new Set([...ids, generated.headers['x-request-id'], hostile.headers['x-request-id']]).size).toBe(22)
    for (const url of ['/api/nope', '/api/test/crash']) {
      expect((await subject.app.inject({ method: 'GET', url })).headers['x-request-id']).toEqual(expect.any(String))
    }
  })

  it('an unexpected error is a generic 500; the detail goes to the log with the request id', async () => {
    const response = await subject.app.inject({ method: 'GET', url: '/api/test/crash', headers: { 'x-request-id': 'crash-1' } })
    expect(response.statusCode).toBe(500)
    expect(response.json()).toEqual({ success: false, error: 'Internal server error.', code: 'INTERNAL_ERROR' })
    expect(response.body).not.toContain('hunter2')
    const logged = logLines.filter((line) => line.includes('"crash-1"') && line.includes('"level":50'))
    expect(logged).toHaveLength(1)
    expect(logged[0]).toContain('database password is hunter2')
  })

  it('a unique-index violation is a 409 CONFLICT, not a 500', async () => {
    const response = await subject.app.inject({ method: 'POST', url: '/api/test/duplicate' })
    expect(response.statusCode).toBe(409)
    expect(response.json()).toMatchObject({ success: false, code: 'CONFLICT' })
  })

  it('a write referring to a row that no longer exists is a 409 CONFLICT, not a 500', async () => {
    const response = await subject.app.inject({ method: 'POST', url: '/api/test/orphan' })
    expect(response.statusCode).toBe(409)
    expect(response.json()).toMatchObject({ success: false, code: 'CONFLICT' })
  })

  it('secrets are redacted from the log', async () => {
    await subject.app.inject({
      method: 'POST',
      url: '/api/test/log-secrets',
      headers: { authorization: 'Bearer tok-secret-2', cookie: 'auth_session=sess-secret-3' },
    })
    const all = logLines.join('\n')
    expect(all).toContain('handling a login')
    for (const secret of ['pw-secret-0', 'tok-secret-1', 'tok-secret-2', 'sess-secret-3', 'tok-secret-5']) expect(all).not.toContain(secret)
    expect(all).toContain('[redacted]')
  })

  it('request logs leave out query strings, where links carry tokens', async () => {
    await subject.app.inject({ method: 'GET', url: '/api/auth/email/verify?token=verify-secret-4' })
    const all = logLines.join('\n')
    expect(all).toContain('/api/auth/email/verify?[query omitted]')
    expect(all).not.toContain('verify-secret-4')
  })

  it('logs one line per request, with the code of an error answer; successful health probes only at debug', async () => {
    const lines = (id: string) => logLines.filter((line) => line.includes(`"reqId":"${id}"`)).map((line) => JSON.parse(line) as Record<string, unknown>)
    await subject.app.inject({ method: 'GET', url: '/api/users/me', headers: { 'x-request-id': 'log-401' } })
    const refused = lines('log-401')
    expect(refused).toHaveLength(1)
    expect(refused[0]).toMatchObject({
      level: 30, msg: 'request completed', code: 'UNAUTHORIZED',
      req: { method: 'GET', url: '/api/users/me', remoteAddress: '127.0.0.1' }, res: { statusCode: 401 },
    })
    expect(refused[0]!.responseTime).toEqual(expect.any(Number))
    await subject.app.inject({ method: 'POST', url: '/api/test/echo', payload: { email: 'a@example.com', age: 3 }, headers: { 'x-request-id': 'log-200' } })
    expect(lines('log-200')).toEqual([expect.objectContaining({ msg: 'request completed', res: { statusCode: 200 } })])
    expect(lines('log-200')[0]).not.toHaveProperty('code')
    await subject.app.inject({ method: 'GET', url: '/api/health', headers: { 'x-request-id': 'log-health' } })
    expect(lines('log-health')).toEqual([])
  })

  it('security headers are set (helmet)', async () => {
    const response = await subject.app.inject({ method: 'GET', url: '/api/health' })
    expect(response.headers['x-content-type-options']).toBe('nosniff')
    expect(response.headers['content-security-policy']).toContain("default-src 'self'")
  })
})

describe('security headers follow PUBLIC_URL', () => {
  it.each([
    ['http://localhost:3000', false],
    ['https://api.example.test', true],
  ])('%s: HSTS and upgrade-insecure-requests only over https', async (publicUrl, https) => {
    const ctx = await createTestContext('sqlite')
    try {
      const { app } = await ctx.build({ env: { PUBLIC_URL: publicUrl } })
      for (const url of ['/api/health', '/documentation/json', '/api/nope']) {
        const response = await app.inject({ method: 'GET', url })
        expect(response.headers['content-security-policy']).toContain("script-src 'self'")
        expect(String(response.headers['content-security-policy']).includes('upgrade-insecure-requests')).toBe(https)
        expect(response.headers['strict-transport-security'] !== undefined).toBe(https)
        expect(response.headers['x-frame-options']).toBe('SAMEORIGIN')
      }
    } finally {
      await ctx.close()
    }
  })
})
