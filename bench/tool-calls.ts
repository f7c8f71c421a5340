import { randomUUID } from 'node:crypto'
import { mkdtempSync, rmSync } from 'node:fs'
import type { AddressInfo } from 'node:net'
import { cpus, loadavg, tmpdir } from 'node:os'
import { join } from 'node:path'
import type { FastifyInstance, InjectOptions } from 'fastify'
import pg from 'pg'
import { buildApp } from '../src/app.js'
import { loadConfig } from '../src/config.js'
import { createTestDatabase, type TestDialect } from '../test/helpers/database.js'
import { cpuMicros } from './harness.js'

/**
 * `npm run bench:tool-calls`: tool-call ingestion and usage reads, on SQLite (a file) and on
 * PostgreSQL. One service listens on 127.0.0.1; a satellite of a team runs two installations.
 *
 * 1. Ingestion: BENCH_TOOL_CALLS_BATCHES batches of 1 000 calls (default 1 000, so 1 million
 *    calls) are posted one after the other through `POST /api/satellites/:id/instances/:id/calls`,
 *    the route satellites use — the million calls the usage read runs over are seeded through the
 *    same ingestion path, raw rows and hourly rows written by the same transaction. Batch k holds
 *    the calls of a few minutes, k × 43 minutes after the start of a 30-day period (so the batches
 *    fill the period), by 10 users over 12 tools, alternating between the two installations.
 * 2. Usage: `GET /api/teams/:teamId/mcp/usage?group_by=tool` over those 30 days, as a team admin
 *    (every member's calls) and as a member (their own), BENCH_TOOL_CALLS_READS times each.
 *
 * Reported: p50/p99/max in ms of each, the CPU time a batch took (this process during the post:
 * the service and the bench's HTTP client; and PostgreSQL's server processes of this database), and
 * the rows the hourly table holds. Figures, not assertions.
 */

const BATCHES = Number(process.env.BENCH_TOOL_CALLS_BATCHES ?? 1000)
const READS = Number(process.env.BENCH_TOOL_CALLS_READS ?? 200)
const DIALECT_LIST = (process.env.BENCH_TOOL_CALLS_DIALECTS ?? 'sqlite,postgresql').split(',') as TestDialect[]
const CALLS_PER_BATCH = 1000
const USERS = 10
const TOOLS = 12
const DAY = 24 * 3600_000
const PERIOD = 30 * DAY
const SECRET = 'bench-tool-calls-secret-0123456789-abcdefghijklmnop'

const quantile = (sorted: readonly number[], q: number): number => sorted[Math.min(sorted.length - 1, Math.ceil(q * sorted.length) - 1)]!
const summary = (samples: number[]): string => {
  const sorted = [...samples].sort((a, b) => a - b)
  return `p50 ${quantile(sorted, 0.5).toFixed(1)} ms, p99 ${quantile(sorted, 0.99).toFixed(1)} ms, max ${sorted[sorted.length - 1]!.toFixed(1)} ms (n=${sorted.length})`
}

async function expectStatus(app: FastifyInstance, status: number, request: InjectOptions): Promise<Record<string, any>> {
  const response = await app.inject(request)
  if (response.statusCode !== status) throw new Error(`${JSON.stringify(request).slice(0, 200)} → ${response.statusCode} ${response.body}`)
  return response.json()
}

async function signUp(app: FastifyInstance, username: string): Promise<{ id: string; cookie: string; username: string }> {
  const response = await app.inject({ method: 'POST', url: '/api/auth/email/register', payload: { username, email: `${username}@example.com`, password: 'correct horse battery' } })
  if (response.statusCode !== 201) throw new Error(`register: ${response.statusCode} ${response.body}`)
  const cookie = response.cookies.find((each) => each.name === 'auth_session')!
  return { id: response.json().data.user.id, cookie: `auth_session=${cookie.value}`, username }
}

/**
 * The CPU time, in µs, PostgreSQL's server processes serving `url`'s database have used so far,
 * by process (Linux: read from /proc, as the server runs on this machine).
 */
async function serverCpu(url: string): Promise<Map<number, number>> {
  const client = new pg.Client({ connectionString: url })
  await client.connect()
  try {
    const { rows } = await client.query<{ pid: number }>('select pid from pg_stat_activity where datname = current_database() and pid <> pg_backend_pid()')
    return new Map(rows.map(({ pid }) => [pid, cpuMicros(pid)]))
  } finally {
    await client.end()
  }
}

