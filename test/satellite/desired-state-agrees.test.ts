/**
 * The desired-state document has one schema (src/formats/desired-state.ts): the backend answers
 * with it and reads its types from it. The reference satellite is a package of its own and keeps
 * its own copy of the types (examples/satellite/src/types.ts). That copy is held to the schema
 * twice. When `tsc` compiles this file: the same fields at every level, everything the copy can
 * hold admitted by the schema, and everything the schema admits held by the copy, but for the two
 * enumerations the satellite narrows (registry types, transports) and the fields it reads as
 * optional (a backend from before them leaves them out). When it runs: a document the backend
 * built with every kind of instance (a package with secret values, a deny-list and no network, a
 * member's own instance under an allow-list and pinning, a remote with a secret header) follows
 * the schema, and the satellite's client reads exactly that document.
 */
import type { AddressInfo } from 'node:net'
import { Ajv } from 'ajv'
import type { FastifyInstance } from 'fastify'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { Backend } from '../../examples/satellite/src/backend.js'
import type * as satellite from '../../examples/satellite/src/types.js'
import { DesiredDocument } from '../../src/formats/desired-state.js'
import type * as backend from '../../src/formats/desired-state.js'
import { createTestContext, type TestContext } from '../helpers/app.js'
import { DIALECTS } from '../helpers/database.js'
import { keyPair } from '../helpers/hpke.js'
import { importDocuments, install, installationOf, weatherDocument } from '../helpers/installations.js'
import { createToken, heartbeat, pair, SATELLITE_LIMITS, type Paired } from '../helpers/satellites.js'
import { client, crew as makeCrew, signUp, type Call } from '../helpers/teams.js'

type Same<A, B> = (<T>() => T extends A ? 1 : 2) extends (<T>() => T extends B ? 1 : 2) ? true : false
type Fits<A, B> = [A] extends [B] ? true : false
/** Compiles only for `true`. */
type Holds<T extends true> = T

/** What the satellite narrows: the schema says `string`, the satellite names the values it knows. */
type Narrowed = 'registry_type' | 'transport'

export type SameFields = [
  Holds<Same<keyof satellite.DesiredState, keyof backend.DesiredDocument>>,
  Holds<Same<keyof satellite.Instance, keyof backend.InstanceDocument>>,
  Holds<Same<keyof satellite.SealedSecret, keyof backend.SealedSecret>>,
  Holds<Same<keyof satellite.PinnedTool, keyof backend.PinnedTool>>,
  Holds<Same<keyof satellite.PackageLaunch, keyof backend.PackageLaunch>>,
  Holds<Same<keyof satellite.PackageLaunch['transport'], keyof backend.PackageLaunch['transport']>>,
  Holds<Same<keyof satellite.RemoteLaunch, keyof backend.RemoteLaunch>>,
  Holds<Same<satellite.Arg, backend.LaunchArg>>,
]

/** Whatever the satellite's copy holds (every field given), the schema admits. */
export type CopyAdmitted = [
  Holds<Fits<Required<satellite.Instance>, backend.InstanceDocument>>,
  Holds<Fits<satellite.DesiredState & { instances: Array<Required<satellite.Instance>> }, backend.DesiredDocument>>,
]

/** Whatever the schema admits, the satellite's copy holds, but for the enumerations it narrows. */
export type SchemaHeld = [
  Holds<Fits<Omit<backend.InstanceDocument, 'launch'>, Omit<satellite.Instance, 'launch'>>>,
  Holds<Fits<Omit<backend.PackageLaunch, Narrowed>, Omit<satellite.PackageLaunch, Narrowed>>>,
  Holds<Fits<Omit<backend.PackageLaunch['transport'], 'type'>, Omit<satellite.PackageLaunch['transport'], 'type'>>>,
  Holds<Fits<Omit<backend.RemoteLaunch, Narrowed>, Omit<satellite.RemoteLaunch, Narrowed>>>,
]

// The values the satellite narrows to, each named once (a value added to or dropped from its copy fails to compile here).
const REGISTRY_TYPES: Record<satellite.PackageLaunch['registry_type'], true> = { npm: true, pypi: true, oci: true, docker: true, nuget: true, mcpb: true }
const PACKAGE_TRANSPORTS: Record<satellite.PackageLaunch['transport']['type'], true> = { stdio: true, 'streamable-http': true, sse: true }
const REMOTE_TRANSPORTS: Record<satellite.RemoteLaunch['transport'], true> = { 'streamable-http': true, sse: true }

/** A server whose remote listens on loopback (the satellite is the team's own), with a secret header. */
function loopbackDocument(name: string): Record<string, unknown> {
  return {
    $schema: 'https://static.modelcontextprotocol.io/schemas/2025-12-11/server.schema.json',
    name,
    description: 'A remote on loopback.',
    version: '1.0.0',
    remotes: [{
      type: 'streamable-http',
      url: 'http://127.0.0.1:9/mcp',
      headers: [{ name: 'X-Api-Key', description: 'Your API key', isRequired: true, isSecret: true }, { name: 'X-Client', value: 'catalogue' }],
    }],
  }
}

