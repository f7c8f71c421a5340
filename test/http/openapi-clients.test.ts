import type { FastifyPluginAsync, HTTPMethods } from 'fastify'
import { Type } from 'typebox'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { policy } from '../../src/auth/policies.js'
import { Ok } from '../../src/http/envelope.js'
import { ERROR_CODES } from '../../src/http/error-codes.js'
import { createTestContext, type TestApp, type TestContext } from '../helpers/app.js'
import { registerAndLogin } from '../helpers/accounts.js'
import { DIALECTS } from '../helpers/database.js'
import {
  operationsOf, resolveRef, responseValidator, servedDocument, type DocumentedOperation, type OpenApiDocument,
} from '../helpers/openapi-document.js'

/**
 * What a client generator needs from the document: a unique operationId on every operation (its
 * function names), every error `code` as an enum and `details` typed, so that a generated client
 * can switch on them.
 */

const operationIdOf = (operation: DocumentedOperation): unknown => (operation.operation as { operationId?: unknown }).operationId

describe.each(DIALECTS)('OpenAPI for client generators on %s', (dialect) => {
  let ctx: TestContext
  let subject: TestApp
  let document: OpenApiDocument
  let operations: DocumentedOperation[]

  beforeAll(async () => {
    ctx = await createTestContext(dialect)
    subject = await ctx.build()
    document = await servedDocument(subject.app)
    operations = operationsOf(document)
  })
  afterAll(() => ctx.close())

  const idOf = (method: string, path: string) => {
    const found = operations.find((operation) => operation.method === method && operation.path === path)
    expect(found, `${method} ${path}`).toBeDefined()
    return operationIdOf(found!)
  }
  const errorSchema = () => document.components.schemas!.ErrorResponse!

  it('gives every operation a unique camelCase operationId', () => {
    expect(operations.length).toBeGreaterThan(50)
    const ids = operations.map(operationIdOf)
    const malformed = operations.filter((operation) => typeof operationIdOf(operation) !== 'string' || !/^[a-z][A-Za-z0-9]*$/.test(operationIdOf(operation) as string))
    expect(malformed.map(({ method, path }) => `${method} ${path}`)).toEqual([])
    const repeated = ids.filter((id, index) => ids.indexOf(id) !== index)
    expect(repeated).toEqual([])
  })

  it('makes the ids from the method and the path: list for a paginated GET, By<Name> for a path parameter', () => {
    expect(idOf('GET', '/api/users/me')).toBe('getUsersMe')
    expect(idOf('GET', '/api/mcp/servers')).toBe('listMcpServers')
    expect(idOf('GET', '/api/mcp/servers/{id}')).toBe('getMcpServersById')
    expect(idOf('PUT', '/api/mcp/servers/{id}/versions/{versionId}')).toBe('putMcpServersByIdVersionsByVersionId')
    expect(idOf('POST', '/api/oauth2/token')).toBe('postOauth2Token')
    expect(idOf('GET', '/api/health')).toBe('getHealth')
  })

  it("starts a plugin's ids with the plugin's id", () => {
    expect(idOf('GET', '/api/plugin/notes/notes')).toBe('notesListNotes')
    expect(idOf('GET', '/api/plugin/notes/notes/{itemId}')).toBe('notesGetNotesByItemId')
    expect(idOf('GET', '/api/plugin/notes/summary')).toBe('notesGetSummary')
  })

  it('lists every error code the service can answer as the enum of ErrorResponse.code', () => {
    const code = errorSchema().properties!.code!
    expect(code.type).toBe('string')
    expect(code.enum).toEqual([...ERROR_CODES])
    expect(new Set(ERROR_CODES).size).toBe(ERROR_CODES.length)
    expect(code.enum).toEqual(expect.arrayContaining(['UNAUTHORIZED', 'VALIDATION_ERROR', 'NOT_FOUND', 'METHOD_NOT_ALLOWED', 'FORBIDDEN', 'INTERNAL_ERROR']))
  })

  it('types details: field problems, a refusal reason, or what was required', () => {
    const details = errorSchema().properties!.details!
    const shapes = (details.anyOf ?? details.oneOf ?? []).map((shape) => resolveRef(document, shape)!)
    expect(shapes).toHaveLength(3)
    const problems = shapes.find((shape) => shape.type === 'array')
    expect(problems?.items?.required).toEqual(['field', 'message'])
    const objects = shapes.filter((shape) => shape.type === 'object')
    for (const shape of objects) expect(shape.additionalProperties).toBe(false)
    const members = objects.flatMap((shape) => Object.keys(shape.properties ?? {}))
    expect(members).toEqual(expect.arrayContaining(['reason', 'required_permission', 'required_scope', 'required_satellite', 'origin']))
  })

  describe('error answers fit the documented ErrorResponse, details included', () => {
    let validate: ReturnType<typeof responseValidator>
    const operation = (method: string, path: string) => operations.find((each) => each.method === method && each.path === path)!
    const expectDocumented = (method: string, path: string, response: { statusCode: number; json(): unknown }) => {
      expect(validate(operation(method, path), response.statusCode, response.json())).toEqual([])
    }

    beforeAll(() => {
      validate = responseValidator(document)
    })

    it('400 VALIDATION_ERROR with field problems', async () => {
      const response = await subject.app.inject({ method: 'POST', url: '/api/auth/email/login', payload: { login: 'someone' } })
      expect(response.statusCode).toBe(400)
      expect(response.json()).toMatchObject({ code: 'VALIDATION_ERROR', details: [{ field: 'password', in: 'body' }] })
      expectDocumented('POST', '/api/auth/email/login', response)
    })

    it('403 FORBIDDEN naming the refused origin of a cross-site request', async () => {
      const response = await subject.app.inject({
        method: 'POST', url: '/api/teams', payload: { name: 'x' },
        headers: { cookie: 'auth_session=anything', origin: 'https://elsewhere.example' },
      })
      expect(response.statusCode).toBe(403)
      expect(response.json()).toMatchObject({ code: 'FORBIDDEN', details: { origin: 'https://elsewhere.example' } })
      expectDocumented('POST', '/api/teams', response)
    })

    it('403 FORBIDDEN naming the permission required', async () => {
      await registerAndLogin(subject.app, { username: `clients_admin_${dialect}`, email: `clients_admin_${dialect}@example.test` })
      const { cookie } = await registerAndLogin(subject.app, { username: `clients_user_${dialect}`, email: `clients_user_${dialect}@example.test` })
      const response = await subject.app.inject({ method: 'GET', url: '/api/admin/users', headers: { cookie } })
      expect(response.statusCode).toBe(403)
      expect(response.json()).toMatchObject({ code: 'FORBIDDEN', details: { required_permission: 'users.view' } })
      expectDocumented('GET', '/api/admin/users', response)
    })

    it('401 INVALID_REGISTRATION_TOKEN with the reason', async () => {
      const response = await subject.app.inject({
        method: 'POST', url: '/api/satellites/register', payload: { name: 'probe' },
        headers: { authorization: 'Bearer service_satellite_global_not-a-jwt' },
      })
      expect(response.statusCode).toBe(401)
      expect(response.json()).toMatchObject({ code: 'INVALID_REGISTRATION_TOKEN', details: { reason: expect.any(String) } })
      expectDocumented('POST', '/api/satellites/register', response)
    })
  })
})

