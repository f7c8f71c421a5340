import { and, eq, isNull } from 'drizzle-orm'
import type { FastifyInstance, LightMyRequestResponse } from 'fastify'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createTestContext, type TestContext } from '../helpers/app.js'
import { DIALECTS } from '../helpers/database.js'
import { keyPair } from '../helpers/hpke.js'
import { importDocuments, install, installationOf, weatherDocument, type InstallationBody } from '../helpers/installations.js'
import { createToken, heartbeat, pair, SATELLITE_LIMITS, type Paired } from '../helpers/satellites.js'
import { client, crew as makeCrew, signUp, type Account, type Call, type Crew } from '../helpers/teams.js'

interface Instance { instance_id: string; installation_id: string; spec_hash: string; launch: { env?: Record<string, string> } }

/** The values every weather installation here needs (helpers/installations.ts weatherDocument). */
const VALUES = { 'env:WEATHER_API_KEY': 'wk-unresolved-1', 'env:PERSONAL_TOKEN': 'pt-unresolved-1', 'arg:data_dir': '/srv/cache' }

/**
 * A satellite's document is built per instance: an instance that cannot be resolved (its target
 * gone from the version it runs, a runtime rule broken by an entry stored before the rules, a value
 * that does not decrypt) is left out and reads `failed` with why to its own team. The document of
 * the satellite still answers 200 with every other team's instances, and their changes still reach it.
 */
