import type { FastifyInstance, LightMyRequestResponse } from 'fastify'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createTestContext, type TestContext } from '../helpers/app.js'
import { addOAuthInput, bearerTokens, setConnectionStatus, storeConnection } from '../helpers/connection-rows.js'
import { DIALECTS } from '../helpers/database.js'
import { keyPair, unseal, type PrivateKey } from '../helpers/hpke.js'
import { importDocuments, install, installationOf, weatherDocument, type InstallationBody } from '../helpers/installations.js'
import { createToken, heartbeat, pair, SATELLITE_LIMITS, type Paired } from '../helpers/satellites.js'
import { client, crew as makeCrew, signUp, type Account, type Call, type Crew } from '../helpers/teams.js'

interface Instance {
  instance_id: string
  installation_id: string
  user_id: string | null
  spec_hash: string
  restart_generation: number
  launch: { kind: string; url?: string; headers?: Record<string, string> }
  secrets: Array<{ target: string; sealed: string; rotating?: true }>
}

const RESOURCE = 'https://acme.weather.example.com/mcp'

/**
 * OAuth connections in the desired-state document: the access token of the connection an instance
 * needs is its rotating `header:Authorization`; a renewed token changes the revision and that
 * sealed text only (spec_hash, the other secrets' sealed texts and restart_generation stay); an
 * instance whose connection is missing or expired is left out and its installation reads
 * `needs_auth`, saying who must connect.
 */
