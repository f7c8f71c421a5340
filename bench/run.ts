import { createHash, randomBytes } from 'node:crypto'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import argon2 from 'argon2'
import { loadConfig } from '../src/config.js'
import { openDatabase } from '../src/db/client.js'
import { seedCatalogue, type SeedCatalogueResult } from '../src/db/seed/catalogue.js'
import { projectRoot } from '../src/paths.js'
import { createTestDatabase } from '../test/helpers/database.js'
import { bareHello, CONNECTIONS, load, rssMb, SECONDS, start, stop, STARTS, type Request, type Started } from './harness.js'
import { satelliteWorkloads } from './satellites.js'

/**
 * `npm run bench`: figures, not assertions. Talks only to 127.0.0.1.
 * For each dialect: cold start to the first 200, then throughput of /api/health,
 * /api/health/ready and /api/users/me (session cookie) as ratios to a bare Fastify "hello" route
 * measured in the same run; login throughput as a ratio to raw Argon2id verification, with the
 * p99 of /api/health during the login flood; and the resident memory. Then satellites: heartbeats
 * with an API key and registrations with a forged token (bench/satellites.ts). Then the catalogue: the
 * server list (session cookie) over 10 000 seeded servers as a ratio to a bare route measured right
 * before it, and the search over 100 000 servers with a rotating mix of queries (latency p50/p99
 * and req/s), with the time each query takes alone.
 *   BENCH_SECONDS (default 5)  length of each load run
 *   BENCH_CONNECTIONS (10)     concurrent connections
 *   BENCH_STARTS (5)           cold starts per dialect (the median is reported)
 * Each load run follows a 2 s warm-up that is not reported.
 */

const SECRET = 'bench-secret-0123456789-abcdefghijklmnopqrstuvwxyz'
const PASSWORD = 'bench password 123'

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

/** A new user and a session cookie for them; the first one is an admin. */
async function signUp(url: string, username = 'bench'): Promise<string> {
  const response = await fetch(`${url}/api/auth/email/register`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ username, email: `${username}@example.test`, password: PASSWORD }),
  })
  if (response.status !== 201) throw new Error(`registration failed: ${response.status} ${await response.text()}`)
  return response.headers.getSetCookie()[0]!.split(';')[0]!
}

/** An access token for the CLI client, through the real authorization code flow with PKCE. */
async function bearerToken(url: string, cookie: string): Promise<string> {
  const verifier = randomBytes(32).toString('base64url')
  const redirectUri = 'http://127.0.0.1:8976/oauth/callback'
  const query = new URLSearchParams({
    response_type: 'code', client_id: 'service-gateway-cli', redirect_uri: redirectUri, scope: 'teams:read', state: 'bench',
    code_challenge: createHash('sha256').update(verifier).digest('base64url'), code_challenge_method: 'S256',
  })
  const authorize = await fetch(`${url}/api/oauth2/auth?${query}`, { headers: { cookie }, redirect: 'manual' })
  const consentUrl = new URL(authorize.headers.get('location')!, url)
  const details = await (await fetch(consentUrl, { headers: { cookie, accept: 'application/json' } })).json() as { data: { request_id: string; csrf_token: string } }
  const decided = await fetch(`${url}/api/oauth2/consent`, {
    method: 'POST',
    headers: { cookie, 'content-type': 'application/json' },
    body: JSON.stringify({ request_id: details.data.request_id, decision: 'approve', csrf_token: details.data.csrf_token }),
  })
  const code = new URL(((await decided.json()) as { data: { redirect_url: string } }).data.redirect_url).searchParams.get('code')!
  const token = await fetch(`${url}/api/oauth2/token`, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams({ grant_type: 'authorization_code', code, redirect_uri: redirectUri, client_id: 'service-gateway-cli', code_verifier: verifier }),
  })
  if (token.status !== 200) throw new Error(`token exchange failed: ${token.status} ${await token.text()}`)
  return ((await token.json()) as { access_token: string }).access_token
}

const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!

/** Catalogue searches as users type them: product names, prefixes, two words. */
const SEARCHES = ['postgres', 'postg', 'kube', 'github issues', 'slack', 'redis cache', 'weather forecast', 'browser automation', 'stripe',
  'docker', 'sql database', 'calendar']
const LIST_SERVERS = 10_000
const SEARCH_SERVERS = 100_000
const LIST_TARGET = 30
const SEARCH_P99_TARGET_MS = 25
const QUERY_RUNS = 15

const percentile = (sorted: number[], p: number) => sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]!
const seeded = (result: SeedCatalogueResult) => `${result.servers} servers in ${(result.ms / 1000).toFixed(1)} s (${Math.round(result.servers / (result.ms / 1000))}/s)`

