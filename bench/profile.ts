import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import autocannon from 'autocannon'
import { projectRoot } from '../src/paths.js'
import { createTestDatabase } from '../test/helpers/database.js'
import { start, stop } from './harness.js'
import { seedChannel } from './channel.js'
import { seedInstallations } from './installations.js'
import { bearerToken, PASSWORD, SECRET, signUp, startCommand } from './service.js'

/**
 * `npm run bench:profile -- <dialect> <workload>`: where one hot-path workload spends the
 * server's CPU. Starts the service as `npm start` does, with `--cpu-prof`, loads it for a few
 * seconds (127.0.0.1 only), and prints the self time of the load window grouped by where the code
 * lives (our modules, each dependency, Node's internals, the garbage collector, idle), then the
 * heaviest functions. Workloads: health, anonymous (the 401), session (`/api/users/me`),
 * team (`/api/teams/me/default` with a session), bearer (the same with an access token),
 * floor (bench/floor-server.ts with a session), bare (bench/bare-fastify.ts), installations
 * (`/api/users/me/mcp/installations` with a bearer token, 3 teams of 50, bench/installations.ts)
 * installations100 (the same with `?limit=100`) and desired304 (a satellite's poll of its unchanged
 * desired-state document, 20 instances, answered 304; bench/channel.ts).
 *   BENCH_PROFILE_SECONDS (default 6)  length of the load window
 */

interface Node {
  id: number
  callFrame: { functionName: string; url: string; lineNumber: number }
  children?: number[]
}
interface Profile {
  nodes: Node[]
  samples: number[]
  timeDeltas: number[]
}

const SECONDS = Number(process.env.BENCH_PROFILE_SECONDS ?? 6)

