import { sql } from 'drizzle-orm'
import type { FastifyInstance } from 'fastify'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createTestContext, type TestContext } from '../helpers/app.js'
import { DIALECTS } from '../helpers/database.js'
import { keyPair } from '../helpers/hpke.js'
import { expectCode, importDocuments, install, installationOf, installationsOf, weatherDocument } from '../helpers/installations.js'
import { documentOf, globalSatellite, QUOTA_SETTING, TEAM_SERVERS_SETTING, defineTeamServer, withSetting } from '../helpers/placement.js'
import { expectOutcome, fire, warmUp } from '../helpers/races.js'
import { createToken, heartbeat, pair, SATELLITE_LIMITS } from '../helpers/satellites.js'
import { rawRows } from '../helpers/sql.js'
import { addMember, client, crew as makeCrew, signUp, type Account, type Call } from '../helpers/teams.js'

const RACERS = 10
/** The team values the weather server's first package requires besides the personal token, so that instances are built. */
const TEAM_VALUES = { 'env:WEATHER_API_KEY': 'wk-quota', 'arg:data_dir': '/data' }
/** Every value it requires, the personal token set for the team. */
const CONFIGURED = { ...TEAM_VALUES, 'env:PERSONAL_TOKEN': 'team-token' }

/**
 * A team may place at most `global.team_quota_per_global_satellite` installations on one global
 * satellite (a per-user installation counts once), so that no team fills a satellite every team
 * shares: an explicit choice beyond it is 409 SATELLITE_QUOTA_EXCEEDED, the automatic placement
 * goes to another global satellite or waits. The count holds under concurrent requests.
 */
