import type { FastifyInstance } from 'fastify'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { settingsRepository } from '../../src/db/repositories/settings.js'
import { systemClock } from '../../src/lib/clock.js'
import { deriveKey } from '../../src/lib/keys.js'
import { createSecretBox } from '../../src/lib/secret-box.js'
import { SettingsService } from '../../src/modules/settings/service.js'
import type { Config } from '../../src/config.js'
import { createTestContext, TEST_SECRET, type TestContext } from '../helpers/app.js'
import { DIALECTS } from '../helpers/database.js'
import { importDocuments, install, installationOf, weatherDocument, type InstallationBody } from '../helpers/installations.js'
import {
  defineTeamServer, globalSatellite, installationsIn, reportIsolation, TEAM_SERVERS_SETTING, withSetting,
} from '../helpers/placement.js'
import { createToken, heartbeat, pair, SATELLITE_LIMITS } from '../helpers/satellites.js'
import { client, crew as makeCrew, signUp, type Account, type Call, type Crew } from '../helpers/teams.js'
import { until } from '../helpers/until.js'

/** The weather server's second package: nothing to configure and no secret, so a satellite without a key runs it. */
const NO_SECRETS = { kind: 'package', index: 1 }

/**
 * Team servers already placed on a global satellite do not stay there once the rules no longer
 * allow it: when a global admin switches `global.team_servers_on_global_satellites` off (in the
 * same transaction), when the satellite reports that it no longer isolates its instances, or
 * registers again without saying it does. They are released from it (its document drops them) and
 * placed again the automatic way: on one of the team's satellites, or waiting with the reason.
 */
