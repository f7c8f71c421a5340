import { Client } from '@modelcontextprotocol/sdk/client/index.js'
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js'
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js'
import { EVERYTHING_BIN } from './mcp-platform.js'
import { cpuMicrosOf, isNode, rssMbOf } from '../test/helpers/processes.js'

/**
 * The MCP path bench's client sessions and how they are measured (bench/mcp-path.ts): sessions of
 * the official SDK client calling the `echo` tool in a closed loop, in one-second slices, with the
 * CPU time of the processes on each side.
 */

const SLICE_MS = 1000
/** Sessions opened at once: each stdio session starts a server process, and the two cores are all there is. */
const OPENING_AT_ONCE = 8
/** An `initialize` may wait for a server process to start on a loaded machine. */
const OPEN_TIMEOUT_MS = 120_000

export interface Session {
  client: Client
  /** The server process of a stdio session. */
  pid: number | undefined
  close(): Promise<void>
}

export interface Side {
  path: 'direct' | 'satellite' | 'floor'
  sessions: Session[]
  /** The server processes of this side (below the satellite: its sandboxes too), for their CPU time. */
  servers(): number[]
  /** The satellite's process, on the side that goes through it. */
  satellite?: number
}

export interface Tally {
  calls: number
  errors: number
  firstError: string | undefined
  ms: number
  latencies: number[]
  satelliteCpuMicros: number
  serversCpuMicros: number
  clientCpuMicros: number
}

export interface SideResult {
  calls_per_s: number
  p50_ms: number
  p99_ms: number
  errors: number
  first_error?: string
  /** CPU time per call of the satellite's process (through the satellite only). */
  satellite_cpu_us?: number
  /** CPU time per call of the server processes (below the satellite: its sandboxes too). */
  servers_cpu_us: number
  /** CPU time of this process (the clients) per call. */
  client_cpu_us: number
}

export const round1 = (value: number) => Math.round(value * 10) / 10
export const sum = (values: number[]) => values.reduce((total, value) => total + value, 0)

export async function openSessions(count: number, open: () => Promise<Session>): Promise<Session[]> {
  const sessions: Session[] = []
  let next = 0
  await Promise.all(Array.from({ length: Math.min(OPENING_AT_ONCE, count) }, async () => {
    while (next < count) {
      next += 1
      sessions.push(await open())
    }
  }))
  return sessions
}

export const ECHO = { name: 'echo', arguments: { message: 'bench' } }

/** A connected client whose first echo answered as the server answers it. */
async function connected(transport: StdioClientTransport | StreamableHTTPClientTransport): Promise<Client> {
  const client = new Client({ name: 'mcp-bench', version: '1.0.0' })
  await client.connect(transport, { timeout: OPEN_TIMEOUT_MS })
  const answer = await client.callTool(ECHO)
  const text = (answer.content as Array<{ text?: string }>)[0]?.text
  if (text !== 'Echo: bench') throw new Error(`echo answered ${JSON.stringify(answer)}`)
  return client
}

export async function stdioSession(): Promise<Session> {
  const transport = new StdioClientTransport({ command: process.execPath, args: [EVERYTHING_BIN, 'stdio'], env: { PATH: process.env.PATH ?? '' }, stderr: 'ignore' })
  const client = await connected(transport)
  return { client, pid: transport.pid ?? undefined, close: () => client.close() }
}

export async function httpSession(url: string, token?: string): Promise<Session> {
  const transport = new StreamableHTTPClientTransport(new URL(url), token === undefined ? undefined : { requestInit: { headers: { authorization: `Bearer ${token}` } } })
  const client = await connected(transport)
  return {
    client, pid: undefined,
    close: async () => {
      // DELETE: the server may end what it holds for the session.
      await transport.terminateSession().catch(() => undefined)
      await client.close()
    },
  }
}

/** An error's message with its cause's (fetch says only "fetch failed"). */
function describe(error: unknown): string {
  const { message, cause } = error as Error & { cause?: Error & { code?: string } }
  return cause === undefined ? message : `${message}: ${cause.code ?? cause.message}`
}

export function newTally(): Tally {
  return { calls: 0, errors: 0, firstError: undefined, ms: 0, latencies: [], satelliteCpuMicros: 0, serversCpuMicros: 0, clientCpuMicros: 0 }
}

/** Every session of `side` calls in a closed loop for `ms`; counted into `tally` when given. */
export async function slice(side: Side, ms: number, tally: Tally | undefined, servers: number[] = []): Promise<void> {
  const serversBefore = sum(servers.map(cpuMicrosOf))
  const satelliteBefore = side.satellite === undefined ? 0 : cpuMicrosOf(side.satellite)
  const clientBefore = process.cpuUsage()
  const began = performance.now()
  const until = began + ms
  await Promise.all(side.sessions.map(async (session) => {
    while (performance.now() < until) {
      const sent = performance.now()
      try {
        await session.client.callTool(ECHO)
        if (tally !== undefined) {
          tally.latencies.push(performance.now() - sent)
          tally.calls += 1
        }
      } catch (error) {
        if (tally !== undefined) {
          tally.errors += 1
          tally.firstError ??= describe(error)
        }
      }
    }
  }))
  if (tally === undefined) return
  tally.ms += performance.now() - began
  tally.serversCpuMicros += sum(servers.map(cpuMicrosOf)) - serversBefore
  if (side.satellite !== undefined) tally.satelliteCpuMicros += cpuMicrosOf(side.satellite) - satelliteBefore
  const client = process.cpuUsage(clientBefore)
  tally.clientCpuMicros += client.user + client.system
}

