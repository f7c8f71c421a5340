import { spawn, type ChildProcess } from 'node:child_process'
import { once } from 'node:events'
import { readFileSync } from 'node:fs'
import autocannon from 'autocannon'

/** Starting servers in their own processes and loading them with autocannon, on 127.0.0.1 only. */

export const SECONDS = Number(process.env.BENCH_SECONDS ?? 5)
export const CONNECTIONS = Number(process.env.BENCH_CONNECTIONS ?? 10)
export const STARTS = Number(process.env.BENCH_STARTS ?? 5)
const WARMUP_SECONDS = 2

export interface Started {
  child: ChildProcess
  url: string
  coldStartMs: number
}

export async function start(entry: string[], env: Record<string, string>): Promise<Started> {
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

export async function stop(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null) return
  child.kill('SIGTERM')
  await once(child, 'exit')
}

export function rssMb(child: ChildProcess): number {
  const status = readFileSync(`/proc/${child.pid}/status`, 'utf8')
  const kb = Number(/VmRSS:\s+(\d+)/.exec(status)?.[1] ?? 0)
  return Math.round(kb / 102.4) / 10
}

export interface Request {
  method?: 'GET' | 'POST'
  headers?: Record<string, string>
  body?: string
  /** Paths that each connection requests in turn (instead of the URL's own path). */
  paths?: string[]
}

export async function load(url: string, request: Request = {}, connections = CONNECTIONS) {
  const options = {
    url, connections, method: request.method ?? 'GET', headers: request.headers ?? {}, body: request.body,
    ...(request.paths === undefined ? {} : { requests: request.paths.map((path) => ({ method: 'GET' as const, path })) }),
  }
  // Warm-up (JIT, pools) first; only the second run is reported.
  await autocannon({ ...options, duration: WARMUP_SECONDS })
  const result = await autocannon({ ...options, duration: SECONDS })
  return { rps: Math.round(result.requests.average), p50: result.latency.p50, p99: result.latency.p99, non2xx: result.non2xx + result.errors }
}

/** The bare Fastify route, in a process of its own, started for one measurement. */
export async function bareHello(entry: string, port: number) {
  const baseline = await start([entry], { PORT: String(port) })
  try {
    return await load(`${baseline.url}/api/health`)
  } finally {
    await stop(baseline.child)
  }
}

