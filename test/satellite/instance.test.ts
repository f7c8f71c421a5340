import { spawn } from 'node:child_process'
import { createRequire } from 'node:module'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { ChildTransport } from '../../examples/satellite/src/child-transport.js'
import { UNRESTRICTED } from '../../examples/satellite/src/egress.js'
import { ManagedInstance } from '../../examples/satellite/src/instance.js'
import { Isolation } from '../../examples/satellite/src/isolation.js'
import { LaunchError, findLocalPackage, packageCommand, remoteTarget } from '../../examples/satellite/src/launch.js'
import { SatelliteKeys } from '../../examples/satellite/src/sealing.js'
import type { Instance, PackageLaunch } from '../../examples/satellite/src/types.js'
import { freePort } from '../helpers/oauth-e2e.js'
import { EVERYTHING, EVERYTHING_VERSION, alive, everythingInstance, recordingHooks, sealTo, waitFor, type Recorded } from './support.js'

const EVERYTHING_BIN = createRequire(import.meta.url).resolve(`${EVERYTHING}/dist/index.js`)

/** The environment a server sees, through its `get-env` tool (it answers with JSON of process.env). */
async function envOf(instance: ManagedInstance): Promise<Record<string, string>> {
  const result = await instance.upstream!.client.callTool({ name: 'get-env', arguments: {} })
  const content = result.content as Array<{ type: string; text: string }>
  return JSON.parse(content[0]!.text) as Record<string, string>
}

// The instances here run in the default sandbox; its temporary folder goes with this file.
afterAll(async () => (await Isolation.default()).close())

describe('reference satellite: launching packages', () => {
  const npm = (overrides: Partial<PackageLaunch> = {}): PackageLaunch => ({ ...(everythingInstance().launch as PackageLaunch), ...overrides })

  it('runs an npm package installed locally with node, argv only, secret argument slots filled', async () => {
    const secrets = new Map([['arg:token', 'tok en"; rm -rf /'], ['env:API_KEY', 'k-1']])
    const command = await packageCommand(npm({ package_args: ['stdio', '--token', { secret: 'arg:token' }], env: { MODE: 'demo' } }), secrets, { packageDirs: [process.cwd()] })
    expect(command.command).toBe(process.execPath)
    expect(command.args[0]).toMatch(/node_modules\/@modelcontextprotocol\/server-everything\/dist\/index\.js$/)
    // The value is one argv entry, as it was: no shell ever reads it.
    expect(command.args.slice(1)).toEqual(['stdio', '--token', 'tok en"; rm -rf /'])
    expect(command.env).toEqual({ MODE: 'demo', API_KEY: 'k-1' })
    expect(command.description).not.toContain('tok en')
  })

  it('falls back to npx for a version that is not installed, and to uvx and docker for other registries', async () => {
    const none = new Map<string, string>()
    const npx = await packageCommand(npm({ version: '0.0.1-absent', runtime_args: ['--quiet'] }), none, { packageDirs: [process.cwd()] })
    expect(npx).toMatchObject({ command: 'npx', args: ['--yes', '--quiet', '--', `${EVERYTHING}@0.0.1-absent`, 'stdio'] })
    expect(await findLocalPackage(EVERYTHING, '0.0.1-absent', [process.cwd()])).toBeUndefined()
    expect(await findLocalPackage(EVERYTHING, null, [process.cwd()])).toMatchObject({ version: EVERYTHING_VERSION })

    const uvx = await packageCommand(npm({ registry_type: 'pypi', identifier: 'mcp-server-time', version: '1.2.0', package_args: [] }), none, { packageDirs: [] })
    expect(uvx).toMatchObject({ command: 'uvx', args: ['mcp-server-time@1.2.0'] })

    const docker = await packageCommand(npm({ registry_type: 'oci', identifier: 'ghcr.io/acme/weather', version: '2.0.0', package_args: [], env: { REGION: 'eu' } }), new Map([['env:API_KEY', 'k']]), { packageDirs: [] })
    // Variables are named on the command line and valued in docker's environment only.
    expect(docker).toMatchObject({ command: 'docker', args: ['run', '--rm', '-i', '-e', 'REGION', '-e', 'API_KEY', '--', 'ghcr.io/acme/weather:2.0.0'], env: { REGION: 'eu', API_KEY: 'k' } })
  })

  it('refuses what it cannot run: a secret slot without a value, a non-stdio package, an unknown registry', async () => {
    const none = new Map<string, string>()
    await expect(packageCommand(npm({ package_args: [{ secret: 'arg:token' }] }), none, { packageDirs: [] })).rejects.toThrow(LaunchError)
    await expect(packageCommand(npm({ transport: { type: 'streamable-http', url: 'http://localhost:9/mcp' } }), none, { packageDirs: [] })).rejects.toThrow(/stdio only/)
    await expect(packageCommand(npm({ registry_type: 'nuget' }), none, { packageDirs: [] })).rejects.toThrow(/cannot run nuget/)
  })

  it('fills a remote URL variable (percent-encoded) and headers from secrets', () => {
    const target = remoteTarget(
      { kind: 'remote', url: 'https://api.example.com/{tenant}/mcp', transport: 'streamable-http', headers: { 'X-Plain': 'p' } },
      new Map([['urlvar:tenant', 'a/b c'], ['header:Authorization', 'Bearer s3']]),
    )
    expect(target).toEqual({ url: 'https://api.example.com/a%2Fb%20c/mcp', transport: 'streamable-http', headers: { 'X-Plain': 'p', Authorization: 'Bearer s3' } })
    expect(() => remoteTarget({ kind: 'remote', url: 'https://x.example/{tenant}', transport: 'sse', headers: {} }, new Map())).toThrow(/tenant/)
  })
})

