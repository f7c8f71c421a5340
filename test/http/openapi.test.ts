import type { FastifyPluginAsync, HTTPMethods } from 'fastify'
import { Type } from 'typebox'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { CredentialVerifiers } from '../../src/auth/caller.js'
import { policy, SCOPES, type RoutePolicy } from '../../src/auth/policies.js'
import { Ok } from '../../src/http/envelope.js'
import { createTestContext, type TestApp, type TestContext } from '../helpers/app.js'
import { DIALECTS } from '../helpers/database.js'

/**
 * The API surface is a contract. Every operation in the document is
 * checked, so routes added later are covered without touching this file; their `security` is
 * compared with what the route actually admits, learnt by calling it.
 */

type Security = Array<Record<string, string[]>>
interface Schema {
  $ref?: string
  type?: string
  required?: string[]
  properties?: Record<string, unknown>
  additionalProperties?: unknown
  anyOf?: Schema[]
}
interface Content {
  [mediaType: string]: { schema?: Schema }
}
interface Operation {
  tags?: string[]
  summary?: string
  security?: Security
  requestBody?: { content?: Content }
  responses?: Record<string, { content?: Content }>
  'x-unknown-parameters'?: string
}
interface Document {
  openapi: string
  info: { title: string; version: string; description?: string }
  servers?: Array<{ url: string; description?: string }>
  tags?: Array<{ name: string; description?: string }>
  components: { securitySchemes: Record<string, unknown>; schemas: Record<string, Schema> }
  paths: Record<string, Record<string, Operation>>
}

const PUBLIC_URL = 'https://api.example.test'
const ERROR_REF = '#/components/schemas/ErrorResponse'
const METHODS = new Set(['get', 'put', 'post', 'delete', 'patch', 'options'])

const ok = async () => ({ success: true as const, data: {} })
const testRoute = (method: HTTPMethods, url: string, auth: RoutePolicy, withBody = false) => ({
  method,
  url,
  config: { auth },
  schema: {
    tags: ['Test'],
    summary: `Test route (${auth.kind})`,
    ...(withBody ? { body: Type.Object({ name: Type.String() }, { additionalProperties: false }) } : {}),
    ...(url.includes(':') ? { params: pathParams(url) } : {}),
    response: { 200: Ok(Type.Object({})) },
  },
  handler: ok,
})

function pathParams(url: string) {
  const names = [...url.matchAll(/:(\w+)/g)].map((match) => match[1]!)
  return Type.Object(Object.fromEntries(names.map((name) => [name, Type.String({ maxLength: 100 })])))
}

/** Test-only routes of every policy kind, so the contract is checked for each. */
const testRoutes: FastifyPluginAsync = async (app) => {
  app.route(testRoute('GET', '/api/test/public', policy.public()))
  app.route(testRoute('POST', '/api/test/public', policy.public(), true))
  app.route(testRoute('GET', '/api/test/session', policy.session()))
  app.route(testRoute('PUT', '/api/test/admin/:id', policy.session({ permission: 'users.view' }), true))
  app.route(testRoute('DELETE', '/api/test/teams/:teamId', policy.session({ teamPermission: 'team.delete' })))
  app.route(testRoute('GET', '/api/test/dual', policy.dual('teams:read')))
  app.route(testRoute('PATCH', '/api/test/dual', policy.dual('mcp:read', { permission: 'mcp.servers.manage' }), true))
  app.route(testRoute('GET', '/api/test/satellite', policy.satellite()))
  app.route(testRoute('POST', '/api/test/register', policy.registrationToken(), true))
}

const PUBLIC: Security = []
const SESSION: Security = [{ cookieAuth: [] }]
const SATELLITE_KEY: Security = [{ satelliteKey: [] }]
const REGISTRATION_TOKEN: Security = [{ registrationToken: [] }]
const METRICS: Security = [{ metricsToken: [] }, { cookieAuth: [] }]
const dual = (scope: string): Security => [{ cookieAuth: [] }, { bearerAuth: [scope] }]
/** Dual, and open to anonymous callers (the empty requirement) while a setting says so. */
const dualOrPublic = (scope: string): Security => [...dual(scope), {}]

