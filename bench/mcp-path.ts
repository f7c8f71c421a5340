import { cpus, loadavg } from 'node:os'
import { chosenIsolation, startFloorServer, startPlatform, startRemoteServer, stopChild, type RemoteServer } from './mcp-platform.js'
import { closeAll, compared, httpSession, measure, measurePaced, memoryOf, openSessions, round1, stdioSession, type Compared, type Session, type Side } from './mcp-sessions.js'
import { descendants, rssMbOf } from '../test/helpers/processes.js'

/**
 * `npm run bench:mcp` (`-- --json`: one JSON document on standard output): MCP `tools/call` of server-everything's
 * `echo` tool through the reference satellite against the same calls made directly on the server,
 * for both kinds of installation, with the official SDK client on both sides:
 *
 * - stdio (a package installation): directly, a client over stdio to a server process of its own
 *   per session; through the satellite, a client over streamable HTTP to the satellite's
 *   `/mcp/<installation id>` with the member's access token;
 * - remote: directly, a client over streamable HTTP to server-everything's HTTP mode; through the
 *   satellite, the remote installation of an identical server process of its own.
 *
 * Each side opens BENCH_MCP_SESSIONS client sessions; each session calls the tool in a closed loop
 * (the next call when the answer came). After a warm-up of each side, the two sides are loaded in
 * alternating one-second slices (this machine's speed drifts within minutes), BENCH_MCP_SECONDS of
 * each; then the same with one session a side, whose latency is the hop's own rather than a wait
 * behind 99 other sessions. Between the two, every session again at one offered rate both sides
 * sustain (an open loop, half the satellite side's calls/s by default): the p99 the satellite adds
 * there is its hop's, not a queue's. Reported: calls/s and latency p50/p99 of each side, the satellite's
 * share of the direct calls/s and the p99 it adds, the CPU time per call of the satellite, of the
 * servers and of this process (the clients), and, with every session open, the resident memory of
 * the satellite, of the processes below it, and of the servers the direct sessions use; also how
 * many server processes (stdio) or upstream sessions (remote) the satellite holds for its client
 * sessions. Last, the clients alone: the same sessions of the SDK client against a server that
 * answers every call at once (bench/mcp-floor-server.ts), in slices taken in turn with the direct
 * stdio sessions; their share of direct's calls/s is the most any satellite could reach with
 * these clients on this machine.
 * The satellite runs in its default sandbox when bubblewrap is installed; ISOLATION=none runs its
 * servers bare. Everything is on 127.0.0.1 (setup: bench/mcp-platform.ts). Figures, not assertions.
 *   BENCH_MCP_SESSIONS (default 100)       concurrent client sessions on each side
 *   BENCH_MCP_SECONDS (10)                 measured seconds of each side
 *   BENCH_MCP_WARMUP_SECONDS (3)           warm-up of each side, not reported
 *   BENCH_MCP_PACED_SECONDS (10)           then every session at one offered rate, open loop, for this long a side (0: not measured)
 *   BENCH_MCP_PACED_PERCENT (50)           that rate, as a share of the calls/s the satellite's side reached at full speed
 *   BENCH_MCP_ONE_SESSION_SECONDS (5)      then one session a side for this long (0: not measured)
 *   ISOLATION (bubblewrap when installed)  the satellite's isolation: process-sandbox or none
 *   BENCH_MCP_SATELLITE                    another build's entry point (…/dist/main.js) to measure instead of this one
 *   BENCH_MCP_PROFILE_DIR                  the satellite runs with --cpu-prof, writing its profile there when it stops
 */

/** A whole number ≥ `least` from the environment, or `fallback`; anything else stops the bench before it starts. */
function setting(name: string, fallback: number, least: number): number {
  const text = process.env[name]?.trim()
  if (text === undefined || text === '') return fallback
  const value = Number(text)
  if (!Number.isInteger(value) || value < least) throw new Error(`${name} must be a whole number ≥ ${least} (got "${text}")`)
  return value
}

