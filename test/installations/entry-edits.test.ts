import type { FastifyInstance, LightMyRequestResponse } from 'fastify'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createTestContext, type TestContext } from '../helpers/app.js'
import { addVersion, createServer, type ServerBody } from '../helpers/catalogue.js'
import { DIALECTS } from '../helpers/database.js'
import { keyPair } from '../helpers/hpke.js'
import { expectCode, install, installationOf, type InstallationBody } from '../helpers/installations.js'
import { createToken, heartbeat, pair, SATELLITE_LIMITS, type Paired } from '../helpers/satellites.js'
import { client, crew as makeCrew, signUp, type Account, type Call, type Crew } from '../helpers/teams.js'

type Json = Record<string, unknown>
interface Instance { installation_id: string; spec_hash: string; launch: { env?: Record<string, string>; transport?: unknown } }

/** A package with one optional, plain environment variable (the catalogue's own shape). */
const npmPackage = (extra: Json = {}): Json => ({
  registry_type: 'npm', identifier: '@example/edited-mcp', version: '1.0.0',
  environment_variables: [{ name: 'REGION', description: 'Where', required: false, secret: false }], ...extra,
})
const REMOTE = { type: 'streamable-http', url: 'https://edited.example.com/mcp' }

/**
 * Edits of a catalogue server's own entry (its packages, remotes, transport), which is what every
 * version without packages or remotes of its own runs: an edit that removes or breaks a target
 * some installation runs is 409 SERVER_IN_USE and writes nothing; any other edit that changes
 * what runs is followed by those installations and reaches their satellites (the desired-state
 * ETag moves) in the same transaction.
 */
