import type { FastifyInstance, FastifyPluginAsync, LightMyRequestResponse } from 'fastify'
import { Type } from 'typebox'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { policy } from '../../src/auth/policies.js'
import { createTestContext, type TestContext } from '../helpers/app.js'
import { DIALECTS } from '../helpers/database.js'
import { signUp, type Account } from '../helpers/teams.js'

/**
 * JSON nested past a fixed depth (64) is refused before it is parsed: 400 JSON_TOO_DEEP, on every
 * route that reads JSON — anonymous, authenticated, OAuth and extension plugin routes. A megabyte
 * of `[` would otherwise hold the event loop for a quarter of a second per request. Brackets inside
 * strings are text, not nesting.
 */

const MAX_DEPTH = 64
const MEBIBYTE = 1024 * 1024

/** A route that accepts any JSON and answers how deeply it is nested. */
const depthRoute: FastifyPluginAsync = async (app) => {
  app.post('/api/test/depth', {
    config: { auth: policy.public() },
    schema: { tags: ['Test'], summary: 'depth of any JSON', body: Type.Unknown() },
  }, async (request) => ({ success: true, data: { depth: depthOf(request.body) } }))
}

function depthOf(value: unknown): number {
  if (value === null || typeof value !== 'object') return 0
  const children = Array.isArray(value) ? value : Object.values(value)
  return 1 + Math.max(0, ...children.map(depthOf))
}

const arrays = (depth: number, inner = '') => `${'['.repeat(depth)}${inner}${']'.repeat(depth)}`
const objects = (depth: number) => `${'{"a":'.repeat(depth)}1${'}'.repeat(depth)}`

describe.each(DIALECTS)('JSON nesting depth on %s', (dialect) => {
  let ctx: TestContext
  let app: FastifyInstance
  let user: Account

  const send = (url: string, payload: string, cookie?: string): Promise<LightMyRequestResponse> =>
    app.inject({ method: 'POST', url, payload, headers: { 'content-type': 'application/json', ...(cookie === undefined ? {} : { cookie }) } })
  const expectTooDeep = (response: LightMyRequestResponse) => {
    expect(response.statusCode, response.body).toBe(400)
    expect(response.json()).toMatchObject({ success: false, code: 'JSON_TOO_DEEP' })
    expect(response.json().error).toMatch(/nested more than 64 levels/)
  }

  beforeAll(async () => {
    ctx = await createTestContext(dialect)
    app = (await ctx.build({ env: { RATE_LIMIT_ENABLED: 'false' }, extend: depthRoute })).app
    user = await signUp(app, 'nesting_user')
  })
  afterAll(() => ctx.close())

  it('refuses a megabyte of [ on an anonymous route', async () => {
    expectTooDeep(await send('/api/auth/email/login', '['.repeat(MEBIBYTE)))
  })

  it('refuses it on an authenticated route, once the caller is admitted', async () => {
    expectTooDeep(await send('/api/teams', '['.repeat(MEBIBYTE), user.cookie))
    // An anonymous caller is refused before the body is read at all.
    expect((await send('/api/teams', '['.repeat(MEBIBYTE))).statusCode).toBe(401)
  })

  it('refuses it on an extension plugin\'s route', async () => {
    // Its collection documents have a 64 KiB limit.
    expectTooDeep(await send('/api/plugin/notes/notes', `{"title":${'['.repeat(60_000)}`, user.cookie))
  })

  it('refuses it on the OAuth token endpoint, in the RFC 6749 shape', async () => {
    const response = await send('/api/oauth2/token', `{"grant_type":${'{"a":'.repeat(1000)}`)
    expect(response.statusCode, response.body).toBe(400)
    expect(response.json()).toMatchObject({ success: false, error: 'invalid_request', code: 'JSON_TOO_DEEP' })
  })

  it('parses documents nested exactly to the bound, refuses one level more', async () => {
    for (const [body, depth] of [[arrays(MAX_DEPTH), MAX_DEPTH], [objects(MAX_DEPTH), MAX_DEPTH], [`{"x":${arrays(MAX_DEPTH - 1, '{}')}}`, MAX_DEPTH + 1]] as const) {
      const response = await send('/api/test/depth', body)
      if (depth <= MAX_DEPTH) {
        expect(response.statusCode, response.body).toBe(200)
        expect(response.json().data.depth).toBe(depth)
      } else expectTooDeep(response)
    }
    expectTooDeep(await send('/api/test/depth', arrays(MAX_DEPTH + 1)))
    expectTooDeep(await send('/api/test/depth', objects(MAX_DEPTH + 1)))
  })

  it('does not count brackets inside strings, escaped quotes included', async () => {
    const inString = JSON.stringify({ text: '['.repeat(10_000), quoted: `"${'{'.repeat(500)}\\"[[[`, slash: '\\' })
    const answer = await send('/api/test/depth', inString)
    expect(answer.statusCode, answer.body).toBe(200)
    expect(answer.json().data.depth).toBe(1)
    // A string ending in an escaped backslash closes there: the brackets after it are nesting again.
    const afterBackslash = (depth: number) => `{"s":"\\\\","d":${arrays(depth - 1)}}`
    expect((await send('/api/test/depth', afterBackslash(MAX_DEPTH))).statusCode).toBe(200)
    expectTooDeep(await send('/api/test/depth', afterBackslash(MAX_DEPTH + 1)))
  })

  it('still answers INVALID_JSON for malformed bodies that are not too deep', async () => {
    for (const body of ['{"a":', '[[[', '{"s":"[[[[[[[[', '']) {
      const response = await send('/api/test/depth', body)
      expect(response.statusCode, body).toBe(400)
      expect(response.json().code, body).toBe('INVALID_JSON')
    }
  })
})
