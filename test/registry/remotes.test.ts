import type { FastifyInstance, LightMyRequestResponse } from 'fastify'
import { sql } from 'drizzle-orm'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createTestContext, type TestContext } from '../helpers/app.js'
import { DIALECTS } from '../helpers/database.js'
import { rawRows } from '../helpers/sql.js'
import { client, ROOMY_LIMITS, signUp, type Account, type Call } from '../helpers/teams.js'
import { SCHEMA_2025_12_11 } from './documents.js'

/**
 * Remotes as the MCP Registry has them: a URL by the registry's rule (http or https, no
 * whitespace; `{name}` template segments and placeholders such as `<YOUR_TOKEN>` allowed), the
 * HTTP headers a client sends and the variables of the URL template. Held by servers made by hand
 * (create, update, read, version) and by imported ones, and written to server.json unchanged;
 * what the rule refuses stays refused with a 400 naming the field, and nothing is written.
 */

type Json = Record<string, unknown>

const SERVERS = '/api/mcp/servers/global'

/** A remote with a template host, a placeholder, a header with its own variable, and the URL's variables. */
const templatedRemote = (): Json => ({
  type: 'streamable-http',
  url: 'https://{tenant}.mcp.example.com/mcp?key=<YOUR_TOKEN>',
  headers: [
    { name: 'Authorization', description: 'Your API token', value: 'Bearer {token}', isRequired: true, isSecret: true, variables: { token: { isSecret: true, isRequired: true } } },
    { name: 'X-Region', choices: ['eu', 'us'], default: 'eu', format: 'string' },
  ],
  variables: {
    tenant: { description: 'Your tenant', isRequired: true, placeholder: 'acme' },
    port: { default: '443', format: 'number' },
  },
})

function expectValidationError(response: LightMyRequestResponse, field: string): void {
  expect(response.statusCode, response.body).toBe(400)
  const body = response.json()
  expect(body).toMatchObject({ success: false, code: 'VALIDATION_ERROR' })
  const fields = (body.details as Array<{ field: string }>).map((detail) => detail.field)
  expect(fields.some((name) => name === field || name.startsWith(`${field}.`)), `${field} in ${JSON.stringify(fields)}`).toBe(true)
}