describe.each(DIALECTS)('quotas on global satellites on %s', (dialect) => {
  let ctx: TestContext
  let app: FastifyInstance
  let call: Call
  let admin: Account
  let weatherId: string
  let seq = 0
  const fresh = () => signUp(app, `quota_${dialect}_${++seq}`)
  const count = async (query: ReturnType<typeof sql>): Promise<number> => Number((await rawRows(app.services.database, query))[0]![0])
  const placedOn = (teamId: string, satelliteId: string) => count(sql`select count(*) from mcp_installations where team_id = ${teamId} and satellite_id = ${satelliteId}`)

  beforeAll(async () => {
    ctx = await createTestContext(dialect)
    app = (await ctx.build({ limits: SATELLITE_LIMITS })).app
    call = client(app)
    admin = await signUp(app, `quota_admin_${dialect}`)
    weatherId = (await importDocuments(call, admin, [weatherDocument('io.github.example/quota-weather')]))[0]!
  })
  afterAll(() => ctx.close())

  it('quota 2: a third explicit placement is 409; a third automatic one goes to another global satellite, then waits', async () => {
    await withSetting(call, admin, QUOTA_SETTING, 2, 20)
    const first = await globalSatellite(app, call, admin, `quota-a-${dialect}`)
    const second = await globalSatellite(app, call, admin, `quota-b-${dialect}`, { online: false })
    const crew = await makeCrew(call, fresh, `Quota Team ${++seq}`)
    const teamId = crew.team.id
    for (let n = 0; n < 2; n++) expect((await install(call, teamId, crew.teamAdmin, { server_id: weatherId, satellite_id: first.id })).satellite_id).toBe(first.id)

    const refused = await call('POST', installationsOf(teamId), crew.teamAdmin, { server_id: weatherId, satellite_id: first.id })
    expectCode(refused, 409, 'SATELLITE_QUOTA_EXCEEDED')
    expect(refused.json().error).toMatch(/2 installations on the global satellite .*global\.team_quota_per_global_satellite = 2/)
    // Only the first satellite is online, and the team is at its quota there: the automatic placement waits, and says why.
    const waiting = await install(call, teamId, crew.teamAdmin, { server_id: weatherId, values: CONFIGURED })
    expect(waiting).toMatchObject({ satellite_id: null, status: 'pending' })
    expect(waiting.status_reason).toMatch(/room for the team \(2 installations per team on each\)/)
    // The second global satellite comes online: its heartbeat takes the waiting one; the next goes there too; then none has room.
    expect((await heartbeat(app, second.id, second.apiKey)).statusCode).toBe(200)
    expect((await call('GET', installationOf(teamId, waiting.id), crew.teamAdmin)).json().data.installation.satellite_id).toBe(second.id)
    expect((await install(call, teamId, crew.teamAdmin, { server_id: weatherId })).satellite_id).toBe(second.id)
    expect((await install(call, teamId, crew.teamAdmin, { server_id: weatherId })).satellite_id).toBeNull()
    expectCode(await call('POST', installationsOf(teamId), crew.teamAdmin, { server_id: weatherId, satellite_id: second.id }), 409, 'SATELLITE_QUOTA_EXCEEDED')
    expect(await placedOn(teamId, first.id)).toBe(2)
    expect(await placedOn(teamId, second.id)).toBe(2)

    // A move onto a full satellite is refused too; staying where it is is not a move.
    const onFirst = (await call('GET', `${installationsOf(teamId)}?limit=100`, crew.teamAdmin)).json().data.installations.find((each: { satellite_id: string }) => each.satellite_id === first.id)
    expectCode(await call('PATCH', installationOf(teamId, onFirst.id), crew.teamAdmin, { satellite_id: second.id }), 409, 'SATELLITE_QUOTA_EXCEEDED')
    expect((await call('PATCH', installationOf(teamId, onFirst.id), crew.teamAdmin, { satellite_id: first.id })).statusCode).toBe(200)
    expect((await call('PATCH', installationOf(teamId, onFirst.id), crew.teamAdmin, { satellite_id: null })).json().data.installation.satellite_id).toBe(first.id)

    // The quota is per team: another team still places there.
    const other = await makeCrew(call, fresh, `Other Quota Team ${++seq}`)
    expect((await install(call, other.team.id, other.teamAdmin, { server_id: weatherId, satellite_id: first.id })).satellite_id).toBe(first.id)
    // And a team's own satellites have none.
    const own = await pair(app, (await createToken(call, crew.teamAdmin, { teamId })).token, `quota-own-${dialect}`)
    for (let n = 0; n < 3; n++) expect((await install(call, teamId, crew.teamAdmin, { server_id: weatherId, satellite_id: own.id })).satellite_id).toBe(own.id)
    // Raising the quota places what waited.
    await withSetting(call, admin, QUOTA_SETTING, 3, 20)
    expect(await placedOn(teamId, first.id) + await placedOn(teamId, second.id)).toBe(5)
  })

  it('a per-user installation counts once, however many members run their own instance', async () => {
    await withSetting(call, admin, QUOTA_SETTING, 2, 20)
    const satellite = await globalSatellite(app, call, admin, `quota-per-user-${dialect}`, { extra: { public_key: (await keyPair()).publicKey } })
    const crew = await makeCrew(call, fresh, `Per-user Quota Team ${++seq}`)
    const teamId = crew.team.id
    const perUser = await install(call, teamId, crew.teamAdmin, { server_id: weatherId, satellite_id: satellite.id, user_scoped: ['env:PERSONAL_TOKEN'], values: TEAM_VALUES })
    const extra = await fresh()
    await addMember(call, teamId, crew.owner, extra, 'team_user')
    for (const member of [crew.owner, crew.teamAdmin, crew.teamUser, extra]) {
      expect((await call('PUT', `${installationOf(teamId, perUser.id)}/my-values`, member, { values: { 'env:PERSONAL_TOKEN': `own-${member.id}` } })).statusCode).toBe(200)
    }
    expect((await documentOf(app, satellite)).filter((instance) => instance.installation_id === perUser.id)).toHaveLength(4)
    expect((await install(call, teamId, crew.teamAdmin, { server_id: weatherId, satellite_id: satellite.id })).satellite_id).toBe(satellite.id)
    expectCode(await call('POST', installationsOf(teamId), crew.teamAdmin, { server_id: weatherId, satellite_id: satellite.id }), 409, 'SATELLITE_QUOTA_EXCEEDED')
  })

  it('quota 0: teams place nothing on global satellites', async () => {
    await withSetting(call, admin, QUOTA_SETTING, 0, 20)
    const satellite = await globalSatellite(app, call, admin, `quota-zero-${dialect}`)
    const crew = await makeCrew(call, fresh, `Zero Quota Team ${++seq}`)
    expectCode(await call('POST', installationsOf(crew.team.id), crew.teamAdmin, { server_id: weatherId, satellite_id: satellite.id }), 409, 'SATELLITE_QUOTA_EXCEEDED')
    const waiting = await install(call, crew.team.id, crew.teamAdmin, { server_id: weatherId })
    expect(waiting.satellite_id).toBeNull()
    expect((await heartbeat(app, satellite.id, satellite.apiKey)).statusCode).toBe(200)
    expect(await placedOn(crew.team.id, satellite.id)).toBe(0)
  })

  it(`${RACERS} explicit creations at quota − 1: one 201, ${RACERS - 1} × 409 SATELLITE_QUOTA_EXCEEDED, and the quota holds`, async () => {
    await withSetting(call, admin, QUOTA_SETTING, 3, 20)
    const satellite = await globalSatellite(app, call, admin, `quota-race-${dialect}`)
    const crew = await makeCrew(call, fresh, `Racing Quota Team ${++seq}`)
    for (let n = 0; n < 2; n++) await install(call, crew.team.id, crew.teamAdmin, { server_id: weatherId, satellite_id: satellite.id })
    await warmUp(app, RACERS)
    const responses = await fire(RACERS, (index) => call('POST', installationsOf(crew.team.id), index % 2 === 0 ? crew.teamAdmin : crew.owner, {
      server_id: weatherId, satellite_id: satellite.id,
    }))
    expectOutcome(responses, { 201: 1, '409 SATELLITE_QUOTA_EXCEEDED': RACERS - 1 })
    expect(await placedOn(crew.team.id, satellite.id)).toBe(3)
  })

  it(`${RACERS} automatic creations at quota − 1 with one global satellite: every one 201, exactly one placed`, async () => {
    await withSetting(call, admin, QUOTA_SETTING, 3, 20)
    const satellite = await globalSatellite(app, call, admin, `quota-race-auto-${dialect}`)
    const crew = await makeCrew(call, fresh, `Racing Automatic Team ${++seq}`)
    for (let n = 0; n < 2; n++) await install(call, crew.team.id, crew.teamAdmin, { server_id: weatherId, satellite_id: satellite.id })
    await warmUp(app, RACERS)
    const responses = await fire(RACERS, () => call('POST', installationsOf(crew.team.id), crew.teamAdmin, { server_id: weatherId }))
    expectOutcome(responses, { 201: RACERS })
    expect(responses.filter((response) => response.json().data.installation.satellite_id === satellite.id)).toHaveLength(1)
    expect(await placedOn(crew.team.id, satellite.id)).toBe(3)
    // Racing the satellite's own heartbeats, which place waiting installations too: still three.
    await fire(4, () => heartbeat(app, satellite.id, satellite.apiKey))
    expect(await placedOn(crew.team.id, satellite.id)).toBe(3)
  })

  it('team servers (allowed, on an isolating satellite) count against the same quota', async () => {
    await withSetting(call, admin, QUOTA_SETTING, 1, 20)
    await withSetting(call, admin, TEAM_SERVERS_SETTING, true, false)
    const satellite = await globalSatellite(app, call, admin, `quota-team-server-${dialect}`, { isolation: 'process-sandbox' })
    const crew = await makeCrew(call, fresh, `Team Server Quota Team ${++seq}`)
    const serverId = await defineTeamServer(call, crew.team.id, crew.teamAdmin, `Quota Tool ${seq}`)
    expect((await install(call, crew.team.id, crew.teamAdmin, { server_id: serverId })).satellite_id).toBe(satellite.id)
    expectCode(await call('POST', installationsOf(crew.team.id), crew.teamAdmin, { server_id: weatherId, satellite_id: satellite.id }), 409, 'SATELLITE_QUOTA_EXCEEDED')
  })
})
