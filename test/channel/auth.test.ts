import type { FastifyInstance, LightMyRequestResponse } from 'fastify'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createTestContext, type TestContext } from '../helpers/app.js'
import { DIALECTS } from '../helpers/database.js'
import { keyPair, unseal, type PrivateKey } from '../helpers/hpke.js'
import { importDocuments, install, installationOf, weatherDocument } from '../helpers/installations.js'
import { ALL_SCOPES, issueTokens } from '../helpers/oauth.js'
import { createToken, heartbeat, pair, SATELLITE_LIMITS, type Paired } from '../helpers/satellites.js'
import { client, crew as makeCrew, signUp, type Account, type Call, type Crew } from '../helpers/teams.js'

const SECRET = 'wk-live-auth-table-7c8d9e0f1a'

type Method = 'GET' | 'PUT' | 'POST'

/** One route of the channel, with a body it takes from the satellite's own key. */
interface Route {
  method: Method
  path: (satelliteId: string, instanceId: string) => string
  body?: () => object
}

/** Who calls, on which satellite's id, and what they must get. */
interface Caller {
  who: string
  headers: () => Record<string, string>
  on: () => string
  status: 401 | 403
  code: 'UNAUTHORIZED' | 'FORBIDDEN' | 'SATELLITE_DISABLED'
}

/**
 * Every route of the satellite control channel acts only for the satellite whose key is
 * presented, on its own id: another satellite's key is forbidden, a disabled satellite's key is
 * refused as disabled, a deleted satellite's key is no credential at all, and neither a user's
 * session (a global admin's included) nor an OAuth bearer is one on these routes. A refused write
 * changes nothing: no phase, tool or log line is stored, and the key secrets are sealed to stays.
 */
