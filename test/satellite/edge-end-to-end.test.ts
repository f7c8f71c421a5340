/**
 * The reference satellite at the edge, against a real backend over real HTTP: a global satellite
 * (it serves every team) runs a team's remote installations. One reaches a host its operator
 * allows and runs; one whose upstream answers 500 reads failed with the answer's status and size,
 * never its body, in `status_reason` and the logs; one pointing at a loopback address the
 * operator did not allow is refused before any request. Clients' tokens: an access token for the
 * satellite works, the refresh token of the same grant is refused.
 */
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it, onTestFailed } from 'vitest'
import type { SatelliteConfig } from '../../examples/satellite/src/config.js'
import type { Logger } from '../../examples/satellite/src/logger.js'
import { Satellite } from '../../examples/satellite/src/satellite.js'
import { createTestContext, type TestContext } from '../helpers/app.js'
import { DIALECTS } from '../helpers/database.js'
import { importDocuments, install, installationOf, type InstallationBody } from '../helpers/installations.js'
import { issueTokens } from '../helpers/oauth.js'
import { startOAuthServer, type OAuthServer } from '../helpers/oauth-e2e.js'
import { createToken } from '../helpers/satellites.js'
import { client, crew as makeCrew, signUp, type Account, type Call, type Crew } from '../helpers/teams.js'
import { failureBody, startRemoteServer, type RemoteServer } from './remote-server.js'
import { waitFor } from './support.js'

const MARKER = 'E2E-UPSTREAM-BODY-3f9a'
/** The satellite's first attempt: the installation is created, placed, polled and tried within this. */
const CONVERGE_MS = 35_000

