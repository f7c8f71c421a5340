/**
 * What one instance can reach of another and of the satellite, with real processes: two
 * instances of a probe server (test/fixtures/satellite/mcp-probe, the official SDK over stdio,
 * installed in a package folder as an operator would) run through the instance runner, and B
 * tries, with its tools, what a hostile server would: read A's environment through /proc, A's
 * files, the satellite's pairing file, write over the system, open connections. Then the
 * launches the satellite refuses before anything runs (loader variables, a `file:` version,
 * npx options), a satellite without bubblewrap, and one whose operator chose ISOLATION=none.
 */
import { createServer, type Server } from 'node:net'
import { chmodSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { ChildTransport } from '../../examples/satellite/src/child-transport.js'
import { ManagedInstance } from '../../examples/satellite/src/instance.js'
import { defaultIsolationSettings, Isolation, type IsolationSettings } from '../../examples/satellite/src/isolation.js'
import { SatelliteKeys } from '../../examples/satellite/src/sealing.js'
import type { Instance, PackageLaunch } from '../../examples/satellite/src/types.js'
import { alive, descendants, recordingHooks, sealTo, waitFor, type Recorded } from './support.js'

const FIXTURE = join(dirname(fileURLToPath(import.meta.url)), '..', 'fixtures', 'satellite', 'mcp-probe')
const SECRET_A = 'sk-live-instance-a-7c1d9e'

type Answer = { ok: boolean; error?: string; text?: string; entries?: string[]; env?: Record<string, string>; pid?: number; uid?: number; cwd?: string }

/** What a probe tool answered. */
async function probe(instance: ManagedInstance, tool: string, args: Record<string, unknown> = {}): Promise<Answer> {
  const result = await instance.upstream!.client.callTool({ name: tool, arguments: args })
  return JSON.parse((result.content as Array<{ text: string }>)[0]!.text) as Answer
}

/** The host pid of the probe server itself (not bubblewrap around it). */
function serverPid(instance: ManagedInstance): number {
  const pid = [instance.upstream!.pid!, ...descendants(instance.upstream!.pid!)].find((candidate) => {
    try {
      const [program, script] = readFileSync(`/proc/${candidate}/cmdline`, 'utf8').split('\0')
      return program === process.execPath && script!.endsWith('mcp-probe/server.js')
    } catch {
      return false
    }
  })
  if (pid === undefined) throw new Error('the probe server process was not found')
  return pid
}

describe('reference satellite: each instance in its own sandbox', () => {
  let root: string
  let packageDir: string
  let stateDir: string
  /** A state folder inside a folder the sandbox shows (the probe package's own), to be covered. */
  let coveredState: string
  let keys: SatelliteKeys
  let isolation: Isolation
  let a: ManagedInstance
  let b: ManagedInstance
  let recorded: Recorded
  let listener: Server
  let port: number
  const started: ManagedInstance[] = []
  let sequence = 0

  const probeInstance = (overrides: Partial<Instance> = {}, launch: Partial<PackageLaunch> = {}): Instance => {
    sequence += 1
    const installationId = `sandbox-${process.pid}-${sequence}`
    return {
      instance_id: `${installationId}:team`, installation_id: installationId, team_id: 'team-a', user_id: null, name: 'probe',
      endpoint_path: `/mcp/${installationId}`, desired: 'running', spec_hash: 'spec-1', restart_generation: 0,
      launch: { kind: 'package', registry_type: 'npm', identifier: 'mcp-probe', version: '1.0.0', runtime_hint: 'npx', runtime_args: [], package_args: [], env: {}, transport: { type: 'stdio' }, ...launch },
      secrets: [], disabled_tools: [], ...overrides,
    }
  }

  const run = async (spec: Instance, with_: { isolation?: Isolation; hooks?: Recorded } = {}): Promise<ManagedInstance> => {
    const instance = new ManagedInstance(spec, { keys, isolation: with_.isolation ?? isolation, packageDirs: [packageDir], startTimeoutMs: 15_000, hooks: (with_.hooks ?? recorded).hooks })
    started.push(instance)
    instance.update(spec)
    await waitFor(() => instance.phase === 'running' || instance.phase === 'failed', 'the instance to start or fail', 15_000)
    return instance
  }

  /** An instance the satellite must refuse: failed with a reason, and nothing was started for it. */
  const refused = async (spec: Instance, options: { isolation?: Isolation } = {}): Promise<{ instance: ManagedInstance; message: string; hooks: Recorded }> => {
    const hooks = recordingHooks()
    const instance = await run(spec, { ...options, hooks })
    expect(instance.phase).toBe('failed')
    expect(instance.upstream).toBeUndefined()
    expect(hooks.logs.some((line) => line.stream === 'event' && line.text.startsWith('starting '))).toBe(false)
    return { instance, message: instance.message!, hooks }
  }

  beforeAll(async () => {
    root = mkdtempSync(join(tmpdir(), 'sat-sandbox-'))
    // An installed package, as `npm install` or a link leaves it: the satellite finds it in node_modules.
    packageDir = join(root, 'app')
    mkdirSync(join(packageDir, 'node_modules'), { recursive: true })
    symlinkSync(FIXTURE, join(packageDir, 'node_modules', 'mcp-probe'))
    stateDir = join(root, 'state')
    mkdirSync(stateDir, { mode: 0o700 })
    writeFileSync(join(stateDir, 'satellite.json'), JSON.stringify({ api_key: 'sat-api-key-visible?', private_key: 'private-key-visible?' }), { mode: 0o600 })
    coveredState = mkdtempSync(join(FIXTURE, 'state-'))
    writeFileSync(join(coveredState, 'satellite.json'), '{"api_key":"covered-key-visible?"}', { mode: 0o600 })
    keys = await SatelliteKeys.generate()
    recorded = recordingHooks()
    isolation = await Isolation.start({ ...defaultIsolationSettings(), hidden: [stateDir, coveredState] })
    expect(isolation.problem).toBeUndefined()
    listener = createServer((socket) => socket.on('error', () => undefined).end('hello'))
    await new Promise<void>((resolve) => listener.listen(0, '127.0.0.1', resolve))
    port = (listener.address() as { port: number }).port

    const specA = probeInstance({ secrets: [] }, { env: { PLAIN_A: 'a' } })
    specA.secrets = [{ target: 'env:A_SECRET', sealed: await sealTo(keys.publicKey, specA.instance_id, 'env:A_SECRET', SECRET_A) }]
    a = await run(specA)
    b = await run(probeInstance())
    expect([a.phase, b.phase]).toEqual(['running', 'running'])
  }, 60_000)

  afterAll(async () => {
    const pids = started.flatMap((instance) => (instance.upstream?.pid === undefined ? [] : [instance.upstream.pid]))
    await Promise.all(started.map((instance) => instance.remove()))
    for (const pid of pids) if (alive(pid)) process.kill(pid, 'SIGKILL')
    await isolation?.close()
    listener?.close()
    if (coveredState !== undefined) rmSync(coveredState, { recursive: true, force: true })
    if (root !== undefined) rmSync(root, { recursive: true, force: true })
  })

  it('B cannot read A\'s environment, by its host pid or any other, and sees no process but its own', async () => {
    const hostPidA = serverPid(a)
    // The satellite itself can (it is A's parent's parent), so the secret is really there.
    expect(readFileSync(`/proc/${hostPidA}/environ`, 'utf8')).toContain(SECRET_A)

    const seen = await probe(b, 'list_dir', { path: '/proc' })
    const pids = seen.entries!.filter((entry) => /^\d+$/.test(entry)).map(Number)
    // Its own PID namespace: bubblewrap's reaper (1) and the server, nothing of the host.
    expect(pids.length).toBeLessThanOrEqual(3)
    expect(pids).not.toContain(hostPidA)
    expect(pids).not.toContain(process.pid)
    expect(await probe(b, 'proc_environ', { pid: hostPidA })).toMatchObject({ ok: false })
    expect(await probe(b, 'proc_environ', { pid: process.pid })).toMatchObject({ ok: false })
    for (const pid of pids) {
      const environ = await probe(b, 'proc_environ', { pid })
      expect(environ.text ?? '').not.toContain(SECRET_A)
    }
    // A's own view: the secret, its own variables, the satellite's HOME and caches, nothing else.
    const own = await probe(a, 'env')
    expect(own.env).toMatchObject({ A_SECRET: SECRET_A, PLAIN_A: 'a', HOME: '/home/mcp', npm_config_cache: '/home/mcp/.npm', UV_CACHE_DIR: '/home/mcp/.cache/uv', XDG_CACHE_HOME: '/home/mcp/.cache' })
    const allowed = ['A_SECRET', 'PLAIN_A', 'HOME', 'PATH', 'PWD', 'LANG', 'TERM', 'UV_CACHE_DIR', 'XDG_CACHE_HOME', 'npm_config_cache']
    expect(Object.keys(own.env!).filter((key) => !allowed.includes(key))).toEqual([])
    expect(own.uid).toBe(65534)
    expect(own.cwd).toBe('/home/mcp')
  })

  it('runs as an unprivileged user on the host too, under the resource limits', async () => {
    const status = readFileSync(`/proc/${serverPid(a)}/status`, 'utf8')
    const uid = /^Uid:\s+(\d+)/m.exec(status)![1]
    expect(Number(uid)).toBe(process.getuid?.() === 0 ? 65534 : process.getuid?.())
    const limits = (await probe(a, 'read_file', { path: '/proc/self/limits' })).text!
    expect(limits).toMatch(/Max open files\s+1024\s+1024/)
    expect(limits).toMatch(/Max processes\s+256\s+256/)
    expect(limits).toMatch(/Max core file size\s+0\s+0/)
    expect(limits).toMatch(new RegExp(`Max data size\\s+${2048 * 1024 * 1024}\\s+${2048 * 1024 * 1024}`))
    expect(limits).toMatch(new RegExp(`Max file size\\s+${1024 * 1024 * 1024}\\s+${1024 * 1024 * 1024}`))
  })

  it('a file A writes to its HOME is kept in its private folder, which B cannot reach by any path; nor the satellite\'s state', async () => {
    expect(await probe(a, 'write_file', { path: '/home/mcp/notes.txt', text: 'only for A' })).toEqual({ ok: true })
    const onHost = join(isolation.homeOf(a.id), 'notes.txt')
    expect(readFileSync(onHost, 'utf8')).toBe('only for A')

    expect(await probe(b, 'read_file', { path: '/home/mcp/notes.txt' })).toMatchObject({ ok: false, error: 'ENOENT' })
    expect(await probe(b, 'read_file', { path: onHost })).toMatchObject({ ok: false })
    expect(await probe(b, 'list_dir', { path: dirname(isolation.homeOf(a.id)) })).toMatchObject({ ok: false })
    expect(await probe(b, 'read_file', { path: join(stateDir, 'satellite.json') })).toMatchObject({ ok: false })
    // A state folder inside something the sandbox shows (here the package's own folder) is covered by an empty one.
    expect(existsSync(join(FIXTURE, 'server.js'))).toBe(true)
    expect((await probe(b, 'read_file', { path: join(FIXTURE, 'server.js') })).ok).toBe(true)
    expect(await probe(b, 'read_file', { path: join(coveredState, 'satellite.json') })).toMatchObject({ ok: false })
    expect(await probe(b, 'list_dir', { path: coveredState })).toEqual({ ok: true, entries: [] })
  })

  it('the system and the package are read-only; /tmp is its own', async () => {
    for (const path of ['/usr/sandbox-test', '/etc/sandbox-test', '/sandbox-test', join(FIXTURE, 'sandbox-test')]) {
      expect(await probe(b, 'write_file', { path, text: 'x' }), path).toMatchObject({ ok: false })
    }
    expect(existsSync(join(FIXTURE, 'sandbox-test'))).toBe(false)
    expect(await probe(a, 'write_file', { path: '/tmp/a-only', text: 'x' })).toEqual({ ok: true })
    expect(await probe(b, 'read_file', { path: '/tmp/a-only' })).toMatchObject({ ok: false, error: 'ENOENT' })
    expect(existsSync('/tmp/a-only')).toBe(false)
  })

  it('network "none": no connection even to the host\'s loopback; "full": connects', async () => {
    expect(await probe(a, 'connect', { host: '127.0.0.1', port })).toEqual({ ok: true })
    const cut = await run(probeInstance({ network: 'none' }))
    expect(cut.phase).toBe('running')
    expect(await probe(cut, 'connect', { host: '127.0.0.1', port })).toMatchObject({ ok: false })
  })

  it('refuses NODE_OPTIONS in launch.env or as an env: secret: failed with the reason, and the injected code never ran', async () => {
    const code = "import('node:fs').then((fs) => fs.writeFileSync(process.env.HOME + '/injected', 'ran'))"
    const injected = `--import=data:text/javascript,${encodeURIComponent(code)}`
    const inEnv = probeInstance({}, { env: { NODE_OPTIONS: injected } })
    const first = await refused(inEnv)
    expect(first.message).toMatch(/NODE_OPTIONS changes how the runtime loads code/)
    expect(existsSync(join(isolation.homeOf(inEnv.instance_id), 'injected'))).toBe(false)

    const asSecret = probeInstance()
    asSecret.secrets = [{ target: 'env:node_options', sealed: await sealTo(keys.publicKey, asSecret.instance_id, 'env:node_options', injected) }]
    const second = await refused(asSecret)
    expect(second.message).toMatch(/node_options changes how the runtime loads code/)
    expect(second.message).not.toContain('data:text')
    expect(existsSync(join(isolation.homeOf(asSecret.instance_id), 'injected'))).toBe(false)

    const ld = await refused(probeInstance({}, { env: { LD_PRELOAD: '/home/mcp/evil.so' } }))
    expect(ld.message).toMatch(/LD_PRELOAD/)
  })

  it('refuses a version that is not a version (file:), npx options outside the allow-list, and containers', async () => {
    const local = await refused(probeInstance({}, { version: 'file:/tmp/x' }))
    expect(local.message).toBe('the version "file:/tmp/x" is not a valid npm version')
    for (const version of ['github:acme/evil', 'npm:other@1', 'https://example.com/x.tgz', 'latest/../x']) {
      expect((await refused(probeInstance({}, { version }))).message).toMatch(/is not a valid npm version/)
    }
    const option = await refused(probeInstance({}, { runtime_args: ['--node-options=--require=/home/mcp/x.js'] }))
    expect(option.message).toBe('the runtime argument "--node-options=--require=/home/mcp/x.js" is not one this satellite passes to npm packages')
    const secretOption = probeInstance({}, { runtime_args: [{ secret: 'arg:opt' }] })
    secretOption.secrets = [{ target: 'arg:opt', sealed: await sealTo(keys.publicKey, secretOption.instance_id, 'arg:opt', '--prefix=/x') }]
    expect((await refused(secretOption)).message).toMatch(/runtime argument arg:opt is a secret/)
    // docker in a sandbox would need the host's docker socket: no containers here.
    const image = await refused(probeInstance({}, { registry_type: 'oci', identifier: 'ghcr.io/acme/weather', version: '2.0.0' }))
    expect(image.message).toMatch(/runs no containers/)
  })

  it('without a working bubblewrap it refuses every instance with the reason, and never runs one bare', async () => {
    const broken = await Isolation.start({ ...defaultIsolationSettings(), bwrapPath: '/nonexistent/bwrap' })
    try {
      expect(broken.problem).toBe('no sandbox: bubblewrap could not start (/nonexistent/bwrap was not found); install bubblewrap or set ISOLATION=none')
      expect(broken.enforced).toBe('none')
      expect(broken.runtimes).toEqual([])
      const marker = join(root, 'ran-without-sandbox')
      const { message } = await refused(probeInstance({}, { package_args: ['--marker', marker] }), { isolation: broken })
      expect(message).toBe(broken.problem)
      expect(existsSync(marker)).toBe(false)
    } finally {
      await broken.close()
    }
  })

  it('ISOLATION=none runs it bare, with its own HOME and caches, and says so', async () => {
    const bare = await Isolation.start({ ...defaultIsolationSettings(), mode: 'none' })
    try {
      expect(bare.problem).toBeUndefined()
      expect(bare.enforced).toBe('none')
      expect(bare.runtimes).toContain('node')
      const marker = join(root, 'ran-bare')
      const hooks = recordingHooks()
      const instance = await run(probeInstance({}, { package_args: ['--marker', marker] }), { isolation: bare, hooks })
      expect(instance.phase).toBe('running')
      expect(existsSync(marker)).toBe(true)
      const seen = await probe(instance, 'env')
      expect(seen.pid).toBe(instance.upstream!.pid)
      expect(seen.env).toMatchObject({ HOME: bare.homeOf(instance.id), npm_config_cache: join(bare.homeOf(instance.id), '.npm') })
      expect(hooks.logs.some((line) => line.text.includes('not sandboxed (ISOLATION=none)'))).toBe(true)
      // It cannot honour network "none" bare, so it refuses it.
      const { message } = await refused(probeInstance({ network: 'none' }), { isolation: bare })
      expect(message).toMatch(/network "none" needs the process sandbox/)
      await instance.remove()
      expect(existsSync(bare.homeOf(instance.id))).toBe(false)
    } finally {
      await bare.close()
    }
  })

  it("a package installed under the host's /tmp is shown to its sandbox: its own /tmp does not hide it", async () => {
    const folder = mkdtempSync(join(tmpdir(), 'sat-installed-'))
    chmodSync(folder, 0o755)
    writeFileSync(join(folder, 'index.js'), "process.stdout.write('ran from ' + __dirname + '\\n')\n")
    const child = await isolation.child({
      command: process.execPath, args: [join(folder, 'index.js')], env: {}, runner: 'node', readOnly: [folder], description: 'a script under /tmp',
    }, `tmp-${process.pid}`, 'full')
    const lines: string[] = []
    const transport = new ChildTransport({ ...child, onLine: (_stream, text) => lines.push(text) })
    const ended = new Promise<void>((resolve) => (transport.onclose = resolve))
    await transport.start()
    await ended
    rmSync(folder, { recursive: true, force: true })
    expect(transport.exit).toEqual({ code: 0, signal: null })
    expect(lines).toContain(`ran from ${folder}`)
  })

  it('removing an instance removes its private folder', async () => {
    const home = isolation.homeOf(a.id)
    expect(existsSync(home)).toBe(true)
    const pid = a.upstream!.pid!
    await a.remove()
    expect(alive(pid)).toBe(false)
    expect(existsSync(home)).toBe(false)
  })
})
