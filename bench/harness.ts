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

/**
 * A server process, started as `npm start` starts the service (`node --enable-source-maps`, the
 * default log level, standard output going nowhere: a terminal would measure the terminal).
 */
export async function start(args: string[], env: Record<string, string>): Promise<Started> {
  const began = performance.now()
  const child = spawn(process.execPath, args, {
    env: { PATH: process.env.PATH ?? '', HOST: '127.0.0.1', ...env },
    stdio: ['ignore', 'ignore', 'inherit'],
  })
  const url = `http://127.0.0.1:${env.PORT}`
  processes.set(url, child.pid!)
  running.add(child)
  child.once('exit', () => running.delete(child))
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

/** The process behind each URL the bench started, for its CPU time. */
const processes = new Map<string, number>()
/** Every server still running: killed when the bench ends, however it ends, so none is left behind to load the next run. */
const running = new Set<ChildProcess>()
process.once('exit', () => {
  for (const child of running) child.kill('SIGKILL')
})

/** User plus system CPU time of a process, in microseconds (Linux: /proc, in clock ticks of 10 ms). */
export function cpuMicros(pid: number): number {
  const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ')
  return (Number(fields[11]) + Number(fields[12])) * 10_000
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
  /** At most this many requests per second over all connections: a probe of latency, not a load. */
  rate?: number
  /** The status every answer must have (counted in `non2xx` otherwise); any 2xx when not given. */
  status?: number
}

export interface Load {
  rps: number
  p50: number
  p99: number
  /** Answers other than 2xx (or than the request's `status`), and connection errors. */
  non2xx: number
  /**
   * CPU time the server process spent per request (user + system, so the kernel's share of the
   * loopback network too), when the bench started that server. Steadier than req/s on a machine
   * whose speed drifts, and free of the load generator's share of the two cores.
   */
  cpu_us?: number
}

function loadOptions(url: string, request: Request, connections: number) {
  return {
    url, connections, method: request.method ?? 'GET', headers: request.headers ?? {}, body: request.body,
    ...(request.paths === undefined ? {} : { requests: request.paths.map((path) => ({ method: 'GET' as const, path })) }),
    ...(request.rate === undefined ? {} : { overallRate: request.rate }),
  }
}

/** One run of autocannon, with the server's CPU time over it when the bench started that server. */
async function run(url: string, request: Request, connections: number, seconds: number) {
  const pid = processes.get(new URL(url).origin)
  const cpuBefore = pid === undefined ? 0 : cpuMicros(pid)
  const result = await autocannon({ ...loadOptions(url, request, connections), duration: seconds })
  return { result, cpuMicros: pid === undefined ? undefined : cpuMicros(pid) - cpuBefore }
}

/** Answers other than the expected ones (any 2xx, or the request's `status`), and connection errors. */
function unexpected(result: autocannon.Result, request: Request): number {
  if (request.status === undefined) return result.non2xx + result.errors
  const other = Object.entries(result.statusCodeStats ?? {}).reduce((sum, [code, { count = 0 }]) => (Number(code) === request.status ? sum : sum + count), 0)
  return other + result.errors
}

const cpuPerRequest = (micros: number | undefined, requests: number) =>
  micros === undefined || requests === 0 ? {} : { cpu_us: Math.round((micros / requests) * 10) / 10 }

/** Warm-up (JIT, pools) before a measured run: not reported. */
const warmUp = (url: string, request: Request, connections: number) =>
  autocannon({ ...loadOptions(url, request, connections), duration: WARMUP_SECONDS })

export async function load(url: string, request: Request = {}, connections = CONNECTIONS, seconds = SECONDS): Promise<Load> {
  await warmUp(url, request, connections)
  const { result, cpuMicros: micros } = await run(url, request, connections, seconds)
  return { rps: Math.round(result.requests.average), p50: result.latency.p50, p99: result.latency.p99, non2xx: unexpected(result, request), ...cpuPerRequest(micros, result.requests.total) }
}

/** A measured workload, with the bare route measured alongside it. */
export interface Measurement extends Load {
  workload: string
  bare_rps?: number
  bare_cpu_us?: number
  percent_of_bare?: number
  target_percent?: number
  met?: boolean
}

/** One-second slices of the bare route and of the workload, taken in turn (see againstBare). */
const SLICE_SECONDS = 1

/**
 * The bare route and the workload in alternating one-second slices (after a warm-up of each),
 * SECONDS of each in all: this machine's speed drifts by 2× within minutes, and even two runs
 * back to back saw the bare route at 9 000 and 19 000 req/s; interleaved, a drift weighs on both
 * sides of the ratio alike. Throughput and CPU are summed over the slices; p50 is the median of
 * the slices' and p99 the highest.
 */
export async function againstBare(bareUrl: string, workload: string, url: string, request: Request = {}, targetPercent?: number, connections = CONNECTIONS): Promise<Measurement> {
  const sides = [{ url: `${bareUrl}/api/health`, request: {} as Request }, { url, request }]
  for (const side of sides) await warmUp(side.url, side.request, connections)
  const totals = sides.map(() => ({ requests: 0, seconds: 0, cpu: 0 as number | undefined, p50: [] as number[], p99: 0, non2xx: 0 }))
  for (let slice = 0; slice < Math.max(1, Math.round(SECONDS / SLICE_SECONDS)); slice++) {
    for (const [index, side] of sides.entries()) {
      const { result, cpuMicros: micros } = await run(side.url, side.request, connections, SLICE_SECONDS)
      const total = totals[index]!
      total.requests += result.requests.total
      total.seconds += result.duration
      total.cpu = micros === undefined || total.cpu === undefined ? undefined : total.cpu + micros
      total.p50.push(result.latency.p50)
      total.p99 = Math.max(total.p99, result.latency.p99)
      total.non2xx += unexpected(result, side.request)
    }
  }
  const [bare, measured] = totals.map((total) => ({
    rps: Math.round(total.requests / total.seconds), p50: total.p50.sort((a, b) => a - b)[Math.floor(total.p50.length / 2)]!, p99: total.p99,
    non2xx: total.non2xx, ...cpuPerRequest(total.cpu, total.requests),
  })) as [Load, Load]
  const percent = Math.round((measured.rps / bare.rps) * 1000) / 10
  return {
    workload, ...measured, bare_rps: bare.rps, ...(bare.cpu_us === undefined ? {} : { bare_cpu_us: bare.cpu_us }), percent_of_bare: percent,
    ...(targetPercent === undefined ? {} : { target_percent: targetPercent, met: percent >= targetPercent }),
  }
}

/** One table: each workload's throughput, latency and ratio to bare, with its target. */
export function table(measurements: readonly Measurement[]): string {
  const rows = measurements.map((m) => [
    m.workload,
    String(m.rps),
    `${m.p50}/${m.p99}`,
    m.bare_rps === undefined ? '' : String(m.bare_rps),
    m.percent_of_bare === undefined ? '' : `${m.percent_of_bare.toFixed(0)} %`,
    m.target_percent === undefined ? '' : `≥ ${m.target_percent} % ${m.met ? 'met' : 'MISSED'}`,
    m.cpu_us === undefined ? '' : `${m.cpu_us.toFixed(0)}${m.bare_cpu_us === undefined ? '' : ` / ${m.bare_cpu_us.toFixed(0)}`}`,
    m.non2xx === 0 ? '' : String(m.non2xx),
  ])
  const header = ['workload', 'req/s', 'p50/p99 ms', 'bare req/s', 'of bare', 'target', 'CPU µs/req (bare)', 'non-2xx']
  const widths = header.map((title, column) => Math.max(title.length, ...rows.map((row) => row[column]!.length)))
  const format = (row: string[]) => `  ${row.map((cell, column) => (column === 0 ? cell.padEnd(widths[column]!) : cell.padStart(widths[column]!))).join('  ')}`
  return [format(header), ...rows.map(format)].join('\n')
}