describe.each(DIALECTS)('reference satellite at the edge, end to end on %s', (dialect) => {
  let ctx: TestContext
  let server: OAuthServer
  let call: Call
  let admin: Account
  let a: Crew
  let remote: RemoteServer
  let forbidden: RemoteServer
  let satellite: Satellite
  let serverId: string
  let runningId: string
  const lines: string[] = []
  let seq = 0

  const logger: Logger = { info: (m) => void lines.push(`info ${m}`), warn: (m) => void lines.push(`warn ${m}`), error: (m) => void lines.push(`error ${m}`) }
  const view = async (id: string): Promise<InstallationBody> => {
    const response = await call('GET', installationOf(a.team.id, id), a.teamAdmin)
    expect(response.statusCode, response.body).toBe(200)
    return response.json().data.installation
  }
  const logsOf = async (id: string): Promise<string> => {
    const response = await call('GET', `${installationOf(a.team.id, id)}/logs`, a.teamAdmin)
    expect(response.statusCode, response.body).toBe(200)
    return response.body
  }
  const installRemote = (index: number, name: string) => install(call, a.team.id, a.teamAdmin, {
    server_id: serverId, name, target: { kind: 'remote', index }, satellite_id: satellite.id,
  })
  const settled = (id: string, status: string) => waitFor(async () => {
    const shown = await view(id)
    return shown.status === status && shown
  }, `the installation to read ${status}`, CONVERGE_MS)

  beforeAll(async () => {
    ctx = await createTestContext(dialect)
    server = await startOAuthServer(ctx)
    call = client(server.app)
    admin = await signUp(server.app, `edge_${dialect}_admin`)
    a = await makeCrew(call, () => signUp(server.app, `edge_${dialect}_${++seq}`), 'Edge Team')
    remote = await startRemoteServer({ marker: MARKER })
    forbidden = await startRemoteServer()
    ;[serverId] = (await importDocuments(call, admin, [{
      $schema: 'https://static.modelcontextprotocol.io/schemas/2025-12-11/server.schema.json',
      name: 'io.github.example/edge-remote',
      description: 'Remote servers on loopback.',
      version: '1.0.0',
      remotes: [
        { type: 'streamable-http', url: remote.url('/mcp') },
        { type: 'streamable-http', url: remote.url('/fail') },
        { type: 'streamable-http', url: forbidden.url('/mcp') },
      ],
    }])) as [string]
    const config: SatelliteConfig = {
      backendUrl: server.base, registrationToken: (await createToken(call, admin)).token, name: `edge-global-${dialect}`, host: '127.0.0.1', port: 0,
      satelliteUrl: undefined, stateDir: join(mkdtempSync(join(tmpdir(), 'sat-edge-')), 'state'), packageDirs: [], startTimeoutMs: 10_000,
      egressAllowedHosts: [`127.0.0.1:${remote.port}`],
    }
    satellite = new Satellite(config, logger)
    await satellite.start()
  })

  afterAll(async () => {
    await satellite?.stop()
    await remote?.close()
    await forbidden?.close()
    await server?.app.close()
    await ctx?.close()
  })

  it('runs a remote installation on a host its operator allows', async () => {
    onTestFailed(() => console.error(lines.join('\n')))
    const satelliteView = (await call('GET', `/api/satellites/${satellite.id}`, admin)).json().data.satellite
    expect(satelliteView.satellite_type).toBe('global')
    runningId = (await installRemote(0, 'edge-running')).id
    expect((await settled(runningId, 'running')).satellite_id).toBe(satellite.id)
  }, CONVERGE_MS + 10_000)

  it("an upstream answering 500: status_reason and logs give its status and size, never its body", async () => {
    onTestFailed(() => console.error(lines.join('\n')))
    const failing = await installRemote(1, 'edge-failing')
    const shown = await settled(failing.id, 'failed')
    expect(shown.status_reason).toContain(`the server answered HTTP 500 (${Buffer.byteLength(failureBody(MARKER))} bytes)`)
    expect(shown.status_reason).not.toContain(MARKER)
    const logs = await waitFor(async () => {
      const body = await logsOf(failing.id)
      return body.includes('HTTP 500') && body
    }, 'the failure in the logs')
    expect(logs).not.toContain(MARKER)
    expect(remote.requests.some((request) => request.path === '/fail')).toBe(true)
  }, CONVERGE_MS + 10_000)

  it('a loopback target its operator did not allow is refused before any request', async () => {
    onTestFailed(() => console.error(lines.join('\n')))
    const refused = await installRemote(2, 'edge-refused')
    const shown = await settled(refused.id, 'failed')
    expect(shown.status_reason).toContain('127.0.0.1 is a non-public address (loopback)')
    expect(forbidden.requests).toEqual([])
  }, CONVERGE_MS + 10_000)

  it("a team's own satellite reaches a loopback target without any allowance; resumed from a saved pairing that does not say its type, it learns it from its first heartbeat", async () => {
    onTestFailed(() => console.error(lines.join('\n')))
    const stateDir = join(mkdtempSync(join(tmpdir(), 'sat-edge-team-')), 'state')
    const config = (registrationToken: string | undefined): SatelliteConfig => ({
      backendUrl: server.base, registrationToken, name: `edge-team-${dialect}`, host: '127.0.0.1', port: 0,
      satelliteUrl: undefined, stateDir, packageDirs: [], startTimeoutMs: 10_000, egressAllowedHosts: [],
    })
    let own = new Satellite(config((await createToken(call, a.teamAdmin, { teamId: a.team.id })).token), logger)
    try {
      await own.start()
      const installation = await install(call, a.team.id, a.teamAdmin, { server_id: serverId, name: 'edge-team-remote', target: { kind: 'remote', index: 0 }, satellite_id: own.id })
      await settled(installation.id, 'running')
      const file = join(stateDir, 'satellite.json')
      const saved = JSON.parse(readFileSync(file, 'utf8')) as Record<string, unknown>
      expect(saved.satellite_type).toBe('team')
      await own.stop()
      delete saved.satellite_type
      writeFileSync(file, JSON.stringify(saved))
      own = new Satellite(config(undefined), logger)
      await own.start()
      // The heartbeat that resumes the pairing answers its type before any instance is started.
      expect((JSON.parse(readFileSync(file, 'utf8')) as Record<string, unknown>).satellite_type).toBe('team')
      await settled(installation.id, 'running')
    } finally {
      await own.stop()
    }
  }, 2 * CONVERGE_MS + 10_000)

  it('admits an access token for the satellite and refuses the refresh token of the same grant (401)', async () => {
    onTestFailed(() => console.error(lines.join('\n')))
    const tokens = await issueTokens(server.app, a.teamUser.cookie, 'mcp:read offline_access', { teamId: a.team.id, resource: `${satellite.url}/mcp` })
    expect(tokens.refresh_token).toEqual(expect.any(String))
    const initialize = (token: string) => fetch(`${satellite.url}/mcp/${runningId}`, {
      method: 'POST',
      headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
      body: JSON.stringify({ jsonrpc: '2.0', id: 0, method: 'initialize', params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'edge', version: '1' } } }),
    })
    expect((await initialize(tokens.access_token)).status).toBe(200)
    const refused = await initialize(tokens.refresh_token!)
    expect(refused.status).toBe(401)
    expect(refused.headers.get('www-authenticate')).toMatch(/error="invalid_token"/)
  })
})
