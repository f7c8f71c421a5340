import { sql } from 'drizzle-orm'
import type { FastifyInstance, FastifyPluginAsync, LightMyRequestResponse } from 'fastify'
import { Type, type Static } from 'typebox'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { policy } from '../../src/auth/policies.js'
import { Ok } from '../../src/http/envelope.js'
import { bodyValidator } from '../../src/http/validation.js'
import { createTestContext, type TestContext } from '../helpers/app.js'
import { createServer } from '../helpers/catalogue.js'
import { DIALECTS } from '../helpers/database.js'
import { rawRows } from '../helpers/sql.js'
import { client, ROOMY_LIMITS, signUp, type Account, type Call } from '../helpers/teams.js'

/**
 * An array whose items are objects refuses null (and any other non-object) in its place, with
 * 400 VALIDATION_ERROR naming the item, on every route. Discriminated unions (the catalogue's
 * packages, told apart by `registry_type`) used to let such items through to the handler.
 */

const closed = { additionalProperties: false } as const
const Circle = Type.Object({ kind: Type.Literal('circle'), radius: Type.Integer({ minimum: 1, maximum: 100 }) }, closed)
const Square = Type.Object({ kind: Type.Literal('square'), side: Type.Integer({ minimum: 1, maximum: 100 }) }, closed)
/** A discriminated union without a `type` of its own, written the way the catalogue writes its packages. */
const Shape = Type.Unsafe<{ kind: 'circle'; radius: number } | { kind: 'square'; side: number }>({
  oneOf: [Circle, Square],
  discriminator: { propertyName: 'kind' },
})
const Drawing = Type.Object({ drawing: Type.Object({ shapes: Type.Array(Shape, { maxItems: 10 }) }, closed) }, closed)

const drawingRoute: FastifyPluginAsync = async (app) => {
  app.post('/api/test/drawings', {
    config: { auth: policy.public() },
    schema: { tags: ['Test'], summary: 'drawing', body: Drawing, response: { 200: Ok(Type.Object({ kinds: Type.Array(Type.String()) })) } },
  }, async (request) => ({ success: true as const, data: { kinds: (request.body as Static<typeof Drawing>).drawing.shapes.map((shape) => shape.kind) } }))
}

/** 400 VALIDATION_ERROR whose details name `field` in the body. */
function expectRefusedItem(response: LightMyRequestResponse, field: string): void {
  expect(response.statusCode, response.body).toBe(400)
  const body = response.json()
  expect(body).toMatchObject({ success: false, error: expect.any(String), code: 'VALIDATION_ERROR' })
  expect(body.details, response.body).toContainEqual({ field, message: 'must be object', in: 'body' })
}

const VALID_PACKAGE = { registry_type: 'npm', identifier: '@example/weather' }
const NOT_OBJECTS: Array<[string, unknown]> = [['null', null], ['a number', 5], ['a string', 'npm'], ['an array', [VALID_PACKAGE]], ['a boolean', true]]

describe.each(DIALECTS)('null items in arrays of objects on %s', (dialect) => {
  let ctx: TestContext
  let app: FastifyInstance
  let call: Call
  let admin: Account

  const count = async (table: 'mcp_servers' | 'mcp_server_versions'): Promise<number> =>
    Number((await rawRows(app.services.database, sql`select count(*) from ${sql.identifier(table)}`))[0]![0])

  const listed = async (): Promise<number> => (await call('GET', '/api/mcp/servers', admin)).json().data.pagination.total

  beforeAll(async () => {
    ctx = await createTestContext(dialect)
    app = (await ctx.build({ limits: ROOMY_LIMITS, extend: drawingRoute })).app
    call = client(app)
    admin = await signUp(app, 'items_admin')
  })
  afterAll(() => ctx?.close())

  describe('POST /api/mcp/servers/global', () => {
    it.each(NOT_OBJECTS)('refuses %s as a package with 400 naming packages.0, and writes nothing', async (_label, item) => {
      const before = { rows: await count('mcp_servers'), listed: await listed() }
      const response = await call('POST', '/api/mcp/servers/global', admin, { name: 'Null Package Server', packages: [item] })
      expectRefusedItem(response, 'packages.0')
      expect({ rows: await count('mcp_servers'), listed: await listed() }).toEqual(before)
    })

    it('names the item by its index after a valid one', async () => {
      const response = await call('POST', '/api/mcp/servers/global', admin, { name: 'Second Null Server', packages: [VALID_PACKAGE, null] })
      expectRefusedItem(response, 'packages.1')
    })

    it('still creates a server whose packages are objects', async () => {
      const response = await call('POST', '/api/mcp/servers/global', admin, { name: 'Object Package Server', packages: [VALID_PACKAGE] })
      expect(response.statusCode, response.body).toBe(201)
      expect(response.json().data.server.packages).toEqual([VALID_PACKAGE])
    })
  })

  it('PUT /api/mcp/servers/global/:id refuses a null package and leaves the server as it was', async () => {
    const server = await createServer(call, admin, { name: 'Kept Package Server', packages: [VALID_PACKAGE] })
    const response = await call('PUT', `/api/mcp/servers/global/${server.id}`, admin, { packages: [null] })
    expectRefusedItem(response, 'packages.0')
    const read = await call('GET', `/api/mcp/servers/${server.id}`, admin)
    expect(read.json().data.server.packages).toEqual([VALID_PACKAGE])
  })

  it('POST /api/mcp/servers/:id/versions refuses a null package and adds no version', async () => {
    const server = await createServer(call, admin, { name: 'Versioned Package Server' })
    const before = await count('mcp_server_versions')
    const response = await call('POST', `/api/mcp/servers/${server.id}/versions`, admin, { version: '1.0.0', packages: [null] })
    expectRefusedItem(response, 'packages.0')
    expect(await count('mcp_server_versions')).toBe(before)
  })

  it('any route: a discriminated union nested in an object refuses null items, and takes objects', async () => {
    const post = (payload: unknown) => app.inject({ method: 'POST', url: '/api/test/drawings', payload: payload as object })
    for (const [, item] of NOT_OBJECTS) expectRefusedItem(await post({ drawing: { shapes: [{ kind: 'circle', radius: 2 }, item] } }), 'drawing.shapes.1')
    const valid = await post({ drawing: { shapes: [{ kind: 'circle', radius: 2 }, { kind: 'square', side: 3 }] } })
    expect(valid.statusCode, valid.body).toBe(200)
    expect(valid.json()).toEqual({ success: true, data: { kinds: ['circle', 'square'] } })
  })
})

describe('null items outside routes', () => {
  it('the body validator of plugin collections refuses them too', () => {
    const validate = bodyValidator(Drawing)
    expect(validate({ drawing: { shapes: [null] } })).toBe(false)
    expect(validate.errors).toContainEqual(expect.objectContaining({ instancePath: '/drawing/shapes/0', message: 'must be object' }))
    expect(validate({ drawing: { shapes: [{ kind: 'square', side: 1 }] } })).toBe(true)
  })
})
