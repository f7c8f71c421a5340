import { spawn, type ChildProcess } from 'node:child_process'
import { once } from 'node:events'
import { closeSync, existsSync, mkdtempSync, openSync, readFileSync, rmSync } from 'node:fs'
import { createRequire } from 'node:module'
import { createServer, type AddressInfo } from 'node:net'
import { tmpdir } from 'node:os'
import { delimiter, join } from 'node:path'
import { createInterface } from 'node:readline'
import { projectRoot } from '../src/paths.js'
import { start, stop, type Started } from './harness.js'
import { bearerToken, SECRET, signUp, startCommand } from './service.js'

/**
 * The platform the MCP path bench runs on, set up the way a team sets it up, through public
 * entry points only: the service as `npm start` runs it (SQLite in a temporary folder), a team
 * with an admin and a member, server-everything in the catalogue with a package target (stdio)
 * and a remote target (its streamable HTTP mode on loopback), the reference satellite as
 * `npm run satellite` runs it, paired with a team registration token, an installation of each
 * target placed on it, and the member's OAuth access token for the satellite's resource
 * (`mcp:read`, bound to the team at consent). Everything listens on 127.0.0.1 only, except
 * server-everything's HTTP mode, which binds every interface on its own; only loopback reaches it.
 */

const require = createRequire(import.meta.url)
export const EVERYTHING = '@modelcontextprotocol/server-everything'
const EVERYTHING_PACKAGE = require.resolve(`${EVERYTHING}/package.json`)
export const EVERYTHING_VERSION = (JSON.parse(readFileSync(EVERYTHING_PACKAGE, 'utf8')) as { version: string }).version
/** The server's own entry point, started with this Node: what `npx` would run, without npx. */
export const EVERYTHING_BIN = join(EVERYTHING_PACKAGE, '..', 'dist', 'index.js')
/** How long the satellite may take to pair, and an installation to read running. */
const SETTLE_MS = 120_000

export interface Platform {
  backendUrl: string
  satellite: { child: ChildProcess; url: string; id: string; isolation: string }
  /** The satellite's endpoint of each installation. */
  endpoints: { stdio: string; remote: string }
  /** The remote server the satellite's installation reaches, in its own process. */
  upstream: RemoteServer
  /** The member's access token for the satellite's resource. */
  token: string
  close(): Promise<void>
}

export interface RemoteServer {
  child: ChildProcess
  url: string
  /** MCP sessions the server opened so far (it logs each one), or undefined when its log never said. */
  sessions(): number | undefined
}

/** A port free right now on 127.0.0.1 (the system picks it; the probe closes before it is used). */
export async function freePort(): Promise<number> {
  const probe = createServer()
  await new Promise<void>((resolve, reject) => probe.once('error', reject).listen(0, '127.0.0.1', resolve))
  const { port } = probe.address() as AddressInfo
  await new Promise<void>((resolve) => probe.close(() => resolve()))
  return port
}

/** Every process this module started, killed when the bench ends however it ends. */
const started = new Set<ChildProcess>()
process.once('exit', () => {
  for (const child of started) child.kill('SIGKILL')
})

function track(child: ChildProcess): ChildProcess {
  started.add(child)
  child.once('exit', () => started.delete(child))
  return child
}

/** server-everything in its streamable HTTP mode, answering at `<url>`. */
export async function startRemoteServer(): Promise<RemoteServer> {
  const port = await freePort()
  const child = track(spawn(process.execPath, [EVERYTHING_BIN, 'streamableHttp'], { env: { PATH: process.env.PATH ?? '', PORT: String(port) }, stdio: ['ignore', 'pipe', 'ignore'] }))
  const url = `http://127.0.0.1:${port}/mcp`
  // It logs a line per request and one per new session: counted, so that the bench can say how
  // many upstream sessions the satellite opened for its clients' sessions.
  let opened: number | undefined
  createInterface({ input: child.stdout! }).on('line', (line) => {
    if (line.includes('Session initialized')) opened = (opened ?? 0) + 1
  })
  await until(async () => {
    if (child.exitCode !== null) throw new Error(`server-everything exited with ${child.exitCode}`)
    // Any HTTP answer means it listens (a GET without a session is refused).
    return fetch(url).then(() => true, () => false)
  }, 'server-everything to listen', 30_000)
  return { child, url, sessions: () => opened }
}