describe.each(DIALECTS)('unresolvable instances on %s', (dialect) => {
  let ctx: TestContext
  let app: FastifyInstance
  let call: Call
  let admin: Account
  let a: Crew
  let b: Crew
  let satellite: Paired
  let seq = 0
  const fresh = () => signUp(app, `unres_${++seq}`)

  const desired = (headers: Record<string, string> = {}): Promise<LightMyRequestResponse> =>
    app.inject({ method: 'GET', url: `/api/satellites/${satellite.id}/desired-state`, headers: { authorization: `Bearer ${satellite.apiKey}`, ...headers } })
  const document = async (): Promise<{ etag: string; instances: Instance[] }> => {
    const response = await desired()
    expect(response.statusCode, response.body).toBe(200)
    return { etag: response.headers.etag as string, instances: response.json().data.instances }
  }
  const ids = async () => (await document()).instances.map((instance) => instance.installation_id)
  const view = async (crew: Crew, id: string): Promise<InstallationBody> => (await call('GET', installationOf(crew.team.id, id), crew.teamAdmin)).json().data.installation

  /** Imports a weather document under a fresh name; answers its registry name and server id. */
  const importWeather = async (): Promise<{ name: string; serverId: string }> => {
    const name = `io.github.unresolved-${dialect}/w${++seq}`
    const [serverId] = await importDocuments(call, admin, [weatherDocument(name)])
    return { name, serverId: serverId! }
  }
  const installOn = (crew: Crew, serverId: string): Promise<InstallationBody> =>
    install(call, crew.team.id, crew.teamAdmin, { server_id: serverId, satellite_id: satellite.id, values: VALUES })

  beforeAll(async () => {
    ctx = await createTestContext(dialect)
    app = (await ctx.build({ limits: SATELLITE_LIMITS })).app
    call = client(app)
    admin = await signUp(app, 'unres_admin')
    a = await makeCrew(call, fresh, 'Unresolved A')
    b = await makeCrew(call, fresh, 'Unresolved B')
    const token = await createToken(call, admin)
    satellite = await pair(app, token.token, `unres-sat-${dialect}`, { satellite_url: 'http://127.0.0.1:7300', public_key: (await keyPair()).publicKey })
    expect((await heartbeat(app, satellite.id, satellite.apiKey)).statusCode).toBe(200)
  })
  afterAll(() => ctx.close())

  it("a version whose package an installation runs is re-imported without it: that instance fails for its team, the other team's still runs and still changes", async () => {
    const broken = await importWeather()
    const fine = await importWeather()
    const mine = await installOn(a, broken.serverId)
    const theirs = await installOn(b, fine.serverId)
    expect(await ids()).toEqual(expect.arrayContaining([mine.id, theirs.id]))

    // The registry publishes the same version again without its packages (a sync or an import does this).
    await importDocuments(call, admin, [{ ...weatherDocument(broken.name), packages: [] }])
    const after = await document()
    expect(after.instances.map((instance) => instance.installation_id)).toContain(theirs.id)
    expect(after.instances.map((instance) => instance.installation_id)).not.toContain(mine.id)
    const failed = await view(a, mine.id)
    expect(failed.status).toBe('failed')
    expect(failed.status_reason).toMatch(/could not be resolved/)
    expect(failed.status_reason).toContain('packages[0]')
    // The other team reads nothing of it.
    expect((await view(b, theirs.id)).status).not.toBe('failed')

    // Team B's changes still reach the satellite: a value set changes its instance's spec.
    const before = after.instances.find((instance) => instance.installation_id === theirs.id)!
    const set = await call('PUT', `${installationOf(b.team.id, theirs.id)}/values`, b.teamAdmin, { values: { 'env:LOG_LEVEL': 'debug' } })
    expect(set.statusCode, set.body).toBe(200)
    const changed = (await document()).instances.find((instance) => instance.installation_id === theirs.id)!
    expect(changed.spec_hash).not.toBe(before.spec_hash)
    expect(changed.launch.env).toMatchObject({ LOG_LEVEL: 'debug' })

    // Published again with its package: the instance is back, and no longer reads failed.
    await importDocuments(call, admin, [weatherDocument(broken.name)])
    expect(await ids()).toContain(mine.id)
    const back = await view(a, mine.id)
    expect(back.status).toBe('pending')
    expect(back.status_reason).not.toMatch(/could not be resolved/)
  })

  it('an entry stored before the runtime rules (a loader-changing variable in its document) is not sent; its instance fails with why', async () => {
    const { serverId } = await importWeather()
    const other = await installOn(b, (await importWeather()).serverId)
    const installation = await installOn(a, serverId)
    // What an import before the rules could have stored: a fixed NODE_OPTIONS in the package it runs.
    const { db, t } = app.services.database
    const [version] = await db.select().from(t.mcpServerVersions).where(eq(t.mcpServerVersions.serverId, serverId))
    const stored = structuredClone(version!.serverJson) as { packages: Array<{ environmentVariables: Array<Record<string, unknown>> }> }
    stored.packages[0]!.environmentVariables.push({ name: 'NODE_OPTIONS', value: '--require=/tmp/evil.js' })
    await db.update(t.mcpServerVersions).set({ serverJson: stored }).where(eq(t.mcpServerVersions.id, version!.id))
    // Any change of the installation builds the document again.
    expect((await call('POST', `${installationOf(a.team.id, installation.id)}/restart`, a.teamAdmin)).statusCode).toBe(200)

    const after = await document()
    expect(after.instances.map((instance) => instance.installation_id)).toContain(other.id)
    expect(after.instances.map((instance) => instance.installation_id)).not.toContain(installation.id)
    expect(JSON.stringify(after.instances)).not.toContain('NODE_OPTIONS')
    const failed = await view(a, installation.id)
    expect(failed.status).toBe('failed')
    expect(failed.status_reason).toMatch(/NODE_OPTIONS/)
  })

  it("a value that does not decrypt fails its own instance only, naming the key and never a value", async () => {
    const installation = await installOn(a, (await importWeather()).serverId)
    const other = await installOn(b, (await importWeather()).serverId)
    const { db, t } = app.services.database
    const values = t.mcpInstallationValues
    const [row] = await db.select().from(values).where(and(eq(values.installationId, installation.id), eq(values.key, 'env:WEATHER_API_KEY'), isNull(values.userId)))
    // A ciphertext from another row does not open here (its associated data names its own place).
    const [foreign] = await db.select().from(values).where(and(eq(values.installationId, other.id), eq(values.key, 'env:WEATHER_API_KEY')))
    await db.update(values).set({ sealed: foreign!.sealed }).where(and(eq(values.installationId, row!.installationId), eq(values.key, row!.key), isNull(values.userId)))
    expect((await call('POST', `${installationOf(a.team.id, installation.id)}/restart`, a.teamAdmin)).statusCode).toBe(200)

    const after = await document()
    expect(after.instances.map((instance) => instance.installation_id)).toContain(other.id)
    expect(after.instances.map((instance) => instance.installation_id)).not.toContain(installation.id)
    const failed = await view(a, installation.id)
    expect(failed.status).toBe('failed')
    expect(failed.status_reason).toContain('env:WEATHER_API_KEY')
    expect(failed.status_reason).not.toContain(VALUES['env:WEATHER_API_KEY'])

    // Set again, it resolves.
    await call('PUT', `${installationOf(a.team.id, installation.id)}/values`, a.teamAdmin, { values: { 'env:WEATHER_API_KEY': 'wk-new' } })
    expect(await ids()).toContain(installation.id)
    expect((await view(a, installation.id)).status).toBe('pending')
  })
})
