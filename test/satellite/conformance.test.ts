/**
 * The official MCP conformance suite (its server scenarios) against one MCP server, three ways:
 * directly over streamable HTTP, and through the reference satellite, once as a remote
 * installation of that HTTP server and once as a package installation of the same server run
 * over stdio in the satellite's sandbox. What an MCP client can do with the server directly, it
 * can do through the satellite, so each scenario must conclude through the satellite what it
 * concludes directly, check by check.
 *
 * The server is test/fixtures/packages/node_modules/@service-fixtures/conformance-server, an
 * installed npm package as the satellite finds one. The satellite is a team's own (a remote
 * target on loopback needs no operator's allowance there), paired with a real backend that
 * issues the member's token for the satellite's resource. The suite cannot send a token, so it
 * reaches the satellite through a loopback forwarder that adds one and changes nothing else.
 *
 * The database only holds the team, the catalogue entry and the installations here, so this file
 * runs on SQLite alone: each run of the suite costs a Node 22 process and several seconds.
 */
import { spawn, type ChildProcess } from 'node:child_process'
import { mkdtempSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { dirname, join } from 'node:path'
import { createInterface } from 'node:readline'
import { fileURLToPath } from 'node:url'
import { afterAll, beforeAll, describe, expect, it, onTestFailed } from 'vitest'
import type { SatelliteConfig } from '../../examples/satellite/src/config.js'
import type { Logger } from '../../examples/satellite/src/logger.js'
import { Satellite } from '../../examples/satellite/src/satellite.js'
import { createTestContext, type TestContext } from '../helpers/app.js'
import { checksWith, differences, runServerScenarios, type Results } from '../helpers/conformance.js'
import { importDocuments, install } from '../helpers/installations.js'
import { issueTokens } from '../helpers/oauth.js'
import { startOAuthServer, type OAuthServer } from '../helpers/oauth-e2e.js'
import { ensureRuntimes } from '../helpers/runtimes.js'
import { createToken } from '../helpers/satellites.js'
import { client, crew as makeCrew, signUp, type Call, type Crew } from '../helpers/teams.js'
import { startBearerForwarder, type Forwarder } from './bearer-forwarder.js'
import { waitFor } from './support.js'

const PACKAGES = join(dirname(fileURLToPath(import.meta.url)), '..', 'fixtures', 'packages')
const FIXTURE = '@service-fixtures/conformance-server'
const FIXTURE_BIN = join(PACKAGES, 'node_modules', FIXTURE, 'server.js')
/** Installing the runtimes on a fresh clone downloads two Node binaries. */
const SETUP_MS = 10 * 60_000
const SUITE_MS = 150_000

/**
 * What only a server speaking HTTP itself can show: ending a response stream mid-call for the
 * client to resume it. A server over stdio has no stream to end, so through a package
 * installation the scenario may find the answer on the stream it opened (and say so, INFO).
 */
const STDIO_ALLOWED = ['server-sse-polling › server-sse-disconnect-resume']

/** The fixture over HTTP on a free loopback port; resolves with its MCP URL. */
async function startFixture(): Promise<{ url: string; process: ChildProcess }> {
  const child = spawn(process.execPath, [FIXTURE_BIN, 'http', '--port', '0'], { stdio: ['ignore', 'pipe', 'inherit'] })
  // Should the test process end without its afterAll, the server ends with it.
  process.once('exit', () => child.kill())
  const url = await new Promise<string>((resolve, reject) => {
    const lines = createInterface({ input: child.stdout! })
    lines.on('line', (line) => {
      const match = /^listening on (\S+)$/.exec(line)
      if (match !== null) resolve(match[1]!)
    })
    child.once('exit', (code, signal) => reject(new Error(`the fixture server ended before listening (${signal ?? code})`)))
    child.once('error', reject)
  })
  return { url, process: child }
}

function conformanceDocument(remoteUrl: string): Record<string, unknown> {
  return {
    $schema: 'https://static.modelcontextprotocol.io/schemas/2025-12-11/server.schema.json',
    name: 'io.github.service-fixtures/conformance-server',
    description: 'Every feature the MCP conformance suite checks a server for.',
    version: '1.0.0',
    packages: [{ registryType: 'npm', identifier: FIXTURE, version: '1.0.0', runtimeHint: 'npx', transport: { type: 'stdio' } }],
    remotes: [{ type: 'streamable-http', url: remoteUrl }],
  }
}

describe('the MCP conformance suite', () => {
  let fixture: { url: string; process: ChildProcess } | undefined
  let direct: Promise<Results>

  beforeAll(async () => {
    await ensureRuntimes()
    fixture = await startFixture()
    direct = runServerScenarios(fixture.url, { timeoutMs: SUITE_MS })
    // Awaited by the tests; meanwhile nobody may find it unhandled.
    direct.catch(() => undefined)
  }, SETUP_MS)

  afterAll(() => {
    fixture?.process.kill()
  })

  it('passes every server scenario against the fixture server directly', async () => {
    const results = await direct
    const warnings = checksWith(results, 'WARNING')
    if (warnings.length > 0) console.warn(`conformance warnings, directly:\n${warnings.join('\n')}`)
    expect(checksWith(results, 'FAILURE'), 'failed checks').toEqual([])
    // Every check of the SSE scenarios concluded something: nothing was skipped for lack of a stream.
    expect(checksWith(results, 'SUCCESS').filter((line) => line.startsWith('server-sse-polling')).map((line) => line.split(':')[0])).toEqual([
      'server-sse-polling › server-sse-priming-event',
      'server-sse-polling › server-sse-retry-field',
      'server-sse-polling › server-sse-disconnect-resume',
    ])
  }, SUITE_MS)

  describe('through the reference satellite', () => {
    let ctx: TestContext
    let server: OAuthServer
    let call: Call
    let a: Crew
    let satellite: Satellite
    const forwarders: Forwarder[] = []
    const through = new Map<'remote' | 'package', Promise<Results>>()
    const lines: string[] = []
    const logger: Logger = { info: (m) => void lines.push(`info ${m}`), warn: (m) => void lines.push(`warn ${m}`), error: (m) => void lines.push(`error ${m}`) }

    beforeAll(async () => {
      ctx = await createTestContext('sqlite')
      server = await startOAuthServer(ctx)
      call = client(server.app)
      const admin = await signUp(server.app, 'conformance_admin')
      let seq = 0
      a = await makeCrew(call, () => signUp(server.app, `conformance_${++seq}`), 'Conformance Team')
      const [serverId] = await importDocuments(call, admin, [conformanceDocument(fixture!.url)])
      const config: SatelliteConfig = {
        backendUrl: server.base, registrationToken: (await createToken(call, a.teamAdmin, { teamId: a.team.id })).token, name: 'conformance-satellite',
        host: '127.0.0.1', port: 0, satelliteUrl: undefined, stateDir: join(mkdtempSync(join(tmpdir(), 'sat-conformance-')), 'state'),
        packageDirs: [PACKAGES], startTimeoutMs: 15_000, egressAllowedHosts: [],
      }
      satellite = new Satellite(config, logger)
      await satellite.start()
      const installed = {
        remote: await install(call, a.team.id, a.teamAdmin, { server_id: serverId, name: 'conformance-remote', target: { kind: 'remote', index: 0 }, satellite_id: satellite.id }),
        package: await install(call, a.team.id, a.teamAdmin, { server_id: serverId, name: 'conformance-package', target: { kind: 'package', index: 0 }, satellite_id: satellite.id }),
      }
      const { access_token: token } = await issueTokens(server.app, a.teamUser.cookie, 'mcp:read', { teamId: a.team.id, resource: `${satellite.url}/mcp` })
      for (const kind of ['remote', 'package'] as const) {
        const { id } = installed[kind]
        const instance = await waitFor(() => satellite.instancesOf(id).find((placed) => placed.phase === 'running' || placed.phase === 'failed'), `the ${kind} installation to run`, 35_000)
        if (instance.phase !== 'running') throw new Error(`the ${kind} installation failed: ${instance.message}\n${lines.join('\n')}`)
        const forwarder = await startBearerForwarder(satellite.url, token)
        forwarders.push(forwarder)
        const results = runServerScenarios(`${forwarder.base}/mcp/${id}`, { timeoutMs: SUITE_MS })
        results.catch(() => undefined)
        through.set(kind, results)
      }
    }, 60_000)

    afterAll(async () => {
      await Promise.allSettled([...through.values()])
      await Promise.all(forwarders.map((forwarder) => forwarder.close()))
      await satellite?.stop()
      await server?.app.close()
      await ctx?.close()
    })

    it.each([
      ['remote', 'a remote installation of the server over streamable HTTP', []],
      ['package', 'a package installation of the server over stdio, in the sandbox', STDIO_ALLOWED],
    ] as const)('every scenario concludes through the satellite, for %s, what it concludes directly (%s)', async (kind, _what, allowed) => {
      onTestFailed(() => console.error(lines.join('\n')))
      const [expected, actual] = await Promise.all([direct, through.get(kind)!])
      const warnings = checksWith(actual, 'WARNING')
      if (warnings.length > 0) console.warn(`conformance warnings through the satellite (${kind}):\n${warnings.join('\n')}`)
      const found = differences(expected, actual, allowed)
      expect(found, `checks that conclude otherwise through the satellite (${kind}) than directly:\n${found.join('\n')}\n`).toEqual([])
      expect(checksWith(actual, 'FAILURE'), 'failed checks').toEqual([])
    }, SUITE_MS)
  })
})
