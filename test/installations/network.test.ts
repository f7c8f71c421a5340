import type { FastifyInstance } from 'fastify'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createTestContext, type TestContext } from '../helpers/app.js'
import { DIALECTS } from '../helpers/database.js'
import { expectCode, importDocuments, install, installationOf, installationsOf, weatherDocument, type InstallationBody } from '../helpers/installations.js'
import { documentOf, type DocumentInstance } from '../helpers/placement.js'
import { createToken, heartbeat, pair, SATELLITE_LIMITS, type Paired } from '../helpers/satellites.js'
import { client, crew as makeCrew, signUp, type Account, type Call, type Crew } from '../helpers/teams.js'

/** The weather server's second package: nothing to configure and no secret. */
const OFFLINE_PACKAGE = { kind: 'package', index: 1 }
/** Its remote: configured with a tenant and a key. */
const REMOTE = { kind: 'remote', index: 0 }

/**
 * An installation's `network`: `none` asks its satellite to give the process no network at all.
 * It is shown, carried in every instance of the document, part of the spec hash (a change restarts
 * the instance), audited, and refused for a remote target, which only the network reaches.
 */
describe.each(DIALECTS)('installation network on %s', (dialect) => {
  let ctx: TestContext
  let app: FastifyInstance
  let call: Call
  let admin: Account
  let crew: Crew
  let satellite: Paired
  let weatherId: string
  let seq = 0

  const instanceOf = async (id: string): Promise<DocumentInstance> => (await documentOf(app, satellite)).find((instance) => instance.installation_id === id)!
  const patch = (id: string, body: object) => call('PATCH', installationOf(crew.team.id, id), crew.teamAdmin, body)
  const read = async (id: string): Promise<InstallationBody> => (await call('GET', installationOf(crew.team.id, id), crew.teamAdmin)).json().data.installation
  const auditOf = async (type: string, id: string) =>
    ((await call('GET', `/api/admin/audit-log?type=${type}&limit=100`, admin)).json().data.events as Array<{ target: string; details: Record<string, unknown> }>)
      .filter((event) => event.target === id)

  beforeAll(async () => {
    ctx = await createTestContext(dialect)
    app = (await ctx.build({ limits: SATELLITE_LIMITS })).app
    call = client(app)
    admin = await signUp(app, `net_admin_${dialect}`)
    crew = await makeCrew(call, () => signUp(app, `net_${dialect}_${++seq}`), 'Network Team')
    satellite = await pair(app, (await createToken(call, crew.teamAdmin, { teamId: crew.team.id })).token, `net-sat-${dialect}`)
    expect((await heartbeat(app, satellite.id, satellite.apiKey)).statusCode).toBe(200)
    weatherId = (await importDocuments(call, admin, [weatherDocument('io.github.example/network-weather')]))[0]!
  })
  afterAll(() => ctx.close())

  it('full by default; none is shown, sent in the document, and audited', async () => {
    const plain = await install(call, crew.team.id, crew.teamAdmin, { server_id: weatherId, target: OFFLINE_PACKAGE })
    expect(plain).toMatchObject({ network: 'full' })
    expect(await instanceOf(plain.id)).toMatchObject({ network: 'full', desired: 'running' })
    const sealedOff = await install(call, crew.team.id, crew.teamAdmin, { server_id: weatherId, target: OFFLINE_PACKAGE, network: 'none' })
    expect(sealedOff).toMatchObject({ network: 'none' })
    expect((await read(sealedOff.id)).network).toBe('none')
    expect(await instanceOf(sealedOff.id)).toMatchObject({ network: 'none' })
    expect(await auditOf('installation.created', sealedOff.id)).toEqual([expect.objectContaining({ details: expect.objectContaining({ network: 'none' }) })])
    // The members' list shows it too.
    const mine = (await call('GET', `/api/users/me/mcp/installations?team_id=${crew.team.id}&limit=100`, crew.teamUser)).json().data.installations as Array<{ id: string; network: string }>
    expect(mine.find((each) => each.id === sealedOff.id)?.network).toBe('none')
  })

  it('a change moves the spec hash and the revision (the instance restarts); the same value again changes nothing', async () => {
    const installation = await install(call, crew.team.id, crew.teamAdmin, { server_id: weatherId, target: OFFLINE_PACKAGE, network: 'none' })
    const before = await instanceOf(installation.id)
    const opened = await patch(installation.id, { network: 'full' })
    expect(opened.statusCode, opened.body).toBe(200)
    expect(opened.json().data.installation).toMatchObject({ network: 'full', spec_revision: installation.spec_revision + 1 })
    const after = await instanceOf(installation.id)
    expect(after.network).toBe('full')
    expect(after.spec_hash).not.toBe(before.spec_hash)
    expect(await auditOf('installation.updated', installation.id)).toEqual([expect.objectContaining({ details: expect.objectContaining({ fields: ['network'], network: 'full' }) })])
    // Back to none: the spec is the one it had, so is its hash.
    expect((await patch(installation.id, { network: 'none' })).statusCode).toBe(200)
    expect((await instanceOf(installation.id)).spec_hash).toBe(before.spec_hash)
    const same = await patch(installation.id, { network: 'none' })
    expect(same.json().data.installation.spec_revision).toBe(installation.spec_revision + 2)
  })

  it('a remote target with none is 400 naming network, at creation and by PATCH, and nothing changes', async () => {
    const refused = await call('POST', installationsOf(crew.team.id), crew.teamAdmin, { server_id: weatherId, target: REMOTE, network: 'none', name: 'remote-offline' })
    expectCode(refused, 400, 'VALIDATION_ERROR')
    expect(refused.json().details).toEqual([expect.objectContaining({ field: 'network', message: expect.stringMatching(/remote target is reached over the network/) })])
    const names = ((await call('GET', `${installationsOf(crew.team.id)}?limit=100`, crew.teamAdmin)).json().data.installations as InstallationBody[]).map((each) => each.name)
    expect(names).not.toContain('remote-offline')

    const remote = await install(call, crew.team.id, crew.teamAdmin, { server_id: weatherId, target: REMOTE })
    expectCode(await patch(remote.id, { network: 'none' }), 400, 'VALIDATION_ERROR')
    expect(await read(remote.id)).toMatchObject({ network: 'full', spec_revision: remote.spec_revision })

    const offline = await install(call, crew.team.id, crew.teamAdmin, { server_id: weatherId, target: OFFLINE_PACKAGE, network: 'none' })
    const toRemote = await patch(offline.id, { target: REMOTE })
    expectCode(toRemote, 400, 'VALIDATION_ERROR')
    expect(toRemote.json().details[0].field).toBe('network')
    expect(await read(offline.id)).toMatchObject({ network: 'none', target: { kind: 'package', index: 1 }, spec_revision: offline.spec_revision })
    // Both in one request: a remote with full network.
    expect((await patch(offline.id, { target: REMOTE, network: 'full' })).json().data.installation).toMatchObject({ network: 'full', target: { kind: 'remote' } })
  })

  it.each([['partial'], [null], [true], [''], ['NONE']])('network %j → 400', async (value) => {
    expectCode(await call('POST', installationsOf(crew.team.id), crew.teamAdmin, { server_id: weatherId, target: OFFLINE_PACKAGE, network: value }), 400, 'VALIDATION_ERROR')
    const existing = await install(call, crew.team.id, crew.teamAdmin, { server_id: weatherId, target: OFFLINE_PACKAGE })
    expectCode(await patch(existing.id, { network: value }), 400, 'VALIDATION_ERROR')
  })
})
