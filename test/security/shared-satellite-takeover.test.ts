/**
 * The attack this test retells: anyone who signs up administers a team of their own, may define
 * a server in its catalogue and install it; a global satellite runs every team's instances. Once
 * that server loaded code of the attacker's choosing (`NODE_OPTIONS=--import=data:…`) and ran as
 * the same OS user as its neighbours, it read another team's secrets from `/proc/<pid>/environ`
 * and the satellite's pairing file (its API key and X25519 private key), and printed them into
 * its own installation's logs.
 *
 * Here, with a real backend listening on HTTP and the real reference satellite (global, sandboxed
 * as it is by default): a victim team runs server-everything with a secret on the global
 * satellite; a stranger signs up; the catalogue refuses every way of injecting code into a
 * launch; the stranger's own package (the probe fixture, which does what hostile code would)
 * does not go to the shared satellite by default, and once a global admin lets team servers run
 * on isolating global satellites, the probe runs there and finds nothing: no other process, no
 * neighbour's environment, no pairing file. The secret and the satellite's key are in nothing the
 * stranger receives, and the victim's server still runs with its secret.
 */
import { mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { Client } from '@modelcontextprotocol/sdk/client/index.js'
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js'
import type { LightMyRequestResponse } from 'fastify'
import { afterAll, beforeAll, describe, expect, it, onTestFailed } from 'vitest'
import type { Logger } from '../../examples/satellite/src/logger.js'
import { Satellite } from '../../examples/satellite/src/satellite.js'
import { createTestContext, type TestContext } from '../helpers/app.js'
import { DIALECTS } from '../helpers/database.js'
import { importDocuments, install, installationOf, installationsOf, type InstallationBody } from '../helpers/installations.js'
import { issueTokens } from '../helpers/oauth.js'
import { startOAuthServer, type OAuthServer } from '../helpers/oauth-e2e.js'
import { defaultTeamOf, TEAM_SERVERS_SETTING } from '../helpers/placement.js'
import { createToken } from '../helpers/satellites.js'
import { client, signUp, type Account, type Call } from '../helpers/teams.js'
import { alive, descendants, EVERYTHING, EVERYTHING_VERSION, waitFor } from '../satellite/support.js'

type Json = Record<string, unknown>

const PROBE = join(dirname(fileURLToPath(import.meta.url)), '..', 'fixtures', 'satellite', 'mcp-probe')
const SECRET = 'sk-live-victim-payroll-4e8a1c'
/**
 * A change of a satellite's desired state normally reaches it within a second (its held
 * long-poll is answered at once), at worst a long-poll or heartbeat (30 s) later.
 */
const CONVERGE_MS = 35_000
const STEP_MS = CONVERGE_MS + 15_000

/** The payload of the original attack: code that runs before the server, wherever NODE_OPTIONS is honoured. */
const INJECTED = `--import=data:text/javascript,${encodeURIComponent("import('node:fs').then((fs) => console.error(fs.readFileSync('/proc/1/environ', 'utf8')))")}`

/** What a probe tool answers: `{ok: true, ...}` or `{ok: false, error}`. */
type Answer = { ok: boolean; error?: string; text?: string; entries?: string[]; env?: Record<string, string>; pid?: number; uid?: number }

/** The catalogue entry the victim installs: server-everything over stdio, reading one secret variable. */
function everythingDocument(): Json {
  return {
    $schema: 'https://static.modelcontextprotocol.io/schemas/2025-12-11/server.schema.json',
    name: 'io.github.modelcontextprotocol/server-everything',
    description: 'Exercises every feature of MCP.',
    version: EVERYTHING_VERSION,
    packages: [{
      registryType: 'npm', identifier: EVERYTHING, version: EVERYTHING_VERSION, runtimeHint: 'npx', transport: { type: 'stdio' },
      packageArguments: [{ type: 'positional', valueHint: 'transport', value: 'stdio' }],
      environmentVariables: [{ name: 'EVERYTHING_API_KEY', description: 'The payroll key', isRequired: true, isSecret: true }],
    }],
  }
}

/** The attacker's package as a team's catalogue describes it (changed by `extra`). */
const probePackage = (extra: Json = {}): Json => ({ registry_type: 'npm', identifier: 'mcp-probe', version: '1.0.0', ...extra })

/** The host pid, at or below `root`, of the process whose environment holds `value`. */
function processHolding(root: number, value: string): number | undefined {
  return [root, ...descendants(root)].find((pid) => {
    try {
      return readFileSync(`/proc/${pid}/environ`, 'utf8').includes(value)
    } catch {
      return false
    }
  })
}

describe.each(DIALECTS)('a stranger against a shared satellite on %s', (dialect) => {
  let ctx: TestContext
  let server: OAuthServer
  let call: Call
  let root: string
  let stateDir: string
  let satellite: Satellite
  let admin: Account
  let victim: Account
  let victimTeam: string
  let victimInstallation: InstallationBody
  let victimPid: number
  let stranger: Account
  let strangerTeam: string
  let probeServerId: string
  let probeInstallation: InstallationBody
  let probeClient: Client
  /** The satellite's pairing as it keeps it: what the attack was after. */
  let pairing: { api_key: string; private_key: string }
  /** Every answer the stranger received, from the backend and from the satellite. */
  const received: string[] = []
  const clients: Client[] = []
  const lines: string[] = []
  const logger: Logger = { info: (m) => void lines.push(`info ${m}`), warn: (m) => void lines.push(`warn ${m}`), error: (m) => void lines.push(`error ${m}`) }

  /** The stranger's requests to the backend; their answers are kept. */
  const asStranger = async (method: 'GET' | 'POST' | 'PUT' | 'PATCH', url: string, payload?: unknown): Promise<LightMyRequestResponse> => {
    const response = await call(method, url, stranger, payload)
    received.push(response.body)
    return response
  }
  const refusedNaming = (response: LightMyRequestResponse, field: string) => {
    expect(response.statusCode, response.body).toBe(400)
    expect(response.json()).toMatchObject({ success: false, code: 'VALIDATION_ERROR' })
    expect(response.json().details.map((detail: { field: string }) => detail.field), response.body).toContain(field)
  }
  const view = async (teamId: string, id: string, as: Account): Promise<InstallationBody> => {
    const response = await call('GET', installationOf(teamId, id), as)
    expect(response.statusCode, response.body).toBe(200)
    if (as === stranger) received.push(response.body)
    return response.json().data.installation
  }
  /** An MCP client at the satellite's endpoint of `installationId`, with an access token of `user` for `teamId`. */
  const mcpClient = async (user: Account, teamId: string, installationId: string): Promise<Client> => {
    const tokens = await issueTokens(server.app, user.cookie, 'mcp:read', { teamId, resource: `${satellite.url}/mcp` })
    const mcp = new Client({ name: 'takeover-test', version: '1.0.0' })
    await mcp.connect(new StreamableHTTPClientTransport(new URL(`${satellite.url}/mcp/${installationId}`), { requestInit: { headers: { authorization: `Bearer ${tokens.access_token}` } } }))
    clients.push(mcp)
    return mcp
  }
  /** A tool of the attacker's code, called through the satellite; its answer is kept as received. */
  const probe = async (tool: string, args: Json = {}): Promise<Answer> => {
    const result = await probeClient.callTool({ name: tool, arguments: args })
    const text = (result.content as Array<{ text: string }>)[0]!.text
    received.push(text)
    return JSON.parse(text) as Answer
  }
  /** Every log line of the stranger's installation, as the stranger reads them. */
  const strangerLogs = async (): Promise<string> => {
    const pages: string[] = []
    for (let offset = 0; ; offset += 100) {
      const response = await asStranger('GET', `${installationOf(strangerTeam, probeInstallation.id)}/logs?limit=100&offset=${offset}`)
      expect(response.statusCode, response.body).toBe(200)
      pages.push(response.body)
      if (response.json().data.logs.length < 100) return pages.join('\n')
    }
  }

  beforeAll(async () => {
    ctx = await createTestContext(dialect)
    server = await startOAuthServer(ctx)
    call = client(server.app)
    admin = await signUp(server.app, `takeover_${dialect}_admin`) // the first sign-up: global admin
    root = mkdtempSync(join(tmpdir(), 'takeover-'))
    // The satellite's operator installed packages in a folder (PACKAGE_DIRS), as `npm install`
    // leaves them: the attacker's package among them, as if published and installed by name.
    const packageDir = join(root, 'app')
    mkdirSync(join(packageDir, 'node_modules'), { recursive: true })
    symlinkSync(PROBE, join(packageDir, 'node_modules', 'mcp-probe'))
    stateDir = join(root, 'state')
  }, 30_000)

  afterAll(async () => {
    await Promise.all(clients.map((mcp) => mcp.close().catch(() => undefined)))
    await satellite?.stop()
    await server?.app.close()
    await ctx?.close()
    if (root !== undefined) rmSync(root, { recursive: true, force: true })
  }, 30_000)

  it("a global admin pairs a global satellite that sandboxes its instances; a victim team's server runs there with its secret", async () => {
    onTestFailed(() => console.error(lines.join('\n')))
    const [everythingId] = (await importDocuments(call, admin, [everythingDocument()])) as [string]
    satellite = new Satellite({
      backendUrl: server.base, registrationToken: (await createToken(call, admin)).token, name: `takeover-${dialect}`, host: '127.0.0.1', port: 0,
      satelliteUrl: undefined, stateDir, packageDirs: [join(root, 'app'), process.cwd()], startTimeoutMs: 20_000, egressAllowedHosts: [],
    }, logger)
    await satellite.start()
    const shown = await waitFor(async () => {
      const body = (await call('GET', `/api/satellites/${satellite.id}`, admin)).json().data.satellite
      return body.status === 'active' && body
    }, 'the satellite to be active')
    expect(shown).toMatchObject({ satellite_type: 'global', team_id: null, isolation: 'process-sandbox' })
    pairing = JSON.parse(readFileSync(join(stateDir, 'satellite.json'), 'utf8')) as typeof pairing
    expect(pairing.api_key).toEqual(expect.any(String))

    victim = await signUp(server.app, `takeover_${dialect}_victim`)
    victimTeam = await defaultTeamOf(call, victim)
    victimInstallation = await install(call, victimTeam, victim, { server_id: everythingId, values: { 'env:EVERYTHING_API_KEY': SECRET } })
    expect(victimInstallation.satellite_id).toBe(satellite.id)
    const instance = await waitFor(() => satellite.instancesOf(victimInstallation.id).find((placed) => placed.phase === 'running'), 'the victim\'s server to run', CONVERGE_MS)
    // The secret is really in a process's environment on this host: what the attack read.
    victimPid = processHolding(instance.upstream!.pid!, SECRET)!
    expect(victimPid).toEqual(expect.any(Number))
    await waitFor(async () => (await view(victimTeam, victimInstallation.id, victim)).status === 'running', 'the victim\'s installation to read running', CONVERGE_MS)
  }, STEP_MS)

  it('anyone may sign up and administer a team; its catalogue refuses every server that changes how code is loaded, and stores nothing of it', async () => {
    stranger = await signUp(server.app, `takeover_${dialect}_stranger`) // registration is open
    strangerTeam = await defaultTeamOf(call, stranger) // and they are its team_admin
    const servers = `/api/teams/${strangerTeam}/mcp/servers`
    const visible = async () => (await asStranger('GET', '/api/mcp/servers?limit=100')).json().data.pagination.total as number
    const before = await visible()

    const attempts: Array<[string, Json, string]> = [
      ['NODE_OPTIONS', { environment_variables: [{ name: 'NODE_OPTIONS', default: INJECTED }] }, 'packages[0].environment_variables[0].name'],
      ['node_options, in another case', { environment_variables: [{ name: 'API_KEY' }, { name: 'node_options', default: INJECTED }] }, 'packages[0].environment_variables[1].name'],
      ['LD_PRELOAD', { environment_variables: [{ name: 'LD_PRELOAD', default: '/tmp/x.so' }] }, 'packages[0].environment_variables[0].name'],
      ['the registry spelling environmentVariables', { environmentVariables: [{ name: 'NODE_OPTIONS', value: INJECTED }] }, 'packages.0.environmentVariables'],
      ['a file: version', { version: 'file:/folder' }, 'packages[0].version'],
      ['runtime_args', { runtime_args: ['--node-options=--require=/tmp/x.js'] }, 'packages[0].runtime_args[0]'],
      ['the registry spelling runtimeArguments', { runtimeArguments: [{ type: 'named', name: '--node-options', value: '--require=/tmp/x.js' }] }, 'packages.0.runtimeArguments'],
    ]
    // The registry's camelCase spellings are not fields of this API: its request schema refuses them, naming them in dotted form.
    for (const [what, extra, field] of attempts) {
      const response = await asStranger('POST', servers, { name: `Helper ${what}`, packages: [probePackage(extra)] })
      expect(response.statusCode, `${what}: ${response.body}`).toBe(400)
      refusedNaming(response, field)
    }
    expect(await visible()).toBe(before)
  })

  it("the stranger's own package is accepted as a team server, but by default it does not go to the shared satellite", async () => {
    const servers = `/api/teams/${strangerTeam}/mcp/servers`
    const created = await asStranger('POST', servers, { name: 'Markdown Helper', description: 'Tidies notes.', packages: [probePackage()] })
    expect(created.statusCode, created.body).toBe(201)
    probeServerId = created.json().data.server.id
    const version = await asStranger('POST', `${servers}/${probeServerId}/versions`, { version: '1.0.0' })
    expect(version.statusCode, version.body).toBe(201)

    // Nor can it slip the injection in afterwards: by an edit, a new version, or an installation's value.
    const entry = async () => (await asStranger('GET', `/api/mcp/servers/${probeServerId}`)).json().data.server
    const versions = async () => (await asStranger('GET', `/api/mcp/servers/${probeServerId}/versions`)).json().data.pagination.total
    const [entryBefore, versionsBefore] = [await entry(), await versions()]
    refusedNaming(await asStranger('PUT', `${servers}/${probeServerId}`, { packages: [probePackage({ environment_variables: [{ name: 'NODE_OPTIONS', default: INJECTED }] })] }), 'packages[0].environment_variables[0].name')
    refusedNaming(await asStranger('POST', `${servers}/${probeServerId}/versions`, { version: '1.0.1', packages: [probePackage({ version: 'file:/folder' })] }), 'packages[0].version')
    refusedNaming(await asStranger('POST', `${servers}/${probeServerId}/versions`, { version: '1.0.2', packages: [probePackage({ runtime_args: ['--node-options=--require=/tmp/x.js'] })] }), 'packages[0].runtime_args[0]')
    expect(await entry()).toEqual(entryBefore)
    expect(await versions()).toBe(versionsBefore)
    const valued = await asStranger('POST', installationsOf(strangerTeam), { server_id: probeServerId, values: { 'env:NODE_OPTIONS': INJECTED } })
    expect(valued.statusCode, valued.body).toBe(400)
    expect((await asStranger('GET', installationsOf(strangerTeam))).json().data.installations).toEqual([])

    const installed = await asStranger('POST', installationsOf(strangerTeam), { server_id: probeServerId })
    expect(installed.statusCode, installed.body).toBe(201)
    probeInstallation = installed.json().data.installation
    expect(probeInstallation).toMatchObject({ satellite_id: null, status: 'pending', endpoint_url: null })
    expect(probeInstallation.status_reason).toMatch(/team-defined servers do not run on shared satellites/)
    // Naming the global satellite does not help either.
    refusedNaming(await asStranger('POST', installationsOf(strangerTeam), { server_id: probeServerId, satellite_id: satellite.id }), 'satellite_id')
    refusedNaming(await asStranger('PATCH', installationOf(strangerTeam, probeInstallation.id), { satellite_id: satellite.id }), 'satellite_id')
    expect(await view(strangerTeam, probeInstallation.id, stranger)).toMatchObject({ satellite_id: null, status: 'pending' })
    expect(satellite.instancesOf(probeInstallation.id)).toEqual([])
  })

  it('once a global admin lets team servers run on isolating global satellites, it runs there', async () => {
    onTestFailed(() => console.error(lines.join('\n')))
    const allowed = await call('PUT', `/api/settings/${TEAM_SERVERS_SETTING}`, admin, { value: true })
    expect(allowed.statusCode, allowed.body).toBe(200)
    expect((await call('GET', `/api/satellites/${satellite.id}`, admin)).json().data.satellite.isolation).toBe('process-sandbox')
    const running = await waitFor(async () => {
      const shown = await view(strangerTeam, probeInstallation.id, stranger)
      return shown.status === 'running' && shown
    }, 'the stranger\'s installation to run', CONVERGE_MS)
    expect(running.satellite_id).toBe(satellite.id)
    expect(satellite.instancesOf(probeInstallation.id).map((instance) => instance.phase)).toEqual(['running'])
    probeClient = await mcpClient(stranger, strangerTeam, probeInstallation.id)
    const tools = (await probeClient.listTools()).tools.map((tool) => tool.name)
    received.push(JSON.stringify(tools))
    expect(tools).toEqual(expect.arrayContaining(['read_file', 'list_dir', 'proc_environ', 'env']))
  }, STEP_MS)

  it("the attacker's code runs, and finds no other process, no neighbour's environment and no pairing file", async () => {
    onTestFailed(() => console.error(lines.join('\n')))
    // Its /proc shows its own sandbox only: bubblewrap's reaper and itself.
    const listed = await probe('list_dir', { path: '/proc' })
    expect(listed.ok).toBe(true)
    const pids = listed.entries!.filter((entry) => /^\d+$/.test(entry)).map(Number)
    expect(pids.length).toBeLessThanOrEqual(3)
    expect(pids).not.toContain(victimPid)
    expect(pids).not.toContain(process.pid)
    // The victim's server by its host pid: there is no such process where the probe looks.
    expect(await probe('proc_environ', { pid: victimPid })).toMatchObject({ ok: false, error: expect.any(String) })
    for (const pid of pids) expect((await probe('proc_environ', { pid })).text ?? '').not.toContain(SECRET)
    // The satellite's pairing file at its real path, and its folder.
    expect(await probe('read_file', { path: join(stateDir, 'satellite.json') })).toMatchObject({ ok: false, error: expect.any(String) })
    const folder = await probe('list_dir', { path: stateDir })
    expect(folder.entries ?? []).not.toContain('satellite.json')
    // Its own environment holds nothing of anyone else's.
    const own = await probe('env')
    expect(own.ok).toBe(true)
    expect(JSON.stringify(own.env)).not.toContain(SECRET)
    expect(JSON.stringify(own.env)).not.toContain(pairing.api_key)
  })

  it("nothing the stranger receives carries the victim's secret or the satellite's keys, and the victim's server still runs with its secret", async () => {
    onTestFailed(() => console.error(lines.join('\n')))
    // The stranger's token does not open the victim's endpoint.
    const { access_token: token } = await issueTokens(server.app, stranger.cookie, 'mcp:read', { teamId: strangerTeam, resource: `${satellite.url}/mcp` })
    const intrusion = await fetch(`${satellite.url}/mcp/${victimInstallation.id}`, {
      method: 'POST',
      headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
      body: JSON.stringify({ jsonrpc: '2.0', id: 0, method: 'initialize', params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'stranger', version: '1' } } }),
    })
    received.push(await intrusion.text())
    expect(intrusion.status).toBe(403)

    // Its installation's logs are there (the satellite reported the start), and hold none of it.
    const logs = await waitFor(async () => {
      const text = await strangerLogs()
      return text.includes('mcp-probe') && text
    }, 'the stranger\'s installation logs', CONVERGE_MS)
    for (const text of [logs, ...received]) {
      expect(text).not.toContain(SECRET)
      expect(text).not.toContain(pairing.api_key)
      expect(text).not.toContain(pairing.private_key)
    }

    const shown = await view(victimTeam, victimInstallation.id, victim)
    expect(shown).toMatchObject({ status: 'running', satellite_id: satellite.id })
    expect(alive(victimPid)).toBe(true)
    const mcp = await mcpClient(victim, victimTeam, victimInstallation.id)
    const result = await mcp.callTool({ name: 'get-env', arguments: {} })
    const env = JSON.parse((result.content as Array<{ text: string }>)[0]!.text) as Record<string, string>
    expect(env.EVERYTHING_API_KEY).toBe(SECRET)
  }, STEP_MS)
})