describe.each(DIALECTS)('the desired-state document, the schema and the satellite\'s copy on %s', (dialect) => {
  let ctx: TestContext
  let app: FastifyInstance
  let call: Call
  let paired: Paired
  let reader: Backend

  beforeAll(async () => {
    ctx = await createTestContext(dialect)
    app = (await ctx.build({ limits: SATELLITE_LIMITS })).app
    call = client(app)
    const admin = await signUp(app, `agree_${dialect}_admin`)
    let seq = 0
    const a = await makeCrew(call, () => signUp(app, `agree_${dialect}_${++seq}`), 'Agreeing Team')
    const token = await createToken(call, a.teamAdmin, { teamId: a.team.id })
    paired = await pair(app, token.token, `agree-sat-${dialect}`, { satellite_url: 'http://127.0.0.1:7190', public_key: (await keyPair()).publicKey })
    expect((await heartbeat(app, paired.id, paired.apiKey)).statusCode).toBe(200)
    const [weatherId, remoteId] = await importDocuments(call, admin, [weatherDocument('io.github.example/agree-weather'), loopbackDocument('io.github.example/agree-remote')])

    const shared = await install(call, a.team.id, a.teamAdmin, {
      server_id: weatherId, name: 'agree-shared', network: 'none', values: { 'env:WEATHER_API_KEY': 'agree-key', 'env:PERSONAL_TOKEN': 'agree-token', 'arg:data_dir': '/srv/cache', 'env:LOG_LEVEL': 'warn' },
    })
    expect((await call('PUT', `${installationOf(a.team.id, shared.id)}/tool-policy`, a.teamAdmin, { disabled_tools: ['alerts'] })).statusCode).toBe(200)
    const personal = await install(call, a.team.id, a.teamAdmin, {
      server_id: weatherId, name: 'agree-personal', user_scoped: ['env:PERSONAL_TOKEN'], values: { 'env:WEATHER_API_KEY': 'agree-key', 'arg:data_dir': '/d' },
    })
    expect((await call('PUT', `${installationOf(a.team.id, personal.id)}/tool-policy`, a.teamAdmin, { allowed_tools: ['forecast'] })).statusCode).toBe(200)
    expect((await call('PATCH', installationOf(a.team.id, personal.id), a.teamAdmin, { pin_tools: true })).statusCode).toBe(200)
    expect((await call('PUT', `${installationOf(a.team.id, personal.id)}/my-values`, a.teamUser, { values: { 'env:PERSONAL_TOKEN': 'agree-own' } })).statusCode).toBe(200)
    await install(call, a.team.id, a.teamAdmin, {
      server_id: remoteId, name: 'agree-remote', target: { kind: 'remote', index: 0 }, values: { 'header:X-Api-Key': 'agree-header' },
    })

    await app.listen({ host: '127.0.0.1', port: 0 })
    reader = new Backend(`http://127.0.0.1:${(app.server.address() as AddressInfo).port}`)
    reader.use(paired.id, paired.apiKey)
  })
  afterAll(() => ctx.close())

  const served = async (): Promise<unknown> => {
    const response = await app.inject({ method: 'GET', url: `/api/satellites/${paired.id}/desired-state`, headers: { authorization: `Bearer ${paired.apiKey}` } })
    expect(response.statusCode, response.body).toBe(200)
    return response.json().data
  }

  it('a document with every kind of instance follows the schema', async () => {
    const document = await served()
    const validate = new Ajv({ strict: false, allErrors: true }).compile(DesiredDocument)
    expect(validate(document), JSON.stringify(validate.errors)).toBe(true)
    const instances = (document as backend.DesiredDocument).instances
    expect(instances.map((instance) => [instance.name, instance.user_id === null, instance.launch.kind]).sort()).toEqual([
      ['agree-personal', false, 'package'], ['agree-remote', true, 'remote'], ['agree-shared', true, 'package'],
    ])
    expect(instances.find((instance) => instance.name === 'agree-shared')).toMatchObject({ network: 'none', disabled_tools: ['alerts'], allowed_tools: null, pin_tools: false })
    expect(instances.find((instance) => instance.name === 'agree-personal')).toMatchObject({ allowed_tools: ['forecast'], pin_tools: true, pinned_tools: [] })
    expect(instances.every((instance) => instance.secrets.length > 0)).toBe(true)
  })

  it('the satellite\'s client reads exactly that document, with the values its copy narrows to', async () => {
    const answer = await reader.desiredState(undefined, 0)
    if (!answer.changed) throw new Error('a first read answers the document')
    expect(answer.document).toEqual(await served())
    for (const { launch } of answer.document.instances) {
      if (launch.kind === 'package') {
        expect(Object.hasOwn(REGISTRY_TYPES, launch.registry_type), launch.registry_type).toBe(true)
        expect(Object.hasOwn(PACKAGE_TRANSPORTS, launch.transport.type), launch.transport.type).toBe(true)
      } else {
        expect(Object.hasOwn(REMOTE_TRANSPORTS, launch.transport), launch.transport).toBe(true)
      }
    }
  })
})