/** Routes whose policy this file knows: the core routes, the example plugin (plugins/notes) and the test routes above. */
const KNOWN: Record<string, Security> = {
  'GET /api/health': PUBLIC,
  'GET /api/health/ready': PUBLIC,
  'GET /api/metrics': METRICS,
  'GET /api/db/status': PUBLIC,
  'POST /api/db/setup': PUBLIC,
  'GET /api/mcp/categories': dual('mcp:read'),
  'POST /api/mcp/categories': SESSION,
  'PUT /api/mcp/categories/{id}': SESSION,
  'DELETE /api/mcp/categories/{id}': SESSION,
  'GET /api/mcp/servers': dual('mcp:read'),
  'GET /api/mcp/servers/search': dual('mcp:read'),
  'GET /api/mcp/servers/{id}': dual('mcp:read'),
  'POST /api/mcp/servers/global': SESSION,
  'PUT /api/mcp/servers/global/{id}': SESSION,
  'DELETE /api/mcp/servers/global/{id}': SESSION,
  'GET /api/mcp/servers/{id}/versions': dual('mcp:read'),
  'POST /api/mcp/servers/{id}/versions': SESSION,
  'PUT /api/mcp/servers/{id}/versions/{versionId}': SESSION,
  'GET /api/registry/v0.1/servers': dualOrPublic('mcp:read'),
  'GET /api/registry/v0.1/servers/{serverName}/versions': dualOrPublic('mcp:read'),
  'GET /api/registry/v0.1/servers/{serverName}/versions/{version}': dualOrPublic('mcp:read'),
  'GET /api/registry/v0/servers': dualOrPublic('mcp:read'),
  'GET /api/registry/v0/servers/{serverName}/versions': dualOrPublic('mcp:read'),
  'GET /api/registry/v0/servers/{serverName}/versions/{version}': dualOrPublic('mcp:read'),
  'GET /api/test/public': PUBLIC,
  'POST /api/test/public': PUBLIC,
  'GET /api/test/session': SESSION,
  'PUT /api/test/admin/{id}': SESSION,
  'DELETE /api/test/teams/{teamId}': SESSION,
  'GET /api/test/dual': dual('teams:read'),
  'PATCH /api/test/dual': dual('mcp:read'),
  'GET /api/test/satellite': SATELLITE_KEY,
  'POST /api/test/register': REGISTRATION_TOKEN,
  'POST /api/oauth2/introspect': [...SATELLITE_KEY, ...SESSION],
  'POST /api/satellites/global/registration-tokens': SESSION,
  'POST /api/teams/{teamId}/satellites/registration-tokens': SESSION,
  'GET /api/satellites/registration-tokens': SESSION,
  'GET /api/teams/{teamId}/satellites/registration-tokens': SESSION,
  'DELETE /api/satellites/registration-tokens/{id}': SESSION,
  'POST /api/satellites/register': REGISTRATION_TOKEN,
  'POST /api/satellites/{id}/heartbeat': SATELLITE_KEY,
  'GET /api/satellites': SESSION,
  'GET /api/teams/{teamId}/satellites': SESSION,
  'GET /api/satellites/{id}': SESSION,
  'PUT /api/satellites/{id}': SESSION,
  'DELETE /api/satellites/{id}': SESSION,
  'GET /api/admin/plugins': SESSION,
  'GET /api/plugin/notes/notes': SESSION,
  'POST /api/plugin/notes/notes': SESSION,
  'GET /api/plugin/notes/notes/{itemId}': SESSION,
  'PUT /api/plugin/notes/notes/{itemId}': SESSION,
  'DELETE /api/plugin/notes/notes/{itemId}': SESSION,
  'GET /api/plugin/notes/summary': SESSION,
}

type CredentialKind = 'session' | 'bearer' | 'satellite' | 'registration' | 'metrics'

