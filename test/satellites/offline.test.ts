import type { FastifyInstance, LightMyRequestResponse } from 'fastify'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createTestContext, type TestContext } from '../helpers/app.js'
import { manualClock, type ManualClock } from '../helpers/clock.js'
import { DIALECTS } from '../helpers/database.js'
import { keyPair } from '../helpers/hpke.js'
import { importDocuments, install, installationOf, weatherDocument, type InstallationBody } from '../helpers/installations.js'
import { createToken, heartbeat, pair, SATELLITE_LIMITS, type Paired } from '../helpers/satellites.js'
import { client, crew as makeCrew, signUp, type Account, type Call, type Crew } from '../helpers/teams.js'

/**
 * A satellite that stops cleanly says so (POST /api/satellites/:id/offline): it reads `offline`
 * and its installations `unknown` at once, instead of after 90 s of silence, until its next heartbeat.
 * Meanwhile it serves nothing, so client configurations leave its endpoints out.
 */
describe.each(DIALECTS)('a satellite going offline on %s', (dialect) => {
  let ctx: TestContext
  let app: FastifyInstance
  let clock: ManualClock
  let call: Call
  let admin: Account
  let crew: Crew
  let weatherId: string
  let seq = 0
  const fresh = () => signUp(app, `offline_${dialect}_${++seq}`)

  const offline = (satellite: Paired, headers: Record<string, string> = { authorization: `Bearer ${satellite.apiKey}` }): Promise<LightMyRequestResponse> =>
    app.inject({ method: 'POST', url: `/api/satellites/${satellite.id}/offline`, headers })
  const statusOf = async (satellite: Paired): Promise<string> => {
    const response = await call('GET', `/api/satellites/${satellite.id}`, crew.teamAdmin)
    expect(response.statusCode, response.body).toBe(200)
    return response.json().data.satellite.status
  }
  const installationView = async (id: string): Promise<InstallationBody> => {
    const response = await call('GET', installationOf(crew.team.id, id), crew.teamUser)
    expect(response.statusCode, response.body).toBe(200)
    return response.json().data.installation
  }
  const listed = async (status: string): Promise<string[]> => {
    const response = await call('GET', `/api/satellites?status=${status}&limit=100`, admin)
    expect(response.statusCode, response.body).toBe(200)
    return (response.json().data.satellites as Array<{ id: string }>).map((satellite) => satellite.id)
  }
  const teamSatellite = async (): Promise<Paired> => {
    const token = await createToken(call, crew.teamAdmin, { teamId: crew.team.id })
    const satellite = await pair(app, token.token, `offline-${dialect}-${++seq}`, { public_key: (await keyPair()).publicKey })
    expect((await heartbeat(app, satellite.id, satellite.apiKey)).statusCode).toBe(200)
    return satellite
  }

  beforeAll(async () => {
    ctx = await createTestContext(dialect)
    clock = manualClock(Date.now())
    app = (await ctx.build({ limits: SATELLITE_LIMITS, clock })).app
    call = client(app)
    admin = await signUp(app, `offline_${dialect}_admin`)
    crew = await makeCrew(call, fresh, 'Offline Team')
    weatherId = (await importDocuments(call, admin, [weatherDocument('io.github.example/offline-weather')]))[0]!
  })
  afterAll(() => ctx.close())

  it('reads offline, its installations unknown, until the next heartbeat brings it back', async () => {
    const satellite = await teamSatellite()
    const installation = await install(call, crew.team.id, crew.teamAdmin, {
      server_id: weatherId, satellite_id: satellite.id, values: { 'env:WEATHER_API_KEY': 'k', 'env:PERSONAL_TOKEN': 't', 'arg:data_dir': '/d' },
    })
    expect(await statusOf(satellite)).toBe('active')
    expect((await installationView(installation.id)).status).not.toBe('unknown')

    const said = await offline(satellite)
    expect(said.statusCode, said.body).toBe(200)
    expect(said.json().data.satellite).toEqual({ id: satellite.id, status: 'offline' })
    expect(await statusOf(satellite)).toBe('offline')
    const view = await installationView(installation.id)
    expect(view.status).toBe('unknown')
    expect(view.status_reason).toContain('stopped')
    expect(await listed('offline')).toContain(satellite.id)
    expect(await listed('active')).not.toContain(satellite.id)

    expect((await heartbeat(app, satellite.id, satellite.apiKey)).statusCode).toBe(200)
    expect(await statusOf(satellite)).toBe('active')
    expect((await installationView(installation.id)).status).not.toBe('unknown')
    expect(await listed('offline')).not.toContain(satellite.id)
    expect(await listed('active')).toContain(satellite.id)
  })

  it('takes no new placements while offline; its next heartbeat places what waited', async () => {
    const lone = await makeCrew(call, fresh, `Offline Lone ${++seq}`)
    const token = await createToken(call, lone.teamAdmin, { teamId: lone.team.id })
    const satellite = await pair(app, token.token, `offline-lone-${dialect}-${seq}`, { public_key: (await keyPair()).publicKey })
    expect((await heartbeat(app, satellite.id, satellite.apiKey)).statusCode).toBe(200)
    expect((await offline(satellite)).statusCode).toBe(200)
    const waiting = await install(call, lone.team.id, lone.teamAdmin, { server_id: weatherId, values: { 'env:WEATHER_API_KEY': 'k', 'env:PERSONAL_TOKEN': 't', 'arg:data_dir': '/d' } })
    expect(waiting.satellite_id).toBeNull()
    expect((await heartbeat(app, satellite.id, satellite.apiKey)).statusCode).toBe(200)
    const placed = (await call('GET', installationOf(lone.team.id, waiting.id), lone.teamAdmin)).json().data.installation as InstallationBody
    expect(placed.satellite_id).toBe(satellite.id)
  })

  it("is the satellite's own call: sessions 401, another satellite's key 403, a disabled one 403 SATELLITE_DISABLED", async () => {
    const satellite = await teamSatellite()
    const stranger = await teamSatellite()
    for (const cookie of [admin.cookie, crew.teamAdmin.cookie, crew.teamUser.cookie]) {
      const response = await offline(satellite, { cookie, origin: 'http://localhost:3000' })
      expect(response.statusCode, response.body).toBe(401)
    }
    const foreign = await offline(satellite, { authorization: `Bearer ${stranger.apiKey}` })
    expect(foreign.statusCode).toBe(403)
    expect(foreign.json().code).toBe('FORBIDDEN')
    expect(await statusOf(satellite)).toBe('active')
    expect((await call('PUT', `/api/satellites/${satellite.id}`, admin, { status: 'disabled' })).statusCode).toBe(200)
    const disabled = await offline(satellite)
    expect(disabled.statusCode).toBe(403)
    expect(disabled.json().code).toBe('SATELLITE_DISABLED')
  })

  it('client configurations leave out the endpoints of an offline satellite: stopped cleanly, or silent for 90 s', async () => {
    const token = await createToken(call, crew.teamAdmin, { teamId: crew.team.id })
    const satellite = await pair(app, token.token, `offline-config-${dialect}-${++seq}`, { public_key: (await keyPair()).publicKey, satellite_url: 'https://offline-config.example.com' })
    expect((await heartbeat(app, satellite.id, satellite.apiKey)).statusCode).toBe(200)
    const installation = await install(call, crew.team.id, crew.teamAdmin, {
      server_id: weatherId, name: `config-${++seq}`, satellite_id: satellite.id, values: { 'env:WEATHER_API_KEY': 'k', 'env:PERSONAL_TOKEN': 't', 'arg:data_dir': '/d' },
    })
    const endpoint = `https://offline-config.example.com/mcp/${installation.id}`
    const configured = async (): Promise<string[]> => {
      const response = await call('GET', '/api/users/me/mcp/client-config', crew.teamUser)
      expect(response.statusCode, response.body).toBe(200)
      return Object.values(response.json().data.mcpServers as Record<string, { url: string }>).map((entry) => entry.url)
    }
    expect(await configured()).toContain(endpoint)

    expect((await offline(satellite)).statusCode).toBe(200)
    expect(await configured()).not.toContain(endpoint)
    expect((await heartbeat(app, satellite.id, satellite.apiKey)).statusCode).toBe(200)
    expect(await configured()).toContain(endpoint)

    clock.advance(91_000)
    expect((await installationView(installation.id)).status).toBe('unknown')
    expect(await configured()).not.toContain(endpoint)
    expect((await heartbeat(app, satellite.id, satellite.apiKey)).statusCode).toBe(200)
    expect(await configured()).toContain(endpoint)
  })
})
