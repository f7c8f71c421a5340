import type { HTTPMethods } from 'fastify'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createTestContext, type TestApp, type TestContext } from '../helpers/app.js'
import { DIALECTS } from '../helpers/database.js'
import { operationsOf, servedDocument } from '../helpers/openapi-document.js'

/**
 * A path the service does not know answers 404 and points to the documentation; a path it knows
 * for other methods answers 405 with `Allow` (RFC 9110 §15.5.6), before any credential is asked for.
 */

const CORS_ORIGIN = 'https://app.example.test'

describe.each(DIALECTS)('unknown routes and wrong methods on %s', (dialect) => {
  let ctx: TestContext
  let subject: TestApp

  beforeAll(async () => {
    ctx = await createTestContext(dialect)
    subject = await ctx.build()
  })
  afterAll(() => ctx.close())

  const call = (method: HTTPMethods, url: string, on: TestApp = subject) => on.app.inject({ method, url })

  it('an unknown path answers 404 NOT_FOUND in the envelope, pointing to /documentation', async () => {
    const response = await call('GET', '/api/does-not-exist?x=1')
    expect(response.statusCode).toBe(404)
    expect(response.headers.allow).toBeUndefined()
    expect(response.json()).toEqual({
      success: false,
      code: 'NOT_FOUND',
      error: "Route GET /api/does-not-exist not found; the API's routes are listed at /documentation.",
    })
    expect(response.headers['x-request-id']).toEqual(expect.any(String))
  })

  it('DELETE /api/health answers 405 METHOD_NOT_ALLOWED with Allow: GET, HEAD', async () => {
    const response = await call('DELETE', '/api/health?verbose=1')
    expect(response.statusCode).toBe(405)
    expect(response.headers.allow).toBe('GET, HEAD')
    expect(response.json()).toEqual({
      success: false,
      code: 'METHOD_NOT_ALLOWED',
      error: 'Method DELETE is not allowed on /api/health; it answers GET, HEAD.',
    })
    expect(response.headers['x-request-id']).toEqual(expect.any(String))
  })

  it('a path with a parameter: POST /api/teams/<id> lists the methods of /api/teams/:id, before asking who calls', async () => {
    const response = await call('POST', '/api/teams/0190a9d4-0000-7000-8000-000000000000')
    expect(response.statusCode).toBe(405)
    expect(response.headers.allow).toBe('DELETE, GET, HEAD, PUT')
    expect(response.json()).toMatchObject({ code: 'METHOD_NOT_ALLOWED' })
  })

  it('a POST-only path answers a GET with 405 and Allow: POST', async () => {
    const response = await call('GET', '/api/auth/email/login')
    expect(response.statusCode).toBe(405)
    expect(response.headers.allow).toBe('POST')
  })

  it('every documented path answers an unused method with 405, Allow naming the methods the router serves there', async () => {
    // The router serves a URL by each method's own routes: `/api/teams/me` (GET) is also
    // `/api/teams/{id}` for PUT and DELETE. HEAD comes with every GET.
    const templates = new Map<string, { pattern: RegExp; methods: Set<string> }>()
    for (const { method, path } of operationsOf(await servedDocument(subject.app))) {
      const template = templates.get(path) ?? { pattern: new RegExp(`^${path.replace(/\{[^}]+\}/g, '[^/]+')}$`), methods: new Set<string>() }
      template.methods.add(method)
      if (method === 'GET') template.methods.add('HEAD')
      templates.set(path, template)
    }
    const wrong: string[] = []
    for (const path of templates.keys()) {
      const url = path.replace(/\{[^}]+\}/g, 'probe')
      const served = [...templates.values()].filter(({ pattern }) => pattern.test(url)).flatMap(({ methods }) => [...methods])
      const expected = [...new Set(served)].sort().join(', ')
      const response = await call('TRACE', url)
      if (response.statusCode !== 405 || response.headers.allow !== expected || response.json().code !== 'METHOD_NOT_ALLOWED') {
        wrong.push(`TRACE ${url}: ${response.statusCode} Allow: ${String(response.headers.allow)} (expected ${expected})`)
      }
    }
    expect(templates.size).toBeGreaterThan(40)
    expect(wrong).toEqual([])
  })

  it('with CORS configured, Allow names OPTIONS too (the preflight answers it), while an unknown path stays 404', async () => {
    const withCors = await ctx.build({ env: { CORS_ORIGINS: CORS_ORIGIN } })
    const known = await call('DELETE', '/api/health', withCors)
    expect(known.statusCode).toBe(405)
    expect(known.headers.allow).toBe('GET, HEAD, OPTIONS')
    const unknown = await call('GET', '/api/does-not-exist', withCors)
    expect(unknown.statusCode).toBe(404)
    expect(unknown.json()).toMatchObject({ code: 'NOT_FOUND' })
  })
})
