import type { FastifyInstance } from 'fastify'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createTestContext, type TestContext } from '../helpers/app.js'
import { DIALECTS } from '../helpers/database.js'
import { expectCode, importDocuments, install, weatherDocument } from '../helpers/installations.js'
import { createToken, heartbeat, pair, SATELLITE_LIMITS } from '../helpers/satellites.js'
import { client, crew as makeCrew, signUp, type Call, type Crew } from '../helpers/teams.js'

const CONFIG = '/api/users/me/mcp/client-config'
const SATELLITE_URL = 'https://config-formats.example.com'

/**
 * GET /api/users/me/mcp/client-config in each format (`mcpServers` for Claude Code, Cursor and the
 * like; `vscode` for VS Code's `.vscode/mcp.json`), enveloped or, with `download=1`, the bare file.
 */
describe.each(DIALECTS)('client configuration formats on %s', (dialect) => {
  let ctx: TestContext
  let app: FastifyInstance
  let call: Call
  let crew: Crew
  let entries: Record<string, { type: string; url: string }>
  let seq = 0

  beforeAll(async () => {
    ctx = await createTestContext(dialect)
    app = (await ctx.build({ limits: SATELLITE_LIMITS })).app
    call = client(app)
    const admin = await signUp(app, `cfgfmt_${dialect}_admin`)
    crew = await makeCrew(call, () => signUp(app, `cfgfmt_${dialect}_${++seq}`), 'Config Formats')
    const weatherId = (await importDocuments(call, admin, [weatherDocument('io.github.example/config-formats')]))[0]!
    const token = await createToken(call, crew.teamAdmin, { teamId: crew.team.id })
    const satellite = await pair(app, token.token, `cfgfmt-${dialect}`, { satellite_url: SATELLITE_URL })
    expect((await heartbeat(app, satellite.id, satellite.apiKey)).statusCode).toBe(200)
    const values = { 'env:WEATHER_API_KEY': 'k', 'env:PERSONAL_TOKEN': 't', 'arg:data_dir': '/d' }
    const first = await install(call, crew.team.id, crew.teamAdmin, { server_id: weatherId, name: 'weather', satellite_id: satellite.id, values })
    const second = await install(call, crew.team.id, crew.teamAdmin, { server_id: weatherId, name: 'weather-eu', satellite_id: satellite.id, values })
    entries = {
      [`${crew.team.slug}-weather`]: { type: 'http', url: `${SATELLITE_URL}/mcp/${first.id}` },
      [`${crew.team.slug}-weather-eu`]: { type: 'http', url: `${SATELLITE_URL}/mcp/${second.id}` },
    }
  })
  afterAll(() => ctx.close())

  it('answers the mcpServers document in the envelope by default, and with format=mcpServers', async () => {
    for (const query of ['', '?format=mcpServers', '?download=0', '?download=false', `?format=mcpServers&team_id=${crew.team.id}`]) {
      const response = await call('GET', `${CONFIG}${query}`, crew.teamUser)
      expect(response.statusCode, `${query}: ${response.body}`).toBe(200)
      expect(response.json(), query).toEqual({ success: true, data: { mcpServers: entries } })
      expect(response.headers['content-disposition'], query).toBeUndefined()
    }
  })

  it('format=vscode: the same entries under `servers`', async () => {
    const response = await call('GET', `${CONFIG}?format=vscode`, crew.teamUser)
    expect(response.statusCode, response.body).toBe(200)
    expect(response.json()).toEqual({ success: true, data: { servers: entries } })
  })

  it.each([
    ['mcpServers', '1', { mcpServers: {} }, '.mcp.json'],
    ['mcpServers', 'true', { mcpServers: {} }, '.mcp.json'],
    ['vscode', '1', { servers: {} }, 'mcp.json'],
    ['vscode', 'true', { servers: {} }, 'mcp.json'],
  ])('format=%s&download=%s: the bare document as an attachment', async (format, download, shape, fileName) => {
    const response = await call('GET', `${CONFIG}?format=${format}&download=${download}`, crew.teamUser)
    expect(response.statusCode, response.body).toBe(200)
    expect(response.headers['content-type']).toMatch(/^application\/json(;|$)/)
    expect(response.headers['content-disposition']).toBe(`attachment; filename="${fileName}"`)
    const key = Object.keys(shape)[0]!
    expect(response.json()).toEqual({ [key]: entries })
  })

  it('download=1 without format is the mcpServers file', async () => {
    const response = await call('GET', `${CONFIG}?download=1`, crew.teamUser)
    expect(response.statusCode, response.body).toBe(200)
    expect(response.headers['content-disposition']).toBe('attachment; filename=".mcp.json"')
    expect(response.json()).toEqual({ mcpServers: entries })
  })

  it('an outsider downloads an empty document', async () => {
    const response = await call('GET', `${CONFIG}?format=vscode&download=1`, crew.outsider)
    expect(response.statusCode, response.body).toBe(200)
    expect(response.json()).toEqual({ servers: {} })
  })

  it.each([
    ['format=claude', 'format'], ['format=', 'format'], ['format=VSCODE', 'format'], ['format=vscode&format=mcpServers', 'format'],
    ['download=yes', 'download'], ['download=2', 'download'], ['download=', 'download'], ['download=1&download=1', 'download'],
  ])('?%s → 400 VALIDATION_ERROR naming %s, in the envelope', async (query, field) => {
    const response = await call('GET', `${CONFIG}?${query}`, crew.teamUser)
    expectCode(response, 400, 'VALIDATION_ERROR')
    expect(response.headers['content-disposition']).toBeUndefined()
    const details = response.json().details as Array<{ field: string }>
    expect(details.map((detail) => detail.field)).toContain(field)
  })
})