/** Where a function lives: our file, a package, a part of Node, or one of V8's pseudo-frames. */
function place(url: string, name: string): string {
  if (url === '') return name.startsWith('(') ? name : `(native) ${name}`
  const packaged = /node_modules\/((?:@[^/]+\/)?[^/]+)/.exec(url)
  if (packaged) return packaged[1]!
  if (url.startsWith('node:')) return url.replace(/^node:internal\//, 'node:').split('/').slice(0, 2).join('/')
  const ours = /\/(src|bench)\/(.*)$/.exec(url)
  return ours ? `${ours[1]}/${ours[2]}` : url
}

function summarise(profile: Profile, windowUs: number): { total: number; places: Array<[string, number]>; functions: Array<[string, number]> } {
  const byId = new Map(profile.nodes.map((node) => [node.id, node]))
  // Only the samples of the load window: the profile runs from boot to the stop after the load.
  let elapsed = profile.timeDeltas.reduce((sum, delta) => sum + delta, 0)
  const end = elapsed
  const self = new Map<number, number>()
  elapsed = 0
  for (let i = 0; i < profile.samples.length; i++) {
    elapsed += profile.timeDeltas[i]!
    if (elapsed < end - windowUs) continue
    self.set(profile.samples[i]!, (self.get(profile.samples[i]!) ?? 0) + (profile.timeDeltas[i + 1] ?? 0))
  }
  const places = new Map<string, number>()
  const functions = new Map<string, number>()
  let total = 0
  for (const [id, us] of self) {
    const { functionName, url, lineNumber } = byId.get(id)!.callFrame
    const where = place(url, functionName)
    places.set(where, (places.get(where) ?? 0) + us)
    const fn = `${functionName || '(anonymous)'} ${where}:${lineNumber + 1}`
    functions.set(fn, (functions.get(fn) ?? 0) + us)
    total += us
  }
  const sorted = (map: Map<string, number>) => [...map].sort((a, b) => b[1] - a[1])
  return { total, places: sorted(places), functions: sorted(functions) }
}

async function main(): Promise<void> {
  const [dialect = 'sqlite', workload = 'session'] = process.argv.slice(2) as ['sqlite' | 'postgresql', string]
  const { env: startEnv, args } = startCommand()
  const profileDir = mkdtempSync(join(tmpdir(), 'svc-profile-'))
  const dataDir = mkdtempSync(join(tmpdir(), 'svc-profile-data-'))
  const database = await createTestDatabase(dialect, dataDir)
  const env = { ...startEnv, DATA_DIR: dataDir, DATABASE_URL: database.url, ENCRYPTION_SECRET: SECRET, RATE_LIMIT_ENABLED: 'false' }
  try {
    // The user and their credentials first, then the profiled process alone on the database.
    const service = await start(args, { ...env, PORT: '4301' })
    const cookie = await signUp(service.url)
    const token = workload === 'bearer' ? await bearerToken(service.url, cookie) : ''
    const member = workload.startsWith('installations') ? await seedInstallations(service.url, cookie) : undefined
    const satellite = workload === 'desired304' ? (await seedChannel(service.url, cookie)).small : undefined
    await stop(service.child)
    const script = workload === 'floor' ? ['dist/bench/floor-server.js'] : workload === 'bare' ? ['dist/bench/bare-fastify.js'] : null
    const profiled = await start(['--cpu-prof', `--cpu-prof-dir=${profileDir}`, ...(script === null ? args : script.map((path) => join(projectRoot, path)))], { ...env, PORT: '4302' })
    const paths: Record<string, { path: string; headers?: Record<string, string> }> = {
      health: { path: '/api/health' },
      anonymous: { path: '/api/users/me' },
      session: { path: '/api/users/me', headers: { cookie } },
      team: { path: '/api/teams/me/default', headers: { cookie } },
      bearer: { path: '/api/teams/me/default', headers: { authorization: `Bearer ${token}` } },
      floor: { path: '/api/users/me', headers: { cookie } },
      bare: { path: '/api/health' },
      installations: { path: '/api/users/me/mcp/installations', headers: { authorization: `Bearer ${member?.token}` } },
      installations100: { path: '/api/users/me/mcp/installations?limit=100', headers: { authorization: `Bearer ${member?.token}` } },
      desired304: { path: `/api/satellites/${satellite?.id}/desired-state`, headers: { authorization: `Bearer ${satellite?.apiKey}` } },
    }
    const request = paths[workload]
    if (request === undefined) throw new Error(`unknown workload ${workload}; one of ${Object.keys(paths).join(', ')}`)
    if (satellite !== undefined) {
      // The document as the satellite last read it: every request of the load is then answered 304.
      const first = await fetch(`${profiled.url}${request.path}`, { headers: request.headers })
      await first.text()
      request.headers = { ...request.headers, 'if-none-match': first.headers.get('etag') ?? '' }
    }
    const options = { url: `${profiled.url}${request.path}`, connections: 10, headers: request.headers ?? {} }
    console.error(`loading ${options.url}`)
    await autocannon({ ...options, duration: 2 })
    const result = await autocannon({ ...options, duration: SECONDS })
    console.error('stopping')
    await stop(profiled.child)
    const file = readdirSync(profileDir).find((name) => name.endsWith('.cpuprofile'))!
    const profile = JSON.parse(readFileSync(join(profileDir, file), 'utf8')) as Profile
    const { total, places, functions } = summarise(profile, SECONDS * 1_000_000)
    const requests = result.requests.total
    const busy = total - (places.find(([where]) => where === '(idle)')?.[1] ?? 0)
    console.log(`${dialect} ${workload}: ${requests} requests in ${SECONDS} s (${Math.round(requests / SECONDS)} req/s; non-2xx ${result.non2xx}); ${(busy / requests).toFixed(1)} µs of main-thread CPU per request\n`)
    console.log('  µs/req  share  where')
    for (const [where, us] of places.filter(([where]) => where !== '(idle)').slice(0, 30)) {
      console.log(`  ${(us / requests).toFixed(2).padStart(6)}  ${((us / busy) * 100).toFixed(1).padStart(4)} %  ${where}`)
    }
    console.log('\n  heaviest functions (self time)')
    for (const [fn, us] of functions.filter(([fn]) => !fn.startsWith('(idle)')).slice(0, 40)) {
      console.log(`  ${(us / requests).toFixed(2).padStart(6)}  ${((us / busy) * 100).toFixed(1).padStart(4)} %  ${fn}`)
    }
  } finally {
    await database.drop()
    rmSync(dataDir, { recursive: true, force: true })
    if (process.env.BENCH_PROFILE_KEEP) console.error(`profile kept in ${profileDir}`)
    else rmSync(profileDir, { recursive: true, force: true })
  }
}

await main()
