/**
 * A renewed OAuth access token, end to end: the backend sends a remote instance's connection
 * token as its rotating Authorization; the reference satellite (its real classes, over real HTTP)
 * runs the instance; when the connection's token changes, the satellite's held long-poll brings
 * the new document and the next requests to the remote server — the instance's own and a client
 * session's, through the satellite's front — carry the new token, while the instance keeps its
 * upstream connection, its phase and its spec_hash. The remote server is the official SDK's
 * streamable HTTP server on loopback, recording the Authorization it receives.
 */
import { mkdtempSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { Client } from '@modelcontextprotocol/sdk/client/index.js'
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js'
import { afterAll, beforeAll, describe, expect, it, onTestFailed } from 'vitest'
import type { SatelliteConfig } from '../../examples/satellite/src/config.js'
import type { Logger } from '../../examples/satellite/src/logger.js'
import { Satellite } from '../../examples/satellite/src/satellite.js'
import { createTestContext, type TestContext } from '../helpers/app.js'
import { bearerTokens, storeConnection } from '../helpers/connection-rows.js'
import { DIALECTS } from '../helpers/database.js'
import { importDocuments, install, installationOf, type InstallationBody } from '../helpers/installations.js'
import { issueTokens } from '../helpers/oauth.js'
import { startOAuthServer, type OAuthServer } from '../helpers/oauth-e2e.js'
import { createToken } from '../helpers/satellites.js'
import { client, crew as makeCrew, signUp, type Call, type Crew } from '../helpers/teams.js'
import { startRemoteServer, type RemoteServer } from './remote-server.js'
import { waitFor } from './support.js'

const CONVERGE_MS = 35_000
const FIRST = 'at-e2e-first-3c4d5e6f'
const SECOND = 'at-e2e-second-7a8b9c0d'

describe.each(DIALECTS)('rotating Authorization through the reference satellite on %s', (dialect) => {
  let ctx: TestContext
  let server: OAuthServer
  let call: Call
  let a: Crew
  let remote: RemoteServer
  let satellite: Satellite
  let installation: InstallationBody
  let key: string
  const lines: string[] = []
  const clients: Client[] = []
  let seq = 0

  const logger: Logger = { info: (m) => void lines.push(`info ${m}`), warn: (m) => void lines.push(`warn ${m}`), error: (m) => void lines.push(`error ${m}`) }
  const view = async (): Promise<InstallationBody> => (await call('GET', installationOf(a.team.id, installation.id), a.teamAdmin)).json().data.installation
  const instance = () => satellite.instancesOf(installation.id)[0]
  /** The Authorization of the POSTs the remote server got from `from` on. */
  const seenSince = (from: number) => remote.requests.slice(from).filter((request) => request.method === 'POST').map((request) => request.authorization)
  const ping = async (mcp: Client) => expect((await mcp.callTool({ name: 'ping', arguments: {} })).content).toEqual([{ type: 'text', text: 'pong' }])

  beforeAll(async () => {
    ctx = await createTestContext(dialect)
    server = await startOAuthServer(ctx)
    call = client(server.app)
    const admin = await signUp(server.app, `rot_${dialect}_admin`)
    a = await makeCrew(call, () => signUp(server.app, `rot_${dialect}_${++seq}`), 'Rotation Team')
    remote = await startRemoteServer()
    const [serverId] = await importDocuments(call, admin, [{
      $schema: 'https://static.modelcontextprotocol.io/schemas/2025-12-11/server.schema.json',
      name: 'io.github.example/rotating-remote', description: 'A remote server behind OAuth.', version: '1.0.0',
      remotes: [{ type: 'streamable-http', url: remote.url('/mcp') }],
    }])
    satellite = new Satellite({
      backendUrl: server.base, registrationToken: (await createToken(call, admin)).token, name: `rot-global-${dialect}`, host: '127.0.0.1', port: 0,
      satelliteUrl: undefined, stateDir: join(mkdtempSync(join(tmpdir(), 'sat-rot-')), 'state'), packageDirs: [], startTimeoutMs: 10_000,
      egressAllowedHosts: [`127.0.0.1:${remote.port}`],
    } satisfies SatelliteConfig, logger)
    await satellite.start()
    key = `oauth:${remote.url('/mcp')}`
    // Said to need OAuth, one connection for the team: nothing runs before a team admin connects.
    installation = await install(call, a.team.id, a.teamAdmin, {
      server_id: serverId!, name: 'rotating', target: { kind: 'remote', index: 0 }, satellite_id: satellite.id, auth: 'oauth', team_connections: [key],
    })
    expect(installation.inputs.find((input) => input.key === key)).toMatchObject({ kind: 'oauth', scope: 'team', is_set: false })
  })

  afterAll(async () => {
    await Promise.all(clients.map((mcp) => mcp.close().catch(() => undefined)))
    await satellite?.stop()
    await remote?.close()
    await server?.app.close()
    await ctx?.close()
  })

  it('without the team connection nothing runs and the installation reads needs_auth; once connected, the server sees its token', async () => {
    onTestFailed(() => console.error(lines.join('\n')))
    expect((await view()).status).toBe('needs_auth')
    expect(instance()).toBeUndefined()
    const from = remote.requests.length
    await storeConnection(server.app, { installationId: installation.id, teamId: a.team.id, userId: null, inputKey: key, tokens: bearerTokens(FIRST) })
    await waitFor(async () => (await view()).status === 'running', 'the installation to run', CONVERGE_MS)
    expect(new Set(seenSince(from))).toEqual(new Set([`Bearer ${FIRST}`]))
  }, CONVERGE_MS + 10_000)

  it('a renewed token reaches the remote server on the next calls, the instance\'s own and a client session\'s, without a restart', async () => {
    onTestFailed(() => console.error(lines.join('\n')))
    const tokens = await issueTokens(server.app, a.teamUser.cookie, 'mcp:read offline_access', { teamId: a.team.id, resource: `${satellite.url}/mcp` })
    const session = new Client({ name: 'rotating-e2e', version: '1.0.0' })
    await session.connect(new StreamableHTTPClientTransport(new URL(`${satellite.url}/mcp/${installation.id}`), { requestInit: { headers: { authorization: `Bearer ${tokens.access_token}` } } }))
    clients.push(session)
    await ping(session)

    const running = instance()!
    const upstream = running.upstream
    const startedAt = running.startedAt
    const specHash = running.spec.spec_hash
    const phasesBefore = lines.filter((line) => line.includes(`instance ${running.id}`)).length

    // The held long-poll answers with the new document; the satellite swaps the header in place.
    const sealedOf = () => running.spec.secrets.find((secret) => secret.target === 'header:Authorization')
    const before = sealedOf()!.sealed
    await storeConnection(server.app, { installationId: installation.id, teamId: a.team.id, userId: null, inputKey: key, tokens: bearerTokens(SECOND) })
    await waitFor(() => sealedOf()?.sealed !== before, 'the renewed token to reach the satellite', CONVERGE_MS)
    expect(sealedOf()?.rotating).toBe(true)
    expect(running.spec.spec_hash).toBe(specHash)
    expect(instance()).toBe(running)
    await running.settled()

    const from = remote.requests.length
    await ping(running.upstream!.client)
    await ping(session)
    expect(seenSince(from).length).toBeGreaterThanOrEqual(2)
    expect(new Set(seenSince(from))).toEqual(new Set([`Bearer ${SECOND}`]))
    expect(running.upstream).toBe(upstream)
    expect(running.startedAt).toBe(startedAt)
    expect(running.phase).toBe('running')
    expect(lines.filter((line) => line.includes(`instance ${running.id}`)).length).toBe(phasesBefore)
    expect((await view()).status).toBe('running')
    // The client's own token never went upstream, and no token is in the satellite's log.
    expect(remote.requests.some((request) => request.authorization?.includes(tokens.access_token))).toBe(false)
    expect(lines.some((line) => line.includes(FIRST) || line.includes(SECOND))).toBe(false)
  }, CONVERGE_MS + 10_000)
})