describe.each(DIALECTS)('team servers leaving global satellites on %s', (dialect) => {
  let ctx: TestContext
  let app: FastifyInstance
  let config: Config
  let call: Call
  let admin: Account
  let weatherId: string
  let seq = 0
  const fresh = () => signUp(app, `release_${dialect}_${++seq}`)

  const read = async (crew: Crew, id: string): Promise<InstallationBody> => {
    const response = await call('GET', installationOf(crew.team.id, id), crew.teamAdmin)
    expect(response.statusCode, response.body).toBe(200)
    return response.json().data.installation
  }
  /** A team with a server of its own, installed on `satelliteId`. */
  const teamServerOn = async (satelliteId: string) => {
    const crew = await makeCrew(call, fresh, `Release Team ${++seq}`)
    const serverId = await defineTeamServer(call, crew.team.id, crew.teamAdmin, `Release Tool ${seq}`)
    const installation = await install(call, crew.team.id, crew.teamAdmin, { server_id: serverId, satellite_id: satelliteId })
    expect(installation.satellite_id).toBe(satelliteId)
    return { crew, serverId, installation }
  }
  const releasedEvents = async (id: string) =>
    ((await call('GET', '/api/admin/audit-log?type=installation.released&limit=100', admin)).json().data.events as Array<{ target: string; details: Record<string, unknown> }>)
      .filter((event) => event.target === id)

  beforeAll(async () => {
    ctx = await createTestContext(dialect)
    const built = await ctx.build({ limits: SATELLITE_LIMITS })
    app = built.app
    config = built.config
    call = client(app)
    admin = await signUp(app, `release_admin_${dialect}`)
    weatherId = (await importDocuments(call, admin, [weatherDocument('io.github.example/release-weather')]))[0]!
  })
  afterAll(() => ctx.close())

  it("switching the setting off moves them at once: to the team's own satellite, or waiting; global servers stay", async () => {
    await withSetting(call, admin, TEAM_SERVERS_SETTING, true, false)
    const shared = await globalSatellite(app, call, admin, `release-setting-${dialect}`, { isolation: 'process-sandbox' })
    const withOwn = await teamServerOn(shared.id)
    const own = await pair(app, (await createToken(call, withOwn.crew.teamAdmin, { teamId: withOwn.crew.team.id })).token, `release-own-${dialect}`)
    expect((await heartbeat(app, own.id, own.apiKey)).statusCode).toBe(200)
    const without = await teamServerOn(shared.id)
    const globalServer = await install(call, without.crew.team.id, without.crew.teamAdmin, { server_id: weatherId, satellite_id: shared.id, target: NO_SECRETS })
    expect(await installationsIn(app, shared)).toEqual(expect.arrayContaining([withOwn.installation.id, without.installation.id, globalServer.id]))

    const off = await call('PUT', `/api/settings/${TEAM_SERVERS_SETTING}`, admin, { value: false })
    expect(off.statusCode, off.body).toBe(200)
    expect((await read(withOwn.crew, withOwn.installation.id)).satellite_id).toBe(own.id)
    const waiting = await read(without.crew, without.installation.id)
    expect(waiting).toMatchObject({ satellite_id: null, status: 'pending' })
    expect(waiting.status_reason).toMatch(/team-defined servers do not run on shared satellites/)
    expect((await read(without.crew, globalServer.id)).satellite_id).toBe(shared.id)
    const running = await installationsIn(app, shared)
    expect(running).toContain(globalServer.id)
    expect(running).not.toContain(without.installation.id)
    expect(running).not.toContain(withOwn.installation.id)
    expect(await installationsIn(app, own)).toEqual([withOwn.installation.id])
    expect(await releasedEvents(without.installation.id)).toEqual([
      expect.objectContaining({ details: { team_id: without.crew.team.id, satellite_id: shared.id, reason: 'team servers may not run on global satellites' } }),
    ])
    // Switched on again, the waiting one goes back.
    expect((await call('PUT', `/api/settings/${TEAM_SERVERS_SETTING}`, admin, { value: true })).statusCode).toBe(200)
    expect((await read(without.crew, without.installation.id)).satellite_id).toBe(shared.id)
  })

  it('a heartbeat reporting isolation none releases them from that satellite; isolating again takes them back', async () => {
    await withSetting(call, admin, TEAM_SERVERS_SETTING, true, false)
    const shared = await globalSatellite(app, call, admin, `release-isolation-${dialect}`, { isolation: 'container' })
    const { crew, installation } = await teamServerOn(shared.id)
    const globalServer = await install(call, crew.team.id, crew.teamAdmin, { server_id: weatherId, satellite_id: shared.id, target: NO_SECRETS })
    await reportIsolation(app, shared, 'none')
    const released = await read(crew, installation.id)
    expect(released).toMatchObject({ satellite_id: null, status: 'pending' })
    expect(released.status_reason).toMatch(/nor a global satellite that isolates its instances/)
    const running = await installationsIn(app, shared)
    expect(running).toContain(globalServer.id)
    expect(running).not.toContain(installation.id)
    expect(await releasedEvents(installation.id)).toEqual([expect.objectContaining({ details: expect.objectContaining({ reason: 'the satellite does not isolate its instances' }) })])
    // Further heartbeats without isolation do not take it back; one that isolates again does.
    expect((await heartbeat(app, shared.id, shared.apiKey)).statusCode).toBe(200)
    expect((await read(crew, installation.id)).satellite_id).toBeNull()
    await reportIsolation(app, shared, 'process-sandbox')
    expect((await read(crew, installation.id)).satellite_id).toBe(shared.id)
  })

  it('registering again without isolation releases them before the new key reads a document', async () => {
    await withSetting(call, admin, TEAM_SERVERS_SETTING, true, false)
    const name = `release-reregister-${dialect}`
    const shared = await globalSatellite(app, call, admin, name, { isolation: 'process-sandbox' })
    const { crew, installation } = await teamServerOn(shared.id)
    const again = await pair(app, (await createToken(call, admin)).token, name)
    expect(again.id).toBe(shared.id)
    expect(await installationsIn(app, again)).not.toContain(installation.id)
    expect((await read(crew, installation.id)).satellite_id).toBeNull()
  })

  it("a write of the setting this service did not see (the command-line tool's) is caught up at the satellite's next heartbeat", async () => {
    await withSetting(call, admin, TEAM_SERVERS_SETTING, true, false)
    const shared = await globalSatellite(app, call, admin, `release-cli-${dialect}`, { isolation: 'process-sandbox' })
    const { crew, installation } = await teamServerOn(shared.id)
    // As `npm run settings:set` does: a settings service of its own, with no installations to move.
    const cli = new SettingsService({
      repository: settingsRepository(app.services.database), box: createSecretBox(deriveKey(TEST_SECRET, 'settings-encryption')), clock: systemClock, config,
    })
    await cli.init()
    await cli.update([{ key: TEAM_SERVERS_SETTING, value: false }])
    await until(async () => (await app.services.settings.get(TEAM_SERVERS_SETTING)) === false, { what: 'the service seeing the setting' })
    expect((await heartbeat(app, shared.id, shared.apiKey)).statusCode).toBe(200)
    expect((await read(crew, installation.id)).satellite_id).toBeNull()
    expect(await installationsIn(app, shared)).not.toContain(installation.id)
  })
})