export function result(tally: Tally, side: Side): SideResult {
  const sorted = Float64Array.from(tally.latencies).sort()
  const at = (quantile: number) => (sorted.length === 0 ? 0 : round1(sorted[Math.min(sorted.length - 1, Math.floor(quantile * sorted.length))]!))
  const perCall = (micros: number) => (tally.calls === 0 ? 0 : Math.round(micros / tally.calls))
  return {
    calls_per_s: Math.round((tally.calls * 1000) / tally.ms), p50_ms: at(0.5), p99_ms: at(0.99), errors: tally.errors,
    ...(tally.firstError === undefined ? {} : { first_error: tally.firstError }),
    ...(side.satellite === undefined ? {} : { satellite_cpu_us: perCall(tally.satelliteCpuMicros) }),
    servers_cpu_us: perCall(tally.serversCpuMicros), client_cpu_us: perCall(tally.clientCpuMicros),
  }
}

/** A warm-up of each side, then `seconds` of each in one-second slices taken in turn (the order swapped every round). */
export async function measure(direct: Side, satellite: Side, seconds: number, warmupSeconds: number): Promise<{ direct: SideResult; satellite: SideResult }> {
  for (const side of [direct, satellite]) await slice(side, warmupSeconds * 1000, undefined)
  const servers = new Map([direct, satellite].map((side) => [side, side.servers()]))
  const tallies = new Map([direct, satellite].map((side) => [side, newTally()]))
  for (let round = 0; round < Math.max(1, Math.round((seconds * 1000) / SLICE_MS)); round++) {
    for (const side of round % 2 === 0 ? [direct, satellite] : [satellite, direct]) await slice(side, SLICE_MS, tallies.get(side), servers.get(side))
  }
  return { direct: result(tallies.get(direct)!, direct), satellite: result(tallies.get(satellite)!, satellite) }
}

/**
 * Every side at one offered rate, in an open loop: a call is due every `1000 / ratePerS` ms, goes
 * out on the next idle session (waiting for one if all 100 are busy), and its latency runs from
 * when it was due, not from when it went out, so a side that falls behind is charged for the
 * calls it kept waiting. At a rate both sides sustain, the difference of their p99 is what the
 * satellite's hop adds, where a closed loop at full speed measures mostly a queue. The sides are
 * taken in turn, one second at a time, as in `measure`.
 */
export async function measurePaced(direct: Side, satellite: Side, ratePerS: number, seconds: number): Promise<{ direct: SideResult; satellite: SideResult }> {
  const servers = new Map([direct, satellite].map((side) => [side, side.servers()]))
  const tallies = new Map([direct, satellite].map((side) => [side, newTally()]))
  for (let round = 0; round < Math.max(1, Math.round((seconds * 1000) / SLICE_MS)); round++) {
    for (const side of round % 2 === 0 ? [direct, satellite] : [satellite, direct]) await pacedSlice(side, ratePerS, SLICE_MS, tallies.get(side)!, servers.get(side)!)
  }
  return { direct: result(tallies.get(direct)!, direct), satellite: result(tallies.get(satellite)!, satellite) }
}

async function pacedSlice(side: Side, ratePerS: number, ms: number, tally: Tally, servers: number[]): Promise<void> {
  const serversBefore = sum(servers.map(cpuMicrosOf))
  const satelliteBefore = side.satellite === undefined ? 0 : cpuMicrosOf(side.satellite)
  const clientBefore = process.cpuUsage()
  const idle = [...side.sessions]
  const queued: number[] = []
  const calls: Array<Promise<void>> = []
  const call = (session: Session, due: number): void => {
    calls.push(session.client.callTool(ECHO).then(() => {
      tally.latencies.push(performance.now() - due)
      tally.calls += 1
    }, (error: unknown) => {
      tally.errors += 1
      tally.firstError ??= describe(error)
    }).finally(() => {
      const next = queued.shift()
      if (next === undefined) idle.push(session)
      else call(session, next)
    }))
  }
  const interval = 1000 / ratePerS
  const began = performance.now()
  const count = Math.floor(ms / interval)
  for (let sent = 0; sent < count;) {
    // Every call due by now goes out (or waits for a session); then sleep until the next is due.
    const now = performance.now()
    for (; sent < count && began + sent * interval <= now; sent++) {
      const due = began + sent * interval
      const session = idle.pop()
      if (session === undefined) queued.push(due)
      else call(session, due)
    }
    if (sent < count) await new Promise((resolve) => setTimeout(resolve, Math.max(0, began + sent * interval - performance.now())))
  }
  // The calls still out (and those waiting for a session) are answered before the slice ends.
  while (calls.length > 0) await Promise.all(calls.splice(0))
  tally.ms += performance.now() - began
  tally.serversCpuMicros += sum(servers.map(cpuMicrosOf)) - serversBefore
  if (side.satellite !== undefined) tally.satelliteCpuMicros += cpuMicrosOf(side.satellite) - satelliteBefore
  const client = process.cpuUsage(clientBefore)
  tally.clientCpuMicros += client.user + client.system
}

/** Resident memory of a set of processes, in MiB, with their count and how many of them are Node servers. */
export function memoryOf(pids: number[]): { processes: number; node_processes: number; rss_mb: number } {
  return { processes: pids.length, node_processes: pids.filter(isNode).length, rss_mb: round1(sum(pids.map(rssMbOf))) }
}

export const closeAll = (sessions: Session[]) => Promise.all(sessions.map((session) => session.close().catch(() => undefined)))

type Pair = { direct: SideResult; satellite: SideResult }

export function compared(measured: Pair) {
  const percent = round1((measured.satellite.calls_per_s / measured.direct.calls_per_s) * 100)
  const added = round1(measured.satellite.p99_ms - measured.direct.p99_ms)
  return { ...measured, percent_of_direct: percent, p99_added_ms: added }
}

export type Compared = ReturnType<typeof compared>
