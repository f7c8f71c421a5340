import { Client } from '@modelcontextprotocol/sdk/client/index.js'
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { McpError } from '@modelcontextprotocol/sdk/types.js'
import { UNRESTRICTED } from '../../examples/satellite/src/egress.js'
import { Front } from '../../examples/satellite/src/front.js'
import { ManagedInstance } from '../../examples/satellite/src/instance.js'
import { Isolation } from '../../examples/satellite/src/isolation.js'
import { silentLogger } from '../../examples/satellite/src/logger.js'
import { SatelliteKeys } from '../../examples/satellite/src/sealing.js'
import { TokenChecker } from '../../examples/satellite/src/tokens.js'
import type { Instance, TokenClaims } from '../../examples/satellite/src/types.js'
import { REFUSAL, startRemoteServer, type RemoteServer } from './remote-server.js'
import { everythingInstance, recordingHooks, sealTo, waitFor } from './support.js'

const BACKEND = 'http://127.0.0.1:9'

/**
 * The satellite's HTTP front with real servers behind it: the OAuth protected-resource surface
 * (metadata, 401 challenges), the token rules, per-user instances, hidden tools, and MCP clients
 * (the official SDK over streamable HTTP) listing and calling tools through it, and receiving a
 * server's errors as the server answered them. Tokens are
 * checked by the satellite's introspection cache, fed here by a table instead of the backend
 * (the end-to-end test uses the backend).
 */
// The instances here run in the default sandbox; its temporary folder goes with this file.
afterAll(async () => (await Isolation.default()).close())

