import { spawn, type ChildProcess } from 'node:child_process'
import { once } from 'node:events'
import { mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import autocannon from 'autocannon'
import { projectRoot } from '../src/paths.js'
import { createTestDatabase } from '../test/helpers/database.js'

/**
 * `npm run bench`: figures, not assertions (SPEC §7). Talks only to 127.0.0.1.
 * For each dialect: cold start to the first 200, then throughput of /api/health and
 * /api/health/ready as ratios to a bare Fastify "hello" route measured in the same run,
 * and the resident memory afterwards.
 *   BENCH_SECONDS (default 5)  length of each load run
 *   BENCH_CONNECTIONS (10)     concurrent connections
 *   BENCH_STARTS (5)           cold starts per dialect (the median is reported)
 * Each load run follows a 2 s warm-up that is not reported.
 */

const SECONDS = Number(process.env.BENCH_SECONDS ?? 5)
const CONNECTIONS = Number(process.env.BENCH_CONNECTIONS ?? 10)
const STARTS = Number(process.env.BENCH_STARTS ?? 5)
const WARMUP_SECONDS = 2
const SECRET = 'bench-secret-0123456789-abcdefghijklmnopqrstuvwxyz'

interface Started {
  child: ChildProcess
  url: string
  coldStartMs: number
}

async function start(entry: string[], env: Record<string, string>): Promise<Started> {
  const began = performance.now()
  const child = spawn(process.execPath, entry, {
    env: { PATH: process.env.PATH ?? '', LOG_LEVEL: 'warn', HOST: '127.0.0.1', ...env },
    stdio: ['ignore', 'ignore', 'inherit'],
  })
  const url = `http://127.0.0.1:${env.PORT}`
  for (;;) {
    try {
      const response = await fetch(`${url}/api/health`)
      if (response.status === 200) return { child, url, coldStartMs: performance.now() - began }
    } catch {
      // not listening yet
    }
    if (child.exitCode !== null) throw new Error(`server exited with ${child.exitCode}`)
    await new Promise((resolve) => setTimeout(resolve, 5))
  }
}

async function stop(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null) return
  child.kill('SIGTERM')
  await once(child, 'exit')
}

function rssMb(child: ChildProcess): number {
  const status = readFileSync(`/proc/${child.pid}/status`, 'utf8')
  const kb = Number(/VmRSS:\s+(\d+)/.exec(status)?.[1] ?? 0)
  return Math.round(kb / 102.4) / 10
}

async function load(url: string, headers: Record<string, string> = {}) {
  // Warm-up (JIT, pools) first; only the second run is reported.
  await autocannon({ url, connections: CONNECTIONS, duration: WARMUP_SECONDS, headers })
  const result = await autocannon({ url, connections: CONNECTIONS, duration: SECONDS, headers })
  return { rps: Math.round(result.requests.average), p99: result.latency.p99, non2xx: result.non2xx + result.errors }
}

const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!

async function main(): Promise<void> {
  const server = join(projectRoot, 'dist/src/server.js')
  const bare = join(projectRoot, 'dist/bench/bare-fastify.js')
  let port = 4100

  const baseline = await start([bare], { PORT: String(++port) })
  const hello = await load(`${baseline.url}/api/health`)
  await stop(baseline.child)
  console.log(`bare Fastify hello: ${hello.rps} req/s (p99 ${hello.p99} ms)`)

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
      const loadedRss = rssMb(running.child)
      await stop(running.child)
      const ratio = (rps: number) => `${((rps / hello.rps) * 100).toFixed(0)} % of bare`
      console.log(`\n${dialect}`)
      console.log(`  cold start to first 200: median ${median(starts).toFixed(0)} ms (of ${STARTS}: ${starts.map((ms) => ms.toFixed(0)).join(', ')})`)
      console.log(`  GET /api/health:        ${health.rps} req/s, p99 ${health.p99} ms, ${ratio(health.rps)}${health.non2xx ? `, ${health.non2xx} failures` : ''}`)
      console.log(`  GET /api/health/ready:  ${ready.rps} req/s, p99 ${ready.p99} ms, ${ratio(ready.rps)}${ready.non2xx ? `, ${ready.non2xx} failures` : ''}`)
      console.log(`  RSS: ${idleRss} MB idle, ${loadedRss} MB after ${2 * SECONDS} s of load`)
    } finally {
      await database.drop()
      rmSync(dataDir, { recursive: true, force: true })
    }
  }
}

await main()