describe.each(DIALECTS)('who may use the satellite channel on %s', (dialect) => {
  let ctx: TestContext
  let app: FastifyInstance
  let call: Call
  let admin: Account
  let crew: Crew
  let owner: Paired
  let ownerKey: { publicKey: string; privateKey: PrivateKey }
  let other: Paired
  let disabled: Paired
  let deleted: Paired
  let accessToken: string
  let registrationToken: string
  let installationId: string
  let instanceId: string
  let specHash: string
  let seq = 0

  const bearer = (token: string) => ({ authorization: `Bearer ${token}` })
  const send = (route: Route, satelliteId: string, headers: Record<string, string>): Promise<LightMyRequestResponse> =>
    app.inject({ method: route.method, url: route.path(satelliteId, instanceId), headers, ...(route.body === undefined ? {} : { payload: route.body() }) })

  const ROUTES: Record<string, Route> = {
    'GET desired-state': { method: 'GET', path: (id) => `/api/satellites/${id}/desired-state` },
    'PUT observed-state': {
      method: 'PUT', path: (id) => `/api/satellites/${id}/observed-state`,
      body: () => ({ revision: 'r', instances: [{ instance_id: instanceId, spec_hash: specHash, phase: 'failed', message: 'refused?' }] }),
    },
    'PUT tools': {
      method: 'PUT', path: (id, instance) => `/api/satellites/${id}/instances/${instance}/tools`,
      body: () => ({ tools: [{ name: 'forecast', input_schema: { type: 'object' } }] }),
    },
    'POST logs': {
      method: 'POST', path: (id, instance) => `/api/satellites/${id}/instances/${instance}/logs`,
      body: () => ({ lines: [{ at: new Date().toISOString(), stream: 'stdout', text: 'a refused line' }] }),
    },
    'PUT public-key': { method: 'PUT', path: (id) => `/api/satellites/${id}/public-key`, body: () => ({ public_key: strangerKey }) },
    'POST public-key challenge': { method: 'POST', path: (id) => `/api/satellites/${id}/public-key/challenge` },
  }
  /** A key someone other than the owner would like its secrets sealed to. */
  let strangerKey: string

  const CALLERS: Caller[] = [
    { who: "another satellite's key", headers: () => bearer(other.apiKey), on: () => owner.id, status: 403, code: 'FORBIDDEN' },
    { who: 'a key on an id that is no satellite', headers: () => bearer(other.apiKey), on: () => '00000000-0000-7000-8000-000000000000', status: 403, code: 'FORBIDDEN' },
    { who: "a disabled satellite's key, on its own id", headers: () => bearer(disabled.apiKey), on: () => disabled.id, status: 403, code: 'SATELLITE_DISABLED' },
    { who: "a disabled satellite's key, on the owner's id", headers: () => bearer(disabled.apiKey), on: () => owner.id, status: 403, code: 'SATELLITE_DISABLED' },
    { who: "a deleted satellite's key, on its own id", headers: () => bearer(deleted.apiKey), on: () => deleted.id, status: 401, code: 'UNAUTHORIZED' },
    { who: "a deleted satellite's key, on the owner's id", headers: () => bearer(deleted.apiKey), on: () => owner.id, status: 401, code: 'UNAUTHORIZED' },
    { who: "the owning team admin's session", headers: () => ({ cookie: crew.teamAdmin.cookie }), on: () => owner.id, status: 401, code: 'UNAUTHORIZED' },
    { who: "the global admin's session", headers: () => ({ cookie: admin.cookie }), on: () => owner.id, status: 401, code: 'UNAUTHORIZED' },
    { who: "the global admin's OAuth bearer (every scope)", headers: () => bearer(accessToken), on: () => owner.id, status: 401, code: 'UNAUTHORIZED' },
    { who: 'a registration token', headers: () => bearer(registrationToken), on: () => owner.id, status: 401, code: 'UNAUTHORIZED' },
    { who: 'a forged satellite key', headers: () => bearer(`service_satkey_${'A'.repeat(43)}`), on: () => owner.id, status: 401, code: 'UNAUTHORIZED' },
    { who: 'nobody', headers: () => ({}), on: () => owner.id, status: 401, code: 'UNAUTHORIZED' },
  ]

  beforeAll(async () => {
    ctx = await createTestContext(dialect)
    app = (await ctx.build({ limits: SATELLITE_LIMITS })).app
    call = client(app)
    admin = await signUp(app, 'chauth_admin')
    crew = await makeCrew(call, () => signUp(app, `chauth_${++seq}`), 'Channel Auth Team')
    ownerKey = await keyPair()
    strangerKey = (await keyPair()).publicKey
    owner = await pair(app, (await createToken(call, crew.teamAdmin, { teamId: crew.team.id })).token, `chauth-owner-${dialect}`, { public_key: ownerKey.publicKey })
    other = await pair(app, (await createToken(call, admin)).token, `chauth-other-${dialect}`, { public_key: (await keyPair()).publicKey })
    disabled = await pair(app, (await createToken(call, admin)).token, `chauth-disabled-${dialect}`)
    deleted = await pair(app, (await createToken(call, admin)).token, `chauth-deleted-${dialect}`)
    for (const satellite of [owner, other, disabled, deleted]) expect((await heartbeat(app, satellite.id, satellite.apiKey)).statusCode).toBe(200)
    expect((await call('PUT', `/api/satellites/${disabled.id}`, admin, { status: 'disabled' })).statusCode).toBe(200)
    expect((await call('DELETE', `/api/satellites/${deleted.id}`, admin)).statusCode).toBe(200)
    accessToken = (await issueTokens(app, admin.cookie, ALL_SCOPES.join(' '))).access_token
    registrationToken = (await createToken(call, admin)).token

    const weatherId = (await importDocuments(call, admin, [weatherDocument('io.github.example/channel-auth')]))[0]!
    installationId = (await install(call, crew.team.id, crew.teamAdmin, {
      server_id: weatherId, name: 'chauth-weather', satellite_id: owner.id,
      values: { 'env:WEATHER_API_KEY': SECRET, 'env:PERSONAL_TOKEN': 'team-token', 'arg:data_dir': '/srv' },
    })).id
    const document = await send(ROUTES['GET desired-state']!, owner.id, bearer(owner.apiKey))
    expect(document.statusCode, document.body).toBe(200)
    const instance = (document.json().data.instances as Array<{ instance_id: string; installation_id: string; spec_hash: string }>)
      .find((each) => each.installation_id === installationId)!
    instanceId = instance.instance_id
    specHash = instance.spec_hash
  })
  afterAll(() => ctx.close())

  for (const caller of CALLERS) {
    it(`${caller.who}: ${caller.status} ${caller.code} on every channel route`, async () => {
      const wrong: string[] = []
      for (const [name, route] of Object.entries(ROUTES)) {
        const response = await send(route, caller.on(), caller.headers())
        const body = response.json() as { success?: boolean; code?: string }
        if (response.statusCode !== caller.status || body.success !== false || body.code !== caller.code) {
          wrong.push(`${name}: ${response.statusCode} ${response.body.slice(0, 200)}`)
        }
        // A refusal says nothing of the document: no secret, sealed or not.
        expect(response.body).not.toContain(SECRET)
        expect(response.body).not.toContain('sealed')
      }
      expect(wrong).toEqual([])
    })
  }

  it('the refused calls changed nothing; the owner\'s own key then gets through on every route', async () => {
    // Nothing of the refused writes was stored.
    const view = (await call('GET', installationOf(crew.team.id, installationId), crew.teamAdmin)).json().data.installation
    expect(view.status).not.toBe('failed')
    expect(view.tools_count).toBe(0)
    expect((await call('GET', `${installationOf(crew.team.id, installationId)}/tools`, crew.teamAdmin)).json().data.tools).toEqual([])
    expect((await call('GET', `${installationOf(crew.team.id, installationId)}/logs`, crew.teamAdmin)).json().data.logs).toEqual([])
    // The secrets are still sealed to the owner's key, not to the stranger's.
    const document = (await send(ROUTES['GET desired-state']!, owner.id, bearer(owner.apiKey))).json().data
    const sealed = (document.instances as Array<{ instance_id: string; secrets: Array<{ target: string; sealed: string }> }>)
      .find((each) => each.instance_id === instanceId)!.secrets.find((secret) => secret.target === 'env:WEATHER_API_KEY')!
    expect(await unseal(ownerKey.privateKey, instanceId, 'env:WEATHER_API_KEY', sealed.sealed)).toBe(SECRET)

    // The same requests with the owner's key: each is taken (the bodies were good all along).
    strangerKey = ownerKey.publicKey
    for (const [name, route] of Object.entries(ROUTES)) {
      const response = await send(route, owner.id, bearer(owner.apiKey))
      expect(response.statusCode, `${name}: ${response.body}`).toBe(200)
    }
    const after = (await call('GET', installationOf(crew.team.id, installationId), crew.teamAdmin)).json().data.installation
    expect(after).toMatchObject({ status: 'failed', tools_count: 1 })
    expect((await call('GET', `${installationOf(crew.team.id, installationId)}/logs`, crew.teamAdmin)).json().data.logs).toHaveLength(1)
  })
})
