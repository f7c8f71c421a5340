import { createHash, randomBytes } from 'node:crypto'
import { cpus } from 'node:os'
import { mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import argon2 from 'argon2'
import { projectRoot } from '../src/paths.js'
import { createTestDatabase } from '../test/helpers/database.js'
import { catalogueWorkloads } from './catalogue.js'
import { channelLines, channelWorkloads, type ChannelOptions } from './channel.js'
import { installationWorkloads } from './installations.js'
import { bearerToken, PASSWORD, SECRET, signUp, startCommand } from './service.js'
import { againstBare, CONNECTIONS, load, rssMb, SECONDS, start, stop, STARTS, table, type Measurement, type Request, type Started } from './harness.js'
import { registryLines, registryWorkloads } from './registry.js'
import { keptAnswerCounts, METRICS_TOKEN, revocationLines, revocationWorkloads, type RevocationResult } from './revocation.js'
import { satelliteWorkloads } from './satellites.js'

/**
 * `npm run bench` (`npm run bench -- --json` for one JSON document with every figure, to compare
 * commits): figures, not assertions. Talks only to 127.0.0.1.
 *
 * The service runs as `npm start` runs it (its environment and Node flags, read from package.json, default
 * log level, standard output discarded), in its own process, against a bare Fastify route in
 * another; the bare route and each workload are measured in alternating one-second slices, since
 * this machine's speed drifts within minutes. For each dialect: cold start; the authenticated hot path (health, the
 * 401 of a request without credentials, a session and a bearer token on /api/users/me and
 * /api/teams/me/default) against its target ratio to bare, next to the stack's floor for the same
 * answers (bench/floor-server.ts); logins against raw Argon2id; resident
 * memory after a mixed load with a login flood; satellites (bench/satellites.ts); the catalogue
 * (bench/catalogue.ts); registry import, the sub-registry walk and list (bench/registry.ts); the
 * installations list the command-line client reads (bench/installations.ts); the satellite control
 * channel (bench/channel.ts: unchanged polls, held long-polls, change to wake, document builds); how
 * soon a logout, a token revocation or a role change on one instance counts on a second one, and
 * the share of credential lookups answered from memory (bench/revocation.ts).
 * `npm run bench -- --hot-path` measures the hot path, the revocation figures and the control
 * channel only; `npm run bench -- --registry` the registry
 * only; `npm run bench -- --memory` the logins and the mixed load with its memory readings only;
 * `npm run bench -- --catalogue` the catalogue only; `npm run bench -- --installations` the
 * installations list only.
 *   BENCH_SECONDS (default 5)   length of each load run (after a 2 s warm-up that is not reported)
 *   BENCH_CONNECTIONS (10)      concurrent connections
 *   BENCH_STARTS (5)            cold starts per dialect (the median is reported)
 *   BENCH_MIXED_SECONDS (60)    the mixed load before the memory reading
 */

/** Raw Argon2id verifications per second on this machine, CONNECTIONS at a time. */
async function argon2Throughput(): Promise<number> {
  // The service's own parameters (src/auth/passwords.ts).
  const hash = await argon2.hash(PASSWORD, { type: argon2.argon2id, memoryCost: 19_456, timeCost: 2, parallelism: 1 })
  let done = 0
  const until = performance.now() + SECONDS * 1000
  await Promise.all(Array.from({ length: CONNECTIONS }, async () => {
    while (performance.now() < until) {
      await argon2.verify(hash, PASSWORD)
      done++
    }
  }))
  return Math.round(done / SECONDS)
}

const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!

const MIXED_SECONDS = Number(process.env.BENCH_MIXED_SECONDS ?? 60)
const JSON_OUTPUT = process.argv.includes('--json')
/** `npm run bench -- --hot-path`: the hot-path table only (a quicker loop while optimising). */
const HOT_PATH_ONLY = process.argv.includes('--hot-path')
/** `npm run bench -- --registry`: the registry workloads only. */
const REGISTRY_ONLY = process.argv.includes('--registry')
/** `npm run bench -- --memory`: logins and the mixed load with its memory readings only. */
const MEMORY_ONLY = process.argv.includes('--memory')
/** `npm run bench -- --catalogue`: the catalogue workloads only. */
const CATALOGUE_ONLY = process.argv.includes('--catalogue')
/** `npm run bench -- --installations`: the installations list only. */
const INSTALLATIONS_ONLY = process.argv.includes('--installations')
/** `npm run bench -- --channel`: the satellite control channel only. */
const CHANNEL_ONLY = process.argv.includes('--channel')
const say = (line = '') => {
  if (!JSON_OUTPUT) console.log(line)
}

/** Targets: the ratio to bare each hot-path workload must reach, per dialect. */
const TARGETS = {
  health: { sqlite: 80, postgresql: 80 },
  anonymous: { sqlite: 70, postgresql: 70 },
  authenticated: { sqlite: 55, postgresql: 45 },
  installations: { sqlite: 30, postgresql: 20 },
}

/**
 * 60 s of everything at once — health, session reads, the default team, and a login flood — with
 * the resident memory sampled each second; then the reading after the load.
 */
async function mixedLoad(running: Started, cookie: string): Promise<{ seconds: number; max_rss_mb: number; rss_after_mb: number; requests: Record<string, number> }> {
  let max = rssMb(running.child)
  const sampler = setInterval(() => (max = Math.max(max, rssMb(running.child))), 1000)
  const run = (path: string, request: Request, connections: number) => load(`${running.url}${path}`, request, connections, MIXED_SECONDS).then((result) => result.rps)
  const [health, me, team, logins] = await Promise.all([
    run('/api/health', {}, 2),
    run('/api/users/me', { headers: { cookie } }, 3),
    run('/api/teams/me/default', { headers: { cookie } }, 3),
    run('/api/auth/email/login', { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ login: 'bench', password: PASSWORD }) }, 4),
  ])
  clearInterval(sampler)
  await new Promise((resolve) => setTimeout(resolve, 2000))
  return { seconds: MIXED_SECONDS, max_rss_mb: max, rss_after_mb: rssMb(running.child), requests: { health, users_me: me, default_team: team, logins } }
}