describe.each(DIALECTS)('connections in the desired-state document on %s', (dialect) => {
  let ctx: TestContext
  let app: FastifyInstance
  let call: Call
  let a: Crew
  let satellite: Paired
  let keys: { publicKey: string; privateKey: PrivateKey }
  let weatherId: string
  let seq = 0
  const fresh = () => signUp(app, `conndoc_${++seq}`)

  const desired = (headers: Record<string, string> = {}, query = ''): Promise<LightMyRequestResponse> =>
    app.inject({ method: 'GET', url: `/api/satellites/${satellite.id}/desired-state${query}`, headers: { authorization: `Bearer ${satellite.apiKey}`, ...headers } })
  const document = async (): Promise<{ revision: string; instances: Instance[]; etag: string }> => {
    const response = await desired()
    expect(response.statusCode, response.body).toBe(200)
    return { ...response.json().data, etag: response.headers.etag as string }
  }
  const instancesOf = async (installationId: string) => (await document()).instances.filter((each) => each.installation_id === installationId)
  const view = async (installation: InstallationBody, as: Account): Promise<InstallationBody> => {
    const response = await call('GET', installationOf(a.team.id, installation.id), as)
    expect(response.statusCode, response.body).toBe(200)
    return response.json().data.installation
  }
  const remoteInstall = (name: string) => install(call, a.team.id, a.teamAdmin, {
    server_id: weatherId, name, target: { kind: 'remote', index: 0 }, values: { 'urlvar:tenant': 'acme', 'header:X-Api-Key': 'xk-static-0f1e2d' },
  })
  const opened = (instance: Instance, target: string) => unseal(keys.privateKey, instance.instance_id, target, instance.secrets.find((secret) => secret.target === target)!.sealed)

  beforeAll(async () => {
    ctx = await createTestContext(dialect)
    app = (await ctx.build({ limits: SATELLITE_LIMITS })).app
    call = client(app)
    const admin = await signUp(app, 'conndoc_admin')
    a = await makeCrew(call, fresh, 'Connections Team')
    keys = await keyPair()
    const token = await createToken(call, a.teamAdmin, { teamId: a.team.id })
    satellite = await pair(app, token.token, `conndoc-sat-${dialect}`, { satellite_url: 'http://127.0.0.1:7300', public_key: keys.publicKey })
    expect((await heartbeat(app, satellite.id, satellite.apiKey)).statusCode).toBe(200)
    weatherId = (await importDocuments(call, admin, [weatherDocument('io.github.example/conn-weather')]))[0]!
  })
  afterAll(() => ctx.close())

  it('a team connection: no instance and needs_auth until a team admin connects; then its token is the rotating Authorization', async () => {
    const installation = await remoteInstall('team-conn')
    expect(await instancesOf(installation.id)).toHaveLength(1)
    const key = await addOAuthInput(app, installation.id, RESOURCE, 'team')
    expect(await instancesOf(installation.id)).toEqual([])
    const waiting = await view(installation, a.teamUser)
    expect(waiting.status).toBe('needs_auth')
    expect(waiting.status_reason).toBe(`A team admin must connect ${key} (POST …/connections).`)
    expect(waiting.missing_inputs).toEqual([])
    expect(waiting.inputs.find((input) => input.key === key)).toMatchObject({ kind: 'oauth', scope: 'team', is_set: false })

    await storeConnection(app, { installationId: installation.id, teamId: a.team.id, userId: null, inputKey: key, tokens: bearerTokens('at-team-first-61a0') })
    const [instance] = await instancesOf(installation.id)
    expect(instance!.launch).toMatchObject({ kind: 'remote', url: 'https://acme.weather.example.com/mcp' })
    expect(instance!.launch.headers).not.toHaveProperty('Authorization')
    expect(instance!.secrets.map(({ target, rotating }) => ({ target, rotating })).sort((x, y) => (x.target < y.target ? -1 : 1))).toEqual([
      { target: 'header:Authorization', rotating: true }, { target: 'header:X-Api-Key', rotating: undefined },
    ])
    expect(await opened(instance!, 'header:Authorization')).toBe('Bearer at-team-first-61a0')
    expect(JSON.stringify(await document())).not.toContain('at-team-first')
    // A line the satellite reports with the token, bare or as the header, is stored masked.
    const posted = await app.inject({
      method: 'POST', url: `/api/satellites/${satellite.id}/instances/${instance!.instance_id}/logs`, headers: { authorization: `Bearer ${satellite.apiKey}` },
      payload: { lines: [{ at: new Date().toISOString(), stream: 'event', text: 'sent Authorization: Bearer at-team-first-61a0 (token at-team-first-61a0)' }] },
    })
    expect(posted.statusCode, posted.body).toBe(200)
    const logs = await call('GET', `${installationOf(a.team.id, installation.id)}/logs`, a.teamAdmin)
    expect(logs.json().data.logs.map((line: { text: string }) => line.text)).toEqual(['sent Authorization: [secret] (token [secret])'])
    const connected = await view(installation, a.teamUser)
    expect(connected.status).not.toBe('needs_auth')
    expect(connected.inputs.find((input) => input.key === key)?.is_set).toBe(true)
  })

  it('a renewed token moves the revision and wakes a held poll; spec_hash, restart_generation and the other sealed texts stay', async () => {
    const installation = await remoteInstall('team-renew')
    const key = await addOAuthInput(app, installation.id, RESOURCE, 'team')
    const stored = await storeConnection(app, { installationId: installation.id, teamId: a.team.id, userId: null, inputKey: key, tokens: bearerTokens('at-renew-one-7b2c') })
    const before = await document()
    const first = before.instances.find((each) => each.installation_id === installation.id)!

    const held = desired({ 'if-none-match': before.etag }, '?wait=10')
    await new Promise((resolve) => setTimeout(resolve, 200))
    const renewedAt = Date.now()
    // As the refresher writes a refresh: the same row, new tokens, the revision of the tokens + 1.
    await storeConnection(app, { installationId: installation.id, teamId: a.team.id, userId: null, inputKey: key, tokens: bearerTokens('at-renew-two-8d3e') })
    const answer = await held
    expect(answer.statusCode).toBe(200)
    expect(Date.now() - renewedAt).toBeLessThan(2000)

    const after = await document()
    expect(after.revision).not.toBe(before.revision)
    const second = after.instances.find((each) => each.installation_id === installation.id)!
    expect(second.spec_hash).toBe(first.spec_hash)
    expect(second.restart_generation).toBe(first.restart_generation)
    expect(await opened(second, 'header:Authorization')).toBe('Bearer at-renew-two-8d3e')
    const sealedOf = (instance: Instance, target: string) => instance.secrets.find((secret) => secret.target === target)!.sealed
    expect(sealedOf(second, 'header:Authorization')).not.toBe(sealedOf(first, 'header:Authorization'))
    expect(sealedOf(second, 'header:X-Api-Key')).toBe(sealedOf(first, 'header:X-Api-Key'))
    // Every other instance is untouched.
    for (const other of after.instances.filter((each) => each.installation_id !== installation.id)) {
      expect(before.instances.find((each) => each.instance_id === other.instance_id)).toEqual(other)
    }
    // Unchanged again: 304.
    expect((await desired({ 'if-none-match': after.etag })).statusCode).toBe(304)

    // An expired connection: the instance leaves the document, the installation reads needs_auth.
    await setConnectionStatus(app, stored.id, 'expired')
    expect(await instancesOf(installation.id)).toEqual([])
    const expired = await view(installation, a.teamAdmin)
    expect(expired).toMatchObject({ status: 'needs_auth', status_reason: `The team's connection ${key} has expired; a team admin must connect it again (POST …/connections).` })
  })

  it('a user-scoped connection: an instance per member with a live one; a member without one reads needs_auth', async () => {
    const installation = await remoteInstall('own-conn')
    const key = await addOAuthInput(app, installation.id, RESOURCE, 'user')
    expect(await instancesOf(installation.id)).toEqual([])
    await storeConnection(app, { installationId: installation.id, teamId: a.team.id, userId: a.teamUser.id, inputKey: key, tokens: bearerTokens('at-member-own-4c5d') })
    const instances = await instancesOf(installation.id)
    expect(instances.map((each) => each.user_id)).toEqual([a.teamUser.id])
    expect(instances[0]!.instance_id).toBe(`${installation.id}.${a.teamUser.id}`)
    expect(await opened(instances[0]!, 'header:Authorization')).toBe('Bearer at-member-own-4c5d')

    const mine = await view(installation, a.teamUser)
    expect(mine.instance_mode).toBe('per_user')
    expect(mine.status).not.toBe('needs_auth')
    const theirs = await view(installation, a.teamAdmin)
    expect(theirs).toMatchObject({ status: 'needs_auth', status_reason: `Connect your account for ${key} (POST …/connections).` })
    // The member's own list says the same from their side.
    const listed = await call('GET', '/api/users/me/mcp/installations', a.teamAdmin)
    expect(listed.json().data.installations.find((each: InstallationBody) => each.id === installation.id)?.status).toBe('needs_auth')
  })
})
