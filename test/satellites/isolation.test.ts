import { createHash } from 'node:crypto'
import type { FastifyInstance } from 'fastify'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createTestContext, type TestContext } from '../helpers/app.js'
import { DIALECTS } from '../helpers/database.js'
import { keyPair } from '../helpers/hpke.js'
import { createToken, expectValidationError, heartbeat, METRICS, pair, registerWith, SATELLITE_LIMITS, SYSTEM_INFO, type SatelliteBody } from '../helpers/satellites.js'
import { client, crew as makeCrew, signUp, type Account, type Call } from '../helpers/teams.js'

/** What a satellite reports of how it keeps instances apart, and which runtimes it has: stored, shown, and refused when malformed. */
describe.each(DIALECTS)('satellite isolation and runtimes on %s', (dialect) => {
  let ctx: TestContext
  let app: FastifyInstance
  let call: Call
  let admin: Account
  let seq = 0

  const satelliteOf = async (id: string, as: Account = admin): Promise<SatelliteBody> => {
    const response = await call('GET', `/api/satellites/${id}`, as)
    expect(response.statusCode, response.body).toBe(200)
    return response.json().data.satellite
  }
  const name = () => `iso-${dialect}-${++seq}`

  beforeAll(async () => {
    ctx = await createTestContext(dialect)
    app = (await ctx.build({ limits: SATELLITE_LIMITS })).app
    call = client(app)
    admin = await signUp(app, 'iso_admin')
  })
  afterAll(() => ctx.close())

  it('registration stores isolation and runtimes; the views show them with the key fingerprint; without them: none and []', async () => {
    const keys = await keyPair()
    const sandboxed = await pair(app, (await createToken(call, admin)).token, name(), {
      isolation: 'process-sandbox', runtimes: ['node', 'npx', 'uvx'], public_key: keys.publicKey,
    })
    const expectedFingerprint = `sha256:${createHash('sha256').update(Buffer.from(keys.publicKey, 'base64url')).digest('base64url')}`
    expect(await satelliteOf(sandboxed.id)).toMatchObject({
      isolation: 'process-sandbox', runtimes: ['node', 'npx', 'uvx'], public_key_fingerprint: expectedFingerprint, public_key_changed_at: null,
    })
    expect(expectedFingerprint).toMatch(/^sha256:[A-Za-z0-9_-]{43}$/)
    const plain = await pair(app, (await createToken(call, admin)).token, name())
    expect(await satelliteOf(plain.id)).toMatchObject({ isolation: 'none', runtimes: [], public_key_fingerprint: null, public_key_changed_at: null })
    // The list shows the same.
    const listed = (await call('GET', '/api/satellites?limit=100', admin)).json().data.satellites as SatelliteBody[]
    expect(listed.find((each) => each.id === sandboxed.id)).toMatchObject({ isolation: 'process-sandbox', runtimes: ['node', 'npx', 'uvx'] })
    // So does a team admin's view of their team's satellite.
    const crew = await makeCrew(call, () => signUp(app, `iso_${++seq}`), `Isolation Team ${seq}`)
    const teamSatellite = await pair(app, (await createToken(call, crew.teamAdmin, { teamId: crew.team.id })).token, name(), { isolation: 'container', runtimes: ['docker'] })
    expect(await satelliteOf(teamSatellite.id, crew.teamAdmin)).toMatchObject({ isolation: 'container', runtimes: ['docker'] })
  })

  it('a heartbeat changes what it names and leaves the rest as it was', async () => {
    const satellite = await pair(app, (await createToken(call, admin)).token, name(), { isolation: 'process-sandbox', runtimes: ['npx'] })
    expect((await heartbeat(app, satellite.id, satellite.apiKey)).statusCode).toBe(200)
    expect(await satelliteOf(satellite.id)).toMatchObject({ isolation: 'process-sandbox', runtimes: ['npx'] })
    const changed = await heartbeat(app, satellite.id, satellite.apiKey, { status: 'active', system_metrics: METRICS, runtimes: ['npx', 'uvx', 'docker'] })
    expect(changed.statusCode, changed.body).toBe(200)
    expect(await satelliteOf(satellite.id)).toMatchObject({ isolation: 'process-sandbox', runtimes: ['npx', 'uvx', 'docker'] })
    expect((await heartbeat(app, satellite.id, satellite.apiKey, { status: 'active', system_metrics: METRICS, isolation: 'none' })).statusCode).toBe(200)
    expect(await satelliteOf(satellite.id)).toMatchObject({ isolation: 'none', runtimes: ['npx', 'uvx', 'docker'] })
    expect((await heartbeat(app, satellite.id, satellite.apiKey, { status: 'active', system_metrics: METRICS, isolation: 'container', runtimes: [] })).statusCode).toBe(200)
    expect(await satelliteOf(satellite.id)).toMatchObject({ isolation: 'container', runtimes: [] })
  })

  it('registering again says it anew: without isolation or runtimes, back to none and []', async () => {
    const satelliteName = name()
    const first = await pair(app, (await createToken(call, admin)).token, satelliteName, { isolation: 'container', runtimes: ['docker'] })
    const again = await pair(app, (await createToken(call, admin)).token, satelliteName)
    expect(again.id).toBe(first.id)
    expect(await satelliteOf(first.id)).toMatchObject({ isolation: 'none', runtimes: [] })
  })

  const BAD = [
    ['an unknown isolation', { isolation: 'sandbox' }],
    ['isolation of the wrong type', { isolation: true }],
    ['isolation null', { isolation: null }],
    ['runtimes not a list', { runtimes: 'npx' }],
    ['an upper-case runtime', { runtimes: ['NPX'] }],
    ['a runtime with a space', { runtimes: ['node 20'] }],
    ['a runtime starting with a dot', { runtimes: ['.node'] }],
    ['a runtime of 33 characters', { runtimes: ['a'.repeat(33)] }],
    ['an empty runtime', { runtimes: [''] }],
    ['a runtime that is no string', { runtimes: [7] }],
    ['a runtime twice', { runtimes: ['npx', 'npx'] }],
    ['21 runtimes', { runtimes: Array.from({ length: 21 }, (_, n) => `rt${n}`) }],
  ] as const

  it.each(BAD)('registration with %s → 400 naming the field, and no satellite', async (_, extra) => {
    const satelliteName = name()
    const response = await registerWith(app, `Bearer ${(await createToken(call, admin)).token}`, { name: satelliteName, system_info: SYSTEM_INFO, ...extra })
    expectValidationError(response)
    expect(JSON.stringify(response.json().details)).toContain(Object.keys(extra)[0])
    const listed = (await call('GET', '/api/satellites?limit=100', admin)).json().data.satellites as SatelliteBody[]
    expect(listed.map((each) => each.name)).not.toContain(satelliteName)
  })

  it.each(BAD)('a heartbeat with %s → 400, and nothing changes', async (_, extra) => {
    const satellite = await pair(app, (await createToken(call, admin)).token, name(), { isolation: 'process-sandbox', runtimes: ['npx'] })
    const response = await heartbeat(app, satellite.id, satellite.apiKey, { status: 'active', system_metrics: METRICS, ...extra })
    expectValidationError(response)
    expect(await satelliteOf(satellite.id)).toMatchObject({ status: 'inactive', isolation: 'process-sandbox', runtimes: ['npx'] })
  })

  it('20 runtimes of 32 characters are taken', async () => {
    const runtimes = Array.from({ length: 20 }, (_, n) => `${String(n).padStart(2, '0')}${'r'.repeat(30)}`)
    const satellite = await pair(app, (await createToken(call, admin)).token, name(), { runtimes })
    expect((await satelliteOf(satellite.id)).runtimes).toEqual(runtimes)
  })
})
