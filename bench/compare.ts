import { execFileSync } from 'node:child_process'
import { mkdtempSync, rmSync, symlinkSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import autocannon from 'autocannon'
import { projectRoot } from '../src/paths.js'
import { createTestDatabase } from '../test/helpers/database.js'
import { cpuMicros, start, stop, type Started } from './harness.js'
import { seedInstallations } from './installations.js'
import { bearerToken, SECRET, signUp, startCommand } from './service.js'

/**
 * `npm run bench:compare -- <git ref> [sqlite|postgresql]`: this working tree's build against
 * another commit's, on the hot path. Two runs of `npm run bench` minutes apart cannot be compared
 * on this machine (its speed drifts by 2× within minutes); here both builds run at once, as
 * `npm start` runs them, on one database, and are loaded in turn in one-second slices whose order
 * alternates. One process differs from another of the same build by up to 15 % on the cheapest
 * routes (the same commit against itself: −8 % on health in one pair, +9 % in another), so each
 * round starts a fresh pair, in the other order than the round before, and the ratios of the
 * rounds are averaged (geometric mean). Prints, per workload, each build's req/s and server CPU
 * per request over all rounds, the mean ratio and each round's. With `--installations`, the
 * workloads are the installations list of bench/installations.ts instead (default page and 100).
 *   BENCH_COMPARE_ROUNDS (default 4)  pairs of fresh processes
 *   BENCH_COMPARE_SLICES (default 6)  one-second slices per build, workload and round
 */

const SLICES = Number(process.env.BENCH_COMPARE_SLICES ?? 6)
const ROUNDS = Number(process.env.BENCH_COMPARE_ROUNDS ?? 4)
const CONNECTIONS = 10

/** The other commit, built in a worktree of its own (its node_modules are this tree's). */
function buildRef(ref: string): { dir: string; remove(): void } {
  const dir = mkdtempSync(join(tmpdir(), 'svc-compare-'))
  execFileSync('git', ['worktree', 'add', '--detach', dir, ref], { cwd: projectRoot, stdio: 'ignore' })
  const remove = () => {
    execFileSync('git', ['worktree', 'remove', '--force', dir], { cwd: projectRoot, stdio: 'ignore' })
    rmSync(dir, { recursive: true, force: true })
  }
  try {
    symlinkSync(join(projectRoot, 'node_modules'), join(dir, 'node_modules'))
    execFileSync(process.execPath, [join(projectRoot, 'node_modules/typescript/bin/tsc'), '-b', 'tsconfig.build.json'], { cwd: dir, stdio: 'inherit' })
  } catch (error) {
    remove()
    throw error
  }
  return { dir, remove }
}

interface Side { started: Started; requests: number; seconds: number; cpu: number }

/** Both sides loaded in turn, SLICES one-second slices each, the order alternating per slice. */
async function alternate(sides: Side[], path: string, headers: Record<string, string>): Promise<void> {
  for (const side of sides) await autocannon({ url: `${side.started.url}${path}`, connections: CONNECTIONS, headers, duration: 2 })
  for (let slice = 0; slice < SLICES; slice++) {
    for (const side of slice % 2 === 0 ? sides : [...sides].reverse()) {
      const before = cpuMicros(side.started.child.pid!)
      const result = await autocannon({ url: `${side.started.url}${path}`, connections: CONNECTIONS, headers, duration: 1 })
      side.cpu += cpuMicros(side.started.child.pid!) - before
      side.requests += result.requests.total
      side.seconds += result.duration
    }
  }
}

async function main(): Promise<void> {
  const installations = process.argv.includes('--installations')
  const [ref, dialect = 'sqlite'] = process.argv.slice(2).filter((arg) => !arg.startsWith('--')) as [string | undefined, 'sqlite' | 'postgresql' | undefined]
  if (ref === undefined) throw new Error('usage: npm run bench:compare -- <git ref> [sqlite|postgresql] [--installations]')
  const other = buildRef(ref)
  const { env: startEnv, args } = startCommand()
  const argsOf = (root: string) => args.map((arg) => (arg.startsWith(projectRoot) ? join(root, arg.slice(projectRoot.length)) : arg))
  const dataDir = mkdtempSync(join(tmpdir(), 'svc-compare-data-'))
  const database = await createTestDatabase(dialect, dataDir)
  const env = { ...startEnv, DATA_DIR: dataDir, DATABASE_URL: database.url, ENCRYPTION_SECRET: SECRET, RATE_LIMIT_ENABLED: 'false' }
  const started: Started[] = []
  const launch = async (root: string, port: number) => {
    const running = await start(argsOf(root), { ...env, PORT: String(port) })
    started.push(running)
    return running
  }
  const halt = async () => {
    for (const running of started.splice(0)) await stop(running.child)
  }
  try {
    // The user and the token live in the database: made once, used by every process after.
    const first = await launch(projectRoot, 4401)
    const cookie = await signUp(first.url)
    const token = await bearerToken(first.url, cookie)
    const member = installations ? await seedInstallations(first.url, cookie) : undefined
    await halt()
    const workloads: Array<[string, string, Record<string, string>]> = member === undefined
      ? [
          ['GET /api/health', '/api/health', {}],
          ['GET /api/users/me, no credentials (401)', '/api/users/me', {}],
          ['GET /api/users/me, session', '/api/users/me', { cookie }],
          ['GET /api/teams/me/default, session', '/api/teams/me/default', { cookie }],
          ['GET /api/teams/me/default, bearer', '/api/teams/me/default', { authorization: `Bearer ${token}` }],
        ]
      : [
          ['GET /api/users/me/mcp/installations', '/api/users/me/mcp/installations', { authorization: `Bearer ${member.token}` }],
          ['  the same, ?limit=100', '/api/users/me/mcp/installations?limit=100', { authorization: `Bearer ${member.token}` }],
        ]
    type Totals = { requests: number; seconds: number; cpu: number }
    const results = workloads.map(() => ({ ratios: [] as number[], here: { requests: 0, seconds: 0, cpu: 0 } as Totals, there: { requests: 0, seconds: 0, cpu: 0 } as Totals }))
    for (let round = 0; round < ROUNDS; round++) {
      // Fresh processes each round, started in the other order.
      const [a, b] = round % 2 === 0 ? [projectRoot, other.dir] : [other.dir, projectRoot]
      const pair = [await launch(a, 4401), await launch(b, 4402)]
      const here = round % 2 === 0 ? pair[0]! : pair[1]!
      for (const [index, [, path, headers]] of workloads.entries()) {
        const sides = pair.map((running) => ({ started: running, requests: 0, seconds: 0, cpu: 0 }))
        await alternate(sides, path, headers)
        const [mine, theirs] = sides[0]!.started === here ? sides : [...sides].reverse()
        const result = results[index]!
        result.ratios.push((mine!.requests / mine!.seconds) / (theirs!.requests / theirs!.seconds))
        for (const [key, side] of [['here', mine!], ['there', theirs!]] as const) {
          result[key].requests += side.requests
          result[key].seconds += side.seconds
          result[key].cpu += side.cpu
        }
      }
      await halt()
    }
    const figure = (t: Totals) => `${Math.round(t.requests / t.seconds)} req/s, ${(t.cpu / t.requests).toFixed(1)} µs`
    const percent = (ratio: number) => `${((ratio - 1) * 100).toFixed(1)} %`
    console.log(`${dialect}: this tree against ${ref}, ${ROUNDS} rounds of fresh processes, ${SLICES} one-second slices of each per workload and round`)
    for (const [index, [name]] of workloads.entries()) {
      const { ratios, here, there } = results[index]!
      const mean = Math.exp(ratios.reduce((sum, ratio) => sum + Math.log(ratio), 0) / ratios.length)
      console.log(`  ${name.padEnd(42)} this tree ${figure(here)}; ${ref} ${figure(there)}; ${percent(mean).padStart(7)} (rounds: ${ratios.map(percent).join(', ')})`)
    }
  } finally {
    await halt()
    await database.drop()
    rmSync(dataDir, { recursive: true, force: true })
    other.remove()
  }
}

await main()