const SESSIONS = setting('BENCH_MCP_SESSIONS', 100, 1)
const SECONDS = setting('BENCH_MCP_SECONDS', 10, 1)
const WARMUP_SECONDS = setting('BENCH_MCP_WARMUP_SECONDS', 3, 0)
const ONE_SESSION_SECONDS = setting('BENCH_MCP_ONE_SESSION_SECONDS', 5, 0)
const PACED_SECONDS = setting('BENCH_MCP_PACED_SECONDS', 10, 0)
const PACED_PERCENT = setting('BENCH_MCP_PACED_PERCENT', 50, 1)
const TARGET_PERCENT = 50
const TARGET_P99_ADDED_MS = 5
const JSON_OUTPUT = process.argv.includes('--json')
/** The readable report; with --json it goes to standard error, leaving standard output to the document. */
const say = (line = '') => (JSON_OUTPUT ? console.error(line) : console.log(line))


/**
 * The two sides with every session (against the targets) and `memory()` read right after, then
 * with one session each: in a closed loop a session's latency is mostly its wait behind the
 * others, so one session shows what the satellite's hop itself adds.
 */
async function bothLoads<M>(direct: Side, satellite: Side, memory: () => M): Promise<{ sessions: Compared; memory: M; paced?: Compared & { rate_per_s: number }; one_session?: Compared }> {
  const sessions = compared(await measure(direct, satellite, SECONDS, WARMUP_SECONDS))
  const read = memory()
  // The same sessions at a rate both sides sustain: a share of what the satellite's side reached.
  const rate = Math.max(1, Math.round((sessions.satellite.calls_per_s * PACED_PERCENT) / 100))
  const paced = PACED_SECONDS <= 0 ? undefined : { ...compared(await measurePaced(direct, satellite, rate, PACED_SECONDS)), rate_per_s: rate }
  if (ONE_SESSION_SECONDS <= 0) return { sessions, memory: read, ...(paced === undefined ? {} : { paced }) }
  const one = (side: Side): Side => ({ ...side, sessions: side.sessions.slice(0, 1) })
  return { sessions, memory: read, ...(paced === undefined ? {} : { paced }), one_session: compared(await measure(one(direct), one(satellite), ONE_SESSION_SECONDS, 1)) }
}