/**
 * A login flood, and meanwhile one client measuring the event loop through /api/health at 200
 * requests a second: a probe of latency (1 000 samples in 5 s) that leaves the two cores to the
 * logins, as raw Argon2 has them. A probe at full speed took a third of the logins' throughput.
 */
async function loginFlood(url: string, rawArgon2: number) {
  const loginRequest: Request = { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ login: 'bench', password: PASSWORD }) }
  const [login, healthDuringLogins] = await Promise.all([load(`${url}/api/auth/email/login`, loginRequest), load(`${url}/api/health`, { rate: 200 }, 1)])
  const logins = { ...login, percent_of_raw_argon2: Math.round((login.rps / rawArgon2) * 100), health_p99_meanwhile_ms: healthDuringLogins.p99 }
  const loginLine = `  POST /api/auth/email/login: ${login.rps} req/s, ${logins.percent_of_raw_argon2} % of raw Argon2 verify${login.non2xx ? `, ${login.non2xx} failures` : ''}; /api/health p99 meanwhile ${healthDuringLogins.p99} ms`
  return { logins, loginLine }
}

async function main(): Promise<void> {
  const { env: startEnv, args: server } = startCommand()
  let port = 4100
  const bare = await start([join(projectRoot, 'dist/bench/bare-fastify.js')], { PORT: String(++port) })
  const report: Record<string, unknown> = {
    machine: { cpus: cpus().length, node: process.version }, started_as: { env: startEnv, args: server }, seconds: SECONDS, connections: CONNECTIONS, dialects: {},
  }
  try {
    const partial = HOT_PATH_ONLY || REGISTRY_ONLY || CATALOGUE_ONLY || INSTALLATIONS_ONLY || CHANNEL_ONLY
    const rawArgon2 = partial ? 0 : await argon2Throughput()
    if (!partial) {
      report.raw_argon2_verify_per_s = rawArgon2
      say(`raw Argon2id verify: ${rawArgon2} /s (${CONNECTIONS} at a time, this process)`)
    }

    for (const dialect of ['sqlite', 'postgresql'] as const) {
      const dataDir = mkdtempSync(join(tmpdir(), 'svc-bench-'))
      const database = await createTestDatabase(dialect, dataDir)
      const env = { ...startEnv, DATA_DIR: dataDir, DATABASE_URL: database.url, ENCRYPTION_SECRET: SECRET, RATE_LIMIT_ENABLED: 'false', METRICS_TOKEN }
      try {
        const starts: number[] = []
        let last: Started | null = null
        for (let i = 0; i < STARTS; i++) {
          last = await start(server, { ...env, PORT: String(++port) })
          starts.push(last.coldStartMs)
          if (i < STARTS - 1) await stop(last.child)
        }
        const running = last!
        const idleRss = rssMb(running.child)
        const url = running.url
        const cookie = await signUp(url)
        const accessToken = await bearerToken(url, cookie)
        const session = { headers: { cookie } }
        const bearer = { headers: { authorization: `Bearer ${accessToken}` } }
        if (CATALOGUE_ONLY) {
          const catalogue = await catalogueWorkloads(url, cookie, env, bare.url, (username) => signUp(url, username))
          ;(report.dialects as Record<string, unknown>)[dialect] = { catalogue }
          await stop(running.child)
          say(`\n${dialect}:`)
          say(table(catalogue.measurements))
          for (const note of catalogue.notes) say(`  ${note}`)
          continue
        }
        if (INSTALLATIONS_ONLY) {
          const installations = await installationWorkloads(url, cookie, bare.url, TARGETS.installations[dialect])
          ;(report.dialects as Record<string, unknown>)[dialect] = { installations }
          await stop(running.child)
          say(`\n${dialect}:`)
          say(table(installations.measurements))
          for (const note of installations.notes) say(`  ${note}`)
          continue
        }
        // The channel's options: this service, and on PostgreSQL a second instance on the same database.
        const channelOptions: ChannelOptions = {
          url, adminCookie: cookie, bareUrl: bare.url, dialect, child: running.child, databaseUrl: database.url,
          ...(dialect === 'postgresql' ? { startAnother: () => start(server, { ...env, PORT: String(++port) }) } : {}),
        }
        if (CHANNEL_ONLY) {
          const channel = await channelWorkloads(channelOptions)
          ;(report.dialects as Record<string, unknown>)[dialect] = { channel }
          await stop(running.child)
          say(`\n${dialect}:`)
          say(table(channel.measurements))
          for (const line of [...channel.notes, ...channelLines(channel)]) say(`  ${line}`)
          continue
        }
        if (REGISTRY_ONLY) {
          // Before the catalogue workloads seed 100 000 servers: the import and the walk on an empty catalogue.
          const registry = await registryWorkloads(url, cookie, bare.url)
          ;(report.dialects as Record<string, unknown>)[dialect] = { registry }
          say(`\n${dialect}:`)
          say(table(registry.measurements))
          for (const line of registryLines(registry)) say(`  ${line}`)
          await stop(running.child)
          continue
        }
        const hot: Measurement[] = []
        if (MEMORY_ONLY) {
          const { logins, loginLine } = await loginFlood(url, rawArgon2)
          const mixed = await mixedLoad(running, cookie)
          ;(report.dialects as Record<string, unknown>)[dialect] = { logins, memory: { idle_rss_mb: idleRss, mixed } }
          await stop(running.child)
          say(`\n${dialect}:`)
          say(loginLine)
          say(`  RSS: ${idleRss} MB idle; ${mixed.max_rss_mb} MB at most during ${MIXED_SECONDS} s of mixed load with a login flood, ${mixed.rss_after_mb} MB after it`)
          continue
        }
        hot.push(await againstBare(bare.url, 'GET /api/health', `${url}/api/health`, {}, TARGETS.health[dialect]))
        // The stack's floor for the same two answers (bench/floor-server.ts), on the same database.
        const floor = await start([join(projectRoot, 'dist/bench/floor-server.js')], { DATABASE_URL: database.url, ENCRYPTION_SECRET: SECRET, PORT: String(++port) })
        hot.push(await againstBare(bare.url, 'GET /api/users/me, no credentials (401)', `${url}/api/users/me`, {}, TARGETS.anonymous[dialect]))
        hot.push(await againstBare(bare.url, '  floor: the same 401 (cookie plugin, envelope)', `${floor.url}/api/users/me`))
        hot.push(await againstBare(bare.url, 'GET /api/users/me, session', `${url}/api/users/me`, session, TARGETS.authenticated[dialect]))
        hot.push(await againstBare(bare.url, '  floor: cookie, HMAC, one prepared lookup', `${floor.url}/api/users/me`, session))
        await stop(floor.child)
        hot.push(await againstBare(bare.url, 'GET /api/teams/me/default, session', `${url}/api/teams/me/default`, session, TARGETS.authenticated[dialect]))
        hot.push(await againstBare(bare.url, 'GET /api/teams/me/default, bearer', `${url}/api/teams/me/default`, bearer, TARGETS.authenticated[dialect]))
        hot.push(await againstBare(bare.url, 'GET /api/health/ready (one query)', `${url}/api/health/ready`))
        // What the hot path's credential lookups answered from memory, then how soon a change on
        // one instance counts on a second one (bench/revocation.ts).
        const keptCounts = await keptAnswerCounts(url)
        const other = await start(server, { ...env, PORT: String(++port) })
        let revocation: RevocationResult[]
        try {
          revocation = await revocationWorkloads(url, other.url, cookie)
        } finally {
          await stop(other.child)
        }
        say(`\n${dialect}: cold start to first 200, median ${median(starts).toFixed(0)} ms (of ${STARTS}: ${starts.map((ms) => ms.toFixed(0)).join(', ')})`)
        const result: Record<string, unknown> = { cold_start_ms: { median: Math.round(median(starts)), all: starts.map(Math.round) }, hot_path: hot, kept_answers: keptCounts, revocation }
        ;(report.dialects as Record<string, unknown>)[dialect] = result
        if (HOT_PATH_ONLY) {
          // The control channel's held long-polls and change to wake, kept in the same run.
          const channel = await channelWorkloads(channelOptions)
          result.channel = channel
          await stop(running.child)
          say(table([...hot, ...channel.measurements]))
          for (const line of [...revocationLines(revocation, keptCounts), ...channel.notes, ...channelLines(channel)]) say(`  ${line}`)
          continue
        }
        const { logins, loginLine } = await loginFlood(url, rawArgon2)
        const mixed = await mixedLoad(running, cookie)
        const satellites = await satelliteWorkloads(url, cookie, bare.url)
        const registry = await registryWorkloads(url, cookie, bare.url)
        const catalogue = await catalogueWorkloads(url, cookie, env, bare.url, (username) => signUp(url, username))
        const installations = await installationWorkloads(url, cookie, bare.url, TARGETS.installations[dialect])
        const channel = await channelWorkloads(channelOptions)
        const finalRss = rssMb(running.child)
        await stop(running.child)

        Object.assign(result, { logins, memory: { idle_rss_mb: idleRss, mixed, final_rss_mb: finalRss }, satellites, registry, catalogue, installations, channel })
        say(table([...hot, ...satellites, ...registry.measurements, ...catalogue.measurements, ...installations.measurements, ...channel.measurements]))
        for (const line of revocationLines(revocation, keptCounts)) say(`  ${line}`)
        for (const line of registryLines(registry)) say(`  ${line}`)
        for (const note of catalogue.notes) say(`  ${note}`)
        for (const note of installations.notes) say(`  ${note}`)
        for (const line of [...channel.notes, ...channelLines(channel)]) say(`  ${line}`)
        say(loginLine)
        say(`  RSS: ${idleRss} MB idle; ${mixed.max_rss_mb} MB at most during ${MIXED_SECONDS} s of mixed load with a login flood, ${mixed.rss_after_mb} MB after it; ${finalRss} MB after every run`)
      } finally {
        await database.drop()
        rmSync(dataDir, { recursive: true, force: true })
      }
    }
  } finally {
    await stop(bare.child)
  }
  if (JSON_OUTPUT) console.log(JSON.stringify(report, null, 2))
}

await main()
