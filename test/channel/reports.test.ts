import { toolDefinitionHash } from '../../src/formats/tool-definitions.js'
import type { FastifyInstance, LightMyRequestResponse } from 'fastify'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createTestContext, type TestContext } from '../helpers/app.js'
import { manualClock, type ManualClock } from '../helpers/clock.js'
import { DIALECTS } from '../helpers/database.js'
import { keyPair } from '../helpers/hpke.js'
import { importDocuments, install, installationOf, weatherDocument, type InstallationBody } from '../helpers/installations.js'
import { createToken, heartbeat, pair, SATELLITE_LIMITS, type Paired } from '../helpers/satellites.js'
import { addMember, client, crew as makeCrew, signUp, type Account, type Call, type Crew } from '../helpers/teams.js'

const SECRET = 'wk-live-reported-5e6f7a8b9c'

interface Instance { instance_id: string; installation_id: string; spec_hash: string; user_id: string | null }

/**
 * What satellites report — phases, tools, log lines — through the HTTP API, and how the
 * installation views show it.
 */
describe.each(DIALECTS)('satellite reports on %s', (dialect) => {
  let ctx: TestContext
  let app: FastifyInstance
  let call: Call
  let clock: ManualClock
  let admin: Account
  let a: Crew
  let satellite: Paired
  let other: Paired
  let weatherId: string
  let seq = 0
  const fresh = () => signUp(app, `rep_${++seq}`)

  const as = (sat: Paired, method: 'GET' | 'PUT' | 'POST', url: string, payload?: object): Promise<LightMyRequestResponse> =>
    app.inject({ method, url, headers: { authorization: `Bearer ${sat.apiKey}` }, ...(payload === undefined ? {} : { payload }) })
  const instancesOf = async (sat: Paired): Promise<{ revision: string; instances: Instance[] }> => {
    const response = await as(sat, 'GET', `/api/satellites/${sat.id}/desired-state`)
    expect(response.statusCode, response.body).toBe(200)
    return response.json().data
  }
  const view = async (id: string, account: Account = a.teamAdmin): Promise<InstallationBody> =>
    (await call('GET', installationOf(a.team.id, id), account)).json().data.installation

  beforeAll(async () => {
    ctx = await createTestContext(dialect)
    clock = manualClock(Date.now())
    app = (await ctx.build({ limits: SATELLITE_LIMITS, clock })).app
    call = client(app)
    admin = await signUp(app, 'rep_admin')
    a = await makeCrew(call, fresh, 'Report Team')
    const token = await createToken(call, a.teamAdmin, { teamId: a.team.id })
    satellite = await pair(app, token.token, `rep-sat-${dialect}`, { satellite_url: 'https://rep.example.com' })
    const otherToken = await createToken(call, admin)
    other = await pair(app, otherToken.token, `rep-other-${dialect}`)
    expect((await heartbeat(app, satellite.id, satellite.apiKey)).statusCode).toBe(200)
    // A keyless satellite runs only instances without secrets: the second package has none.
    weatherId = (await importDocuments(call, admin, [weatherDocument('io.github.example/report-weather')]))[0]!
  })
  afterAll(() => ctx.close())

  it('a phase for the current spec shows as the status; one for an old spec or another satellite\'s instance is ignored', async () => {
    const installation = await install(call, a.team.id, a.teamAdmin, { server_id: weatherId, target: { kind: 'package', index: 1 } })
    const doc = await instancesOf(satellite)
    const instance = doc.instances.find((each) => each.installation_id === installation.id)!
    const report = await as(satellite, 'PUT', `/api/satellites/${satellite.id}/observed-state`, {
      revision: doc.revision,
      instances: [
        { instance_id: instance.instance_id, spec_hash: instance.spec_hash, phase: 'running', started_at: new Date(clock.now()).toISOString() },
        { instance_id: instance.instance_id, spec_hash: 'stale-hash', phase: 'failed' },
        { instance_id: 'not-mine', spec_hash: 'x', phase: 'running' },
      ],
    })
    expect(report.statusCode, report.body).toBe(200)
    expect(report.json().data).toEqual({ accepted: 1, ignored: 2 })
    expect(await view(installation.id)).toMatchObject({ status: 'running' })

    // Another satellite cannot report about it.
    const foreign = await as(other, 'PUT', `/api/satellites/${other.id}/observed-state`, { revision: 'x', instances: [{ instance_id: instance.instance_id, spec_hash: instance.spec_hash, phase: 'failed' }] })
    expect(foreign.json().data).toEqual({ accepted: 0, ignored: 1 })
    expect((await as(other, 'PUT', `/api/satellites/${satellite.id}/observed-state`, { revision: 'x', instances: [] })).statusCode).toBe(403)

    // A change makes the report stale: pending until the satellite reports the new spec.
    await call('PATCH', installationOf(a.team.id, installation.id), a.teamAdmin, { name: `renamed-${++seq}` })
    expect((await view(installation.id)).status).toBe('pending')
    const next = (await instancesOf(satellite)).instances.find((each) => each.installation_id === installation.id)!
    await as(satellite, 'PUT', `/api/satellites/${satellite.id}/observed-state`, { revision: 'r', instances: [{ instance_id: next.instance_id, spec_hash: next.spec_hash, phase: 'degraded', message: 'slow upstream' }] })
    expect(await view(installation.id)).toMatchObject({ status: 'degraded', status_reason: expect.stringContaining('slow upstream') })
    // A silent satellite: unknown.
    clock.advance(91_000)
    expect((await view(installation.id)).status).toBe('unknown')
    expect((await heartbeat(app, satellite.id, satellite.apiKey)).statusCode).toBe(200)
  })

  it('tools: the full list replaces the previous one and is read by members', async () => {
    const installation = await install(call, a.team.id, a.teamAdmin, { server_id: weatherId, target: { kind: 'package', index: 1 } })
    const instance = (await instancesOf(satellite)).instances.find((each) => each.installation_id === installation.id)!
    const url = `/api/satellites/${satellite.id}/instances/${instance.instance_id}/tools`
    const tools = [
      { name: 'forecast', title: 'Forecast', description: 'The forecast for a place', input_schema: { type: 'object', properties: { place: { type: 'string' } } }, annotations: { readOnlyHint: true } },
      { name: 'alerts', input_schema: { type: 'object' } },
    ]
    expect((await as(satellite, 'PUT', url, { tools })).statusCode).toBe(200)
    expect((await as(satellite, 'PUT', url, { tools: tools.slice(0, 1) })).json().data).toEqual({ stored: 1 })
    const read = await call('GET', `${installationOf(a.team.id, installation.id)}/tools`, a.teamUser)
    expect(read.json().data.tools).toEqual([{
      name: 'forecast', title: 'Forecast', description: 'The forecast for a place', input_schema: tools[0]!.input_schema, output_schema: null, annotations: { readOnlyHint: true },
      hash: toolDefinitionHash(tools[0]!), state: 'unpinned', disabled: false, approved: null,
    }])
    expect((await view(installation.id)).tools_count).toBe(1)
    expect((await as(other, 'PUT', `/api/satellites/${other.id}/instances/${instance.instance_id}/tools`, { tools })).statusCode).toBe(404)
  })

  it("logs: the instance's secret values are masked before storage; the newest come first; members read their own only", async () => {
    const installation = await install(call, a.team.id, a.teamAdmin, {
      server_id: weatherId, user_scoped: ['env:PERSONAL_TOKEN'], values: { 'env:WEATHER_API_KEY': SECRET, 'arg:data_dir': '/d' },
    })
    const member = await fresh()
    await addMember(call, a.team.id, a.owner, member, 'team_user')
    const personal = `own-${SECRET}`
    await call('PUT', `${installationOf(a.team.id, installation.id)}/my-values`, member, { values: { 'env:PERSONAL_TOKEN': personal } })
    // The satellite has no public key: the instance with secrets is not in its document, so no logs for it either.
    const instanceId = `${installation.id}.${member.id}`
    const url = `/api/satellites/${satellite.id}/instances/${instanceId}/logs`
    const lines = [{ at: new Date().toISOString(), stream: 'stderr', text: `starting with key=${SECRET} and token ${personal}` }]
    expect((await as(satellite, 'POST', url, { lines })).statusCode).toBe(404)

    const keyed = await keyPair()
    expect((await as(satellite, 'PUT', `/api/satellites/${satellite.id}/public-key`, { public_key: keyed.publicKey })).statusCode).toBe(200)
    // The member set their value while the satellite had no key, so they approved none: they set it again for this key.
    await call('PUT', `${installationOf(a.team.id, installation.id)}/my-values`, member, { values: { 'env:PERSONAL_TOKEN': personal } })
    const posted = await as(satellite, 'POST', url, { lines: [...lines, { at: new Date().toISOString(), stream: 'stdout', text: 'second line' }] })
    expect(posted.statusCode, posted.body).toBe(200)
    const admins = await call('GET', `${installationOf(a.team.id, installation.id)}/logs`, a.teamAdmin)
    expect(admins.statusCode, admins.body).toBe(200)
    const logs = admins.json().data.logs as Array<{ text: string; stream: string; user_id: string | null }>
    expect(logs.map((line) => line.text)).toEqual(['second line', 'starting with key=[secret] and token [secret]'])
    expect(admins.body).not.toContain(SECRET)
    // After a rotation, the old process may still print the old value until it restarts: masked too.
    const rotated = `rotated-${SECRET}-2`
    expect((await call('PUT', `${installationOf(a.team.id, installation.id)}/values`, a.teamAdmin, { values: { 'env:WEATHER_API_KEY': rotated } })).statusCode).toBe(200)
    const late = await as(satellite, 'POST', url, { lines: [{ at: new Date().toISOString(), stream: 'stderr', text: `old ${SECRET} new ${rotated}` }] })
    expect(late.statusCode, late.body).toBe(200)
    const afterRotation = await call('GET', `${installationOf(a.team.id, installation.id)}/logs?limit=1`, a.teamAdmin)
    expect(afterRotation.json().data.logs[0].text).toBe('old [secret] new [secret]')
    const own = await call('GET', `${installationOf(a.team.id, installation.id)}/logs`, member)
    expect(own.json().data.logs).toHaveLength(3)
    const others = await call('GET', `${installationOf(a.team.id, installation.id)}/logs`, a.teamUser)
    expect(others.json().data.logs).toEqual([])
  })

  it('keeps the newest 1 000 lines of an instance', async () => {
    const installation = await install(call, a.team.id, a.teamAdmin, { server_id: weatherId, target: { kind: 'package', index: 1 } })
    const instance = (await instancesOf(satellite)).instances.find((each) => each.installation_id === installation.id)!
    const url = `/api/satellites/${satellite.id}/instances/${instance.instance_id}/logs`
    for (let batch = 0; batch < 3; batch++) {
      const lines = Array.from({ length: 500 }, (_, n) => ({ at: new Date().toISOString(), stream: 'stdout', text: `line ${batch * 500 + n}` }))
      expect((await as(satellite, 'POST', url, { lines })).statusCode).toBe(200)
    }
    const page = await call('GET', `${installationOf(a.team.id, installation.id)}/logs?limit=1`, a.teamAdmin)
    expect(page.json().data.pagination.total).toBe(1000)
    expect(page.json().data.logs[0].text).toBe('line 1499')
  })
})