/** bench/mcp-floor-server.ts in a process of its own, answering at `<url>`. */
export async function startFloorServer(): Promise<{ child: ChildProcess; url: string }> {
  const child = track(spawn(process.execPath, [join(projectRoot, 'dist/bench/mcp-floor-server.js')], { stdio: ['ignore', 'pipe', 'inherit'] }))
  const [line] = await Promise.race([
    once(createInterface({ input: child.stdout! }), 'line') as Promise<[string]>,
    once(child, 'exit').then(([code]) => Promise.reject(new Error(`the floor server exited with ${code}`))),
  ])
  return { child, url: line }
}

export async function stopChild(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return
  const exited = once(child, 'exit')
  child.kill('SIGTERM')
  const timer = setTimeout(() => child.kill('SIGKILL'), 10_000)
  await exited
  clearTimeout(timer)
}

async function until<T>(check: () => Promise<T | false | undefined>, what: string, timeoutMs: number): Promise<T> {
  const deadline = Date.now() + timeoutMs
  for (;;) {
    const value = await check()
    if (value !== false && value !== undefined) return value
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`)
    await new Promise((resolve) => setTimeout(resolve, 100))
  }
}

/** A JSON call to the service with a session cookie; throws with the answer unless it has `status`. */
async function api<T = any>(base: string, cookie: string, method: string, path: string, body: unknown, status: number): Promise<T> {
  const response = await fetch(`${base}${path}`, {
    method,
    headers: { cookie, accept: 'application/json', ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  })
  const text = await response.text()
  if (response.status !== status) throw new Error(`${method} ${path}: ${response.status} ${text}`)
  return (JSON.parse(text) as { data: T }).data
}

/** Whether `name` is an executable on PATH. */
function onPath(name: string): boolean {
  return (process.env.PATH ?? '').split(delimiter).some((dir) => dir !== '' && existsSync(join(dir, name)))
}

/**
 * The isolation the satellite is started with: ISOLATION when set, else its default
 * (bubblewrap) when bubblewrap is installed, else none, with the reason.
 */
export function chosenIsolation(): { mode: string; why: string } {
  const asked = process.env.ISOLATION?.trim()
  if (asked) return { mode: asked, why: 'ISOLATION set' }
  if (onPath('bwrap')) return { mode: 'process-sandbox', why: "the satellite's default" }
  return { mode: 'none', why: 'bubblewrap (bwrap) is not installed' }
}

export interface PlatformOptions {
  /** Options for the satellite's Node (say `--cpu-prof`), before its script. */
  nodeArgs?: string[]
  /** The satellite's entry point: this build's unless another build is to be measured. */
  satelliteMain?: string
}

export async function startPlatform(isolation: string, options: PlatformOptions = {}): Promise<Platform> {
  const dataDir = mkdtempSync(join(tmpdir(), 'mcp-bench-'))
  const upstream = await startRemoteServer()
  const { env: startEnv, args } = startCommand()
  const backendPort = await freePort()
  const backendUrl = `http://127.0.0.1:${backendPort}`
  let backend: Started | undefined
  let satellite: ChildProcess | undefined
  const logFile = join(dataDir, 'satellite.log')
  const close = async () => {
    if (satellite !== undefined) await stopChild(satellite)
    if (backend !== undefined) await stop(backend.child)
    await stopChild(upstream.child)
    rmSync(dataDir, { recursive: true, force: true })
  }
  try {
    backend = await start(args, {
      ...startEnv, PORT: String(backendPort), PUBLIC_URL: backendUrl, DATA_DIR: dataDir, DATABASE_URL: `sqlite:${join(dataDir, 'service.db')}`,
      ENCRYPTION_SECRET: SECRET, RATE_LIMIT_ENABLED: 'false',
    })
    const admin = await signUp(backendUrl, 'mcp-bench-admin') // the first user: a global admin
    const member = await signUp(backendUrl, 'mcp-bench-member')
    const team = (await api(backendUrl, admin, 'POST', '/api/teams', { name: 'MCP bench' }, 201)).team as { id: string }
    await api(backendUrl, admin, 'POST', `/api/teams/${team.id}/members`, { login: 'mcp-bench-member', role: 'team_user' }, 201)
    const imported = await api(backendUrl, admin, 'POST', '/api/mcp/servers/import', [everythingDocument(upstream.url)], 200)
    const serverId = (imported.results as Array<{ server_id?: string; status: string }>)[0]?.server_id
    if (serverId === undefined) throw new Error(`the catalogue import failed: ${JSON.stringify(imported)}`)

    const registration = await api(backendUrl, admin, 'POST', `/api/teams/${team.id}/satellites/registration-tokens`, {}, 201)
    const satellitePort = await freePort()
    const satelliteUrl = `http://127.0.0.1:${satellitePort}`
    const log = openSync(logFile, 'a')
    satellite = track(spawn(process.execPath, [...(options.nodeArgs ?? []), '--enable-source-maps', options.satelliteMain ?? join(projectRoot, 'dist/examples/satellite/src/main.js')], {
      env: {
        PATH: process.env.PATH ?? '', LANG: process.env.LANG ?? 'C.UTF-8',
        BACKEND_URL: backendUrl, REGISTRATION_TOKEN: registration.token, SATELLITE_NAME: 'mcp-bench', HOST: '127.0.0.1',
        PORT: String(satellitePort), SATELLITE_URL: satelliteUrl, STATE_DIR: join(dataDir, 'satellite-state'),
        PACKAGE_DIRS: projectRoot, ISOLATION: isolation, START_TIMEOUT_SECONDS: '60',
      },
      stdio: ['ignore', log, log],
    }))
    closeSync(log)
    const satelliteView = await until(async () => {
      if (satellite!.exitCode !== null) throw new Error(`the satellite exited with ${satellite!.exitCode}`)
      const listed = await api(backendUrl, admin, 'GET', '/api/satellites?limit=100', undefined, 200)
      const found = (listed.satellites as Array<{ id: string; name: string; status: string; isolation: string }>).find((one) => one.name === 'mcp-bench')
      return found?.status === 'active' ? found : undefined
    }, 'the satellite to pair and report itself active', SETTLE_MS)

    const install = (name: string, target: { kind: string; index: number }) =>
      api(backendUrl, admin, 'POST', `/api/teams/${team.id}/mcp/installations`, { server_id: serverId, name, target, satellite_id: satelliteView.id }, 201)
        .then((data) => data.installation.id as string)
    const ids = { stdio: await install('echo-stdio', { kind: 'package', index: 0 }), remote: await install('echo-remote', { kind: 'remote', index: 0 }) }
    const running = async (id: string): Promise<string> => {
      let last: { status: string; status_reason: string; endpoint_url: string | null } | undefined
      return until(async () => {
        last = (await api(backendUrl, admin, 'GET', `/api/teams/${team.id}/mcp/installations/${id}`, undefined, 200)).installation
        if (last!.status === 'failed') throw new Error(`the installation failed: ${last!.status_reason}`)
        return last!.status === 'running' && last!.endpoint_url !== null ? last!.endpoint_url : undefined
      }, `installation ${id} to run`, SETTLE_MS).catch((error: Error) => {
        throw new Error(`${error.message} (last: ${last?.status}, ${last?.status_reason})`)
      })
    }
    const endpoints = { stdio: await running(ids.stdio), remote: await running(ids.remote) }
    const token = await bearerToken(backendUrl, member, 'mcp:read', { resource: `${satelliteUrl}/mcp`, teamId: team.id })
    return { backendUrl, satellite: { child: satellite, url: satelliteUrl, id: satelliteView.id, isolation: satelliteView.isolation }, endpoints, upstream, token, close }
  } catch (error) {
    const lines = existsSync(logFile) ? readFileSync(logFile, 'utf8').trim().split('\n').slice(-20).join('\n') : ''
    await close()
    throw new Error(`${(error as Error).message}${lines ? `\nthe satellite's last lines:\n${lines}` : ''}`)
  }
}

/** server-everything's catalogue entry: the npm package over stdio, and the remote at `remoteUrl`. */
function everythingDocument(remoteUrl: string): Record<string, unknown> {
  return {
    $schema: 'https://static.modelcontextprotocol.io/schemas/2025-12-11/server.schema.json',
    name: 'io.github.modelcontextprotocol/server-everything',
    description: 'Exercises every feature of MCP.',
    version: EVERYTHING_VERSION,
    packages: [{
      registryType: 'npm', identifier: EVERYTHING, version: EVERYTHING_VERSION, runtimeHint: 'npx', transport: { type: 'stdio' },
      packageArguments: [{ type: 'positional', valueHint: 'transport', value: 'stdio' }],
    }],
    remotes: [{ type: 'streamable-http', url: remoteUrl }],
  }
}