/**
 * A real server (`@modelcontextprotocol/server-everything`, installed in the repository) run
 * through the instance runner over stdio: started, listed, called, restarted on a new spec or a
 * restart request, restarted after a crash, stopped.
 */
describe('reference satellite: running an instance', () => {
  let keys: SatelliteKeys
  let recorded: Recorded
  let instance: ManagedInstance
  let spec: Instance
  const SECRET = 'sk-live-everything-1f2e3d'
  const SECRET_2 = 'sk-live-everything-rotated-9a8b'
  const pids: number[] = []

  const options = () => ({ keys, packageDirs: [process.cwd()], startTimeoutMs: 15_000, hooks: recorded.hooks })
  const withSecret = async (base: Instance, value: string): Promise<Instance> => ({
    ...base,
    secrets: [{ target: 'env:EVERYTHING_API_KEY', sealed: await sealTo(keys.publicKey, base.instance_id, 'env:EVERYTHING_API_KEY', value) }],
  })
  const running = async (after?: number): Promise<number> => {
    const pid = await waitFor(() => instance.phase === 'running' && instance.upstream?.pid !== after && instance.upstream?.pid, 'the instance to run')
    pids.push(pid)
    return pid
  }

  beforeAll(async () => {
    keys = await SatelliteKeys.generate()
    recorded = recordingHooks()
    process.env.SATELLITE_OWN_SETTING = 'not-for-children'
    spec = await withSecret(everythingInstance({ launch: { ...(everythingInstance().launch as PackageLaunch), env: { EVERYTHING_MODE: 'plain' } } }), SECRET)
    instance = new ManagedInstance(spec, options())
  })

  afterAll(async () => {
    delete process.env.SATELLITE_OWN_SETTING
    await instance?.remove()
    for (const pid of pids) if (alive(pid)) process.kill(pid, 'SIGKILL')
  })

  it('starts it, lists its tools and reports them, and its environment holds the opened secret and launch.env, not the satellite\'s', async () => {
    const started = Date.now()
    instance.update(spec)
    const pid = await running()
    const elapsed = Date.now() - started
    expect(elapsed).toBeLessThan(10_000)
    expect(recorded.phases.map((p) => p.phase)).toEqual(['starting', 'running'])
    expect(instance.observed()).toMatchObject({ instance_id: spec.instance_id, spec_hash: 'spec-1', phase: 'running' })
    expect(instance.observed().started_at).toMatch(/^\d{4}-\d\d-\d\dT/)

    const reported = recorded.tools.get(spec.instance_id)!.map((tool) => tool.name)
    expect(reported).toEqual(expect.arrayContaining(['echo', 'get-env', 'get-sum']))
    expect(instance.upstream!.tools.map((tool) => tool.name)).toEqual(reported)

    const env = await envOf(instance)
    expect(env.EVERYTHING_API_KEY).toBe(SECRET)
    expect(env.EVERYTHING_MODE).toBe('plain')
    expect(env.PATH).toBe(process.env.PATH)
    expect(env.SATELLITE_OWN_SETTING).toBeUndefined()
    expect(alive(pid)).toBe(true)

    // The server's stderr came back as log lines, with the runner's own events.
    await waitFor(() => recorded.logs.some((line) => line.stream === 'stderr' && /Starting default \(STDIO\) server/.test(line.text)), 'the stderr banner')
    expect(recorded.logs.some((line) => line.stream === 'event' && line.text.startsWith(`starting ${EVERYTHING}@${EVERYTHING_VERSION}`))).toBe(true)
    expect(recorded.logs.some((line) => line.text.includes(SECRET))).toBe(false)
    console.info(`server-everything over stdio: running ${elapsed} ms after update, ${reported.length} tools`)
  })

  it('restarts on a new spec_hash with the new secret value, and on a grown restart_generation', async () => {
    const before = instance.upstream!.pid!
    spec = await withSecret({ ...spec, spec_hash: 'spec-2' }, SECRET_2)
    instance.update(spec)
    const second = await running(before)
    expect(alive(before)).toBe(false)
    expect((await envOf(instance)).EVERYTHING_API_KEY).toBe(SECRET_2)
    expect(instance.observed()).toMatchObject({ spec_hash: 'spec-2', phase: 'running' })

    // The same document again changes nothing.
    instance.update({ ...spec })
    await instance.settled()
    expect(instance.upstream!.pid).toBe(second)

    spec = { ...spec, restart_generation: 1 }
    instance.update(spec)
    const third = await running(second)
    expect(alive(second)).toBe(false)
    expect(third).not.toBe(second)
  })

  it('reports a crash as failed with the reason, then starts it again by itself', async () => {
    const before = instance.upstream!.pid!
    process.kill(before, 'SIGKILL')
    const failed = await waitFor(() => recorded.phases.findLast((p) => p.phase === 'failed'), 'the failure')
    expect(failed.message).toBe('the server process was ended by SIGKILL')
    await running(before)
    expect(recorded.logs.some((line) => line.stream === 'event' && /failed: the server process was ended by SIGKILL; next attempt in 1 s/.test(line.text))).toBe(true)
  })

  it('stops it when desired stopped (the process is gone), and starts it again when desired running', async () => {
    const pid = instance.upstream!.pid!
    instance.update({ ...spec, desired: 'stopped' })
    await instance.settled()
    expect(instance.phase).toBe('stopped')
    expect(instance.upstream).toBeUndefined()
    expect(alive(pid)).toBe(false)
    expect(instance.observed()).toEqual({ instance_id: spec.instance_id, spec_hash: spec.spec_hash, phase: 'stopped' })

    instance.update(spec)
    await running(pid)
  })

  it('fails without starting anything when a secret does not open, naming the target and never the value', async () => {
    const other = await SatelliteKeys.generate()
    const broken = everythingInstance({ spec_hash: 'spec-broken' })
    const sealedElsewhere = await sealTo(other.publicKey, broken.instance_id, 'env:EVERYTHING_API_KEY', SECRET)
    const own = recordingHooks()
    const failing = new ManagedInstance(broken, { ...options(), hooks: own.hooks })
    failing.update({ ...broken, secrets: [{ target: 'env:EVERYTHING_API_KEY', sealed: sealedElsewhere }] })
    await failing.settled()
    expect(failing.phase).toBe('failed')
    expect(failing.message).toMatch(/env:EVERYTHING_API_KEY could not be opened/)
    expect(failing.upstream).toBeUndefined()
    await failing.remove()
    expect(failing.phase).toBe('stopped')
  })

  it('a stop that arrives while the server starts abandons the start', async () => {
    const own = recordingHooks()
    const base = everythingInstance()
    const racing = new ManagedInstance(base, { ...options(), hooks: own.hooks })
    racing.update(base)
    await waitFor(() => racing.phase === 'starting', 'starting')
    await racing.remove()
    expect(racing.phase).toBe('stopped')
    expect(racing.upstream).toBeUndefined()
  })
})

