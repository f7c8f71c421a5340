import type { FastifyInstance } from 'fastify'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createTestContext, type TestContext } from '../helpers/app.js'
import { DIALECTS } from '../helpers/database.js'
import { expectCode, importDocuments, install, installationOf, installationsOf, weatherDocument, type InstallationBody } from '../helpers/installations.js'
import {
  defaultTeamOf, defineTeamServer, globalSatellite, installationsIn, TEAM_SERVERS_SETTING, withSetting, type Isolation,
} from '../helpers/placement.js'
import { createToken, heartbeat, pair, SATELLITE_LIMITS } from '../helpers/satellites.js'
import { client, signUp, type Account, type Call } from '../helpers/teams.js'

/**
 * Where a server a team defined itself may run. Anyone who signs up is team_admin of their own
 * team and may define and install a server there: on a global satellite, which runs every team's
 * instances, it must not land unless a global admin allows it and the satellite isolates its
 * instances. Through the HTTP API, for the automatic placement, an explicit `satellite_id`, a
 * PATCH, and the placement of waiting installations at a heartbeat.
 */
describe.each(DIALECTS)('placement rules on %s', (dialect) => {
  let ctx: TestContext
  let app: FastifyInstance
  let call: Call
  let admin: Account
  let globalServerId: string
  let seq = 0

  const read = async (teamId: string, id: string, as: Account): Promise<InstallationBody> => {
    const response = await call('GET', installationOf(teamId, id), as)
    expect(response.statusCode, response.body).toBe(200)
    return response.json().data.installation
  }
  /** A fresh sign-up, their default team and a server defined there. */
  const newcomer = async () => {
    const user = await signUp(app, `place_${dialect}_${++seq}`)
    const teamId = await defaultTeamOf(call, user)
    return { user, teamId, serverId: await defineTeamServer(call, teamId, user, `Own Tool ${seq}`) }
  }
  const expectRefused = (response: Awaited<ReturnType<Call>>, reason: RegExp) => {
    expectCode(response, 400, 'VALIDATION_ERROR')
    const details = response.json().details as Array<{ field: string; message: string }>
    expect(details).toHaveLength(1)
    expect(details[0]!.field).toBe('satellite_id')
    expect(details[0]!.message).toMatch(reason)
  }

  beforeAll(async () => {
    ctx = await createTestContext(dialect)
    app = (await ctx.build({ limits: SATELLITE_LIMITS })).app
    call = client(app)
    admin = await signUp(app, `place_admin_${dialect}`)
    globalServerId = (await importDocuments(call, admin, [weatherDocument('io.github.example/placement-rules')]))[0]!
  })
  afterAll(() => ctx.close())

  it("by default a fresh sign-up's team server never lands on a global satellite, however well it isolates", async () => {
    const setting = (await call('GET', `/api/settings/${TEAM_SERVERS_SETTING}`, admin)).json().data.setting
    expect(setting).toMatchObject({ value: false, type: 'boolean' })
    const sandboxed = await globalSatellite(app, call, admin, `rules-default-${dialect}-a`, { isolation: 'process-sandbox' })
    await globalSatellite(app, call, admin, `rules-default-${dialect}-b`, { isolation: 'container' })
    const { user, teamId, serverId } = await newcomer()

    const automatic = await install(call, teamId, user, { server_id: serverId })
    expect(automatic).toMatchObject({ satellite_id: null, status: 'pending', endpoint_url: null })
    expect(automatic.status_reason).toMatch(/no satellite of the team is online; team-defined servers do not run on shared satellites/i)
    expectRefused(await call('POST', installationsOf(teamId), user, { server_id: serverId, satellite_id: sandboxed.id }), /global satellite.*team-defined servers run only on the team's own satellites/)
    expectRefused(await call('PATCH', installationOf(teamId, automatic.id), user, { satellite_id: sandboxed.id }), /team-defined servers run only on the team's own satellites/)
    // Heartbeats of the global satellites do not take it either.
    expect((await heartbeat(app, sandboxed.id, sandboxed.apiKey)).statusCode).toBe(200)
    expect(await read(teamId, automatic.id, user)).toMatchObject({ satellite_id: null, status: 'pending' })
    expect(await installationsIn(app, sandboxed)).not.toContain(automatic.id)
    // A global server of the same team goes there as before.
    expect((await install(call, teamId, user, { server_id: globalServerId })).satellite_id).not.toBeNull()
  })

  // [the setting, the global satellite's isolation, whether a team server may run there]
  const RULES: Array<[boolean, Isolation, boolean]> = [
    [false, 'none', false],
    [false, 'process-sandbox', false],
    [false, 'container', false],
    [true, 'none', false],
    [true, 'process-sandbox', true],
    [true, 'container', true],
  ]

  it.each(RULES)('team servers allowed: %s, a global satellite isolating by %s → runs there: %s', async (allowed, isolation, runs) => {
    await withSetting(call, admin, TEAM_SERVERS_SETTING, allowed, false)
    const satellite = await globalSatellite(app, call, admin, `rules-${dialect}-${++seq}`, { isolation, online: false })
    const { user, teamId, serverId } = await newcomer()
    const why = allowed ? /does not isolate its instances \(isolation: none\)/ : /team-defined servers run only on the team's own satellites/

    // Waiting while no satellite is online; the global one's first heartbeat places what it may run.
    const waiting = await install(call, teamId, user, { server_id: serverId })
    expect(waiting).toMatchObject({ satellite_id: null, status: 'pending' })
    expect((await heartbeat(app, satellite.id, satellite.apiKey)).statusCode).toBe(200)
    const afterBeat = await read(teamId, waiting.id, user)
    expect(afterBeat.satellite_id).toBe(runs ? satellite.id : null)
    if (!runs) expect(afterBeat.status_reason).toMatch(allowed ? /nor a global satellite that isolates its instances/ : /do not run on shared satellites/)

    // Automatic placement, now that it is online.
    expect((await install(call, teamId, user, { server_id: serverId })).satellite_id).toBe(runs ? satellite.id : null)

    // An explicit choice.
    const explicit = await call('POST', installationsOf(teamId), user, { server_id: serverId, satellite_id: satellite.id })
    if (runs) expect(explicit.json().data.installation.satellite_id).toBe(satellite.id)
    else expectRefused(explicit, why)

    // A move by PATCH, from unplaced (or from the automatic placement again).
    const unplaced = await install(call, teamId, user, { server_id: serverId, satellite_id: undefined })
    const moved = await call('PATCH', installationOf(teamId, unplaced.id), user, runs ? { satellite_id: null } : { satellite_id: satellite.id })
    if (runs) expect(moved.json().data.installation.satellite_id).toBe(satellite.id)
    else {
      expectRefused(moved, why)
      expect((await read(teamId, unplaced.id, user)).satellite_id).toBeNull()
    }

    // What the satellite is told to run agrees.
    const running = await installationsIn(app, satellite)
    if (!runs) expect(running).toEqual([])

    // A global server runs on any global satellite, whatever the rule for team servers.
    expect((await install(call, teamId, user, { server_id: globalServerId })).satellite_id).toBe(satellite.id)
  })

  it("the team's own satellites run its servers whatever the setting and their isolation, and come first", async () => {
    await globalSatellite(app, call, admin, `rules-own-global-${dialect}`, { isolation: 'process-sandbox' })
    await withSetting(call, admin, TEAM_SERVERS_SETTING, true, false)
    const { user, teamId, serverId } = await newcomer()
    const own = await pair(app, (await createToken(call, user, { teamId })).token, `rules-own-${dialect}`)
    expect((await heartbeat(app, own.id, own.apiKey)).statusCode).toBe(200)
    expect((await install(call, teamId, user, { server_id: serverId })).satellite_id).toBe(own.id)
    expect((await install(call, teamId, user, { server_id: serverId, satellite_id: own.id })).satellite_id).toBe(own.id)
    expect(await installationsIn(app, own)).toHaveLength(2)
  })
})