/**
 * Credential checks that refuse everything but note that they were asked: a route admits a kind
 * of credential exactly when presenting one makes the policy hook consult its check. The one
 * exception is a bearer token without scopes, which a dual route refuses with 403 naming the
 * scope it needs. No handler of a protected route ever runs.
 */
function recordingCredentials() {
  const consulted = new Set<CredentialKind>()
  const refuse = (kind: CredentialKind) => async () => {
    consulted.add(kind)
    return null
  }
  const credentials: Partial<CredentialVerifiers> = {
    session: refuse('session'),
    bearer: async () => {
      consulted.add('bearer')
      return { kind: 'user', via: 'bearer', userId: 'probe', role: 'global_user', scopes: [], credentialId: 'probe' }
    },
    satelliteKey: refuse('satellite'),
    registrationToken: refuse('registration'),
    metricsToken: refuse('metrics'),
  }
  return { consulted, credentials }
}

const PRESENTED: Record<CredentialKind, Record<string, string>> = {
  session: { cookie: 'auth_session=probe-session' },
  bearer: { authorization: 'Bearer probe-token' },
  satellite: { authorization: 'Bearer service_satkey_probe' },
  registration: { authorization: 'Bearer service_satellite_global_probe' },
  metrics: { authorization: 'Bearer probe-metrics-token' },
}

/** The JSON body of an answer, if it has one. */
function bodyOf(response: { body: string }): { code?: unknown; details?: { required_scope?: unknown } } | undefined {
  try {
    return JSON.parse(response.body)
  } catch {
    return undefined
  }
}

function operations(document: Document): Array<[string, Operation]> {
  return Object.entries(document.paths).flatMap(([path, item]) =>
    Object.entries(item)
      .filter(([method]) => METHODS.has(method))
      .map(([method, operation]): [string, Operation] => [`${method.toUpperCase()} ${path}`, operation]),
  )
}