describe('reference satellite: stopping and remote servers', () => {
  it('kills a server that ignores SIGTERM after the grace period, and what it started with it', async () => {
    // A server that ignores SIGTERM and has started a grandchild that would too.
    const script = `
      process.on('SIGTERM', () => {})
      const { spawn } = require('node:child_process')
      const grandchild = spawn(process.execPath, ['-e', "process.on('SIGTERM', () => {}); setInterval(() => {}, 1000)"], { stdio: 'ignore' })
      console.error('grandchild ' + grandchild.pid)
      setInterval(() => {}, 1000)`
    const lines: string[] = []
    const transport = new ChildTransport({ command: process.execPath, args: ['-e', script], env: { PATH: process.env.PATH ?? '' }, graceMs: 300, onLine: (_stream, text) => lines.push(text) })
    await transport.start()
    const grandchild = Number((await waitFor(() => lines.find((line) => line.startsWith('grandchild ')), 'the grandchild')).split(' ')[1])
    const started = Date.now()
    await transport.close()
    const took = Date.now() - started
    expect(transport.exit).toEqual({ code: null, signal: 'SIGKILL' })
    expect(took).toBeGreaterThanOrEqual(250)
    expect(took).toBeLessThan(3000)
    await waitFor(() => !alive(grandchild), 'the grandchild to end', 3000)
  })

  it('proxies a remote server over streamable HTTP, its URL variable filled from a secret', async () => {
    const port = await freePort()
    const remote = spawn(process.execPath, [EVERYTHING_BIN, 'streamableHttp'], { env: { PATH: process.env.PATH, PORT: String(port) }, stdio: ['ignore', 'ignore', 'pipe'] })
    try {
      let output = ''
      remote.stderr!.on('data', (chunk) => (output += chunk))
      await waitFor(() => output.includes(`listening on port ${port}`), 'the remote server')
      const keys = await SatelliteKeys.generate()
      const recorded = recordingHooks()
      const base = everythingInstance({ spec_hash: 'remote-1' })
      const spec: Instance = {
        ...base,
        launch: { kind: 'remote', url: `http://127.0.0.1:${port}/{path}`, transport: 'streamable-http', headers: { 'X-Client': 'satellite' } },
        secrets: [
          { target: 'urlvar:path', sealed: await sealTo(keys.publicKey, base.instance_id, 'urlvar:path', 'mcp') },
          { target: 'header:X-Api-Key', sealed: await sealTo(keys.publicKey, base.instance_id, 'header:X-Api-Key', 'remote-secret') },
        ],
      }
      // A team satellite's rule: the loopback server is reachable (egress.test.ts holds the shared satellite's).
      const instance = new ManagedInstance(spec, { keys, packageDirs: [], startTimeoutMs: 10_000, hooks: recorded.hooks, egress: UNRESTRICTED })
      instance.update(spec)
      await waitFor(() => instance.phase === 'running', 'the remote instance to run')
      expect(instance.upstream!.pid).toBeUndefined()
      expect(recorded.tools.get(spec.instance_id)!.map((tool) => tool.name)).toContain('echo')
      const echoed = await instance.upstream!.client.callTool({ name: 'echo', arguments: { message: 'over http' } })
      expect(JSON.stringify(echoed.content)).toContain('over http')
      expect(recorded.logs.some((line) => line.text === `connecting to http://127.0.0.1:${port} (streamable-http)`)).toBe(true)
      await instance.remove()
      expect(instance.phase).toBe('stopped')
    } finally {
      remote.kill('SIGKILL')
    }
  })
})