describe('reference satellite: HTTP front', () => {
  let keys: SatelliteKeys
  let front: Front
  let base: string
  const placed: ManagedInstance[] = []
  const claimsOf = new Map<string, TokenClaims>()
  let introspections = 0
  const clients: Client[] = []

  const shared = everythingInstance({ team_id: 'team-a', disabled_tools: ['get-sum'] })
  const perUser = everythingInstance({ team_id: 'team-a' })
  const alice: Instance = { ...perUser, instance_id: `${perUser.installation_id}:alice`, user_id: 'alice' }
  const bob: Instance = { ...perUser, instance_id: `${perUser.installation_id}:bob`, user_id: 'bob' }
  /** A remote server on loopback that answers its tool with a JSON-RPC error. */
  let remote: RemoteServer
  let refusing: Instance

  const token = (name: string, claims: Partial<TokenClaims>): string => {
    const value = `tok_${name}_${Math.random().toString(36).slice(2)}`
    claimsOf.set(value, { active: true, token_type: 'Bearer', scope: 'mcp:read', aud: `${base}/mcp`, team_id: 'team-a', sub: 'alice', exp: Math.floor(Date.now() / 1000) + 3600, ...claims })
    return value
  }

  const post = (path: string, authorization?: string) => fetch(`${base}${path}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream', ...(authorization === undefined ? {} : { authorization }) },
    body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 't', version: '1' } } }),
  })

  const connect = async (installationId: string, bearer: string): Promise<Client> => {
    const client = new Client({ name: 'front-test', version: '1.0.0' })
    await client.connect(new StreamableHTTPClientTransport(new URL(`${base}/mcp/${installationId}`), { requestInit: { headers: { authorization: `Bearer ${bearer}` } } }))
    clients.push(client)
    return client
  }

  const envThrough = async (client: Client): Promise<Record<string, string>> => {
    const result = await client.callTool({ name: 'get-env', arguments: {} })
    return JSON.parse((result.content as Array<{ text: string }>)[0]!.text) as Record<string, string>
  }

  const withSecret = async (spec: Instance, value: string): Promise<Instance> => ({
    ...spec,
    secrets: [{ target: 'env:OWNER_SECRET', sealed: await sealTo(keys.publicKey, spec.instance_id, 'env:OWNER_SECRET', value) }],
  })

  beforeAll(async () => {
    keys = await SatelliteKeys.generate()
    const tokens = new TokenChecker(async (value) => {
      introspections += 1
      return claimsOf.get(value) ?? { active: false }
    })
    front = new Front({ backendUrl: BACKEND, tokens, log: silentLogger, instancesOf: (id) => placed.filter((instance) => instance.spec.installation_id === id) })
    const port = await front.listen('127.0.0.1', 0)
    base = `http://127.0.0.1:${port}`
    front.setBaseUrl(base)
    for (const [spec, secret] of [[shared, 'team-secret'], [alice, 'alice-secret'], [bob, 'bob-secret']] as const) {
      const sealed = await withSecret(spec, secret)
      const instance = new ManagedInstance(sealed, { keys, packageDirs: [process.cwd()], startTimeoutMs: 15_000, hooks: recordingHooks().hooks })
      instance.update(sealed)
      placed.push(instance)
    }
    remote = await startRemoteServer()
    refusing = { ...everythingInstance({ team_id: 'team-a' }), launch: { kind: 'remote', url: remote.url('/refusing'), transport: 'streamable-http', headers: {} } }
    const remoteInstance = new ManagedInstance(refusing, { keys, packageDirs: [], startTimeoutMs: 15_000, hooks: recordingHooks().hooks, egress: UNRESTRICTED })
    remoteInstance.update(refusing)
    placed.push(remoteInstance)
    await waitFor(() => placed.every((instance) => instance.phase === 'running'), 'four running instances')
  })

  afterAll(async () => {
    await Promise.all(clients.map((client) => client.close().catch(() => undefined)))
    await front?.close()
    await Promise.all(placed.map((instance) => instance.remove()))
    await remote?.close()
  })

  it('answers 401 with the metadata URL without a token, and serves RFC 9728 metadata naming the backend', async () => {
    const response = await post(`/mcp/${shared.installation_id}`)
    expect(response.status).toBe(401)
    // RFC 9728 §3.1: the metadata of the resource `<base>/mcp` lives at the well-known name with
    // the resource's path behind it, and declares exactly that resource (§3.3).
    const metadataUrl = `${base}/.well-known/oauth-protected-resource/mcp`
    expect(response.headers.get('www-authenticate')).toBe(`Bearer resource_metadata="${metadataUrl}", scope="mcp:read offline_access"`)
    const metadata = await fetch(metadataUrl)
    expect(metadata.status).toBe(200)
    expect(await metadata.json()).toMatchObject({
      resource: `${base}/mcp`,
      authorization_servers: [BACKEND],
      scopes_supported: ['mcp:read', 'offline_access'],
      bearer_methods_supported: ['header'],
    })
    // No document claims a resource its URL was not derived from.
    expect((await fetch(`${metadataUrl}/${shared.installation_id}`)).status).toBe(404)
    // An unknown installation still asks for a token first, so its existence is not revealed.
    expect((await post('/mcp/nothing-here')).status).toBe(401)
    const preflight = await fetch(`${base}/mcp/${shared.installation_id}`, { method: 'OPTIONS' })
    expect(preflight.status).toBe(204)
    expect(preflight.headers.get('access-control-allow-headers')).toContain('mcp-session-id')
  })

  it('refuses inactive tokens, tokens for another resource, without mcp:read, of another team, and users without an instance', async () => {
    const path = `/mcp/${shared.installation_id}`
    const cases: Array<[string, string, number, RegExp]> = [
      ['unknown', 'tok_never_issued', 401, /error="invalid_token"/],
      ['expired', token('expired', { exp: Math.floor(Date.now() / 1000) - 5 }), 401, /error="invalid_token"/],
      ['backend api', token('api', { aud: BACKEND }), 401, /error="invalid_token"/],
      ['other satellite', token('othersat', { aud: 'http://127.0.0.1:1/mcp' }), 401, /error="invalid_token"/],
      ['no scope', token('noscope', { scope: 'account:read teams:read' }), 403, /error="insufficient_scope", scope="mcp:read offline_access"/],
      ['refresh token', token('refresh', { token_type: 'refresh_token' }), 401, /error="invalid_token"/],
      ['no token type', token('untyped', { token_type: undefined }), 401, /error="invalid_token"/],
    ]
    for (const [what, bearer, status, challenge] of cases) {
      const response = await post(path, `Bearer ${bearer}`)
      expect(response.status, what).toBe(status)
      expect(response.headers.get('www-authenticate'), what).toMatch(challenge)
      expect(response.headers.get('www-authenticate'), what).toContain('resource_metadata=')
    }
    expect((await post(path, `Bearer ${token('teamb', { team_id: 'team-b' })}`)).status).toBe(403)
    expect((await post(path, `Bearer ${token('noteam', { team_id: null })}`)).status).toBe(403)
    expect((await post(`/mcp/${perUser.installation_id}`, `Bearer ${token('carol', { sub: 'carol' })}`)).status).toBe(403)
    expect((await post('/mcp/nothing-here', `Bearer ${token('good', {})}`)).status).toBe(404)
    // Token types compare case-insensitively (RFC 6749 §5.1).
    expect((await post('/mcp/nothing-here', `Bearer ${token('lower', { token_type: 'bearer' })}`)).status).toBe(404)
  })

  it('lets the SDK client list and call tools of the team instance: disabled tools hidden and refused, the token not passed on', async () => {
    const bearer = token('member', { sub: 'bob' })
    const client = await connect(shared.installation_id, bearer)
    const names = (await client.listTools()).tools.map((tool) => tool.name)
    expect(names).toEqual(expect.arrayContaining(['echo', 'get-env']))
    expect(names).not.toContain('get-sum')
    const env = await envThrough(client)
    expect(env.OWNER_SECRET).toBe('team-secret')
    expect(JSON.stringify(env)).not.toContain(bearer)
    const echoed = await client.callTool({ name: 'echo', arguments: { message: 'through the satellite' } })
    expect(JSON.stringify(echoed.content)).toContain('through the satellite')
    const refused = await client.callTool({ name: 'get-sum', arguments: { a: 1, b: 2 } }).catch((error: unknown) => error)
    expect(refused).toBeInstanceOf(McpError)
    expect(refused).toMatchObject({ code: -32602, message: `MCP error -32602: Tool get-sum is disabled for this installation` })
    // Resources and prompts pass through too.
    expect((await client.listResources()).resources.length).toBeGreaterThan(0)
    expect((await client.listPrompts()).prompts.length).toBeGreaterThan(0)
  })

  it('passes a server\'s JSON-RPC error to the client as the server answered it: code, message (prefixed once) and data', async () => {
    const direct = new Client({ name: 'front-test-direct', version: '1.0.0' })
    await direct.connect(new StreamableHTTPClientTransport(new URL(remote.url('/refusing'))))
    clients.push(direct)
    const through = await connect(refusing.installation_id, token('refused', {}))
    const expected = { code: REFUSAL.code, message: `MCP error -32602: ${REFUSAL.message}`, data: REFUSAL.data }
    for (const client of [direct, through]) {
      const error = await client.callTool({ name: 'refuse', arguments: { reason: 'none' } }).catch((caught: unknown) => caught)
      expect(error).toBeInstanceOf(McpError)
      expect({ code: (error as McpError).code, message: (error as McpError).message, data: (error as McpError).data }).toEqual(expected)
    }
  })

  it('serves a per-user installation from the instance of the token\'s user', async () => {
    const asAlice = await connect(perUser.installation_id, token('alice', { sub: 'alice' }))
    const asBob = await connect(perUser.installation_id, token('bob', { sub: 'bob' }))
    expect((await envThrough(asAlice)).OWNER_SECRET).toBe('alice-secret')
    expect((await envThrough(asBob)).OWNER_SECRET).toBe('bob-secret')
  })

  it('introspects a token once for many requests', async () => {
    const bearer = token('cached', {})
    const before = introspections
    const client = await connect(shared.installation_id, bearer)
    for (let i = 0; i < 5; i += 1) await client.listTools()
    expect(introspections - before).toBe(1)
  })

  it('ends the sessions of an instance that restarts; a new session reaches the new process', async () => {
    const bearer = token('restart', {})
    const client = await connect(shared.installation_id, bearer)
    await client.listTools()
    const instance = placed[0]!
    const before = instance.upstream!.pid
    instance.update({ ...instance.spec, restart_generation: instance.spec.restart_generation + 1 })
    await waitFor(() => instance.phase === 'running' && instance.upstream!.pid !== before, 'the restart')
    await expect(client.listTools()).rejects.toThrow()
    const again = await connect(shared.installation_id, bearer)
    expect((await envThrough(again)).OWNER_SECRET).toBe('team-secret')
    // A session id from one user is not usable by another.
    const sessionId = (again.transport as StreamableHTTPClientTransport).sessionId!
    const stolen = await fetch(`${base}/mcp/${shared.installation_id}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream', 'mcp-session-id': sessionId, 'mcp-protocol-version': '2025-06-18', authorization: `Bearer ${token('thief', { sub: 'mallory' })}` },
      body: JSON.stringify({ jsonrpc: '2.0', id: 7, method: 'tools/list', params: {} }),
    })
    expect(stolen.status).toBe(404)
  })
})