describe('operationIds that would collide fail the boot', () => {
  let ctx: TestContext

  beforeAll(async () => {
    ctx = await createTestContext('sqlite')
  })
  afterAll(() => ctx.close())

  const route = (method: HTTPMethods | HTTPMethods[], url: string, operationId?: string) => ({
    method,
    url,
    config: { auth: policy.public() },
    schema: { tags: ['Test'], summary: 'Test route', ...(operationId === undefined ? {} : { operationId }), response: { 200: Ok(Type.Object({})) } },
    handler: async () => ({ success: true as const, data: {} }),
  })
  const extend = (...routes: Array<ReturnType<typeof route>>): FastifyPluginAsync => async (app) => {
    for (const each of routes) app.route(each)
  }

  it('keeps an id a route gives itself', async () => {
    const { app } = await ctx.build({ extend: extend(route('GET', '/api/test/ping', 'pingForTests')) })
    const ids = operationsOf(await servedDocument(app)).filter((each) => each.path === '/api/test/ping').map(operationIdOf)
    expect(ids).toEqual(['pingForTests'])
  })

  it('two routes with one id, naming both', async () => {
    await expect(ctx.build({ extend: extend(route('GET', '/api/test/one', 'sameName'), route('POST', '/api/test/two', 'sameName')) }))
      .rejects.toThrow(/POST \/api\/test\/two: operationId sameName is already GET \/api\/test\/one's/)
    await expect(ctx.build({ extend: extend(route('GET', '/api/test/health', 'getHealth')) }))
      .rejects.toThrow(/operationId getHealth is already GET \/api\/health's/)
  })

  it('one route for two methods, which cannot have an id each', async () => {
    await expect(ctx.build({ extend: extend(route(['GET', 'POST'], '/api/test/both')) }))
      .rejects.toThrow(/GET,POST \/api\/test\/both: register one route per method/)
  })
})