/** CPU µs between two readings; a process that was not there before counts from zero. */
const cpuBetween = (before: Map<number, number>, after: Map<number, number>): number =>
  [...after].reduce((sum, [pid, micros]) => sum + micros - (before.get(pid) ?? 0), 0)

async function run(dialect: TestDialect): Promise<void> {
  const dataDir = mkdtempSync(join(tmpdir(), 'bench-tool-calls-'))
  const database = await createTestDatabase(dialect, dataDir)
  const config = loadConfig({
    DATABASE_URL: database.url, DATA_DIR: dataDir, ENCRYPTION_SECRET: SECRET, LOG_LEVEL: 'silent', PUBLIC_URL: 'http://localhost:3000', RATE_LIMIT_ENABLED: 'false',
  })
  const app = await buildApp(config, { logger: false })
  try {
    await app.listen({ port: 0, host: '127.0.0.1' })
    const base = `http://127.0.0.1:${(app.server.address() as AddressInfo).port}`
    // The first account is the global admin; it creates the team and owns it.
    const admin = await signUp(app, 'bench_admin')
    const member = await signUp(app, 'bench_member')
    const team = (await expectStatus(app, 201, { method: 'POST', url: '/api/teams', headers: { cookie: admin.cookie }, payload: { name: 'Bench Team' } })).data.team
    await expectStatus(app, 201, { method: 'POST', url: `/api/teams/${team.id}/members`, headers: { cookie: admin.cookie }, payload: { login: member.username, role: 'team_user' } })
    const token = (await expectStatus(app, 201, { method: 'POST', url: `/api/teams/${team.id}/satellites/registration-tokens`, headers: { cookie: admin.cookie }, payload: {} })).data.token
    const paired = (await expectStatus(app, 201, {
      method: 'POST', url: '/api/satellites/register', headers: { authorization: `Bearer ${token}` },
      payload: { name: 'bench-sat', system_info: { os: 'linux', arch: 'x64', node_version: 'v20.11.0', memory_mb: 4096 } },
    })).data
    const satellite = { id: paired.satellite.id as string, key: paired.api_key as string }
    await expectStatus(app, 200, { method: 'POST', url: `/api/satellites/${satellite.id}/heartbeat`, headers: { authorization: `Bearer ${satellite.key}` }, payload: { status: 'active', system_metrics: { cpu_usage_percent: 1, memory_usage_mb: 100, uptime_seconds: 60 } } })
    const server = {
      $schema: 'https://static.modelcontextprotocol.io/schemas/2025-12-11/server.schema.json', name: 'io.github.example/bench-tools', description: 'Bench.', version: '1.0.0',
      packages: [{ registryType: 'pypi', identifier: 'bench-mcp', version: '1.0.0', transport: { type: 'stdio' } }],
    }
    const serverId = (await expectStatus(app, 200, { method: 'POST', url: '/api/mcp/servers/import', headers: { cookie: admin.cookie }, payload: [server] })).data.results[0].server_id
    const installations: string[] = []
    for (const name of ['bench-one', 'bench-two']) {
      installations.push((await expectStatus(app, 201, {
        method: 'POST', url: `/api/teams/${team.id}/mcp/installations`, headers: { cookie: admin.cookie }, payload: { server_id: serverId, name, target: { kind: 'package', index: 0 } },
      })).data.installation.id)
    }
    const userIds = [member.id, ...Array.from({ length: USERS - 1 }, (_, i) => `bench-user-${i}`)]
    const tools = Array.from({ length: TOOLS }, (_, i) => `tool_${String(i).padStart(2, '0')}`)
    const start = Date.now() - PERIOD + 3600_000
    const step = Math.floor((PERIOD - 2 * 3600_000) / BATCHES)

    // 1. Ingestion, through HTTP as a satellite posts.
    const ingest: number[] = []
    let processCpu = 0
    const serverBefore = dialect === 'postgresql' ? await serverCpu(database.url) : undefined
    const headers = { authorization: `Bearer ${satellite.key}`, 'content-type': 'application/json' }
    for (let k = 0; k < BATCHES; k++) {
      const at0 = start + k * step
      const calls = Array.from({ length: CALLS_PER_BATCH }, (_, i) => ({
        at: new Date(at0 + i * 300).toISOString(), user_id: userIds[(i * 7 + k) % USERS]!, client_id: 'bench-client',
        tool: tools[(i * 5 + k) % TOOLS]!, outcome: i % 50 === 0 ? 'error' : i % 97 === 0 ? 'refused' : 'ok', duration_ms: 5 + ((i * 31) % 400),
      }))
      const body = JSON.stringify({ batch_id: randomUUID(), calls })
      const cpu = process.cpuUsage()
      const began = performance.now()
      const response = await fetch(`${base}/api/satellites/${satellite.id}/instances/${installations[k % 2]}/calls`, { method: 'POST', headers, body })
      const answer = await response.json() as { data?: { accepted: number } }
      ingest.push(performance.now() - began)
      const used = process.cpuUsage(cpu)
      processCpu += used.user + used.system
      if (response.status !== 200 || answer.data?.accepted !== CALLS_PER_BATCH) throw new Error(`batch ${k}: ${response.status} ${JSON.stringify(answer)}`)
    }
    const cpuPerBatch = {
      process: processCpu / 1000 / BATCHES,
      server: serverBefore === undefined ? undefined : cpuBetween(serverBefore, await serverCpu(database.url)) / 1000 / BATCHES,
    }
    // The same batches taken in-process (no HTTP, no JSON parsing or validation): the database's share.
    const direct: number[] = []
    for (let k = 0; k < Math.max(10, Math.floor(BATCHES / 10)); k++) {
      const at0 = start + k * step + 60_000
      const calls = Array.from({ length: CALLS_PER_BATCH }, (_, i) => ({
        at: new Date(at0 + i * 300), userId: userIds[(i * 7 + k) % USERS]!, clientId: 'bench-client',
        tool: tools[(i * 5 + k) % TOOLS]!, outcome: 'ok' as const, durationMs: 5 + ((i * 31) % 400),
      }))
      const began = performance.now()
      await app.services.toolUsage.ingest(satellite.id, installations[k % 2]!, randomUUID(), calls)
      direct.push(performance.now() - began)
    }
    const hourRows = (await app.services.database.db.select().from(app.services.database.t.toolCallHours)).length

    // 2. Usage over the 30 days.
    const from = new Date(Date.now() - PERIOD).toISOString()
    const to = new Date().toISOString()
    const url = `${base}/api/teams/${team.id}/mcp/usage?group_by=tool&from=${encodeURIComponent(from)}&to=${encodeURIComponent(to)}`
    const read = async (cookie: string): Promise<{ samples: number[]; calls: number }> => {
      const samples: number[] = []
      let calls = 0
      for (let n = 0; n < READS + 10; n++) {
        const began = performance.now()
        const response = await fetch(url, { headers: { cookie } })
        const answer = await response.json() as { data: { rows: Array<{ calls: number }> } }
        if (n >= 10) samples.push(performance.now() - began)
        if (response.status !== 200) throw new Error(`usage: ${response.status} ${JSON.stringify(answer)}`)
        calls = answer.data.rows.reduce((sum, row) => sum + row.calls, 0)
      }
      return { samples, calls }
    }
    const admins = await read(admin.cookie)
    const own = await read(member.cookie)
    console.log(`\n${dialect}`)
    console.log(`  ingestion, ${BATCHES} batches of ${CALLS_PER_BATCH} calls: ${summary(ingest)}`)
    console.log(`  CPU per batch: this process ${cpuPerBatch.process.toFixed(1)} ms${cpuPerBatch.server === undefined ? '' : `, PostgreSQL ${cpuPerBatch.server.toFixed(1)} ms`}`)
    console.log(`  of which in-process (the transaction and the document lookup), ${direct.length} batches: ${summary(direct)}`)
    console.log(`  hourly rows after ${BATCHES * CALLS_PER_BATCH} calls: ${hourRows}`)
    console.log(`  usage group_by=tool, 30 days, team admin (${admins.calls} calls, ${BATCHES * CALLS_PER_BATCH} over HTTP): ${summary(admins.samples)}`)
    console.log(`  usage group_by=tool, 30 days, member (${own.calls} own calls): ${summary(own.samples)}`)
  } finally {
    await app.close()
    await database.drop()
    rmSync(dataDir, { recursive: true, force: true })
  }
}

console.log(`tool calls bench: ${new Date().toISOString()}, ${cpus().length} cores, load ${loadavg().map((each) => each.toFixed(2)).join(' ')}, node ${process.version}`)
for (const dialect of DIALECT_LIST) await run(dialect)