async function main(): Promise<void> {
  const began = performance.now()
  const elapsed = () => Math.round((performance.now() - began) / 100) / 10
  const isolation = chosenIsolation()
  say(`MCP tools/call (server-everything's echo), ${SESSIONS} client sessions a side, ${SECONDS} s of each side in 1 s slices taken in turn after ${WARMUP_SECONDS} s of warm-up`)
  const profileDir = process.env.BENCH_MCP_PROFILE_DIR?.trim()
  const platform = await startPlatform(isolation.mode, {
    ...(profileDir ? { nodeArgs: ['--cpu-prof', `--cpu-prof-dir=${profileDir}`] } : {}),
    ...(process.env.BENCH_MCP_SATELLITE?.trim() ? { satelliteMain: process.env.BENCH_MCP_SATELLITE.trim() } : {}),
  })
  const satellitePid = platform.satellite.child.pid!
  const report: Record<string, unknown> = {
    date: new Date().toISOString(), machine: { cpus: cpus().length, node: process.version, load_average: loadavg().map(round1) },
    sessions: SESSIONS, seconds: SECONDS, warmup_seconds: WARMUP_SECONDS, one_session_seconds: ONE_SESSION_SECONDS,
    target: { percent_of_direct: TARGET_PERCENT, p99_added_ms: TARGET_P99_ADDED_MS },
    isolation: { started_with: isolation.mode, why: isolation.why, advertised: platform.satellite.isolation },
  }
  say(`satellite isolation: ${isolation.mode} (${isolation.why}); the satellite advertises ${platform.satellite.isolation}`)
  say(`set up in ${elapsed()} s (the service on SQLite, a team satellite, an installation of each kind running)`)
  let direct: RemoteServer | undefined
  const open: Session[][] = []
  const opened = async (open_: () => Promise<Session>): Promise<{ sessions: Session[]; seconds: number }> => {
    const start = performance.now()
    const sessions = await openSessions(SESSIONS, open_)
    open.push(sessions)
    return { sessions, seconds: round1((performance.now() - start) / 1000) }
  }
  const closeOpen = async () => {
    while (open.length > 0) await closeAll(open.pop()!)
  }
  try {
    // stdio: a server process per direct session; the satellite's sessions through its package installation.
    const satelliteIdle = round1(rssMbOf(satellitePid))
    const treeBefore = descendants(satellitePid)
    const directStdio = await opened(stdioSession)
    const throughStdio = await opened(() => httpSession(platform.endpoints.stdio, platform.token))
    say(`stdio: ${SESSIONS} direct sessions (a server process each) opened in ${directStdio.seconds} s, ${SESSIONS} through the satellite in ${throughStdio.seconds} s`)
    const directPids = () => directStdio.sessions.map((session) => session.pid).filter((pid): pid is number => pid !== undefined)
    const stdio = await bothLoads(
      { path: 'direct', sessions: directStdio.sessions, servers: directPids },
      { path: 'satellite', sessions: throughStdio.sessions, servers: () => descendants(satellitePid), satellite: satellitePid },
      () => ({
        satellite_idle_rss_mb: satelliteIdle,
        satellite_rss_mb: round1(rssMbOf(satellitePid)),
        satellite_servers_before_sessions: memoryOf(treeBefore),
        satellite_servers: memoryOf(descendants(satellitePid)),
        direct_servers: memoryOf(directPids()),
      }),
    )
    const stdioMemory = stdio.memory
    report.stdio = { ...stdio, opened_in_s: { direct: directStdio.seconds, satellite: throughStdio.seconds } }
    await closeAll(open.pop()!)

    // The clients alone, against the direct stdio sessions: what the SDK client's own streamable
    // HTTP leaves of direct's calls/s to anything behind it, whatever that costs.
    const floorServer = await startFloorServer()
    let floor: Compared
    try {
      const floorSessions = await opened(() => httpSession(floorServer.url))
      floor = compared(await measure(
        { path: 'direct', sessions: directStdio.sessions, servers: directPids },
        { path: 'floor', sessions: floorSessions.sessions, servers: () => [floorServer.child.pid!] },
        SECONDS, WARMUP_SECONDS,
      ))
      report.clients_alone = { ...floor, server: 'bench/mcp-floor-server.ts' }
      await closeOpen()
    } finally {
      await stopChild(floorServer.child)
    }

    // remote: two identical server processes, one for the direct sessions, one behind the satellite.
    direct = await startRemoteServer()
    const remoteIdle = round1(rssMbOf(satellitePid))
    const upstreamBefore = platform.upstream.sessions() ?? 0
    const directRemote = await opened(() => httpSession(direct!.url))
    const throughRemote = await opened(() => httpSession(platform.endpoints.remote, platform.token))
    const upstreamAfter = platform.upstream.sessions()
    const upstreamSessions = upstreamAfter === undefined ? null : { before_client_sessions: upstreamBefore, opened_for_client_sessions: upstreamAfter - upstreamBefore }
    const remote = await bothLoads(
      { path: 'direct', sessions: directRemote.sessions, servers: () => [direct!.child.pid!] },
      { path: 'satellite', sessions: throughRemote.sessions, servers: () => [platform.upstream.child.pid!], satellite: satellitePid },
      () => ({
        satellite_idle_rss_mb: remoteIdle,
        satellite_rss_mb: round1(rssMbOf(satellitePid)),
        satellite_upstream_server_rss_mb: round1(rssMbOf(platform.upstream.child.pid!)),
        direct_server_rss_mb: round1(rssMbOf(direct!.child.pid!)),
      }),
    )
    const remoteMemory = remote.memory
    report.remote = { ...remote, upstream_sessions: upstreamSessions, opened_in_s: { direct: directRemote.seconds, satellite: throughRemote.seconds } }
    await closeOpen()
    report.run_seconds = elapsed()

    say()
    say(table([
      ['stdio', stdio.sessions, SESSIONS], ['remote', remote.sessions, SESSIONS],
      ...(stdio.paced === undefined ? [] : [[`stdio at ${stdio.paced.rate_per_s} calls/s`, stdio.paced, SESSIONS, undefined, 'paced'] as const]),
      ...(remote.paced === undefined ? [] : [[`remote at ${remote.paced.rate_per_s} calls/s`, remote.paced, SESSIONS, undefined, 'paced'] as const]),
      ...(stdio.one_session === undefined ? [] : [['stdio', stdio.one_session, 1] as const]),
      ...(remote.one_session === undefined ? [] : [['remote', remote.one_session, 1] as const]),
      ['stdio', floor, SESSIONS, 'the SDK clients alone (bench/mcp-floor-server.ts)'],
    ]))
    say()
    say(`memory with ${SESSIONS} sessions open on each side (RSS, MiB):`)
    const servers = (memory: ReturnType<typeof memoryOf>) => `${memory.rss_mb} in ${memory.processes} processes (${memory.node_processes} Node servers)`
    say(`  stdio:  the satellite ${stdioMemory.satellite_rss_mb} (${stdioMemory.satellite_idle_rss_mb} before its sessions); the processes below it ${servers(stdioMemory.satellite_servers)}, before its sessions ${servers(stdioMemory.satellite_servers_before_sessions)}; the direct sessions' servers ${servers(stdioMemory.direct_servers)}`)
    say(`  remote: the satellite ${remoteMemory.satellite_rss_mb} (${remoteMemory.satellite_idle_rss_mb} before its sessions); its upstream server ${remoteMemory.satellite_upstream_server_rss_mb}; the direct sessions' server ${remoteMemory.direct_server_rss_mb}`)
    say(upstreamSessions === null
      ? '  upstream sessions the satellite holds on its remote server: unknown (the server logged none)'
      : `  upstream sessions the satellite opened on its remote server: ${upstreamSessions.before_client_sessions} before its client sessions, ${upstreamSessions.opened_for_client_sessions} more for its ${SESSIONS} client sessions`)
    say(`run time ${report.run_seconds} s; load average ${loadavg().map(round1).join(' ')} (at the start ${(report.machine as { load_average: number[] }).load_average.join(' ')})`)
  } finally {
    await closeOpen()
    if (direct !== undefined) direct.child.kill('SIGTERM')
    await platform.close()
  }
  if (JSON_OUTPUT) console.log(JSON.stringify(report, null, 2))
}