describe.each(DIALECTS)('remote URLs, headers and variables on %s', (dialect) => {
  let ctx: TestContext
  let app: FastifyInstance
  let call: Call
  let admin: Account
  let seq = 0
  const unique = (label: string) => `${label} ${dialect} ${++seq}`

  const countServers = async (): Promise<number> => {
    const [row] = await rawRows(app.services.database, sql`select count(*) from mcp_servers`)
    return Number(row![0])
  }

  beforeAll(async () => {
    ctx = await createTestContext(dialect)
    app = (await ctx.build({ limits: ROOMY_LIMITS })).app
    call = client(app)
    admin = await signUp(app, `remotes_admin_${dialect}`)
  })
  afterAll(() => ctx.close())

  it('a server made by hand keeps a templated remote whole: created, read, updated, versioned and exported as given', async () => {
    const remote = templatedRemote()
    const created = await call('POST', SERVERS, admin, { name: unique('Tenant MCP'), transport_type: 'http', remotes: [remote] })
    expect(created.statusCode, created.body).toBe(201)
    const server = created.json().data.server
    expect(server.remotes).toEqual([remote])
    expect((await call('GET', `/api/mcp/servers/${server.id}`, admin)).json().data.server.remotes).toEqual([remote])

    const exported = await call('GET', `/api/mcp/servers/${server.id}/server.json`, admin)
    expect(exported.statusCode, exported.body).toBe(200)
    expect(exported.json().remotes).toEqual([remote])

    const second = { type: 'sse', url: 'http://localhost:{port}/sse', variables: { port: { default: '8080', format: 'number' } } }
    const updated = await call('PUT', `${SERVERS}/${server.id}`, admin, { remotes: [remote, second] })
    expect(updated.statusCode, updated.body).toBe(200)
    expect(updated.json().data.server.remotes).toEqual([remote, second])

    const version = await call('POST', `/api/mcp/servers/${server.id}/versions`, admin, { version: '1.0.0', remotes: [second] })
    expect(version.statusCode, version.body).toBe(201)
    expect(version.json().data.version.remotes).toEqual([second])
    expect((await call('GET', `/api/mcp/servers/${server.id}/server.json`, admin)).json().remotes).toEqual([second])
  })

  const refused: Array<[string, Json, string]> = [
    ['a javascript: URL', { type: 'sse', url: 'javascript:alert(1)' }, 'remotes.0.url'],
    ['a relative URL', { type: 'sse', url: '/mcp/sse' }, 'remotes.0.url'],
    ['a scheme-relative URL', { type: 'sse', url: '//mcp.example.com/sse' }, 'remotes.0.url'],
    ['a URL with a space', { type: 'sse', url: 'https://mcp.example.com/s se' }, 'remotes.0.url'],
    ['a URL with a line break', { type: 'sse', url: 'https://mcp.example.com/sse\r\nX-Injected: 1' }, 'remotes.0.url'],
    ['a URL with a control character', { type: 'sse', url: 'https://mcp.example.com/\u0000' }, 'remotes.0.url'],
    ['a URL without a host', { type: 'sse', url: 'https:///sse' }, 'remotes.0.url'],
    ['a websocket URL', { type: 'sse', url: 'wss://mcp.example.com/sse' }, 'remotes.0.url'],
    ['a header name that is no HTTP token', { type: 'sse', url: 'https://mcp.example.com/sse', headers: [{ name: 'X Key' }] }, 'remotes.0.headers.0.name'],
    ['a header without a name', { type: 'sse', url: 'https://mcp.example.com/sse', headers: [{ value: 'x' }] }, 'remotes.0.headers.0'],
    ['a header member the format does not define', { type: 'sse', url: 'https://mcp.example.com/sse', headers: [{ name: 'X-Key', secret: true }] }, 'remotes.0.headers.0'],
    ['a variable name with braces', { type: 'sse', url: 'https://mcp.example.com/sse', variables: { '{tenant}': {} } }, 'remotes.0.variables'],
    ['a variable format the format does not define', { type: 'sse', url: 'https://mcp.example.com/sse', variables: { tenant: { format: 'uuid' } } }, 'remotes.0.variables.tenant.format'],
    ['variables as a list', { type: 'sse', url: 'https://mcp.example.com/sse', variables: [] }, 'remotes.0.variables'],
  ]
  it.each(refused)('refuses %s: 400 naming the field, nothing written', async (_, remote, field) => {
    const before = await countServers()
    expectValidationError(await call('POST', SERVERS, admin, { name: unique('Refused Remote'), remotes: [remote] }), field)
    expect(await countServers()).toBe(before)
  })

  it('an imported document: the remote (URL with a placeholder, headers, variables) is held, exported unchanged and imports back unchanged', async () => {
    const transportHeaders = [{ name: 'X-Api-Key', value: '{api_key}', isSecret: true }]
    const document = {
      $schema: SCHEMA_2025_12_11,
      name: `io.github.remotes-${dialect}/maps`,
      description: 'Maps and routes through a hosted server.',
      version: '1.0.0',
      packages: [{
        registryType: 'npm', identifier: '@remotes/maps-mcp', version: '1.0.0',
        transport: { type: 'sse', url: 'http://localhost:{port}/sse?key=<YOUR_TOKEN>', headers: transportHeaders },
      }],
      remotes: [templatedRemote(), { type: 'sse', url: 'https://mcp.amap.example/sse?key=<YOUR_TOKEN>' }],
    }
    const imported = await call('POST', '/api/mcp/servers/import', admin, document)
    expect(imported.statusCode, imported.body).toBe(200)
    const [result] = imported.json().data.results
    expect(result).toMatchObject({ status: 'created' })

    const server = (await call('GET', `/api/mcp/servers/${result.server_id}`, admin)).json().data.server
    expect(server.remotes).toEqual(document.remotes)
    const exported = (await call('GET', `/api/mcp/servers/${result.server_id}/server.json`, admin)).json()
    expect(exported.remotes).toEqual(document.remotes)
    expect(exported.packages[0].transport).toEqual(document.packages[0]!.transport)

    const again = await call('POST', '/api/mcp/servers/import', admin, exported)
    expect(again.json().data.results).toEqual([{ index: 0, name: document.name, status: 'unchanged', server_id: result.server_id }])
  })

  it('an imported document with a remote URL the rule refuses is reported invalid, naming the remote, and nothing is written', async () => {
    const before = await countServers()
    const document = {
      name: `io.github.remotes-${dialect}/bad-remote`, description: 'A remote with a space in its URL.', version: '1.0.0',
      remotes: [{ type: 'sse', url: 'https://mcp.example.com/s se' }],
    }
    const response = await call('POST', '/api/mcp/servers/import', admin, document)
    expect(response.statusCode, response.body).toBe(200)
    expect(response.json().data.results).toEqual([{
      index: 0, name: document.name, status: 'invalid',
      errors: [{ field: 'remotes[0].url', message: 'must be an http or https URL without spaces (variables in {braces} allowed)' }],
    }])
    expect(await countServers()).toBe(before)
  })
})
