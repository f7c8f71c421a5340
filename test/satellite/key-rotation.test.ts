/**
 * The reference satellite replaces its key pair against a real backend over real HTTP: it proves
 * the old private key, the backend seals the secrets to the new one, and the instance keeps
 * running (and restarts with a new secret opened with the new key). A clean stop tells the
 * backend, so the satellite reads offline and its installation unknown at once; ROTATE_KEY=1 at
 * the next start replaces the pair again, and its heartbeat brings it back.
 */
import { createHash } from 'node:crypto'
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { Client } from '@modelcontextprotocol/sdk/client/index.js'
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js'
import { afterAll, beforeAll, describe, expect, it, onTestFailed } from 'vitest'
import type { SatelliteConfig } from '../../examples/satellite/src/config.js'
import type { Logger } from '../../examples/satellite/src/logger.js'
import { Satellite } from '../../examples/satellite/src/satellite.js'
import { SatelliteKeys } from '../../examples/satellite/src/sealing.js'
import type { Pairing } from '../../examples/satellite/src/state.js'
import { createTestContext, type TestContext } from '../helpers/app.js'
import { DIALECTS } from '../helpers/database.js'
import { privateKeyOf, unseal } from '../helpers/hpke.js'
import { importDocuments, install, installationOf, type InstallationBody } from '../helpers/installations.js'
import { changeKeyWithProof } from '../helpers/key-change.js'
import { issueTokens } from '../helpers/oauth.js'
import { freePort, startOAuthServer, type OAuthServer } from '../helpers/oauth-e2e.js'
import { createToken } from '../helpers/satellites.js'
import { client, crew as makeCrew, signUp, type Account, type Call, type Crew } from '../helpers/teams.js'
import { EVERYTHING, EVERYTHING_VERSION, alive, waitFor } from './support.js'

/** A held long-poll answers a change at once; at worst the satellite hears of it one poll (30 s) later. */
const CONVERGE_MS = 35_000
const CONVERGE_TEST_MS = CONVERGE_MS + 20_000

const SECRET = 'sk-live-rotation-first-1a2b3c'
const SECRET_2 = 'sk-live-rotation-second-4d5e6f'

const fingerprint = (publicKey: string) => `sha256:${createHash('sha256').update(Buffer.from(publicKey, 'base64url')).digest('base64url')}`

function everythingDocument(): Record<string, unknown> {
  return {
    $schema: 'https://static.modelcontextprotocol.io/schemas/2025-12-11/server.schema.json',
    name: 'io.github.modelcontextprotocol/server-everything-rotation',
    description: 'Exercises every feature of MCP.',
    version: EVERYTHING_VERSION,
    packages: [{
      registryType: 'npm', identifier: EVERYTHING, version: EVERYTHING_VERSION, runtimeHint: 'npx', transport: { type: 'stdio' },
      packageArguments: [{ type: 'positional', valueHint: 'transport', value: 'stdio' }],
      environmentVariables: [{ name: 'EVERYTHING_API_KEY', description: 'A key the server receives', isRequired: true, isSecret: true }],
    }],
  }
}

function keptLogger(lines: string[]): Logger {
  const keep = (level: string) => (message: string) => void lines.push(`${new Date().toISOString()} ${level} ${message}`)
  return { info: keep('info'), warn: keep('warn'), error: keep('error') }
}

