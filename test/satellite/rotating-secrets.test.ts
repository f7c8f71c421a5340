import { Client } from '@modelcontextprotocol/sdk/client/index.js'
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { UNRESTRICTED } from '../../examples/satellite/src/egress.js'
import { Front } from '../../examples/satellite/src/front.js'
import { ManagedInstance } from '../../examples/satellite/src/instance.js'
import { silentLogger } from '../../examples/satellite/src/logger.js'
import { SatelliteKeys } from '../../examples/satellite/src/sealing.js'
import { TokenChecker } from '../../examples/satellite/src/tokens.js'
import type { Instance, TokenClaims } from '../../examples/satellite/src/types.js'
import { startRemoteServer, type RemoteServer } from './remote-server.js'
import { everythingInstance, recordingHooks, sealTo, waitFor, type Recorded } from './support.js'

/**
 * A rotating secret (an OAuth access token the backend refreshed) reaches a running remote
 * instance without restarting it: the next request to the server — from the instance's own
 * connection, from a client session opened before the renewal, and from one opened after — carries
 * the new Authorization, while the spec hash, the phase and the upstream connection stay as they were.
 * The remote server is the official SDK's streamable HTTP server on loopback, recording the
 * Authorization of every request it gets.
 */
describe('reference satellite: rotating secrets', () => {
  let keys: SatelliteKeys
  let remote: RemoteServer
  let front: Front
  let base: string
  let instance: ManagedInstance
  let recorded: Recorded
  let spec: Instance
  const clients: Client[] = []
  const FIRST = 'Bearer at-first-5c1d9e0b7a'
  const SECOND = 'Bearer at-second-9f3a2c6d1e'
  const CLIENT_TOKEN = 'client-token-never-forwarded'

  const withAuthorization = async (base: Instance, value: string, plain = 'p-1'): Promise<Instance> => ({
    ...base,
    secrets: [
      { target: 'header:X-Plain-Secret', sealed: await sealTo(keys.publicKey, base.instance_id, 'header:X-Plain-Secret', plain) },
      { target: 'header:Authorization', sealed: await sealTo(keys.publicKey, base.instance_id, 'header:Authorization', value), rotating: true },
    ],
  })
  const connect = async (): Promise<Client> => {
    const client = new Client({ name: 'rotating-test', version: '1.0.0' })
    await client.connect(new StreamableHTTPClientTransport(new URL(`${base}/mcp/${spec.installation_id}`), { requestInit: { headers: { authorization: `Bearer ${CLIENT_TOKEN}` } } }))
    clients.push(client)
    return client
  }
  /** The Authorization of the POSTs the server got from `from` on (calls, not the event streams). */
  const seenSince = (from: number): Array<string | undefined> => remote.requests.slice(from).filter((request) => request.method === 'POST').map((request) => request.authorization)
  const ping = async (client: Client): Promise<void> => {
    expect((await client.callTool({ name: 'ping', arguments: {} })).content).toEqual([{ type: 'text', text: 'pong' }])
  }

  beforeAll(async () => {
    keys = await SatelliteKeys.generate()
    remote = await startRemoteServer()
    const claims: TokenClaims = { active: true, token_type: 'Bearer', scope: 'mcp:read', team_id: 'team-a', sub: 'alice', exp: Math.floor(Date.now() / 1000) + 3600 }
    front = new Front({
      backendUrl: 'http://127.0.0.1:9', log: silentLogger,
      tokens: new TokenChecker(async (token) => (token === CLIENT_TOKEN ? { ...claims, aud: `${base}/mcp` } : { active: false })),
      instancesOf: (id) => (instance?.spec.installation_id === id ? [instance] : []),
    })
    base = `http://127.0.0.1:${await front.listen('127.0.0.1', 0)}`
    front.setBaseUrl(base)
    spec = await withAuthorization({ ...everythingInstance({ team_id: 'team-a', spec_hash: 'remote-spec-1' }), launch: { kind: 'remote', url: remote.url('/mcp'), transport: 'streamable-http', headers: { 'X-Plain': 'plain' } } }, FIRST)
    recorded = recordingHooks()
    instance = new ManagedInstance(spec, { keys, packageDirs: [], startTimeoutMs: 10_000, hooks: recorded.hooks, egress: UNRESTRICTED })
    instance.update(spec)
    await waitFor(() => instance.phase === 'running', 'the remote instance to run')
  })

  afterAll(async () => {
    await Promise.all(clients.map((client) => client.close().catch(() => undefined)))
    await front?.close()
    await instance?.remove()
    await remote?.close()
  })

  it('starts with the first value: the server sees it on every request, never the client\'s own token', async () => {
    const from = remote.requests.length
    await ping(instance.upstream!.client)
    await ping(await connect())
    expect(seenSince(from).length).toBeGreaterThanOrEqual(3)
    expect(new Set(seenSince(0))).toEqual(new Set([FIRST]))
    expect(remote.requests.some((request) => request.authorization?.includes(CLIENT_TOKEN))).toBe(false)
  })

  it('swaps a renewed rotating value in place: the next requests of the instance and of every session carry it, nothing restarts', async () => {
    const upstream = instance.upstream
    const startedAt = instance.startedAt
    const phases = recorded.phases.length
    const [before] = clients
    const renewed = await withAuthorization(spec, SECOND)
    // Same spec hash and restart generation: only the rotating secret's sealed text is new (the
    // plain secret is sealed anew too, with the same value: a new sealed text alone is no change).
    expect(renewed.spec_hash).toBe(spec.spec_hash)
    spec = renewed
    instance.update(spec)
    await instance.settled()

    const from = remote.requests.length
    await ping(instance.upstream!.client)
    await ping(before!)
    const after = await connect()
    await ping(after)
    expect(seenSince(from).length).toBeGreaterThanOrEqual(4)
    expect(new Set(seenSince(from))).toEqual(new Set([SECOND]))

    expect(instance.upstream).toBe(upstream)
    expect(instance.startedAt).toBe(startedAt)
    expect(recorded.phases.length).toBe(phases)
    expect(instance.observed()).toMatchObject({ spec_hash: 'remote-spec-1', phase: 'running' })
    expect(recorded.logs.some((line) => line.stream === 'event' && line.text.startsWith('rotating secrets renewed'))).toBe(true)
    // Neither value in any log line, the one before included.
    expect(recorded.logs.some((line) => line.text.includes('at-first') || line.text.includes('at-second'))).toBe(false)
  })

  it('the same document again changes nothing; a new spec_hash still restarts (with the value it carries)', async () => {
    const upstream = instance.upstream
    const events = recorded.logs.length
    instance.update({ ...spec })
    await instance.settled()
    expect(instance.upstream).toBe(upstream)
    expect(recorded.logs.slice(events).some((line) => line.text.startsWith('rotating secrets renewed'))).toBe(false)

    spec = await withAuthorization({ ...spec, spec_hash: 'remote-spec-2' }, FIRST, 'p-2')
    instance.update(spec)
    await waitFor(() => instance.phase === 'running' && instance.upstream !== upstream && instance.upstream, 'the restart on a new spec')
    const from = remote.requests.length
    await ping(instance.upstream!.client)
    expect(new Set(seenSince(from))).toEqual(new Set([FIRST]))
  })
})
