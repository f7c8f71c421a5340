import { loadConfig } from '../src/config.js'
import { openDatabase } from '../src/db/drivers/client.js'
import { seedCatalogue, type SeedCatalogueResult } from '../src/cli/seed/catalogue.js'
import { againstBare, CONNECTIONS, load, type Measurement } from './harness.js'

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
export async function catalogueWorkloads(url: string, cookie: string, env: Record<string, string>, bareUrl: string, signUp: (username: string) => Promise<string>): Promise<{ measurements: Measurement[]; notes: string[] }> {
  const measurements: Measurement[] = []
  const lines: string[] = []
  const config = loadConfig({ ...env, LOG_LEVEL: 'silent' })
  const database = openDatabase(config.database, { poolSize: 2, onPoolError: (error) => console.error(error.message) })
  const headers = { cookie }
  try {
    const forList = await seedCatalogue(database, { servers: LIST_SERVERS, seed: 42 })
    lines.push(`catalogue seeded: ${seeded(forList)}`)
    measurements.push(await againstBare(bareUrl, `GET /api/mcp/servers?limit=20 (session, ${LIST_SERVERS} servers, page cache)`, `${url}/api/mcp/servers?limit=20`, { headers }, LIST_TARGET))
    // Pages the list cache cannot hold (it keeps 5 000 servers, these are 8 000): the queries
    // themselves on every request; as the admin, then as a regular user, for whom the visibility
    // rule (global servers, or their teams') is part of the query.
    const pages = Array.from({ length: 400 }, (_, i) => `/api/mcp/servers?limit=20&offset=${i * 20}&sort=${['name', '-created_at', '-updated_at'][i % 3]}`)
    const reader = { cookie: await signUp('reader') }
    for (const [who, as] of [['admin', headers], ['regular user', reader]] as const) {
      measurements.push(await againstBare(bareUrl, `  uncached list pages (400 offsets, 3 sorts), ${who}`, url, { headers: as, paths: pages }))
    }

    const forSearch = await seedCatalogue(database, { servers: SEARCH_SERVERS - LIST_SERVERS, seed: 43 })
    lines.push(`catalogue seeded: ${seeded(forSearch)} more, ${SEARCH_SERVERS} in all`)
    const paths = SEARCHES.map((q) => `/api/mcp/servers/search?q=${encodeURIComponent(q)}`)
    // The same queries with 50 different page sizes: 600 distinct pages, more than the page cache
    // keeps, so these run the search itself on (nearly) every request.
    const uncachedPaths = Array.from({ length: 50 }, (_, i) => paths.map((path) => `${path}&limit=${20 + i}`)).flat()
    const search = await againstBare(bareUrl, `GET /api/mcp/servers/search (${SEARCH_SERVERS} servers, ${SEARCHES.length} queries, page cache)`, url, { headers, paths })
    measurements.push(search)
    lines.push(`search p99 ${search.p99} ms (target ≤ ${SEARCH_P99_TARGET_MS} ms${search.p99 <= SEARCH_P99_TARGET_MS ? ', met' : ', MISSED'})`)
    for (const connections of [CONNECTIONS, 1]) {
      const uncached = await load(url, { headers, paths: uncachedPaths }, connections)
      measurements.push({ workload: `  uncached searches (600 distinct pages), ${connections} connection${connections === 1 ? '' : 's'}`, ...uncached })
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
    lines.push(`each search alone (hits, p50/max of ${QUERY_RUNS} in a row): ${timings.join('; ')}`)
  } finally {
    await database.close()
  }
  return { measurements, notes: lines }
}

