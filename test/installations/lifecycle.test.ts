import { sql } from 'drizzle-orm'
import type { FastifyInstance } from 'fastify'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createTestContext, type TestContext } from '../helpers/app.js'
import { manualClock, type ManualClock } from '../helpers/clock.js'
import { DIALECTS } from '../helpers/database.js'
import { expectCode, importDocuments, install, installationOf, weatherDocument, type InstallationBody } from '../helpers/installations.js'
import { createToken, heartbeat, pair, SATELLITE_LIMITS } from '../helpers/satellites.js'
import { rawRows } from '../helpers/sql.js'
import { addMember, client, crew as makeCrew, signUp, type Account, type Call, type Crew } from '../helpers/teams.js'

/**
 * What happens to installations over time: versions and targets changed, a hand-made server's
 * versions followed, satellites going silent, and teams, members and servers going away.
 */
describe.each(DIALECTS)('installation lifecycle on %s', (dialect) => {
  let ctx: TestContext
  let app: FastifyInstance
  let call: Call
  let clock: ManualClock
  let admin: Account
  let a: Crew
  let seq = 0
  const fresh = () => signUp(app, `life_${++seq}`)
  const read = async (teamId: string, id: string, account: Account = a.teamAdmin): Promise<InstallationBody> => {
    const response = await call('GET', installationOf(teamId, id), account)
    expect(response.statusCode, response.body).toBe(200)
    return response.json().data.installation
  }
  const count = async (query: ReturnType<typeof sql>): Promise<number> => Number((await rawRows(app.services.database, query))[0]![0])

  beforeAll(async () => {
    ctx = await createTestContext(dialect)
    clock = manualClock(Date.now())
    app = (await ctx.build({ limits: SATELLITE_LIMITS, clock })).app
    call = client(app)
    admin = await signUp(app, 'life_admin')
    a = await makeCrew(call, fresh, 'Lifecycle Team')
  })
  afterAll(() => ctx.close())

  it('a new target derives the inputs again: values of keys that remain are kept, the others dropped', async () => {
    const serverId = (await importDocuments(call, admin, [weatherDocument(`io.github.example/life-${++seq}`)]))[0]!
    const installation = await install(call, a.team.id, a.teamAdmin, {
      server_id: serverId, values: { 'env:WEATHER_API_KEY': 'k-1', 'env:LOG_LEVEL': 'warn' }, user_scoped: ['env:PERSONAL_TOKEN'],
    })
    expect((await call('PUT', `${installationOf(a.team.id, installation.id)}/my-values`, a.teamUser, { values: { 'env:PERSONAL_TOKEN': 'mine' } })).statusCode).toBe(200)
    const moved = await call('PATCH', installationOf(a.team.id, installation.id), a.teamAdmin, { target: { kind: 'package', index: 1 } })
    expect(moved.statusCode, moved.body).toBe(200)
    const now = moved.json().data.installation as InstallationBody
    expect(now).toMatchObject({ target: { kind: 'package', index: 1, transport: 'stdio' }, instance_mode: 'shared', spec_revision: installation.spec_revision + 2 })
    expect(now.inputs.map((input) => input.key)).toEqual(['env:WEATHER_DEBUG'])
    expect(await count(sql`select count(*) from mcp_installation_values where installation_id = ${installation.id}`)).toBe(0)

    // Back to the first package: the keys are there again, but their values were dropped with the old target.
    const back = (await call('PATCH', installationOf(a.team.id, installation.id), a.teamAdmin, { target: { kind: 'package', index: 0 }, user_scoped: ['env:PERSONAL_TOKEN'] })).json().data.installation as InstallationBody
    expect(back.missing_inputs).toEqual(['env:WEATHER_API_KEY', 'arg:data_dir', 'env:PERSONAL_TOKEN'])
  })

  it('changing which keys are user-scoped drops the values of the other scope; an unknown key is 400', async () => {
    const serverId = (await importDocuments(call, admin, [weatherDocument(`io.github.example/life-${++seq}`)]))[0]!
    const installation = await install(call, a.team.id, a.teamAdmin, { server_id: serverId, values: { 'env:PERSONAL_TOKEN': 'team-wide', 'env:LOG_LEVEL': 'debug' } })
    const scoped = (await call('PATCH', installationOf(a.team.id, installation.id), a.teamAdmin, { user_scoped: ['env:PERSONAL_TOKEN'] })).json().data.installation as InstallationBody
    expect(scoped.inputs.find((input) => input.key === 'env:PERSONAL_TOKEN')).toMatchObject({ scope: 'user', is_set: false })
    expect(scoped.inputs.find((input) => input.key === 'env:LOG_LEVEL')).toMatchObject({ is_set: true, value: 'debug' })
    const typo = await call('PATCH', installationOf(a.team.id, installation.id), a.teamAdmin, { user_scoped: ['env:PERSONAL_TOKN'] })
    expectCode(typo, 400, 'VALIDATION_ERROR')
    expect(typo.json().details[0].field).toBe('user_scoped')
  })

  it("a hand-made server's versions: track_latest follows a new version and a yanked latest; a pinned one stays; turning tracking on moves", async () => {
    const created = await call('POST', '/api/mcp/servers/global', admin, {
      name: `Hand Made ${++seq}`, transport_type: 'stdio',
      packages: [{ registry_type: 'npm', identifier: '@acme/hand-made', environment_variables: [{ name: 'ACME_KEY', required: true, secret: true }, { name: 'ACME_MODE', default: 'fast' }] }],
    })
    expect(created.statusCode, created.body).toBe(201)
    const server = created.json().data.server as { id: string; slug: string }
    const addVersion = async (version: string) => {
      const response = await call('POST', `/api/mcp/servers/${server.id}/versions`, admin, { version })
      expect(response.statusCode, response.body).toBe(201)
      return response.json().data.version as { id: string }
    }
    await addVersion('1.0.0')
    const tracking = await install(call, a.team.id, a.teamAdmin, { server_id: server.slug, values: { 'env:ACME_KEY': 'acme-secret', 'env:ACME_MODE': 'slow' } })
    const pinned = await install(call, a.team.id, a.teamAdmin, { server_id: server.id, version: '1.0.0' })
    expect(tracking.inputs.map((input) => input.key)).toEqual(['env:ACME_KEY', 'env:ACME_MODE'])
    const v2 = await addVersion('2.0.0')
    expect(await read(a.team.id, tracking.id)).toMatchObject({ version: '2.0.0', missing_inputs: [] })
    expect((await read(a.team.id, tracking.id)).inputs.find((input) => input.key === 'env:ACME_MODE')).toMatchObject({ value: 'slow' })
    expect((await read(a.team.id, pinned.id)).version).toBe('1.0.0')

    // Yanking the latest moves the followers back to the new latest.
    expect((await call('PUT', `/api/mcp/servers/${server.id}/versions/${v2.id}`, admin, { status: 'yanked' })).statusCode).toBe(200)
    expect((await read(a.team.id, tracking.id)).version).toBe('1.0.0')
    await addVersion('3.0.0')
    const follow = await call('PATCH', installationOf(a.team.id, pinned.id), a.teamAdmin, { track_latest: true })
    expect(follow.json().data.installation).toMatchObject({ version: '3.0.0', track_latest: true })
    // Choosing a version pins it; a version with track_latest must be the latest.
    const repinned = await call('PATCH', installationOf(a.team.id, pinned.id), a.teamAdmin, { version: '1.0.0' })
    expect(repinned.json().data.installation).toMatchObject({ version: '1.0.0', track_latest: false })
    const contradiction = await call('POST', `/api/teams/${a.team.id}/mcp/installations`, a.teamAdmin, { server_id: server.id, version: '1.0.0', track_latest: true })
    expectCode(contradiction, 400, 'VALIDATION_ERROR')
    expect(contradiction.json().details[0].field).toBe('track_latest')
    expect((await install(call, a.team.id, a.teamAdmin, { server_id: server.id, version: '3.0.0', track_latest: true })).track_latest).toBe(true)
    const audit = await call('GET', '/api/admin/audit-log?type=installation.version_followed&limit=100', admin)
    expect((audit.json().data.events as Array<{ target: string }>).some((event) => event.target === tracking.id)).toBe(true)
    expect(audit.body).not.toContain('acme-secret')
  })

  it("a tracking installation stays on its version when the new latest lacks its target", async () => {
    const name = `io.github.example/life-${++seq}`
    const serverId = (await importDocuments(call, admin, [weatherDocument(name, '1.0.0')]))[0]!
    const installation = await install(call, a.team.id, a.teamAdmin, { server_id: serverId, target: { kind: 'package', index: 1 } })
    const onlyOne = { ...weatherDocument(name, '2.0.0') }
    onlyOne.packages = (onlyOne.packages as unknown[]).slice(0, 1)
    await importDocuments(call, admin, [onlyOne])
    expect((await read(a.team.id, installation.id)).version).toBe('1.0.0')
  })

  it('status follows the satellite: pending while it has not reported, unknown once it is silent for 90 s', async () => {
    const team = await makeCrew(call, fresh, `Silent Team ${++seq}`)
    const token = await createToken(call, team.teamAdmin, { teamId: team.team.id })
    const satellite = await pair(app, token.token, `sat-life-${++seq}`, { satellite_url: 'http://127.0.0.1:9/' })
    const serverId = (await importDocuments(call, admin, [weatherDocument(`io.github.example/life-${++seq}`)]))[0]!
    const installation = await install(call, team.team.id, team.teamAdmin, {
      server_id: serverId, satellite_id: satellite.id, values: { 'env:WEATHER_API_KEY': 'k', 'env:PERSONAL_TOKEN': 't', 'arg:data_dir': '/d' },
    })
    expect(installation).toMatchObject({ satellite_id: satellite.id, status: 'pending', endpoint_url: `http://127.0.0.1:9/mcp/${installation.id}` })
    expect(installation.status_reason).toContain('not reported')
    expect((await heartbeat(app, satellite.id, satellite.apiKey)).statusCode).toBe(200)
    expect((await read(team.team.id, installation.id, team.teamAdmin)).status).toBe('pending')
    const listed = async () => ((await call('GET', `/api/users/me/mcp/installations?team_id=${team.team.id}`, team.teamAdmin)).json().data.installations as InstallationBody[])
      .find((each) => each.id === installation.id)!
    expect((await listed()).status).toBe('pending')
    clock.advance(91_000)
    const silent = await read(team.team.id, installation.id, team.teamAdmin)
    expect(silent).toMatchObject({ status: 'unknown' })
    // The member's list follows the clock too, though nothing was written (an answer is reused for a second at most).
    expect((await listed()).status).toBe('unknown')
    // And a write shows at once.
    await call('PUT', `${installationOf(team.team.id, installation.id)}/values`, team.teamAdmin, { values: { 'arg:data_dir': '/other' } })
    expect((await listed()).inputs.find((input) => input.key === 'arg:data_dir')?.value).toBe('/other')
    const stopped = await call('PATCH', installationOf(team.team.id, installation.id), team.teamAdmin, { desired: 'stopped' })
    expect(stopped.json().data.installation).toMatchObject({ status: 'stopped', desired: 'stopped' })
  })

  it('the fewest-installations satellite of the team wins, and the team is preferred over a global one', async () => {
    const team = await makeCrew(call, fresh, `Placement Team ${++seq}`)
    const globalToken = await createToken(call, admin)
    const global = await pair(app, globalToken.token, `sat-global-${++seq}`)
    const teamToken = await createToken(call, team.teamAdmin, { teamId: team.team.id })
    const first = await pair(app, teamToken.token, `sat-team-${++seq}`)
    const secondToken = await createToken(call, team.teamAdmin, { teamId: team.team.id })
    const second = await pair(app, secondToken.token, `sat-team-${++seq}`)
    for (const satellite of [global, first, second]) expect((await heartbeat(app, satellite.id, satellite.apiKey)).statusCode).toBe(200)
    const serverId = (await importDocuments(call, admin, [weatherDocument(`io.github.example/life-${++seq}`)]))[0]!
    const placed: string[] = []
    for (let n = 0; n < 4; n++) placed.push((await install(call, team.team.id, team.teamAdmin, { server_id: serverId })).satellite_id!)
    expect(placed.filter((id) => id === first.id)).toHaveLength(2)
    expect(placed.filter((id) => id === second.id)).toHaveLength(2)
    // Deleting a team satellite hands its installations to the other one.
    expect((await call('DELETE', `/api/satellites/${first.id}`, admin)).statusCode).toBe(200)
    expect(await count(sql`select count(*) from mcp_installations where team_id = ${team.team.id} and satellite_id = ${second.id}`)).toBe(4)
  })

  it('a global admin who is not a member reads and manages, but has no values of their own; a team_user reads no shared logs', async () => {
    const serverId = (await importDocuments(call, admin, [weatherDocument(`io.github.example/life-${++seq}`)]))[0]!
    const installation = await install(call, a.team.id, admin, { server_id: serverId, user_scoped: ['env:PERSONAL_TOKEN'] })
    expect(installation.created_by).toBe(admin.id)
    const own = await call('PUT', `${installationOf(a.team.id, installation.id)}/my-values`, admin, { values: { 'env:PERSONAL_TOKEN': 'admin-token' } })
    expectCode(own, 403, 'FORBIDDEN')
    const shared = await install(call, a.team.id, a.teamAdmin, { server_id: serverId })
    expectCode(await call('GET', `${installationOf(a.team.id, shared.id)}/logs`, a.teamUser), 403, 'FORBIDDEN')
    expect((await call('GET', `${installationOf(a.team.id, installation.id)}/logs`, a.teamUser)).statusCode).toBe(200)
    expect((await call('GET', `${installationOf(a.team.id, shared.id)}/logs`, a.teamAdmin)).statusCode).toBe(200)
    expect((await call('GET', `${installationOf(a.team.id, shared.id)}/tools`, a.teamUser)).json().data).toEqual({ tools: [] })
  })

  it('a team server in use is not deleted; deleting the team removes its servers, installations and values; a deleted user takes their own values', async () => {
    const team = await makeCrew(call, fresh, `Doomed Team ${++seq}`)
    const created = await call('POST', `/api/teams/${team.team.id}/mcp/servers`, team.teamAdmin, {
      name: `Doomed Server ${++seq}`, packages: [{ registry_type: 'npm', identifier: '@doomed/server', environment_variables: [{ name: 'TOKEN', secret: true, required: true }] }],
    })
    const serverId = created.json().data.server.id as string
    expect((await call('POST', `/api/teams/${team.team.id}/mcp/servers/${serverId}/versions`, team.teamAdmin, { version: '1.0.0' })).statusCode).toBe(201)
    const installation = await install(call, team.team.id, team.teamAdmin, { server_id: serverId, user_scoped: ['env:TOKEN'] })
    expectCode(await call('DELETE', `/api/teams/${team.team.id}/mcp/servers/${serverId}`, team.teamAdmin), 409, 'SERVER_IN_USE')

    const member = await fresh()
    await addMember(call, team.team.id, team.owner, member, 'team_user')
    expect((await call('PUT', `${installationOf(team.team.id, installation.id)}/my-values`, member, { values: { 'env:TOKEN': 'member-token' } })).statusCode).toBe(200)
    expect((await call('DELETE', `/api/admin/users/${member.id}`, admin)).statusCode).toBe(200)
    expect(await count(sql`select count(*) from mcp_installation_values where installation_id = ${installation.id}`)).toBe(0)

    const removed = await call('DELETE', `/api/teams/${team.team.id}`, team.owner)
    expect(removed.statusCode, removed.body).toBe(200)
    expect(await count(sql`select count(*) from mcp_installations where id = ${installation.id}`)).toBe(0)
    expect(await count(sql`select count(*) from mcp_servers where id = ${serverId}`)).toBe(0)
  })
})
