import type { FastifyInstance, LightMyRequestResponse } from 'fastify'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { InstanceDocument as Instance } from '../../src/formats/desired-state.js'
import { createTestContext, type TestContext } from '../helpers/app.js'
import { DIALECTS } from '../helpers/database.js'
import { keyPair, unseal, type PrivateKey } from '../helpers/hpke.js'
import { importDocuments, install, installationOf, weatherDocument, type InstallationBody } from '../helpers/installations.js'
import { changeKeyWithProof } from '../helpers/key-change.js'
import { createToken, heartbeat, pair, SATELLITE_LIMITS, type Paired } from '../helpers/satellites.js'
import { addMember, client, crew as makeCrew, signUp, type Account, type Call, type Crew } from '../helpers/teams.js'

const SECRET = 'wk-live-desired-0a1b2c3d4e5f'
/** Installations of the race test, each with two secrets to seal. */
const RACE_INSTALLATIONS = 12
const PERSONAL = 'ghp-own-desired-9f8e7d6c'

/**
 * The desired-state document through the HTTP API: what a satellite is told to run, sealed
 * secrets, ETags, 304s and long-polls that wake on a change.
 */
describe.each(DIALECTS)('satellite desired state on %s', (dialect) => {
  let ctx: TestContext
  let app: FastifyInstance
  let call: Call
  let admin: Account
  let a: Crew
  let satellite: Paired
  let keys: { publicKey: string; privateKey: PrivateKey }
  let weatherId: string
  let seq = 0
  const fresh = () => signUp(app, `chan_${++seq}`)

  const desired = (sat: Paired, headers: Record<string, string> = {}, query = ''): Promise<LightMyRequestResponse> =>
    app.inject({ method: 'GET', url: `/api/satellites/${sat.id}/desired-state${query}`, headers: { authorization: `Bearer ${sat.apiKey}`, ...headers } })
  const document = async (sat: Paired = satellite): Promise<{ revision: string; instances: Instance[]; etag: string }> => {
    const response = await desired(sat)
    expect(response.statusCode, response.body).toBe(200)
    return { ...response.json().data, etag: response.headers.etag as string }
  }

  beforeAll(async () => {
    ctx = await createTestContext(dialect)
    app = (await ctx.build({ limits: SATELLITE_LIMITS })).app
    call = client(app)
    admin = await signUp(app, 'chan_admin')
    a = await makeCrew(call, fresh, 'Channel Team')
    keys = await keyPair()
    const token = await createToken(call, a.teamAdmin, { teamId: a.team.id })
    satellite = await pair(app, token.token, `chan-sat-${dialect}`, { satellite_url: 'http://127.0.0.1:7100', public_key: keys.publicKey })
    expect((await heartbeat(app, satellite.id, satellite.apiKey)).statusCode).toBe(200)
    weatherId = (await importDocuments(call, admin, [weatherDocument('io.github.example/channel-weather')]))[0]!
  })
  afterAll(() => ctx.close())

  it('an empty document with an ETag; the same ETag answers 304', async () => {
    const first = await document()
    expect(first.instances).toEqual([])
    expect(first.etag).toBe(`"${first.revision}"`)
    const again = await desired(satellite, { 'if-none-match': first.etag })
    expect(again.statusCode).toBe(304)
    expect(again.body).toBe('')
    // No length of a body it does not carry: a client trusting it would wait for bytes that never come.
    expect(again.headers['content-length']).toBeUndefined()
    expect(again.headers.etag).toBe(first.etag)
  })

  it('an installation with a secret: the launch holds the values in their places, the secret sealed to the satellite', async () => {
    const before = await document()
    const installation = await install(call, a.team.id, a.teamAdmin, {
      server_id: weatherId, name: 'chan-weather', values: { 'env:WEATHER_API_KEY': SECRET, 'env:PERSONAL_TOKEN': 'team-token', 'arg:data_dir': '/srv/cache', 'env:LOG_LEVEL': 'warn' },
    })
    expect(installation.satellite_id).toBe(satellite.id)
    const after = await document()
    expect(after.revision).not.toBe(before.revision)
    const instance = after.instances.find((each) => each.installation_id === installation.id)!
    expect(instance).toMatchObject({
      instance_id: installation.id, team_id: a.team.id, user_id: null, name: 'chan-weather', endpoint_path: `/mcp/${installation.id}`,
      desired: 'running', restart_generation: 0, disabled_tools: [],
    })
    expect(instance.launch).toEqual({
      kind: 'package', registry_type: 'npm', identifier: '@example/weather-mcp', version: '1.4.0', runtime_hint: 'npx',
      runtime_args: [], package_args: ['--port', '8080', '/srv/cache'], env: { LOG_LEVEL: 'warn', REGION: 'eu-west' }, transport: { type: 'stdio' },
    })
    expect(instance.secrets.map((secret) => secret.target).sort()).toEqual(['env:PERSONAL_TOKEN', 'env:WEATHER_API_KEY'])
    const sealed = instance.secrets.find((secret) => secret.target === 'env:WEATHER_API_KEY')!
    expect(await unseal(keys.privateKey, instance.instance_id, 'env:WEATHER_API_KEY', sealed.sealed)).toBe(SECRET)
    // Bound to its place: opened as another target, or for another instance, it fails.
    await expect(unseal(keys.privateKey, instance.instance_id, 'env:PERSONAL_TOKEN', sealed.sealed)).rejects.toThrow()
    expect(JSON.stringify(after)).not.toContain(SECRET)

    // Sealing is randomized, the revision is not: an unchanged document reads 304.
    expect((await desired(satellite, { 'if-none-match': after.etag })).statusCode).toBe(304)
  })

  it('a rotated secret changes the spec hash; a restart the generation; stopping the desired state', async () => {
    const installation = await install(call, a.team.id, a.teamAdmin, {
      server_id: weatherId, name: 'chan-rotate', values: { 'env:WEATHER_API_KEY': 'first-secret-value', 'env:PERSONAL_TOKEN': 't', 'arg:data_dir': '/d' },
    })
    const specOf = async () => (await document()).instances.find((each) => each.installation_id === installation.id)!
    const first = await specOf()
    await call('PUT', `${installationOf(a.team.id, installation.id)}/values`, a.teamAdmin, { values: { 'env:WEATHER_API_KEY': 'second-secret-value' } })
    const rotated = await specOf()
    expect(rotated.spec_hash).not.toBe(first.spec_hash)
    await call('POST', `${installationOf(a.team.id, installation.id)}/restart`, a.teamAdmin)
    const restarted = await specOf()
    expect(restarted.restart_generation).toBe(1)
    expect(restarted.spec_hash).not.toBe(rotated.spec_hash)
    await call('PATCH', installationOf(a.team.id, installation.id), a.teamAdmin, { desired: 'stopped' })
    expect((await specOf()).desired).toBe('stopped')
    await call('DELETE', installationOf(a.team.id, installation.id), a.teamAdmin)
    expect((await document()).instances.some((each) => each.installation_id === installation.id)).toBe(false)
  })

  it('per-user installations: one instance per member who set their own inputs; members joining change the document', async () => {
    const installation = await install(call, a.team.id, a.teamAdmin, {
      server_id: weatherId, name: 'chan-personal', user_scoped: ['env:PERSONAL_TOKEN'],
      values: { 'env:WEATHER_API_KEY': SECRET, 'arg:data_dir': '/d' },
    })
    const mine = () => document().then((doc) => doc.instances.filter((each) => each.installation_id === installation.id))
    expect(await mine()).toEqual([])
    const member = await fresh()
    await addMember(call, a.team.id, a.owner, member, 'team_user')
    expect((await call('PUT', `${installationOf(a.team.id, installation.id)}/my-values`, member, { values: { 'env:PERSONAL_TOKEN': PERSONAL } })).statusCode).toBe(200)
    const instances = await mine()
    expect(instances).toHaveLength(1)
    expect(instances[0]).toMatchObject({ instance_id: `${installation.id}.${member.id}`, user_id: member.id, endpoint_path: `/mcp/${installation.id}` })
    const personal = instances[0]!.secrets.find((secret) => secret.target === 'env:PERSONAL_TOKEN')!
    expect(await unseal(keys.privateKey, instances[0]!.instance_id, 'env:PERSONAL_TOKEN', personal.sealed)).toBe(PERSONAL)
    // Leaving the team ends their instance.
    expect((await call('DELETE', `/api/teams/${a.team.id}/members/${member.id}`, a.owner)).statusCode).toBe(200)
    expect(await mine()).toEqual([])
  })

  it('a long-poll is held while nothing changes and wakes when an installation changes', async () => {
    const current = await document()
    const started = Date.now()
    const held = desired(satellite, { 'if-none-match': current.etag }, '?wait=20')
    await new Promise((resolve) => setTimeout(resolve, 300))
    const installation = await install(call, a.team.id, a.teamAdmin, { server_id: weatherId, name: 'chan-wake', values: { 'env:WEATHER_API_KEY': 'k', 'env:PERSONAL_TOKEN': 't', 'arg:data_dir': '/d' } })
    const woke = await held
    expect(woke.statusCode, woke.body).toBe(200)
    expect(Date.now() - started).toBeLessThan(20_000)
    expect((woke.json().data.instances as Instance[]).some((each) => each.installation_id === installation.id)).toBe(true)
    // With nothing changing, the wait runs out: 304.
    const quiet = await desired(satellite, { 'if-none-match': woke.headers.etag as string }, '?wait=1')
    expect(quiet.statusCode).toBe(304)
  })

  it('a satellite without a public key gets no instance with secrets; another satellite\'s key is refused', async () => {
    const team = await makeCrew(call, fresh, `Keyless ${++seq}`)
    const token = await createToken(call, team.teamAdmin, { teamId: team.team.id })
    const keyless = await pair(app, token.token, `chan-keyless-${dialect}-${seq}`)
    const secretFree = await install(call, team.team.id, team.teamAdmin, { server_id: weatherId, satellite_id: keyless.id, target: { kind: 'package', index: 1 } })
    await install(call, team.team.id, team.teamAdmin, { server_id: weatherId, satellite_id: keyless.id, values: { 'env:WEATHER_API_KEY': 'k', 'env:PERSONAL_TOKEN': 't', 'arg:data_dir': '/d' } })
    const doc = await document(keyless)
    expect(doc.instances.map((each) => each.installation_id)).toEqual([secretFree.id])
    const view = (await call('GET', installationOf(team.team.id, secretFree.id), team.teamAdmin)).json().data.installation as InstallationBody
    expect(view.satellite_id).toBe(keyless.id)
    const wrong = await app.inject({ method: 'GET', url: `/api/satellites/${satellite.id}/desired-state`, headers: { authorization: `Bearer ${keyless.apiKey}` } })
    expect(wrong.statusCode).toBe(403)
    // Giving it a key lets the secret one through.
    const newKeys = await keyPair()
    const put = await app.inject({ method: 'PUT', url: `/api/satellites/${keyless.id}/public-key`, headers: { authorization: `Bearer ${keyless.apiKey}` }, payload: { public_key: newKeys.publicKey } })
    expect(put.statusCode, put.body).toBe(200)
    expect((await document(keyless)).instances).toHaveLength(2)
  })

  it('every sealed secret of a document opens, with an independent HPKE implementation, to its own value only', async () => {
    const values = new Map<string, string>()
    for (let i = 0; i < 4; i++) {
      const key = `every-key-${i}-${'x'.repeat(i * 40)}`
      const installation = await install(call, a.team.id, a.teamAdmin, {
        server_id: weatherId, name: `chan-every-${i}`, values: { 'env:WEATHER_API_KEY': key, 'env:PERSONAL_TOKEN': `every-token-${i}`, 'arg:data_dir': '/d' },
      })
      values.set(`${installation.id}\nenv:WEATHER_API_KEY`, key).set(`${installation.id}\nenv:PERSONAL_TOKEN`, `every-token-${i}`)
    }
    const doc = await document()
    const sealed = doc.instances.flatMap((instance) => instance.secrets.map((secret) => ({ instance: instance.instance_id, ...secret })))
      .filter((secret) => values.has(`${secret.instance}\n${secret.target}`))
    expect(sealed).toHaveLength(8)
    for (const secret of sealed) {
      expect(await unseal(keys.privateKey, secret.instance, secret.target, secret.sealed)).toBe(values.get(`${secret.instance}\n${secret.target}`))
    }
    // Each under its own ephemeral key: no two sealed texts (nor their encapsulated keys) alike.
    expect(new Set(sealed.map((secret) => secret.sealed.slice(0, 43))).size).toBe(8)
    // Another satellite's key does not open them.
    const stranger = await keyPair()
    await expect(unseal(stranger.privateKey, sealed[0]!.instance, sealed[0]!.target, sealed[0]!.sealed)).rejects.toThrow()
  })

  it('a change seals again the secrets of the instance it changed only; a new public key seals every secret again, to it', async () => {
    const team = await makeCrew(call, fresh, `Resealed ${++seq}`)
    const ownKeys = await keyPair()
    const token = await createToken(call, team.teamAdmin, { teamId: team.team.id })
    const sat = await pair(app, token.token, `chan-reseal-${dialect}`, { public_key: ownKeys.publicKey })
    const ids: string[] = []
    for (let i = 0; i < 3; i++) {
      ids.push((await install(call, team.team.id, team.teamAdmin, {
        server_id: weatherId, satellite_id: sat.id, name: `reseal-${i}`, values: { 'env:WEATHER_API_KEY': `reseal-key-${i}`, 'env:PERSONAL_TOKEN': 't', 'arg:data_dir': '/d' },
      })).id)
    }
    const sealedOf = (doc: { instances: Instance[] }) => new Map(doc.instances.map((instance) => [instance.instance_id, instance.secrets]))
    const first = sealedOf(await document(sat))
    await call('PUT', `${installationOf(team.team.id, ids[0]!)}/values`, team.teamAdmin, { values: { 'env:WEATHER_API_KEY': 'reseal-rotated' } })
    const second = sealedOf(await document(sat))
    expect(second.get(ids[1]!)).toEqual(first.get(ids[1]!))
    expect(second.get(ids[2]!)).toEqual(first.get(ids[2]!))
    const rotated = second.get(ids[0]!)!.find((secret) => secret.target === 'env:WEATHER_API_KEY')!
    expect(await unseal(ownKeys.privateKey, ids[0]!, 'env:WEATHER_API_KEY', rotated.sealed)).toBe('reseal-rotated')

    const newKeys = await keyPair()
    // Replacing a key takes a proof of the current one.
    await changeKeyWithProof(app, sat, ownKeys.privateKey, newKeys.publicKey)
    const third = await document(sat)
    for (const instance of third.instances) {
      for (const secret of instance.secrets) {
        expect(secret.sealed).not.toBe(second.get(instance.instance_id)!.find((each) => each.target === secret.target)!.sealed)
        await expect(unseal(newKeys.privateKey, instance.instance_id, secret.target, secret.sealed)).resolves.toBeTypeOf('string')
        await expect(unseal(ownKeys.privateKey, instance.instance_id, secret.target, secret.sealed)).rejects.toThrow()
      }
    }
    expect(third.instances).toHaveLength(3)
  })

  it('a change that commits while a long-poll is still reading the document wakes it all the same', async () => {
    // Several instances with secrets, so that building the document takes a moment.
    const installations: InstallationBody[] = []
    for (let i = 0; i < RACE_INSTALLATIONS; i++) {
      installations.push(await install(call, a.team.id, a.teamAdmin, {
        server_id: weatherId, name: `chan-race-${i}`, values: { 'env:WEATHER_API_KEY': `race-key-${i}`, 'env:PERSONAL_TOKEN': 't', 'arg:data_dir': '/d' },
      }))
    }
    const change = (round: number) => call('PUT', `${installationOf(a.team.id, installations[round % RACE_INSTALLATIONS]!.id)}/values`, a.teamAdmin, { values: { 'arg:data_dir': `/race/${round}` } })
    for (let round = 0; round < 24; round++) {
      // A change just before (its document is then read or built again by the poll), the poll, and a
      // second change 0 to 23 ms into it: some land after the poll read the database, before it waits.
      await change(2 * round)
      const { etag } = await document()
      const started = Date.now()
      const held = desired(satellite, { 'if-none-match': etag }, '?wait=5')
      await new Promise((resolve) => setTimeout(resolve, round))
      expect((await change(2 * round + 1)).statusCode).toBe(200)
      const woke = await held
      expect(woke.statusCode, `round ${round}`).toBe(200)
      expect(Date.now() - started, `round ${round}: woken by the change, not by the end of the wait`).toBeLessThan(2_000)
    }
  })
})
