import type { FastifyInstance, FastifyPluginAsync, LightMyRequestResponse } from 'fastify'
import { Type } from 'typebox'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { policy } from '../../src/auth/policies.js'
import { Ok } from '../../src/http/envelope.js'
import { createTestContext, type TestContext } from '../helpers/app.js'
import { DIALECTS } from '../helpers/database.js'
import { signUp, type Account } from '../helpers/teams.js'

/**
 * Integers in query strings and paths are written in decimal digits, optionally after a minus
 * sign. Other spellings that JavaScript's Number() reads (hexadecimal, binary, octal, exponents, a
 * plus sign, spaces, a fraction of zero, an empty value) are refused with 400 VALIDATION_ERROR
 * naming the parameter, not read as some number.
 */

const closed = { additionalProperties: false } as const
const Echo = Ok(Type.Unknown())

const integerRoutes: FastifyPluginAsync = async (app) => {
  app.get('/api/test/shifts', {
    config: { auth: policy.public() },
    schema: {
      tags: ['Test'], summary: 'shifts',
      querystring: Type.Object({
        shift: Type.Optional(Type.Integer({ minimum: -10, maximum: 10 })),
        ids: Type.Optional(Type.Array(Type.Integer({ minimum: 0, maximum: 1000 }), { maxItems: 5 })),
        label: Type.Optional(Type.String({ maxLength: 20 })),
      }, closed),
      response: { 200: Echo },
    },
  }, async (request) => ({ success: true as const, data: request.query }))

  app.get('/api/test/pages/:page', {
    config: { auth: policy.public() },
    schema: { tags: ['Test'], summary: 'page', params: Type.Object({ page: Type.Integer({ minimum: 0, maximum: 1000 }) }, closed), response: { 200: Echo } },
  }, async (request) => ({ success: true as const, data: request.params }))
}

/** Percent-encoded spellings that Number() would read as an integer (or as 0), and what they look like. */
const NOT_DECIMAL: Array<[string, string]> = [
  ['0x10', '0x10'], ['1e1', '1e1'], [' 5', '%205'], ['5 ', '5%20'], ['5.0', '5.0'], ['+5', '%2B5'], ['0b1', '0b1'], ['0o7', '0o7'],
  ['Infinity', 'Infinity'], ['empty', ''], ['-0x3', '-0x3'], ['1_0', '1_0'],
]

function expectRefused(response: LightMyRequestResponse, field: string, location: string): void {
  expect(response.statusCode, response.body).toBe(400)
  expect(response.json()).toEqual({
    success: false,
    error: expect.any(String),
    code: 'VALIDATION_ERROR',
    details: [{ field, message: 'must be an integer in decimal digits', in: location }],
  })
}

describe.each(DIALECTS)('integer query and path parameters on %s', (dialect) => {
  let ctx: TestContext
  let app: FastifyInstance
  /** The catalogue lists need a session; the test routes are public. */
  let reader: Account
  const get = (url: string) => app.inject({ method: 'GET', url, headers: { cookie: reader.cookie } })

  beforeAll(async () => {
    ctx = await createTestContext(dialect)
    app = (await ctx.build({ extend: integerRoutes })).app
    reader = await signUp(app, 'integer_reader')
  })
  afterAll(() => ctx?.close())

  it.each(NOT_DECIMAL)('GET /api/mcp/servers refuses limit=%s and offset=%s', async (_label, encoded) => {
    expectRefused(await get(`/api/mcp/servers?limit=${encoded}`), 'limit', 'querystring')
    expectRefused(await get(`/api/mcp/servers?offset=${encoded}`), 'offset', 'querystring')
  })

  it('decimal limits and offsets still work', async () => {
    for (const [query, limit, offset] of [['limit=10', 10, 0], ['limit=100&offset=0', 100, 0], ['offset=5', 20, 5], ['limit=010', 10, 0]] as const) {
      const response = await get(`/api/mcp/servers?${query}`)
      expect(response.statusCode, `${query}: ${response.body}`).toBe(200)
      expect(response.json().data.pagination).toMatchObject({ limit, offset })
    }
  })

  it('a negative integer is read where the schema allows one; other spellings of it are refused', async () => {
    const response = await get('/api/test/shifts?shift=-3')
    expect(response.statusCode, response.body).toBe(200)
    expect(response.json().data).toEqual({ shift: -3 })
    for (const [, encoded] of NOT_DECIMAL) expectRefused(await get(`/api/test/shifts?shift=${encoded}`), 'shift', 'querystring')
    expectRefused(await get('/api/test/shifts?shift=--3'), 'shift', 'querystring')
  })

  it('a repeated integer parameter is checked in every occurrence', async () => {
    const valid = await get('/api/test/shifts?ids=1&ids=20')
    expect(valid.statusCode, valid.body).toBe(200)
    expect(valid.json().data).toEqual({ ids: [1, 20] })
    expectRefused(await get('/api/test/shifts?ids=1&ids=0x2'), 'ids', 'querystring')
  })

  it('a text parameter keeps any spelling', async () => {
    const response = await get('/api/test/shifts?label=0x10')
    expect(response.statusCode, response.body).toBe(200)
    expect(response.json().data).toEqual({ label: '0x10' })
  })

  it('an integer path parameter takes decimal digits only', async () => {
    const valid = await get('/api/test/pages/16')
    expect(valid.statusCode, valid.body).toBe(200)
    expect(valid.json().data).toEqual({ page: 16 })
    expectRefused(await get('/api/test/pages/0x10'), 'page', 'params')
    expectRefused(await get('/api/test/pages/1e1'), 'page', 'params')
  })
})
