import { sql } from 'drizzle-orm'
import type { FastifyInstance } from 'fastify'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createTestContext, type TestContext } from '../helpers/app.js'
import { DIALECTS } from '../helpers/database.js'
import {
  expectCode, importDocuments, install, installationOf, installationsOf, weatherDocument, type InputBody, type InstallationBody,
} from '../helpers/installations.js'
import { createToken, heartbeat, pair, SATELLITE_LIMITS } from '../helpers/satellites.js'
import { rawRows } from '../helpers/sql.js'
import { addMember, client, crew as makeCrew, signUp, type Account, type Call, type Crew } from '../helpers/teams.js'

const SECRET_KEY = 'wk-live-0f9e8d7c6b5a4938'
const PERSONAL = 'ghp-personal-7a6b5c4d3e2f1a0b'

const inputOf = (installation: { inputs: InputBody[] }, key: string): InputBody => {
  const input = installation.inputs.find((each) => each.key === key)
  expect(input, key).toBeDefined()
  return input!
}

/**
 * Installations through the HTTP API: a registry document installed with no mapping, the values
 * of the team and of each member, versions and `track_latest`, names, placement and status.
 */
describe.each(DIALECTS)('installations on %s', (dialect) => {
  let ctx: TestContext
  let app: FastifyInstance
  let call: Call
  let admin: Account
  let a: Crew
  let b: Crew
  let weatherId: string
  let seq = 0
  const fresh = () => signUp(app, `inst_${++seq}`)

  beforeAll(async () => {
    ctx = await createTestContext(dialect)
    app = (await ctx.build({ limits: SATELLITE_LIMITS })).app
    call = client(app)
    admin = await signUp(app, 'inst_admin')
    a = await makeCrew(call, fresh, 'Install Team A')
    b = await makeCrew(call, fresh, 'Install Team B')
    weatherId = (await importDocuments(call, admin, [weatherDocument('io.github.example/weather')]))[0]!
  })
  afterAll(() => ctx.close())

  it('installs a registry server with no mapping: inputs from the first package, team values set, secrets write-only', async () => {
    const installation = await install(call, a.team.id, a.teamAdmin, {
      server_id: weatherId, name: 'weather-main',
      values: { 'env:WEATHER_API_KEY': SECRET_KEY, 'env:LOG_LEVEL': 'debug', 'arg:data_dir': '/var/cache/weather', 'env:PERSONAL_TOKEN': 'x' },
    })
    expect(installation).toMatchObject({
      team_id: a.team.id, name: 'weather-main', version: '1.4.0', track_latest: true, desired: 'running',
      target: { kind: 'package', index: 0, transport: 'stdio' }, instance_mode: 'shared', satellite_id: null,
      status: 'pending', endpoint_url: null, tools_count: 0, spec_revision: 1, created_by: a.teamAdmin.id, missing_inputs: [],
    })
    expect(installation.inputs.map((input) => input.key)).toEqual(['env:WEATHER_API_KEY', 'env:LOG_LEVEL', 'env:PERSONAL_TOKEN', 'arg:--port', 'arg:data_dir'])
    expect(inputOf(installation, 'env:WEATHER_API_KEY')).toEqual({
      key: 'env:WEATHER_API_KEY', kind: 'env', description: 'Key of the weather provider', required: true, secret: true, scope: 'team', is_set: true,
    })
    expect(inputOf(installation, 'env:LOG_LEVEL')).toMatchObject({ default: 'info', choices: ['debug', 'info', 'warn'], is_set: true, value: 'debug' })
    expect(inputOf(installation, 'arg:--port')).toMatchObject({ format: 'number', default: '8080', is_set: false })
    expect(JSON.stringify(installation)).not.toContain(SECRET_KEY)
    // Stored sealed, not in the clear.
    const stored = await rawRows(app.services.database, sql`select value, sealed from mcp_installation_values where installation_id = ${installation.id} and key = 'env:WEATHER_API_KEY'`)
    expect(stored[0]![0]).toBeNull()
    expect(String(stored[0]![1])).not.toContain(SECRET_KEY)
    const read = await call('GET', installationOf(a.team.id, installation.id), a.teamUser)
    expect(read.statusCode, read.body).toBe(200)
    expect(read.body).not.toContain(SECRET_KEY)
  })

  it('a user-scoped input: each member sets their own; the admin cannot set it as a team value', async () => {
    const installation = await install(call, a.team.id, a.teamAdmin, {
      server_id: weatherId, name: 'weather-personal', user_scoped: ['env:PERSONAL_TOKEN'],
      values: { 'env:WEATHER_API_KEY': SECRET_KEY, 'arg:data_dir': '/tmp/w' },
    })
    expect(installation).toMatchObject({ instance_mode: 'per_user', status: 'needs_config', missing_inputs: ['env:PERSONAL_TOKEN'] })
    expect(inputOf(installation, 'env:PERSONAL_TOKEN')).toMatchObject({ scope: 'user', is_set: false })

    const asTeamValue = await call('PUT', `${installationOf(a.team.id, installation.id)}/values`, a.teamAdmin, { values: { 'env:PERSONAL_TOKEN': PERSONAL } })
    expectCode(asTeamValue, 400, 'VALIDATION_ERROR')
    expect(asTeamValue.json().details).toEqual([expect.objectContaining({ field: 'values.env:PERSONAL_TOKEN' })])

    const mine = await call('PUT', `${installationOf(a.team.id, installation.id)}/my-values`, a.teamUser, { values: { 'env:PERSONAL_TOKEN': PERSONAL } })
    expect(mine.statusCode, mine.body).toBe(200)
    expect(mine.json().data.values).toEqual([expect.objectContaining({ key: 'env:PERSONAL_TOKEN', is_set: true, secret: true })])
    expect(mine.body).not.toContain(PERSONAL)

    // The member's view: configured; the admin's: still missing their own.
    const asUser = (await call('GET', installationOf(a.team.id, installation.id), a.teamUser)).json().data.installation as InstallationBody
    expect(asUser).toMatchObject({ missing_inputs: [], status: 'pending' })
    const asAdmin = (await call('GET', installationOf(a.team.id, installation.id), a.teamAdmin)).json().data.installation as InstallationBody
    expect(asAdmin).toMatchObject({ missing_inputs: ['env:PERSONAL_TOKEN'], status: 'needs_config' })
    const adminsOwn = await call('GET', `${installationOf(a.team.id, installation.id)}/my-values`, a.teamAdmin)
    expect(adminsOwn.json().data.values).toEqual([expect.objectContaining({ key: 'env:PERSONAL_TOKEN', is_set: false })])

    // Leaving the team takes the member's own values with them.
    const leaver = await fresh()
    await addMember(call, a.team.id, a.owner, leaver, 'team_user')
    expect((await call('PUT', `${installationOf(a.team.id, installation.id)}/my-values`, leaver, { values: { 'env:PERSONAL_TOKEN': 'leaver-token' } })).statusCode).toBe(200)
    const removed = await call('DELETE', `/api/teams/${a.team.id}/members/${leaver.id}`, a.owner)
    expect(removed.statusCode, removed.body).toBe(200)
    const left = await rawRows(app.services.database, sql`select count(*) from mcp_installation_values where user_id = ${leaver.id}`)
    expect(Number(left[0]![0])).toBe(0)
  })

  it('checks every value before writing any: choices, format and unknown keys, each named', async () => {
    const installation = await install(call, a.team.id, a.teamAdmin, { server_id: weatherId, name: 'weather-checks' })
    expect(installation.status).toBe('needs_config')
    expect(installation.missing_inputs).toEqual(['env:WEATHER_API_KEY', 'env:PERSONAL_TOKEN', 'arg:data_dir'])
    const bad = await call('PUT', `${installationOf(a.team.id, installation.id)}/values`, a.teamAdmin, {
      values: { 'env:LOG_LEVEL': 'verbose', 'arg:--port': 'eighty', 'env:NOPE': 'x', 'env:WEATHER_API_KEY': SECRET_KEY },
    })
    expectCode(bad, 400, 'VALIDATION_ERROR')
    expect(bad.json().details.map((detail: { field: string }) => detail.field).sort()).toEqual(['values.arg:--port', 'values.env:LOG_LEVEL', 'values.env:NOPE'])
    expect(bad.body).not.toContain(SECRET_KEY)
    const rows = await rawRows(app.services.database, sql`select count(*) from mcp_installation_values where installation_id = ${installation.id}`)
    expect(Number(rows[0]![0])).toBe(0)

    const good = await call('PUT', `${installationOf(a.team.id, installation.id)}/values`, a.teamAdmin, {
      values: { 'env:WEATHER_API_KEY': SECRET_KEY, 'env:PERSONAL_TOKEN': 'team-token', 'arg:data_dir': '/data', 'arg:--port': '9090' },
    })
    expect(good.statusCode, good.body).toBe(200)
    expect(good.json().data.installation).toMatchObject({ missing_inputs: [], status: 'pending', spec_revision: 2 })
    const unset = await call('PUT', `${installationOf(a.team.id, installation.id)}/values`, a.teamAdmin, { values: { 'arg:data_dir': null } })
    expect(unset.json().data.installation).toMatchObject({ missing_inputs: ['arg:data_dir'], status: 'needs_config', spec_revision: 3 })
  })

  it('installs the remote by choice: header and URL variable inputs', async () => {
    const installation = await install(call, a.team.id, a.teamAdmin, {
      server_id: weatherId, name: 'weather-remote', target: { kind: 'remote', index: 0 }, values: { 'urlvar:tenant': 'acme' },
    })
    expect(installation.target).toEqual({ kind: 'remote', index: 0, transport: 'streamable-http' })
    expect(installation.inputs.map((input) => input.key)).toEqual(['header:X-Api-Key', 'urlvar:tenant'])
    expect(installation.missing_inputs).toEqual(['header:X-Api-Key'])
    const outside = await call('PUT', `${installationOf(a.team.id, installation.id)}/values`, a.teamAdmin, { values: { 'urlvar:tenant': 'initech' } })
    expectCode(outside, 400, 'VALIDATION_ERROR')
    const missing = await call('POST', installationsOf(a.team.id), a.teamAdmin, { server_id: weatherId, target: { kind: 'remote', index: 3 } })
    expectCode(missing, 400, 'VALIDATION_ERROR')
    expect(missing.json().details[0].field).toBe('target')
  })

  it('names: the slug by default, suffixed while taken; an explicit taken name is 409; names are per team', async () => {
    const first = await install(call, b.team.id, b.teamAdmin, { server_id: weatherId })
    const second = await install(call, b.team.id, b.teamAdmin, { server_id: weatherId })
    expect(first.name).toBe(first.server.slug)
    expect(second.name).toBe(`${first.server.slug}-2`)
    expectCode(await call('POST', installationsOf(b.team.id), b.teamAdmin, { server_id: weatherId, name: first.name }), 409, 'INSTALLATION_NAME_TAKEN')
    expectCode(await call('PATCH', installationOf(b.team.id, second.id), b.teamAdmin, { name: first.name }), 409, 'INSTALLATION_NAME_TAKEN')
    expectCode(await call('POST', installationsOf(b.team.id), b.teamAdmin, { server_id: weatherId, name: 'Bad_Name' }), 400, 'VALIDATION_ERROR')
    const list = await call('GET', `${installationsOf(b.team.id)}?limit=1`, b.teamUser)
    expect(list.json().data.pagination).toEqual({ total: 2, limit: 1, offset: 0, has_more: true })
  })

  it('versions: pinned or latest, yanked and deprecated refused, track_latest follows a new latest version', async () => {
    const name = 'io.github.example/versioned'
    const serverId = (await importDocuments(call, admin, [weatherDocument(name, '1.0.0')]))[0]!
    const pinned = await install(call, a.team.id, a.teamAdmin, { server_id: serverId, version: '1.0.0', name: 'versioned-pinned' })
    const following = await install(call, a.team.id, a.teamAdmin, { server_id: serverId, name: 'versioned-latest', values: { 'env:LOG_LEVEL': 'warn', 'env:WEATHER_API_KEY': SECRET_KEY } })
    expect(pinned.track_latest).toBe(false)
    expect(following.track_latest).toBe(true)
    await importDocuments(call, admin, [weatherDocument(name, '1.1.0')])
    const moved = (await call('GET', installationOf(a.team.id, following.id), a.teamAdmin)).json().data.installation as InstallationBody
    expect(moved).toMatchObject({ version: '1.1.0', spec_revision: following.spec_revision + 1 })
    expect(inputOf(moved, 'env:LOG_LEVEL')).toMatchObject({ is_set: true, value: 'warn' })
    expect(inputOf(moved, 'env:WEATHER_API_KEY')).toMatchObject({ is_set: true })
    const stayed = (await call('GET', installationOf(a.team.id, pinned.id), a.teamAdmin)).json().data.installation as InstallationBody
    expect(stayed.version).toBe('1.0.0')

    const versions = (await call('GET', `/api/mcp/servers/${serverId}/versions`, admin)).json().data.versions as Array<{ id: string; version: string }>
    const old = versions.find((version) => version.version === '1.0.0')!
    expect((await call('PUT', `/api/mcp/servers/${serverId}/versions/${old.id}`, admin, { status: 'deprecated' })).statusCode).toBe(200)
    expectCode(await call('POST', installationsOf(a.team.id), a.teamAdmin, { server_id: serverId, version: '1.0.0' }), 409, 'VERSION_NOT_INSTALLABLE')
    expect((await call('PUT', `/api/mcp/servers/${serverId}/versions/${old.id}`, admin, { status: 'yanked' })).statusCode).toBe(200)
    expectCode(await call('PATCH', installationOf(a.team.id, following.id), a.teamAdmin, { version: '1.0.0' }), 409, 'VERSION_NOT_INSTALLABLE')
    expectCode(await call('POST', installationsOf(a.team.id), a.teamAdmin, { server_id: serverId, version: '9.9.9' }), 400, 'VALIDATION_ERROR')
    // A server in use is not deleted.
    expectCode(await call('DELETE', `/api/mcp/servers/global/${serverId}`, admin), 409, 'SERVER_IN_USE')
  })

  it("another team's server is not installable (404); the team's own team server is", async () => {
    const own = await call('POST', `/api/teams/${b.team.id}/mcp/servers`, b.teamAdmin, {
      name: `B Internal ${++seq}`, packages: [{ registry_type: 'npm', identifier: '@b/internal', environment_variables: [{ name: 'B_TOKEN', required: true, secret: true }] }],
    })
    expect(own.statusCode, own.body).toBe(201)
    const serverId = own.json().data.server.id as string
    expect((await call('POST', `/api/teams/${b.team.id}/mcp/servers/${serverId}/versions`, b.teamAdmin, { version: '0.1.0' })).statusCode).toBe(201)
    const installed = await install(call, b.team.id, b.teamAdmin, { server_id: serverId })
    expect(installed.inputs).toEqual([expect.objectContaining({ key: 'env:B_TOKEN', required: true, secret: true, is_set: false })])
    expect(installed.target.transport).toBe('stdio')
    expectCode(await call('POST', installationsOf(a.team.id), a.teamAdmin, { server_id: serverId }), 404, 'NOT_FOUND')
  })

  it('placement: automatic on the online team satellite, endpoint_url from its URL; a disabled one hands them on', async () => {
    const waiting = await install(call, a.team.id, a.teamAdmin, { server_id: weatherId, name: 'weather-waits', values: { 'env:WEATHER_API_KEY': 'k', 'env:PERSONAL_TOKEN': 't', 'arg:data_dir': '/d' } })
    expect(waiting).toMatchObject({ satellite_id: null, status: 'pending' })
    const token = await createToken(call, a.teamAdmin, { teamId: a.team.id })
    const satellite = await pair(app, token.token, `sat-a-${++seq}`, { satellite_url: 'https://sat-a.example.com' })
    expect((await heartbeat(app, satellite.id, satellite.apiKey)).statusCode).toBe(200)
    const placed = (await call('GET', installationOf(a.team.id, waiting.id), a.teamAdmin)).json().data.installation as InstallationBody
    expect(placed).toMatchObject({ satellite_id: satellite.id, endpoint_url: `https://sat-a.example.com/mcp/${waiting.id}`, status: 'pending' })
    const next = await install(call, a.team.id, a.teamAdmin, { server_id: weatherId, name: 'weather-placed' })
    expect(next.satellite_id).toBe(satellite.id)

    // Another team's satellite is 404; a disabled one is 400.
    expectCode(await call('PATCH', installationOf(b.team.id, (await install(call, b.team.id, b.teamAdmin, { server_id: weatherId })).id), b.teamAdmin, { satellite_id: satellite.id }), 404, 'NOT_FOUND')
    expect((await call('PUT', `/api/satellites/${satellite.id}`, admin, { status: 'disabled' })).statusCode).toBe(200)
    const released = (await call('GET', installationOf(a.team.id, waiting.id), a.teamAdmin)).json().data.installation as InstallationBody
    expect(released).toMatchObject({ satellite_id: null, endpoint_url: null })
    expectCode(await call('PATCH', installationOf(a.team.id, waiting.id), a.teamAdmin, { satellite_id: satellite.id }), 400, 'VALIDATION_ERROR')
  })

  it('the CLI reads with an mcp:read bearer: its installations and a client config with URLs only', async () => {
    const member = await fresh()
    await addMember(call, a.team.id, a.owner, member, 'team_user')
    const mine = await call('GET', '/api/users/me/mcp/installations?limit=100', member)
    expect(mine.statusCode, mine.body).toBe(200)
    const listed = mine.json().data.installations as InstallationBody[]
    expect(listed.length).toBeGreaterThan(0)
    expect(listed.every((installation) => installation.team_id === a.team.id || installation.team_id === member.id)).toBe(true)
    const config = await call('GET', '/api/users/me/mcp/client-config', member)
    expect(config.statusCode, config.body).toBe(200)
    for (const entry of Object.values(config.json().data.mcpServers as Record<string, { type: string; url: string }>)) {
      expect(entry.type).toBe('http')
      expect(entry.url).toMatch(/^https:\/\/.+\/mcp\//)
    }
    expect(config.body).not.toContain(SECRET_KEY)
  })

  it('restart and stop move the revision; delete removes the values; every write is audited with keys only', async () => {
    const installation = await install(call, a.team.id, a.teamAdmin, { server_id: weatherId, name: 'weather-lifecycle', values: { 'env:WEATHER_API_KEY': SECRET_KEY } })
    const restarted = await call('POST', `${installationOf(a.team.id, installation.id)}/restart`, a.teamAdmin)
    expect(restarted.json().data.installation.spec_revision).toBe(installation.spec_revision + 1)
    const stopped = await call('PATCH', installationOf(a.team.id, installation.id), a.teamAdmin, { desired: 'stopped' })
    expect(stopped.json().data.installation).toMatchObject({ desired: 'stopped' })
    const deleted = await call('DELETE', installationOf(a.team.id, installation.id), a.teamAdmin)
    expect(deleted.statusCode, deleted.body).toBe(200)
    expect((await call('GET', installationOf(a.team.id, installation.id), a.teamAdmin)).statusCode).toBe(404)
    const rows = await rawRows(app.services.database, sql`select count(*) from mcp_installation_values where installation_id = ${installation.id}`)
    expect(Number(rows[0]![0])).toBe(0)
    const audit = await call('GET', '/api/admin/audit-log?limit=100', admin)
    const events = (audit.json().data.events as Array<{ type: string; target: string; details: unknown }>).filter((event) => event.target === installation.id)
    expect(events.map((event) => event.type).sort()).toEqual(['installation.created', 'installation.deleted', 'installation.restarted', 'installation.updated'])
    expect(audit.body).not.toContain(SECRET_KEY)
    expect(audit.body).not.toContain(PERSONAL)
  })
})