describe.each(DIALECTS)('reference satellite key rotation and clean stop on %s', (dialect) => {
  let ctx: TestContext
  let server: OAuthServer
  let call: Call
  let admin: Account
  let crew: Crew
  let stateDir: string
  let satellite: Satellite
  let installation: InstallationBody
  const lines: string[] = []
  const clients: Client[] = []
  let seq = 0
  /**
   * One port across restarts: the satellite keeps the URL it registered, the only resource whose
   * tokens introspection tells it about.
   */
  let port: number

  const config = (registrationToken: string | undefined, rotateKey = false): SatelliteConfig => ({
    backendUrl: server.base, registrationToken, name: `rotation-${dialect}`, host: '127.0.0.1', port, satelliteUrl: undefined,
    stateDir, packageDirs: [process.cwd()], startTimeoutMs: 15_000, rotateKey,
  })
  const saved = (): Pairing => JSON.parse(readFileSync(join(stateDir, 'satellite.json'), 'utf8')) as Pairing
  const view = async (): Promise<InstallationBody> => (await call('GET', installationOf(crew.team.id, installation.id), crew.teamAdmin)).json().data.installation
  const satelliteStatus = async (): Promise<string> => (await call('GET', `/api/satellites/${satellite.id}`, crew.teamAdmin)).json().data.satellite.status
  const keyEvents = async () => ((await call('GET', '/api/admin/audit-log?type=satellite.public_key_changed&limit=100', admin)).json().data.events as Array<{ target: string; actor_id: string; ip: string; details: Record<string, unknown> }>)
    .filter((event) => event.target === satellite.id)

  /** The value the running server sees, asked through the satellite with a member's token. */
  const envThrough = async (): Promise<string | undefined> => {
    const { access_token: token } = await issueTokens(server.app, crew.teamUser.cookie, 'mcp:read', { teamId: crew.team.id, resource: `${satellite.url}/mcp` })
    const mcp = new Client({ name: 'rotation-client', version: '1.0.0' })
    await mcp.connect(new StreamableHTTPClientTransport(new URL(`${satellite.url}/mcp/${installation.id}`), { requestInit: { headers: { authorization: `Bearer ${token}` } } }))
    clients.push(mcp)
    const result = await mcp.callTool({ name: 'get-env', arguments: {} })
    return (JSON.parse((result.content as Array<{ text: string }>)[0]!.text) as Record<string, string>).EVERYTHING_API_KEY
  }

  /** The secret as the backend's document carries it now, opened with a private key from the state file. */
  const opensWith = async (privateKeyText: string): Promise<string | undefined> => {
    const pairing = saved()
    const response = await fetch(`${server.base}/api/satellites/${pairing.satellite_id}/desired-state`, { headers: { authorization: `Bearer ${pairing.api_key}` } })
    const instance = ((await response.json()) as { data: { instances: Array<{ instance_id: string; installation_id: string; secrets: Array<{ target: string; sealed: string }> }> } })
      .data.instances.find((each) => each.installation_id === installation.id)!
    const sealed = instance.secrets.find((secret) => secret.target === 'env:EVERYTHING_API_KEY')!.sealed
    return unseal(await privateKeyOf(privateKeyText), instance.instance_id, 'env:EVERYTHING_API_KEY', sealed).catch(() => undefined)
  }

  beforeAll(async () => {
    ctx = await createTestContext(dialect)
    server = await startOAuthServer(ctx)
    call = client(server.app)
    admin = await signUp(server.app, `rot_${dialect}_admin`)
    crew = await makeCrew(call, () => signUp(server.app, `rot_${dialect}_${++seq}`), 'Rotation Team')
    const [serverId] = (await importDocuments(call, admin, [everythingDocument()])) as [string]
    stateDir = join(mkdtempSync(join(tmpdir(), 'sat-rotation-')), 'state')
    port = await freePort()
    satellite = new Satellite(config((await createToken(call, crew.teamAdmin, { teamId: crew.team.id })).token), keptLogger(lines))
    await satellite.start()
    installation = await install(call, crew.team.id, crew.teamAdmin, { server_id: serverId, satellite_id: satellite.id, values: { 'env:EVERYTHING_API_KEY': SECRET } })
  })

  afterAll(async () => {
    await Promise.all(clients.map((mcp) => mcp.close().catch(() => undefined)))
    await satellite?.stop()
    await server?.app.close()
    await ctx?.close()
  })

  it('replaces its key pair with a proof of the old one; its instance keeps running, and restarts with a secret sealed to the new key', async () => {
    onTestFailed(() => console.error(lines.join('\n')))
    const instance = await waitFor(() => satellite.instancesOf(installation.id).find((placed) => placed.phase === 'running'), 'the instance to run', CONVERGE_MS)
    const pid = instance.upstream!.pid!
    expect(await envThrough()).toBe(SECRET)
    const before = saved()
    expect(await opensWith(before.private_key)).toBe(SECRET)

    await satellite.rotateKey()
    const after = saved()
    expect(after.public_key).not.toBe(before.public_key)
    expect(after.private_key).not.toBe(before.private_key)
    expect(after).not.toHaveProperty('next_private_key')
    expect(after.api_key).toBe(before.api_key)
    expect(await opensWith(after.private_key)).toBe(SECRET)
    expect(await opensWith(before.private_key)).toBeUndefined()
    const [event, ...older] = await keyEvents()
    expect(older).toEqual([])
    expect(event).toMatchObject({
      actor_id: satellite.id, ip: '127.0.0.1',
      details: { method: 'proof', old_fingerprint: fingerprint(before.public_key), new_fingerprint: fingerprint(after.public_key) },
    })

    // The new document (its secrets sealed anew) does not restart the server: the values did not change.
    await new Promise((resolve) => setTimeout(resolve, 1_500))
    expect(instance.phase).toBe('running')
    expect(instance.upstream!.pid).toBe(pid)
    expect(await envThrough()).toBe(SECRET)

    // A new value restarts it, opened with the new key.
    expect((await call('PUT', `${installationOf(crew.team.id, installation.id)}/values`, crew.teamAdmin, { values: { 'env:EVERYTHING_API_KEY': SECRET_2 } })).statusCode).toBe(200)
    await waitFor(() => instance.phase === 'running' && instance.upstream!.pid !== pid, 'the restart', CONVERGE_MS)
    expect(alive(pid)).toBe(false)
    expect(await envThrough()).toBe(SECRET_2)
    expect(lines.join('\n')).not.toContain('could not be opened')
  }, CONVERGE_TEST_MS)

  it('tells the backend when it stops cleanly: the satellite reads offline and its installation unknown at once', async () => {
    onTestFailed(() => console.error(lines.join('\n')))
    const pid = satellite.instancesOf(installation.id)[0]!.upstream!.pid!
    await satellite.stop()
    expect(alive(pid)).toBe(false)
    expect(await satelliteStatus()).toBe('offline')
    const stopped = await view()
    expect(stopped.status).toBe('unknown')
  })

  it('replaces the pair again when started with ROTATE_KEY=1, and is back online with its instance after its first heartbeat', async () => {
    onTestFailed(() => console.error(lines.join('\n')))
    const before = saved()
    satellite = new Satellite(config(undefined, true), keptLogger(lines))
    await satellite.start()
    const after = saved()
    expect(after.public_key).not.toBe(before.public_key)
    expect((await keyEvents())[0]).toMatchObject({ details: { method: 'proof', old_fingerprint: fingerprint(before.public_key), new_fingerprint: fingerprint(after.public_key) } })
    await waitFor(async () => (await satelliteStatus()) === 'active', 'the heartbeat')
    await waitFor(() => satellite.instancesOf(installation.id).find((placed) => placed.phase === 'running'), 'the instance to run', CONVERGE_MS)
    expect(await envThrough()).toBe(SECRET_2)
    expect(await opensWith(after.private_key)).toBe(SECRET_2)
  }, CONVERGE_TEST_MS)

  it('finishes on its next start a key change that a stop interrupted after the backend took the new key', async () => {
    onTestFailed(() => console.error(lines.join('\n')))
    await satellite.stop()
    const before = saved()
    const next = await SatelliteKeys.generate()
    // As if it stopped between the backend's answer and saving the new pair as current.
    writeFileSync(join(stateDir, 'satellite.json'), JSON.stringify({ ...before, next_private_key: next.privateKeyText, next_public_key: next.publicKey }))
    await changeKeyWithProof(server.app, { id: before.satellite_id, name: before.name, apiKey: before.api_key }, await privateKeyOf(before.private_key), next.publicKey)
    satellite = new Satellite(config(undefined), keptLogger(lines))
    await satellite.start()
    const after = saved()
    expect(after.public_key).toBe(next.publicKey)
    expect(after).not.toHaveProperty('next_public_key')
    expect(lines.some((line) => line.includes('finished the key change an earlier run began'))).toBe(true)
    await waitFor(() => satellite.instancesOf(installation.id).find((placed) => placed.phase === 'running'), 'the instance to run', CONVERGE_MS)
    expect(await envThrough()).toBe(SECRET_2)
  }, CONVERGE_TEST_MS)
})