/**
 * The catalogue workloads, against a running server: its database is seeded from here (through
 * seedCatalogue, on a connection of this process) with 10 000 servers for the list, then up to
 * 100 000 for the search. The list and the search each follow a bare-route run of their own.
 */
async function catalogueWorkloads(url: string, cookie: string, env: Record<string, string>, bare: string, nextPort: () => number): Promise<string[]> {
  const lines: string[] = []
  const config = loadConfig({ ...env, LOG_LEVEL: 'silent' })
  const database = openDatabase(config.database, { poolSize: 2, onPoolError: (error) => console.error(error.message) })
  const headers = { cookie }
  try {
    const forList = await seedCatalogue(database, { servers: LIST_SERVERS, seed: 42 })
    lines.push(`  catalogue seeded: ${seeded(forList)}`)
    const bareForList = await bareHello(bare, nextPort())
    const list = await load(`${url}/api/mcp/servers?limit=20`, { headers })
    const listRatio = (list.rps / bareForList.rps) * 100
    lines.push(`  GET /api/mcp/servers?limit=20 (admin session, ${LIST_SERVERS} servers, one page: served by the page cache): ${list.rps} req/s, p99 ${list.p99} ms, ` +
      `${listRatio.toFixed(0)} % of bare (${bareForList.rps} req/s just before; target ≥ ${LIST_TARGET} %${listRatio >= LIST_TARGET ? ', met' : ', MISSED'})` +
      `${list.non2xx ? `, ${list.non2xx} failures` : ''}`)
    // Pages the list cache cannot hold (it keeps 5 000 servers, these are 8 000): the queries
    // themselves on every request; as the admin, then as a regular user, for whom the visibility
    // rule (global servers, or their teams') is part of the query.
    const pages = Array.from({ length: 400 }, (_, i) => `/api/mcp/servers?limit=20&offset=${i * 20}&sort=${['name', '-created_at', '-updated_at'][i % 3]}`)
    const reader = { cookie: await signUp(url, 'reader') }
    for (const [who, as] of [['admin', headers], ['regular user', reader]] as const) {
      const uncached = await load(url, { headers: as, paths: pages })
      lines.push(`    uncached pages (400 offsets, 3 sorts), ${who}: ${uncached.rps} req/s, p50 ${uncached.p50} ms, p99 ${uncached.p99} ms, ` +
        `${((uncached.rps / bareForList.rps) * 100).toFixed(0)} % of bare${uncached.non2xx ? `, ${uncached.non2xx} failures` : ''}`)
    }

    const forSearch = await seedCatalogue(database, { servers: SEARCH_SERVERS - LIST_SERVERS, seed: 43 })
    lines.push(`  catalogue seeded: ${seeded(forSearch)} more, ${SEARCH_SERVERS} in all`)
    const paths = SEARCHES.map((q) => `/api/mcp/servers/search?q=${encodeURIComponent(q)}`)
    // The same queries with 50 different page sizes: 600 distinct pages, more than the page cache
    // keeps, so these run the search itself on (nearly) every request.
    const uncachedPaths = Array.from({ length: 50 }, (_, i) => paths.map((path) => `${path}&limit=${20 + i}`)).flat()
    const bareForSearch = await bareHello(bare, nextPort())
    const search = await load(url, { headers, paths })
    lines.push(`  GET /api/mcp/servers/search (admin session, ${SEARCH_SERVERS} servers, ${SEARCHES.length} queries in turn, ${CONNECTIONS} connections, ` +
      `served by the page cache after each query's first run): ${search.rps} req/s (${((search.rps / bareForSearch.rps) * 100).toFixed(0)} % of bare), ` +
      `p50 ${search.p50} ms, p99 ${search.p99} ms (target p99 ≤ ${SEARCH_P99_TARGET_MS} ms${search.p99 <= SEARCH_P99_TARGET_MS ? ', met' : ', MISSED'})` +
      `${search.non2xx ? `, ${search.non2xx} failures` : ''}`)
    for (const connections of [CONNECTIONS, 1]) {
      const uncached = await load(url, { headers, paths: uncachedPaths }, connections)
      lines.push(`    uncached (600 distinct pages), ${connections} connection${connections === 1 ? '' : 's'}: ${uncached.rps} req/s, p50 ${uncached.p50} ms, ` +
        `p99 ${uncached.p99} ms${uncached.non2xx ? `, ${uncached.non2xx} failures` : ''}`)
    }
    // Each query alone, one at a time, each run a page of its own (uncached): which ones cost the most.
    const timings: string[] = []
    for (const [i, path] of paths.entries()) {
      const times: number[] = []
      let total = 0
      for (let run = 0; run < QUERY_RUNS; run++) {
        const began = performance.now()
        const response = await fetch(`${url}${path}&limit=${80 + run}`, { headers })
        const body = await response.json() as { data?: { pagination?: { total?: number } } }
        times.push(performance.now() - began)
        total = body.data?.pagination?.total ?? -1
      }
      times.sort((a, b) => a - b)
      timings.push(`"${SEARCHES[i]}" ${total} hits ${percentile(times, 50).toFixed(1)}/${percentile(times, 99).toFixed(1)} ms`)
    }
    lines.push(`    each query alone (hits, p50/max of ${QUERY_RUNS} in a row): ${timings.join('; ')}`)
  } finally {
    await database.close()
  }
  return lines
}