describe.each(DIALECTS)('edits of installed catalogue entries on %s', (dialect) => {
  let ctx: TestContext
  let app: FastifyInstance
  let call: Call
  let admin: Account
  let a: Crew
  let globalSatellite: Paired
  let teamSatellite: Paired
  let seq = 0
  const fresh = () => signUp(app, `edits_${++seq}`)

  const documentOf = async (satellite: Paired, etag?: string): Promise<LightMyRequestResponse> =>
    app.inject({
      method: 'GET', url: `/api/satellites/${satellite.id}/desired-state`,
      headers: { authorization: `Bearer ${satellite.apiKey}`, ...(etag === undefined ? {} : { 'if-none-match': etag }) },
    })
  const document = async (satellite: Paired): Promise<{ etag: string; instances: Instance[] }> => {
    const response = await documentOf(satellite)
    expect(response.statusCode, response.body).toBe(200)
    return { etag: response.headers.etag as string, instances: response.json().data.instances }
  }
  const instanceOf = async (satellite: Paired, installationId: string) => (await document(satellite)).instances.find((each) => each.installation_id === installationId)
  const read = async (id: string): Promise<ServerBody> => (await call('GET', `/api/mcp/servers/${id}`, admin)).json().data.server
  const view = async (id: string): Promise<InstallationBody> => (await call('GET', installationOf(a.team.id, id), a.teamAdmin)).json().data.installation

  /** A global server whose version 1.0.0 has no packages or remotes of its own, installed by team A at its package and at its remote. */
  async function installedGlobal(): Promise<{ server: ServerBody; onPackage: InstallationBody; onRemote: InstallationBody }> {
    const server = await createServer(call, admin, { name: `Edited ${++seq}`, packages: [npmPackage()], remotes: [REMOTE] })
    await addVersion(call, admin, server.id, { version: '1.0.0' })
    const onPackage = await install(call, a.team.id, a.teamAdmin, { server_id: server.id, satellite_id: globalSatellite.id })
    const onRemote = await install(call, a.team.id, a.teamAdmin, { server_id: server.id, satellite_id: globalSatellite.id, target: { kind: 'remote', index: 0 } })
    return { server: await read(server.id), onPackage, onRemote }
  }

  beforeAll(async () => {
    ctx = await createTestContext(dialect)
    app = (await ctx.build({ limits: SATELLITE_LIMITS })).app
    call = client(app)
    admin = await signUp(app, 'edits_admin')
    a = await makeCrew(call, fresh, 'Edits Team')
    const publicKey = (await keyPair()).publicKey
    globalSatellite = await pair(app, (await createToken(call, admin)).token, `edits-global-${dialect}`, { satellite_url: 'http://127.0.0.1:7401', public_key: publicKey })
    teamSatellite = await pair(app, (await createToken(call, a.teamAdmin, { teamId: a.team.id })).token, `edits-team-${dialect}`, { satellite_url: 'http://127.0.0.1:7402', public_key: publicKey })
    for (const satellite of [globalSatellite, teamSatellite]) expect((await heartbeat(app, satellite.id, satellite.apiKey)).statusCode).toBe(200)
  })
  afterAll(() => ctx.close())

  it.each([
    ['its packages emptied', { packages: [] }, 'packages'],
    ['its remotes emptied', { remotes: [] }, 'remotes'],
  ])('a global server with %s: 409 SERVER_IN_USE naming how many, and nothing written', async (_what, body, _kind) => {
    const { server, onPackage, onRemote } = await installedGlobal()
    const before = await document(globalSatellite)
    const response = await call('PUT', `/api/mcp/servers/global/${server.id}`, admin, body)
    expectCode(response, 409, 'SERVER_IN_USE')
    expect(response.json().error).toMatch(/^1 installation /)
    expect(await read(server.id)).toEqual(server)
    // The satellite's document is the same, and so is what the team reads.
    expect((await documentOf(globalSatellite, before.etag)).statusCode).toBe(304)
    expect((await view(onPackage.id)).spec_revision).toBe(onPackage.spec_revision)
    expect((await view(onRemote.id)).spec_revision).toBe(onRemote.spec_revision)
  })

  it('both targets removed at once: the count says two', async () => {
    const { server } = await installedGlobal()
    const response = await call('PUT', `/api/mcp/servers/global/${server.id}`, admin, { packages: [], remotes: [] })
    expectCode(response, 409, 'SERVER_IN_USE')
    expect(response.json().error).toMatch(/^2 installations /)
  })

  it('a harmless edit of the installed package (a new default) is followed: the installation derives it, the document and its ETag move', async () => {
    const { server, onPackage } = await installedGlobal()
    const before = await document(globalSatellite)
    const beforeInstance = before.instances.find((each) => each.installation_id === onPackage.id)!
    expect(beforeInstance.launch.env).toEqual({})
    const response = await call('PUT', `/api/mcp/servers/global/${server.id}`, admin, {
      packages: [npmPackage({ environment_variables: [{ name: 'REGION', description: 'Where', required: false, secret: false, default: 'eu-west' }] })],
    })
    expect(response.statusCode, response.body).toBe(200)
    const after = await document(globalSatellite)
    expect(after.etag).not.toBe(before.etag)
    expect((await documentOf(globalSatellite, before.etag)).statusCode).toBe(200)
    expect(after.instances.find((each) => each.installation_id === onPackage.id)!.launch.env).toEqual({ REGION: 'eu-west' })
    const followed = await view(onPackage.id)
    expect(followed.inputs.find((input) => input.key === 'env:REGION')).toMatchObject({ default: 'eu-west' })
    expect(followed.spec_revision).toBe(onPackage.spec_revision + 1)
    const audit = await call('GET', `/api/admin/audit-log?type=installation.entry_followed&limit=100`, admin)
    expect(audit.json().data.events.map((event: { target: string }) => event.target)).toContain(onPackage.id)
  })

  it("an edit that leaves the installed target as it was (another package added) changes no installation and no document", async () => {
    const { server, onPackage, onRemote } = await installedGlobal()
    const before = await document(globalSatellite)
    const response = await call('PUT', `/api/mcp/servers/global/${server.id}`, admin, { packages: [npmPackage(), npmPackage({ identifier: '@example/another-mcp' })] })
    expect(response.statusCode, response.body).toBe(200)
    expect((await documentOf(globalSatellite, before.etag)).statusCode).toBe(304)
    expect((await view(onPackage.id)).spec_revision).toBe(onPackage.spec_revision)
    expect((await view(onRemote.id)).spec_revision).toBe(onRemote.spec_revision)
  })

  it("a version with packages of its own does not run the server's: emptying the server's packages is allowed then", async () => {
    const server = await createServer(call, admin, { name: `Own ${++seq}`, packages: [npmPackage()] })
    await addVersion(call, admin, server.id, { version: '1.0.0', packages: [npmPackage()] })
    await install(call, a.team.id, a.teamAdmin, { server_id: server.id, satellite_id: globalSatellite.id })
    const response = await call('PUT', `/api/mcp/servers/global/${server.id}`, admin, { packages: [] })
    expect(response.statusCode, response.body).toBe(200)
  })

  it("a team's own server: emptying its installed packages is 409 SERVER_IN_USE too; a harmless edit moves its satellite's document", async () => {
    const servers = `/api/teams/${a.team.id}/mcp/servers`
    const created = await call('POST', servers, a.teamAdmin, { name: `Team edited ${++seq}`, packages: [npmPackage()] })
    expect(created.statusCode, created.body).toBe(201)
    const server: ServerBody = created.json().data.server
    expect((await call('POST', `${servers}/${server.id}/versions`, a.teamAdmin, { version: '1.0.0' })).statusCode).toBe(201)
    const installation = await install(call, a.team.id, a.teamAdmin, { server_id: server.id, satellite_id: teamSatellite.id })
    const before = await document(teamSatellite)
    expect(before.instances.map((each) => each.installation_id)).toContain(installation.id)

    const emptied = await call('PUT', `${servers}/${server.id}`, a.teamAdmin, { packages: [] })
    expectCode(emptied, 409, 'SERVER_IN_USE')
    expect((await documentOf(teamSatellite, before.etag)).statusCode).toBe(304)

    const edited = await call('PUT', `${servers}/${server.id}`, a.teamAdmin, { packages: [npmPackage({ version: '1.0.1' })] })
    expect(edited.statusCode, edited.body).toBe(200)
    expect((await documentOf(teamSatellite, before.etag)).statusCode).toBe(200)
    expect((await instanceOf(teamSatellite, installation.id))!.launch).toMatchObject({ version: '1.0.1' })
  })
})