describe.each(DIALECTS)('OpenAPI contract on %s', (dialect) => {
  let ctx: TestContext
  let subject: TestApp
  let document: Document
  let probe: ReturnType<typeof recordingCredentials>

  beforeAll(async () => {
    ctx = await createTestContext(dialect)
    probe = recordingCredentials()
    subject = await ctx.build({ env: { PUBLIC_URL }, extend: testRoutes, credentials: probe.credentials })
    const response = await subject.app.inject({ method: 'GET', url: '/documentation/json' })
    expect(response.statusCode).toBe(200)
    document = response.json()
  })
  afterAll(() => ctx.close())

  const resolve = (schema: Schema | undefined): Schema | undefined =>
    schema?.$ref?.startsWith('#/components/schemas/')
      ? document.components.schemas[schema.$ref.slice('#/components/schemas/'.length)]
      : schema

  it('describes the API: OpenAPI 3.0.0, contract version, one server at PUBLIC_URL, both security schemes', () => {
    expect(document.openapi).toBe('3.0.0')
    expect(document.info.version).toBe('0.20.5')
    expect(document.info.title).toEqual(expect.stringMatching(/\S/))
    expect(document.servers).toHaveLength(1)
    expect(document.servers?.[0]?.url).toBe(subject.config.publicUrl)
    expect(document.servers?.[0]?.url).toBe(PUBLIC_URL)
    // The one server is where the service is reached, in development and production alike.
    expect(document.servers?.[0]?.description).toMatch(/PUBLIC_URL/)
    expect(document.servers?.[0]?.description).not.toMatch(/development/i)
    expect(document.components.securitySchemes.cookieAuth).toMatchObject({ type: 'apiKey', in: 'cookie', name: 'auth_session' })
    expect(document.components.securitySchemes.bearerAuth).toMatchObject({ type: 'http', scheme: 'bearer' })
    expect(document.components.securitySchemes.satelliteKey).toMatchObject({ type: 'http', scheme: 'bearer', bearerFormat: 'service_satkey_<secret>' })
    expect(document.components.securitySchemes.registrationToken).toMatchObject({ type: 'http', scheme: 'bearer', bearerFormat: 'service_satellite_<global|team>_<JWT>' })
    expect(document.components.securitySchemes.metricsToken).toMatchObject({ type: 'http', scheme: 'bearer' })
  })

  it('shares one ErrorResponse schema with success, error and code required', () => {
    const schema = document.components.schemas.ErrorResponse
    expect(schema).toBeDefined()
    expect(schema?.type).toBe('object')
    expect(schema?.required).toEqual(expect.arrayContaining(['success', 'error', 'code']))
    expect(Object.keys(schema?.properties ?? {})).toEqual(expect.arrayContaining(['success', 'error', 'code', 'details']))
  })

  it('lists every known route with the security of its policy', () => {
    const documented = Object.fromEntries(operations(document).map(([name, operation]) => [name, operation.security]))
    for (const [name, security] of Object.entries(KNOWN)) expect(documented[name], name).toEqual(security)
  })

  it('documents every operation with tags, a summary, a JSON success envelope and the error envelope', () => {
    const all = operations(document)
    expect(all.length).toBeGreaterThanOrEqual(Object.keys(KNOWN).length)
    const failures: string[] = []
    for (const [name, operation] of all) {
      const fail = (problem: string) => failures.push(`${name}: ${problem}`)
      if (!operation.tags?.length || operation.tags.some((tag) => !tag.trim())) fail('no tags')
      if (!operation.summary?.trim()) fail('no summary')
      if (!Array.isArray(operation.security)) fail('no security')

      const responses = Object.entries(operation.responses ?? {})
      const success = responses.filter(([status]) => /^2(\d\d|XX)$/.test(status))
      const jsonSuccess = success.map(([, response]) => resolve(response.content?.['application/json']?.schema)).filter((s) => s !== undefined)
      // A browser redirect (provider sign-in, the consent page's sign-in form) answers 302/303 and no JSON; it must say so.
      const redirectOnly = success.length === 0 && responses.some(([status]) => status === '302' || status === '303')
      // The Prometheus scrape target answers in Prometheus's own text format, and must say so.
      const exposition = name === 'GET /api/metrics' && success.some(([, response]) => Object.keys(response.content ?? {}).some((type) => type.startsWith('text/plain; version=0.0.4')))
      // The backend's own account pages (sign-in, forgot password) answer HTML to a browser and must say so.
      const htmlPage = success.some(([, response]) => Object.keys(response.content ?? {}).some((type) => type.startsWith('text/html')))
      // A delete that answers nothing at all (204 No Content, RFC 9110 §15.3.5) says so.
      const noContent = success.length > 0 && success.every(([status, response]) => status === '204' && response.content === undefined)
      if (jsonSuccess.length === 0 && !redirectOnly && !exposition && !htmlPage && !noContent) fail('no 2xx response with a JSON schema')
      // The MCP Registry's formats (the sub-registry API, the server.json export) answer bare documents on success.
      // So does the client ID metadata document authorization servers fetch.
      const registryFormat = name.includes(' /api/registry/') || name.endsWith('/server.json') || name === 'GET /api/oauth/upstream/client.json'
      // A client configuration downloaded (`download=1`) is the bare file an MCP client reads; its first branch is the envelope.
      const download = name === 'GET /api/users/me/mcp/client-config'
      for (const schema of registryFormat ? [] : jsonSuccess.map((each) => (download ? resolve(each.anyOf?.[0]) ?? {} : each))) {
        // Every JSON answer carries `success`.
        if (schema.properties?.success === undefined || !schema.required?.includes('success')) fail('a 2xx schema lacks `success`')
      }
      for (const errorClass of ['4', '5']) {
        const enveloped = responses.some(
          ([status, response]) => status.startsWith(errorClass) && JSON.stringify(response.content?.['application/json']?.schema ?? {}).includes(ERROR_REF),
        )
        if (!enveloped) fail(`no ${errorClass}xx response referencing ErrorResponse`)
      }

      // Request objects refuse unknown properties, except where the operation declares that it ignores them.
      if (operation['x-unknown-parameters'] === 'ignored') continue
      for (const [mediaType, { schema }] of Object.entries(operation.requestBody?.content ?? {})) {
        const body = resolve(schema)
        if (body?.type === 'object' && body.additionalProperties !== false) fail(`${mediaType} body allows unknown properties`)
      }
    }
    expect(failures).toEqual([])
  })

  it('ignores unknown parameters on the OAuth protocol endpoints only (RFC 6749 §3.1, RFC 7591 §2), and says so', () => {
    const ignoring = operations(document).filter(([, operation]) => operation['x-unknown-parameters'] !== undefined)
    expect(Object.fromEntries(ignoring.map(([name, operation]) => [name, operation['x-unknown-parameters']]))).toEqual({
      'GET /api/oauth2/auth': 'ignored',
      'POST /api/oauth2/token': 'ignored',
      'POST /api/oauth2/revoke': 'ignored',
      'POST /api/oauth2/introspect': 'ignored',
      'POST /api/oauth2/register': 'ignored',
      // The authorization response an upstream server sends the browser back with (RFC 6749 §4.1.2).
      'GET /api/oauth/upstream/callback': 'ignored',
      // The authorization response an OpenID Connect issuer sends the browser back with (RFC 6749 §4.1.2).
      'GET /api/auth/oidc/callback': 'ignored',
    })
  })

  it('gives every operation the security that its route actually enforces', async () => {
    const documented: Record<string, Security | undefined> = {}
    const enforced: Record<string, Security | string> = {}
    for (const [name, operation] of operations(document)) {
      // The empty requirement (anonymous callers while a setting allows them, off here) is left
      // to the KNOWN list above and to the route's own tests.
      documented[name] = operation.security?.filter((requirement) => Object.keys(requirement).length > 0)
      const [method, path] = name.split(' ') as [string, string]
      // Malformed JSON: a public route refuses it at parsing, before any handler runs.
      const hasBody = method !== 'GET' && method !== 'HEAD'
      const call = async (headers: Record<string, string>) => {
        probe.consulted.clear()
        const response = await subject.app.inject({
          method: method as HTTPMethods,
          url: path.replace(/\{[^}]+\}/g, 'probe'),
          headers: hasBody ? { ...headers, 'content-type': 'application/json' } : headers,
          ...(hasBody ? { payload: '{' } : {}),
        })
        return { response, consulted: new Set(probe.consulted) }
      }

      const anonymous = await call({})
      const admits = {} as Record<CredentialKind, boolean>
      let requiredScope: unknown
      for (const kind of Object.keys(PRESENTED) as CredentialKind[]) {
        const { response, consulted } = await call(PRESENTED[kind])
        admits[kind] = consulted.has(kind)
        if (kind === 'bearer' && admits.bearer) requiredScope = bodyOf(response)?.details?.required_scope
      }

      // The policy hook's refusal, as opposed to e.g. an OAuth endpoint's own 401 invalid_client.
      const refusedAnonymous = anonymous.response.statusCode === 401 && bodyOf(anonymous.response)?.code === 'UNAUTHORIZED'
      if (!Object.values(admits).some(Boolean)) {
        enforced[name] = refusedAnonymous ? 'refuses every credential' : PUBLIC
      } else if (!refusedAnonymous) {
        enforced[name] = `answers anonymous callers (${anonymous.response.statusCode}), yet consults credentials`
      } else if (admits.metrics) {
        // The metrics: METRICS_TOKEN, or a (global admin's) session.
        enforced[name] = admits.session && !admits.bearer && !admits.satellite && !admits.registration ? METRICS : 'the metrics token beside other bearer credentials'
      } else if (admits.session && admits.bearer) {
        enforced[name] = typeof requiredScope === 'string' && (SCOPES as readonly string[]).includes(requiredScope)
          ? dual(requiredScope)
          : `dual, but a scopeless token was not refused with a known required_scope (${String(requiredScope)})`
      } else if (admits.session) {
        // Introspection: a satellite key, or a (global admin's) session.
        enforced[name] = admits.satellite && !admits.registration ? [...SATELLITE_KEY, ...SESSION] : admits.satellite || admits.registration ? 'session and registration credentials' : SESSION
      } else if (admits.satellite || admits.registration) {
        enforced[name] = admits.bearer ? 'bearer and satellite credentials'
          : admits.satellite && admits.registration ? 'satellite keys and registration tokens on one route'
          : admits.satellite ? SATELLITE_KEY : REGISTRATION_TOKEN
      } else {
        // Bearer only (userinfo): the token's scope is what the document must name.
        enforced[name] = typeof requiredScope === 'string' && (SCOPES as readonly string[]).includes(requiredScope)
          ? [{ bearerAuth: [requiredScope] }]
          : `admits a bearer token but no session, and a scopeless token was not refused with a known required_scope (${String(requiredScope)})`
      }
    }
    expect(documented).toEqual(enforced)
  })

  it('serves the document as YAML', async () => {
    const response = await subject.app.inject({ method: 'GET', url: '/documentation/yaml' })
    expect(response.statusCode).toBe(200)
    expect(response.headers['content-type']).toContain('yaml')
    expect(response.body).toMatch(/^openapi: ['"]?3\.0\.0/)
    expect(response.body).toContain('/api/health')
  })

  it('serves Swagger UI as HTML', async () => {
    let response = await subject.app.inject({ method: 'GET', url: '/documentation' })
    for (let hops = 0; hops < 3 && response.statusCode >= 300 && response.statusCode < 400; hops++) {
      response = await subject.app.inject({ method: 'GET', url: String(response.headers.location) })
    }
    expect(response.statusCode).toBe(200)
    expect(response.headers['content-type']).toContain('text/html')
    expect(response.body).toMatch(/swagger/i)
  })
})

/** The tags each operation of the document names, in order of first use. */
function usedTags(document: Document): string[] {
  return [...new Set(operations(document).flatMap(([, operation]) => operation.tags ?? []))]
}

describe.each(DIALECTS)("the explorer's front page on %s", (dialect) => {
  let ctx: TestContext
  let document: Document

  beforeAll(async () => {
    ctx = await createTestContext(dialect)
    // The service as it runs (core routes and the example plugin), without this file's test routes.
    const { app } = await ctx.build({ env: { PUBLIC_URL } })
    document = (await app.inject({ method: 'GET', url: '/documentation/json' })).json()
  })
  afterAll(() => ctx.close())

  it('describes every tag an operation uses, once, and lists no tag that none uses', () => {
    const listed = (document.tags ?? []).map((tag) => tag.name)
    expect(new Set(listed).size, `tags listed twice: ${listed}`).toBe(listed.length)
    const undescribed = usedTags(document).filter((name) => !document.tags?.some((tag) => tag.name === name && tag.description?.trim()))
    expect(undescribed).toEqual([])
    expect(listed.filter((name) => !usedTags(document).includes(name))).toEqual([])
    // The core's groups and the example plugin's own tag are all there.
    expect(listed).toEqual(expect.arrayContaining(['Authentication', 'OAuth2', 'Teams', 'MCP Catalogue', 'Satellites', 'plugin:notes']))
  })

  it('tells how to sign in from the explorer, and names the docs by their path in the repository', () => {
    const description = document.info.description ?? ''
    // A session: the login route, run from the explorer, sets the cookie in the same browser.
    expect(description).toContain('POST /api/auth/email/login')
    expect(description).toContain('auth_session')
    // A bearer token is pasted under "Authorize".
    expect(description).toContain('"Authorize"')
    expect(description).toContain('bearerAuth')
    // Swagger UI would resolve a relative link against /documentation/, so none is written.
    expect(description).toContain('docs/api.md')
    expect(description).not.toMatch(/\]\((?!https?:)/)
  })
})

describe('routes that break the contract fail the boot', () => {
  let ctx: TestContext

  beforeAll(async () => {
    ctx = await createTestContext('sqlite')
  })
  afterAll(() => ctx.close())

  const extend = (route: Record<string, unknown>): FastifyPluginAsync => async (app) => {
    app.route({ method: 'POST', url: '/api/test/broken', handler: ok, ...route })
  }
  const summary = { tags: ['Test'], summary: 'Broken on purpose', response: { 200: Ok(Type.Object({})) } }

  it('a route that declares no policy, naming the route', async () => {
    await expect(ctx.build({ extend: extend({ schema: summary }) })).rejects.toThrow(/POST \/api\/test\/broken.*auth/)
  })

  it('a hidden route that declares no policy', async () => {
    await expect(ctx.build({ extend: extend({ schema: { ...summary, hide: true } }) })).rejects.toThrow(/POST \/api\/test\/broken/)
  })

  it.each(['body', 'querystring'])('a %s object schema without additionalProperties: false', async (part) => {
    const schema = { ...summary, [part]: Type.Object({ name: Type.String() }) }
    await expect(ctx.build({ extend: extend({ config: { auth: policy.public() }, schema }) }))
      .rejects.toThrow(new RegExp(`POST /api/test/broken.*${part}.*additionalProperties`))
  })

  it('a route that declares unknownParameters: ignore may leave its top-level object open, but not the objects inside it', async () => {
    const open = Type.Object({ name: Type.String() }, { additionalProperties: true })
    await expect(ctx.build({ extend: extend({ config: { auth: policy.public(), unknownParameters: 'ignore' }, schema: { ...summary, body: open } }) }))
      .resolves.toBeDefined()
    const openInside = Type.Object({ inner: Type.Object({ a: Type.String() }) }, { additionalProperties: true })
    await expect(ctx.build({ extend: extend({ config: { auth: policy.public(), unknownParameters: 'ignore' }, schema: { ...summary, body: openInside } }) }))
      .rejects.toThrow(/POST \/api\/test\/broken.*body\.inner.*additionalProperties/)
  })

  it.each([
    ['a nested object', Type.Object({ inner: Type.Object({ a: Type.String() }) }, { additionalProperties: false }), 'body.inner'],
    ['an object inside a union', Type.Union([Type.Object({ a: Type.String() }, { additionalProperties: false }), Type.Object({ b: Type.String() })]), 'body(anyOf[1])'],
    ['an object inside an array', Type.Object({ list: Type.Array(Type.Object({ a: Type.String() })) }, { additionalProperties: false }), 'body.list[]'],
  ])('a body with %s that accepts unknown properties, naming where', async (_label, body, where) => {
    await expect(ctx.build({ extend: extend({ config: { auth: policy.public() }, schema: { ...summary, body } }) }))
      .rejects.toThrow(where)
  })

  it('a route with path parameters but no params schema', async () => {
    await expect(ctx.build({ extend: extend({ url: '/api/test/broken/:id', config: { auth: policy.public() }, schema: summary }) }))
      .rejects.toThrow(/POST \/api\/test\/broken\/:id has path parameters but no params schema/)
  })

  it.each([
    ['querystring', Type.Object({ offset: Type.Integer({ minimum: 0 }) }, { additionalProperties: false }), 'querystring.offset'],
    ['querystring', Type.Object({ size: Type.Optional(Type.Number({ maximum: 10 })) }, { additionalProperties: false }), 'querystring.size'],
    ['params', Type.Object({ page: Type.Integer() }), 'params.page'],
  ])('a number in the %s without both bounds, naming where', async (part, schema, where) => {
    const url = part === 'params' ? '/api/test/broken/:page' : '/api/test/broken'
    await expect(ctx.build({ extend: extend({ url, config: { auth: policy.public() }, schema: { ...summary, [part]: schema } }) }))
      .rejects.toThrow(`the number at ${where} needs a minimum and a maximum`)
  })

  it('while the same routes with a policy and closed objects boot', async () => {
    const closed = Type.Object({ name: Type.String() }, { additionalProperties: false })
    const { app } = await ctx.build({
      extend: extend({ config: { auth: policy.session() }, schema: { ...summary, body: closed, querystring: closed } }),
    })
    const response = await app.inject({ method: 'POST', url: '/api/test/broken' })
    expect(response.statusCode).toBe(401)
  })
})