async function main(): Promise<void> {
  const server = join(projectRoot, 'dist/src/server.js')
  const bare = join(projectRoot, 'dist/bench/bare-fastify.js')
  let port = 4100

  const baseline = await start([bare], { PORT: String(++port) })
  const hello = await load(`${baseline.url}/api/health`)
  await stop(baseline.child)
  console.log(`bare Fastify hello: ${hello.rps} req/s (p99 ${hello.p99} ms)`)
  const rawArgon2 = await argon2Throughput()
  console.log(`raw Argon2id verify: ${rawArgon2} /s (${CONNECTIONS} at a time, this process)`)

  for (const dialect of ['sqlite', 'postgresql'] as const) {
    const dataDir = mkdtempSync(join(tmpdir(), 'svc-bench-'))
    const database = await createTestDatabase(dialect, dataDir)
    const env = { DATA_DIR: dataDir, DATABASE_URL: database.url, ENCRYPTION_SECRET: SECRET, RATE_LIMIT_ENABLED: 'false' }
    try {
      const starts: number[] = []
      let last: Started | null = null
      for (let i = 0; i < STARTS; i++) {
        last = await start([server], { ...env, PORT: String(++port) })
        starts.push(last.coldStartMs)
        if (i < STARTS - 1) await stop(last.child)
      }
      const running = last!
      const idleRss = rssMb(running.child)
      const health = await load(`${running.url}/api/health`)
      const ready = await load(`${running.url}/api/health/ready`)
      const cookie = await signUp(running.url)
      const me = await load(`${running.url}/api/users/me`, { headers: { cookie } })
      const accessToken = await bearerToken(running.url, cookie)
      const defaultTeam = await load(`${running.url}/api/teams/me/default`, { headers: { authorization: `Bearer ${accessToken}` } })
      const loginRequest: Request = {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ login: 'bench', password: PASSWORD }),
      }
      // A login flood, and meanwhile one client measuring the event loop through /api/health.
      const [login, healthDuringLogins] = await Promise.all([
        load(`${running.url}/api/auth/email/login`, loginRequest),
        load(`${running.url}/api/health`, {}, 1),
      ])
      const loadedRss = rssMb(running.child)
      const satellites = await satelliteWorkloads(running.url, cookie, bare, () => ++port)
      const catalogue = await catalogueWorkloads(running.url, cookie, env, bare, () => ++port)
      await stop(running.child)
      const ratio = (rps: number) => `${((rps / hello.rps) * 100).toFixed(0)} % of bare`
      console.log(`\n${dialect}`)
      console.log(`  cold start to first 200: median ${median(starts).toFixed(0)} ms (of ${STARTS}: ${starts.map((ms) => ms.toFixed(0)).join(', ')})`)
      console.log(`  GET /api/health:        ${health.rps} req/s, p99 ${health.p99} ms, ${ratio(health.rps)}${health.non2xx ? `, ${health.non2xx} failures` : ''}`)
      console.log(`  GET /api/health/ready:  ${ready.rps} req/s, p99 ${ready.p99} ms, ${ratio(ready.rps)}${ready.non2xx ? `, ${ready.non2xx} failures` : ''}`)
      console.log(`  GET /api/users/me (session): ${me.rps} req/s, p99 ${me.p99} ms, ${ratio(me.rps)}${me.non2xx ? `, ${me.non2xx} failures` : ''}`)
      console.log(`  GET /api/teams/me/default (bearer): ${defaultTeam.rps} req/s, p99 ${defaultTeam.p99} ms, ${ratio(defaultTeam.rps)}${defaultTeam.non2xx ? `, ${defaultTeam.non2xx} failures` : ''}`)
      console.log(`  POST /api/auth/email/login: ${login.rps} req/s, ${((login.rps / rawArgon2) * 100).toFixed(0)} % of raw Argon2 verify${login.non2xx ? `, ${login.non2xx} failures` : ''}; /api/health p99 meanwhile ${healthDuringLogins.p99} ms`)
      console.log(`  RSS: ${idleRss} MB idle, ${loadedRss} MB after the load runs`)
      for (const line of [...satellites, ...catalogue]) console.log(line)
    } finally {
      await database.drop()
      rmSync(dataDir, { recursive: true, force: true })
    }
  }
}

await main()