/**
 * One row per side. With every session, the throughput target is read on the closed loop at full
 * speed and the added p99 on the paced rows (an open loop at a rate both sides sustain): at full
 * speed a call's latency is mostly its wait behind the other sessions.
 */
function table(kinds: ReadonlyArray<readonly [string, Compared, number, string?, ('closed' | 'paced')?]>): string {
  const header = ['', 'sessions', 'calls/s', 'p50/p99 ms', 'of direct', 'p99 added', 'CPU µs/call: satellite / servers / clients', 'errors']
  const rows: string[][] = []
  for (const [kind, measured, sessions, instead, mode = 'closed'] of kinds) {
    // The clients alone are no candidate for the targets: their row stands for what any satellite could reach at most.
    const candidate = sessions === SESSIONS && instead === undefined
    const rateTarget = candidate && mode === 'closed'
    const latencyTarget = candidate && (mode === 'paced' || PACED_SECONDS <= 0)
    for (const path of ['direct', 'satellite'] as const) {
      const side = measured[path]
      const through = path === 'satellite'
      rows.push([
        `${kind}, ${through ? instead ?? 'through the satellite' : 'directly'}`, String(sessions),
        String(side.calls_per_s), `${side.p50_ms}/${side.p99_ms}`,
        !through ? '' : `${measured.percent_of_direct} %${rateTarget ? ` (≥ ${TARGET_PERCENT} %: ${measured.percent_of_direct >= TARGET_PERCENT ? 'met' : 'MISSED'})` : ''}`,
        !through ? '' : `${measured.p99_added_ms} ms${latencyTarget ? ` (≤ ${TARGET_P99_ADDED_MS} ms: ${measured.p99_added_ms <= TARGET_P99_ADDED_MS ? 'met' : 'MISSED'})` : ''}`,
        `${side.satellite_cpu_us ?? '–'} / ${side.servers_cpu_us} / ${side.client_cpu_us}`,
        side.errors === 0 ? '' : `${side.errors} (${side.first_error})`,
      ])
    }
  }
  const widths = header.map((title, column) => Math.max(title.length, ...rows.map((row) => row[column]!.length)))
  const format = (row: string[]) => `  ${row.map((cell, column) => (column === 0 ? cell.padEnd(widths[column]!) : cell.padStart(widths[column]!))).join('  ')}`
  return [format(header), ...rows.map(format)].join('\n')
}

await main()
