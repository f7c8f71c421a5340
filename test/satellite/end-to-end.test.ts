/**
 * The reference satellite against a real backend over real HTTP: a team admin installs
 * server-everything with a secret value; the satellite pairs with a team registration token,
 * receives the instance in its desired state, runs it and reports it running with its tools; an
 * MCP client (the official SDK, its OAuth client included) signs in at the backend for the
 * satellite's resource and calls get-env through the satellite; tokens for another team or for
 * the backend's own API are refused; a new secret value restarts the server with it; deleting
 * the installation stops the process. Then the satellite restarts from its state folder without
 * a token.
 */
import { mkdtempSync, statSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { auth, extractWWWAuthenticateParams } from '@modelcontextprotocol/sdk/client/auth.js'
import { Client } from '@modelcontextprotocol/sdk/client/index.js'
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js'
import type { OAuthClientMetadata } from '@modelcontextprotocol/sdk/shared/auth.js'
import { afterAll, beforeAll, describe, expect, it, onTestFailed } from 'vitest'
import type { SatelliteConfig } from '../../examples/satellite/src/config.js'
import type { Logger } from '../../examples/satellite/src/logger.js'
import { Satellite } from '../../examples/satellite/src/satellite.js'
import { createTestContext, type TestContext } from '../helpers/app.js'
import { DIALECTS } from '../helpers/database.js'
import { importDocuments, install, installationOf, type InstallationBody } from '../helpers/installations.js'
import { MemoryOAuthProvider } from '../helpers/mcp-sdk.js'
import { issueTokens } from '../helpers/oauth.js'
import { freePort, startOAuthServer, type OAuthServer } from '../helpers/oauth-e2e.js'
import { createToken } from '../helpers/satellites.js'
import { client, crew as makeCrew, signUp, type Account, type Call, type Crew } from '../helpers/teams.js'
import { EVERYTHING, EVERYTHING_VERSION, alive, waitFor } from './support.js'

/**
 * How long a change may take to reach the satellite: normally about a second (the held long-poll
 * is answered at the change), at worst one long-poll (30 s) or one heartbeat (30 s) later, when
 * the satellite learns it from its next request. The satellite converges either way; these tests
 * are about the satellite, the backend's own tests hold it to the second.
 */
const CONVERGE_MS = 35_000
/** A test that waits for the satellite to converge gets that long and some. */
const CONVERGE_TEST_MS = CONVERGE_MS + 10_000

const SECRET = 'sk-live-e2e-first-5d4c3b2a'
const SECRET_2 = 'sk-live-e2e-second-0f9e8d7c'

/** The catalogue entry: server-everything over stdio, a secret environment variable and a plain one. */
function everythingDocument(): Record<string, unknown> {
  return {
    $schema: 'https://static.modelcontextprotocol.io/schemas/2025-12-11/server.schema.json',
    name: 'io.github.modelcontextprotocol/server-everything',
    description: 'Exercises every feature of MCP.',
    version: EVERYTHING_VERSION,
    packages: [{
      registryType: 'npm',
      identifier: EVERYTHING,
      version: EVERYTHING_VERSION,
      runtimeHint: 'npx',
      transport: { type: 'stdio' },
      packageArguments: [{ type: 'positional', valueHint: 'transport', value: 'stdio' }],
      environmentVariables: [
        { name: 'EVERYTHING_API_KEY', description: 'A key the server receives', isRequired: true, isSecret: true },
        { name: 'EVERYTHING_MODE', value: 'end-to-end' },
      ],
    }],
  }
}

/** A logger that keeps the satellite's lines, printed when a test fails. */
function keptLogger(lines: string[]): Logger {
  const keep = (level: string) => (message: string) => void lines.push(`${new Date().toISOString()} ${level} ${message}`)
  return { info: keep('info'), warn: keep('warn'), error: keep('error') }
}

describe.each(DIALECTS)('reference satellite end to end on %s', (dialect) => {
  let ctx: TestContext
  let server: OAuthServer
  let base: string
  let call: Call
  let a: Crew
  let b: Crew
  let stateDir: string
  let satellite: Satellite
  let installation: InstallationBody
  let endpoint: string
  let callbackUrl: string
  let serverId: string
  let admin: Account
  const lines: string[] = []
  const clients: Client[] = []
  let seq = 0
  const fresh = (): Promise<Account> => signUp(server.app, `e2e_${dialect}_${++seq}`)

  const config = (registrationToken: string | undefined): SatelliteConfig => ({
    backendUrl: base, registrationToken, name: 'e2e-satellite', host: '127.0.0.1', port: 0, satelliteUrl: undefined,
    stateDir, packageDirs: [process.cwd()], startTimeoutMs: 15_000, egressAllowedHosts: [],
  })

  const clientMetadata = (): OAuthClientMetadata => ({
    client_name: 'Satellite E2E Client', redirect_uris: [callbackUrl], grant_types: ['authorization_code', 'refresh_token'],
    response_types: ['code'], token_endpoint_auth_method: 'none',
  })

  const view = async (as: Account = a.teamAdmin): Promise<InstallationBody> => {
    const response = await call('GET', installationOf(a.team.id, installation.id), as)
    expect(response.statusCode, response.body).toBe(200)
    return response.json().data.installation
  }

  /** The browser's part, for a user of several teams: the consent names the team the token is for. */
  async function consent(authorizationUrl: URL, user: Account, teamId: string): Promise<string> {
    const opened = await fetch(authorizationUrl, { redirect: 'manual', headers: { cookie: user.cookie } })
    const location = new URL(opened.headers.get('location')!, base)
    const page = await fetch(location, { headers: { cookie: user.cookie, accept: 'application/json' } })
    const details = ((await page.json()) as { data: { request_id: string; csrf_token: string } }).data
    const decided = await fetch(`${base}/api/oauth2/consent`, {
      method: 'POST',
      headers: { cookie: user.cookie, origin: base, accept: 'application/json', 'content-type': 'application/json' },
      body: JSON.stringify({ request_id: details.request_id, decision: 'approve', csrf_token: details.csrf_token, team_id: teamId }),
    })
    const text = await decided.text()
    expect(decided.status, text).toBe(200)
    return new URL((JSON.parse(text) as { data: { redirect_url: string } }).data.redirect_url).searchParams.get('code')!
  }

  /**
   * What an MCP client does: its first request meets the satellite's 401, it discovers the
   * backend from the metadata, registers, sends the user to consent, exchanges the code; then it
   * connects with the token.
   */
  async function signedInClient(user: Account, teamId: string): Promise<{ client: Client; provider: MemoryOAuthProvider }> {
    const provider = new MemoryOAuthProvider(callbackUrl, clientMetadata())
    const refused = await fetch(endpoint, {
      method: 'POST',
      headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
      body: JSON.stringify({ jsonrpc: '2.0', id: 0, method: 'initialize', params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'e2e', version: '1' } } }),
    })
    expect(refused.status).toBe(401)
    const { resourceMetadataUrl, scope } = extractWWWAuthenticateParams(refused)
    expect(resourceMetadataUrl?.href).toBe(`${satellite.url}/.well-known/oauth-protected-resource/mcp`)
    expect(scope?.split(' ')).toEqual(['mcp:read', 'offline_access'])
    const options = { serverUrl: endpoint, resourceMetadataUrl, scope }
    expect(await auth(provider, options)).toBe('REDIRECT')
    const authorizationUrl = provider.authorizationUrls[0]!
    expect(authorizationUrl.origin).toBe(base)
    expect(authorizationUrl.searchParams.get('resource')).toBe(`${satellite.url}/mcp`)
    const code = await consent(authorizationUrl, user, teamId)
    expect(await auth(provider, { ...options, authorizationCode: code })).toBe('AUTHORIZED')
    // offline_access was asked because the challenge named it: the client can refresh without the browser.
    expect(provider.tokens()?.scope?.split(' ')).toContain('offline_access')
    expect(provider.tokens()?.refresh_token).toMatch(/./)
    return { client: await connect(provider), provider }
  }

  async function connect(provider: MemoryOAuthProvider): Promise<Client> {
    const mcp = new Client({ name: 'e2e-client', version: '1.0.0' })
    await mcp.connect(new StreamableHTTPClientTransport(new URL(endpoint), { authProvider: provider }))
    clients.push(mcp)
    return mcp
  }

  const envThrough = async (mcp: Client): Promise<Record<string, string>> => {
    const result = await mcp.callTool({ name: 'get-env', arguments: {} })
    return JSON.parse((result.content as Array<{ text: string }>)[0]!.text) as Record<string, string>
  }

  /** A bare initialize with a bearer token: the status the satellite answers. */
  const statusWith = async (token: string): Promise<number> => (await fetch(endpoint, {
    method: 'POST',
    headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
    body: JSON.stringify({ jsonrpc: '2.0', id: 0, method: 'initialize', params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'e2e', version: '1' } } }),
  })).status

  beforeAll(async () => {
    ctx = await createTestContext(dialect)
    server = await startOAuthServer(ctx)
    base = server.base
    call = client(server.app)
    admin = await signUp(server.app, `e2e_${dialect}_admin`) // the first user: global admin
    a = await makeCrew(call, fresh, 'Satellite Team')
    b = await makeCrew(call, fresh, 'Other Team')
    ;[serverId] = (await importDocuments(call, admin, [everythingDocument()])) as [string]
    stateDir = join(mkdtempSync(join(tmpdir(), 'sat-e2e-')), 'state')
    callbackUrl = `http://127.0.0.1:${await freePort()}/callback`
  })

  afterAll(async () => {
    await Promise.all(clients.map((mcp) => mcp.close().catch(() => undefined)))
    await satellite?.stop()
    await server?.app.close()
    await ctx?.close()
  })

  it('pairs with a team registration token, keeps its pairing owner-only and reports itself active', async () => {
    onTestFailed(() => console.error(lines.join('\n')))
    const token = await createToken(call, a.teamAdmin, { teamId: a.team.id })
    satellite = new Satellite(config(token.token), keptLogger(lines))
    await satellite.start()
    expect(satellite.id).toEqual(expect.any(String))
    expect(statSync(join(stateDir, 'satellite.json')).mode & 0o777).toBe(0o600)
    const shown = await waitFor(async () => {
      const response = await call('GET', `/api/satellites/${satellite.id}`, a.teamAdmin)
      const body = response.json().data.satellite
      return body.status === 'active' && body
    }, 'the heartbeat')
    expect(shown).toMatchObject({ name: 'e2e-satellite', satellite_type: 'team', team_id: a.team.id, satellite_url: satellite.url })
  })

  it('runs an installation with a secret value placed on it', async () => {
    onTestFailed(() => console.error(lines.join('\n')))
    const started = Date.now()
    installation = await install(call, a.team.id, a.teamAdmin, { server_id: serverId, values: { 'env:EVERYTHING_API_KEY': SECRET } })
    endpoint = `${satellite.url}/mcp/${installation.id}`
    const instance = await waitFor(() => satellite.instancesOf(installation.id).find((placed) => placed.phase === 'running'), 'the instance to run', CONVERGE_MS)
    console.info(`${dialect}: the satellite ran the installation ${Date.now() - started} ms after its creation`)
    expect(instance.spec).toMatchObject({ team_id: a.team.id, user_id: null, desired: 'running', endpoint_path: `/mcp/${installation.id}` })
    expect(instance.upstream!.tools.map((tool) => tool.name)).toContain('get-env')
  }, CONVERGE_TEST_MS)

  it('reports it running with its tools: the installation shows it', async () => {
    onTestFailed(() => console.error(lines.join('\n')))
    let last: InstallationBody | undefined
    const started = Date.now()
    const running = await waitFor(async () => {
      last = await view()
      return last.status === 'running' && last.tools_count > 0 && last
    }, 'status running', CONVERGE_MS).catch((error: Error) => {
      throw new Error(`${error.message}: ${last?.status} (${last?.status_reason}), ${last?.tools_count} tools`)
    })
    console.info(`${dialect}: the installation read running ${Date.now() - started} ms after the satellite ran it`)
    expect(running.satellite_id).toBe(satellite.id)
    expect(running.endpoint_url).toBe(endpoint)
    const tools = await call('GET', `${installationOf(a.team.id, installation.id)}/tools`, a.teamUser)
    expect(tools.statusCode, tools.body).toBe(200)
    expect(JSON.stringify(tools.json().data)).toContain('get-env')
  }, CONVERGE_TEST_MS)

  it("lets a member's MCP client sign in at the backend for the satellite and call get-env through it; the secret reached the server", async () => {
    onTestFailed(() => console.error(lines.join('\n')))
    const { client: mcp, provider } = await signedInClient(a.teamUser, a.team.id)
    const names = (await mcp.listTools()).tools.map((tool) => tool.name)
    expect(names).toEqual(expect.arrayContaining(['echo', 'get-env']))
    const env = await envThrough(mcp)
    expect(env.EVERYTHING_API_KEY).toBe(SECRET)
    expect(env.EVERYTHING_MODE).toBe('end-to-end')
    expect(JSON.stringify(env)).not.toContain(provider.saved!.access_token)
  })

  it("refuses a token for another team and a token for the backend's own API", async () => {
    onTestFailed(() => console.error(lines.join('\n')))
    const otherTeam = await issueTokens(server.app, b.teamAdmin.cookie, 'mcp:read', { teamId: b.team.id, resource: `${satellite.url}/mcp` })
    expect(await statusWith(otherTeam.access_token)).toBe(403)
    const backendApi = await issueTokens(server.app, a.teamUser.cookie, 'mcp:read', { teamId: a.team.id })
    expect(await statusWith(backendApi.access_token)).toBe(401)
    const right = await issueTokens(server.app, a.teamUser.cookie, 'mcp:read', { teamId: a.team.id, resource: `${satellite.url}/mcp` })
    expect(await statusWith(right.access_token)).toBe(200)
  })

  it('restarts the server when the secret changes, and clients reach the new value', async () => {
    onTestFailed(() => console.error(lines.join('\n')))
    const [instance] = satellite.instancesOf(installation.id)
    const before = instance!.upstream!.pid!
    const { provider } = await signedInClient(a.teamUser, a.team.id)
    const changed = await call('PUT', `${installationOf(a.team.id, installation.id)}/values`, a.teamAdmin, { values: { 'env:EVERYTHING_API_KEY': SECRET_2 } })
    expect(changed.statusCode, changed.body).toBe(200)
    const asked = Date.now()
    await waitFor(() => instance!.phase === 'running' && instance!.upstream!.pid !== before, 'the restart', CONVERGE_MS)
    console.info(`${dialect}: the new value was running ${Date.now() - asked} ms after it was set`)
    expect(alive(before)).toBe(false)
    const mcp = await connect(provider)
    expect((await envThrough(mcp)).EVERYTHING_API_KEY).toBe(SECRET_2)
  }, CONVERGE_TEST_MS)

  it('sends the server\'s stderr and its own events as logs, without secret values', async () => {
    onTestFailed(() => console.error(lines.join('\n')))
    const logs = await waitFor(async () => {
      const response = await call('GET', `${installationOf(a.team.id, installation.id)}/logs`, a.teamAdmin)
      expect(response.statusCode, response.body).toBe(200)
      return response.body.includes('Starting default (STDIO) server') && response.body.includes('restarting') && response.body
    }, 'the log lines')
    expect(logs).not.toContain(SECRET)
    expect(logs).not.toContain(SECRET_2)
  })

  it("serves a per-user installation from the signed-in member's own instance, and nothing to a member without one", async () => {
    onTestFailed(() => console.error(lines.join('\n')))
    const own = await install(call, a.team.id, a.teamAdmin, { server_id: serverId, name: 'everything-own', user_scoped: ['env:EVERYTHING_API_KEY'] })
    for (const [member, value] of [[a.teamUser, 'user-own-value'], [a.teamAdmin, 'admin-own-value']] as const) {
      const set = await call('PUT', `${installationOf(a.team.id, own.id)}/my-values`, member, { values: { 'env:EVERYTHING_API_KEY': value } })
      expect(set.statusCode, set.body).toBe(200)
    }
    const placed = await waitFor(() => {
      const running = satellite.instancesOf(own.id).filter((instance) => instance.phase === 'running')
      return running.length === 2 && running
    }, 'two running instances', CONVERGE_MS)
    expect(placed.map((instance) => instance.spec.user_id).sort()).toEqual([a.teamAdmin.id, a.teamUser.id].sort())

    const ownEndpoint = new URL(`${satellite.url}/mcp/${own.id}`)
    const envAs = async (member: Account): Promise<string | undefined> => {
      const { access_token: token } = await issueTokens(server.app, member.cookie, 'mcp:read', { teamId: a.team.id, resource: `${satellite.url}/mcp` })
      const mcp = new Client({ name: 'e2e-per-user', version: '1.0.0' })
      await mcp.connect(new StreamableHTTPClientTransport(ownEndpoint, { requestInit: { headers: { authorization: `Bearer ${token}` } } }))
      clients.push(mcp)
      return (await envThrough(mcp)).EVERYTHING_API_KEY
    }
    expect(await envAs(a.teamUser)).toBe('user-own-value')
    expect(await envAs(a.teamAdmin)).toBe('admin-own-value')
    // The owner is a member without values of their own: no instance, 403.
    await expect(envAs(a.owner)).rejects.toThrow(/no instance for this user/)

    const pids = placed.map((instance) => instance.upstream!.pid!)
    expect((await call('DELETE', installationOf(a.team.id, own.id), a.teamAdmin)).statusCode).toBeLessThan(300)
    await waitFor(() => pids.every((pid) => !alive(pid)), 'both processes to end', CONVERGE_MS)
  }, CONVERGE_TEST_MS)

  it('stops the process when the installation is deleted', async () => {
    onTestFailed(() => console.error(lines.join('\n')))
    const [instance] = satellite.instancesOf(installation.id)
    const pid = instance!.upstream!.pid!
    const deleted = await call('DELETE', installationOf(a.team.id, installation.id), a.teamAdmin)
    expect(deleted.statusCode, deleted.body).toBeLessThan(300)
    await waitFor(() => satellite.instancesOf(installation.id).length === 0 && !alive(pid), 'the process to end', CONVERGE_MS)
    const token = await issueTokens(server.app, a.teamUser.cookie, 'mcp:read', { teamId: a.team.id, resource: `${satellite.url}/mcp` })
    expect(await statusWith(token.access_token)).toBe(404)
  }, CONVERGE_TEST_MS)

  it('restarts from its state folder without a registration token, as the same satellite', async () => {
    onTestFailed(() => console.error(lines.join('\n')))
    const id = satellite.id
    await satellite.stop()
    satellite = new Satellite(config(undefined), keptLogger(lines))
    await satellite.start()
    expect(satellite.id).toBe(id)
    expect(lines.some((line) => line.includes(`resumed the pairing of satellite ${id}`))).toBe(true)
  })

  it('stops everything and forgets its pairing when an admin deletes it, from the first request the backend refuses', async () => {
    onTestFailed(() => console.error(lines.join('\n')))
    const again = await install(call, a.team.id, a.teamAdmin, { server_id: serverId, name: 'everything-last', values: { 'env:EVERYTHING_API_KEY': SECRET } })
    const instance = await waitFor(() => satellite.instancesOf(again.id).find((placed) => placed.phase === 'running'), 'the instance to run', CONVERGE_MS)
    const pid = instance.upstream!.pid!
    const { access_token: token } = await issueTokens(server.app, a.teamUser.cookie, 'mcp:read', { teamId: a.team.id, resource: `${satellite.url}/mcp` })
    const deleted = await call('DELETE', `/api/satellites/${satellite.id}`, admin)
    expect(deleted.statusCode, deleted.body).toBeLessThan(300)
    const started = Date.now()
    // A client's request: checking its token with the satellite's key is refused (401), and the
    // satellite learns from it that its pairing is gone. Without any request it learns at its
    // next heartbeat or poll.
    const refused = await fetch(`${satellite.url}/mcp/${again.id}`, {
      method: 'POST',
      headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
      body: JSON.stringify({ jsonrpc: '2.0', id: 0, method: 'initialize', params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'e2e', version: '1' } } }),
    }).then((response) => response.status, () => 'closed')
    expect([503, 'closed']).toContain(refused)
    const reason = await Promise.race([satellite.ended, new Promise((resolve) => setTimeout(() => resolve('still running'), CONVERGE_MS))])
    console.info(`${dialect}: the deleted satellite stopped ${Date.now() - started} ms after its deletion`)
    expect(reason).toBeInstanceOf(Error)
    expect(alive(pid)).toBe(false)
    expect(() => statSync(join(stateDir, 'satellite.json'))).toThrow()
    expect(lines.some((line) => line.includes("the backend no longer knows this satellite's key"))).toBe(true)
  }, CONVERGE_TEST_MS)
})
