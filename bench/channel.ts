import type { ChildProcess } from 'node:child_process'
import { Agent, request as httpRequest } from 'node:http'
import { Aes256Gcm, CipherSuite, HkdfSha256 } from '@hpke/core'
import { DhkemX25519HkdfSha256 } from '@hpke/dhkem-x25519'
import pg from 'pg'
import { againstBare, rssMb, stop, type Measurement, type Started } from './harness.js'
import { registryDocument } from './installations.js'
import { BENCH_QUOTA } from './service.js'

/**
 * The satellite control channel, as satellites use it (all set up through the API, on 127.0.0.1):
 *
 * - the poll of an unchanged document: `GET /api/satellites/:id/desired-state` with the current
 *   ETag in `If-None-Match` and no wait, answered 304, for a satellite running 20 instances;
 * - 1 000 long-polls held at once (`wait=30`, current ETag), one for each of 1 000 satellites:
 *   the resident memory they add, and the database connections in use while they wait (none is
 *   expected: a held request costs a timer and a callback);
 * - change to wake: a long-poll held, then a write to one of the satellite's installations
 *   (`PUT …/values`); the time from the write's answer to the held request's 200, on the instance
 *   that wrote and, on PostgreSQL, on a second instance of the service sharing the database;
 * - the first read of a 100-instance document (two secrets each, sealed to the satellite's key
 *   with HPKE) after one installation changed (built again; only that instance's secrets are
 *   sealed again) and after a new public key (every secret sealed again).
 *
 * Each workload stays well under a minute; `channelWorkloads` notes how long each took.
 */

const OWNER = 'bench-channel'
/** Registry documents imported; installation j runs document j % DOCUMENTS. */
const DOCUMENTS = 10
const SMALL = 20
const LARGE = 100
const HELD = 1000
const WAKE_SAMPLES = 200
const BUILD_SAMPLES = 100
/** Builds after a new public key, each sealing all 200 secrets again. */
const RESEAL_SAMPLES = 30
/** How long a long-poll is given to reach its wait before the write that should wake it. */
const HOLD_MS = 25
/** The pause before each memory reading of the held polls. */
const QUIET_MS = 8000
/** Each workload's setup must finish within this, or the bench stops with an error instead of hanging. */
const SETUP_BUDGET_MS = 90_000
/** Targets: 304 req/s as a share of the bare route's; memory added by the held polls; change to wake, p99. */
const TARGET_UNCHANGED_PERCENT = 50
const TARGET_HELD_MB = 50
const TARGET_WAKE_P99_MS = 1000

export interface ChannelOptions {
  url: string
  adminCookie: string
  bareUrl: string
  dialect: 'sqlite' | 'postgresql'
  /** The service's process, for its resident memory. */
  child: ChildProcess
  databaseUrl: string
  /** Starts a second instance of the service on the same database (PostgreSQL). */
  startAnother?: () => Promise<Started>
}

export interface Satellite {
  id: string
  apiKey: string
}

interface Quantiles {
  p50: number
  p99: number
  samples: number
}

export interface ChannelResults {
  measurements: Measurement[]
  held: { polls: number; satellites: number; rss_before_mb: number; rss_held_mb: number; added_mb: number; target_mb: number; heap_before_mb: number; heap_held_mb: number; db_in_use: number | null; db_open: number | null; pool_in_use: number | null; answered_304: number; held_s: { min: number; max: number } }
  wake: Array<{ label: string; from_answer_ms: Quantiles; write_ms: Quantiles; target_p99_ms: number }>
  build: { instances: number; secrets: number; document_kb: number; after_change_ms: Quantiles; after_new_key_ms: Quantiles; kept_ms: Quantiles }
  notes: string[]
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))
const round1 = (value: number) => Math.round(value * 10) / 10

function quantiles(values: number[]): Quantiles {
  const sorted = [...values].sort((a, b) => a - b)
  const at = (p: number) => round1(sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)]!)
  return { p50: at(50), p99: at(99), samples: sorted.length }
}

/** `count` calls of `task`, at most `concurrency` at once. */
async function inParallel<T>(count: number, concurrency: number, task: (index: number) => Promise<T>): Promise<T[]> {
  const results: T[] = new Array(count)
  let next = 0
  await Promise.all(Array.from({ length: Math.min(concurrency, count) }, async () => {
    while (next < count) {
      const index = next++
      results[index] = await task(index)
    }
  }))
  return results
}

// The satellites' HPKE suite (RFC 9180), to check that a sealed secret opens as a satellite opens it.
const suite = new CipherSuite({ kem: new DhkemX25519HkdfSha256(), kdf: new HkdfSha256(), aead: new Aes256Gcm() })
type PrivateKey = Awaited<ReturnType<typeof suite.kem.generateKeyPair>>['privateKey']
const arrayBuffer = (bytes: Uint8Array): ArrayBuffer => bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.byteLength) as ArrayBuffer

async function keyPair(): Promise<{ publicKey: string; privateKey: PrivateKey }> {
  const pair = await suite.kem.generateKeyPair()
  return { publicKey: Buffer.from(await suite.kem.serializePublicKey(pair.publicKey)).toString('base64url'), privateKey: pair.privateKey }
}

async function unseal(privateKey: PrivateKey, instanceId: string, target: string, sealed: string): Promise<string> {
  const data = Buffer.from(sealed, 'base64url')
  const plain = await suite.open(
    { recipientKey: privateKey, enc: arrayBuffer(data.subarray(0, 32)), info: arrayBuffer(Buffer.from('service-satellite-secret')) },
    arrayBuffer(data.subarray(32)),
    arrayBuffer(Buffer.from(`${instanceId}\n${target}`)),
  )
  return new TextDecoder().decode(plain)
}

/** Calls to the service's API within a time budget, failing loudly on an unexpected status. */
function apiOf(url: string, budgetMs: number) {
  const deadline = performance.now() + budgetMs
  return async <T>(method: string, path: string, headers: Record<string, string>, body?: unknown): Promise<T> => {
    if (performance.now() > deadline) throw new Error(`channel setup took over ${budgetMs / 1000} s; stopped at ${method} ${path}`)
    const response = await fetch(`${url}${path}`, {
      method, signal: AbortSignal.timeout(30_000),
      headers: { ...headers, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    })
    const text = await response.text()
    if (response.status !== 200 && response.status !== 201) throw new Error(`${method} ${path} answered ${response.status}: ${text.slice(0, 300)}`)
    return (JSON.parse(text) as { data: T }).data
  }
}

type Api = ReturnType<typeof apiOf>

async function registerSatellite(api: Api, adminCookie: string, name: string, publicKey?: string): Promise<Satellite> {
  const { token } = await api<{ token: string }>('POST', '/api/satellites/global/registration-tokens', { cookie: adminCookie }, {})
  const registered = await api<{ satellite: { id: string }; api_key: string }>('POST', '/api/satellites/register', { authorization: `Bearer ${token}` }, {
    name, satellite_url: `https://${name}.example.test`, system_info: { os: 'linux', arch: 'x64', node_version: process.version, memory_mb: 8192 },
    ...(publicKey === undefined ? {} : { public_key: publicKey }),
  })
  return { id: registered.satellite.id, apiKey: registered.api_key }
}

export interface Seeded {
  teamId: string
  small: Satellite & { installations: string[] }
  large: Satellite & { installations: string[] }
  privateKey: PrivateKey
}

/** Documents, a team, and two satellites with a key: one running 20 installations, one 100, each with two secrets. */
export async function seedChannel(url: string, adminCookie: string): Promise<Seeded> {
  const api = apiOf(url, SETUP_BUDGET_MS)
  const admin = { cookie: adminCookie }
  const imported = await api<{ results: Array<{ server_id?: string }> }>('POST', '/api/mcp/servers/import', admin, Array.from({ length: DOCUMENTS }, (_, i) => registryDocument(i, OWNER)))
  const serverIds = imported.results.map((result) => result.server_id ?? '')
  if (serverIds.some((id) => id === '')) throw new Error(`import: ${JSON.stringify(imported.results)}`)
  const { team } = await api<{ team: { id: string } }>('POST', '/api/teams', admin, { name: 'Channel Bench' })
  // One team places 100 installations on one global satellite: past the default quota of 20.
  await api('PUT', '/api/settings/global.team_quota_per_global_satellite', admin, { value: BENCH_QUOTA })
  const { publicKey, privateKey } = await keyPair()
  const placed = async (name: string, count: number) => {
    const satellite = await registerSatellite(api, adminCookie, name, publicKey)
    const installations = await inParallel(count, 4, async (j) => {
      const { installation } = await api<{ installation: { id: string } }>('POST', `/api/teams/${team.id}/mcp/installations`, admin, {
        server_id: serverIds[j % DOCUMENTS], name: `${name}-${j}`, satellite_id: satellite.id,
        values: {
          'env:API_KEY': `sk-chan-${name}-${j}-5e4d3c2b1a`, 'env:PERSONAL_TOKEN': `tok-chan-${name}-${j}`, 'env:ACCOUNT_EMAIL': `ops-${j}@example.test`,
          'env:LOG_LEVEL': 'warn', 'arg:data_dir': `/var/lib/${name}-${j}`,
        },
      })
      return installation.id
    })
    return { ...satellite, installations }
  }
  return { teamId: team.id, small: await placed('bench-chan-small', SMALL), large: await placed('bench-chan-large', LARGE), privateKey }
}

interface Poll {
  status: number
  etag: string
  text: string
  at: number
}

/** One desired-state request, with the moment its answer's headers arrived. */
async function poll(url: string, satellite: Satellite, etag?: string, wait?: number): Promise<Poll> {
  const response = await fetch(`${url}/api/satellites/${satellite.id}/desired-state${wait === undefined ? '' : `?wait=${wait}`}`, {
    headers: { authorization: `Bearer ${satellite.apiKey}`, ...(etag === undefined ? {} : { 'if-none-match': etag }) },
    signal: AbortSignal.timeout(40_000),
  })
  const at = performance.now()
  return { status: response.status, etag: response.headers.get('etag') ?? '', text: await response.text(), at }
}

/** The document as the satellite reads it, checked: its instances, a secret that opens, no secret in the clear. */
async function checkedDocument(url: string, satellite: Satellite, instances: number, privateKey: PrivateKey): Promise<Poll> {
  const answer = await poll(url, satellite)
  if (answer.status !== 200) throw new Error(`desired-state answered ${answer.status}: ${answer.text.slice(0, 300)}`)
  const document = (JSON.parse(answer.text) as { data: { instances: Array<{ instance_id: string; name: string; secrets: Array<{ target: string; sealed: string }> }> } }).data
  if (document.instances.length !== instances) throw new Error(`the document holds ${document.instances.length} instances, not ${instances}`)
  if (/sk-chan-|tok-chan-/.test(answer.text)) throw new Error('a secret value shows in the desired-state document')
  const [first] = document.instances
  const sealed = first!.secrets.find((secret) => secret.target === 'env:API_KEY')
  if (sealed === undefined || !(await unseal(privateKey, first!.instance_id, 'env:API_KEY', sealed.sealed)).startsWith('sk-chan-')) throw new Error('a sealed secret does not open to its value')
  return answer
}

/** The unchanged poll, against the bare route. */
async function unchanged(options: ChannelOptions, seeded: Seeded): Promise<Measurement> {
  const current = await checkedDocument(options.url, seeded.small, SMALL, seeded.privateKey)
  return againstBare(options.bareUrl, `GET /api/satellites/:id/desired-state, unchanged (304, ${SMALL} instances)`, `${options.url}/api/satellites/${seeded.small.id}/desired-state`, {
    headers: { authorization: `Bearer ${seeded.small.apiKey}`, 'if-none-match': current.etag }, status: 304,
  }, TARGET_UNCHANGED_PERCENT)
}

/** Open and in-use connections of the bench's database, besides the change listener and this query's own. */
async function databaseConnections(databaseUrl: string): Promise<{ open: number; inUse: number }> {
  const client = new pg.Client({ connectionString: databaseUrl })
  await client.connect()
  try {
    const { rows } = await client.query<{ open: string; in_use: string }>(
      `select count(*) as open, count(*) filter (where state <> 'idle') as in_use from pg_stat_activity
       where datname = current_database() and pid <> pg_backend_pid() and backend_type = 'client backend' and application_name <> 'service-change-listener'`,
    )
    return { open: Number(rows[0]!.open), inUse: Number(rows[0]!.in_use) }
  } finally {
    await client.end()
  }
}

/**
 * From the service's own metrics: the pool's connections in use (`db_pool_connections`, PostgreSQL
 * only) and the JavaScript heap in use, in MB.
 */
async function serviceMetrics(url: string, adminCookie: string): Promise<{ poolInUse: number | null; heapMb: number }> {
  const text = await (await fetch(`${url}/api/metrics`, { headers: { cookie: adminCookie } })).text()
  const pool = /^db_pool_connections\{state="in_use"\} (\d+)/m.exec(text)
  const heap = /^nodejs_heap_size_used_bytes (\S+)/m.exec(text)
  if (heap === null) throw new Error('the metrics hold no nodejs_heap_size_used_bytes')
  return { poolInUse: pool === null ? null : Number(pool[1]), heapMb: round1(Number(heap[1]) / 1024 / 1024) }
}

/**
 * 1 000 satellites, each holding one long-poll with its current ETag: the memory the held
 * requests add, the database connections in use while they wait, and that each is answered 304
 * only when its wait runs out. Each request has its own connection, as each satellite would.
 */
async function held(options: ChannelOptions): Promise<ChannelResults['held']> {
  const api = apiOf(options.url, SETUP_BUDGET_MS)
  const satellites = await inParallel(HELD, 8, (i) => registerSatellite(api, options.adminCookie, `bench-chan-held-${String(i).padStart(4, '0')}`))
  // Each document built and kept once (empty documents share their ETag).
  const etags = new Set(await inParallel(HELD, 10, async (i) => (await poll(options.url, satellites[i]!)).etag))
  if (etags.size !== 1) throw new Error(`empty documents have ${etags.size} ETags`)
  const [etag] = etags
  // Quiet first, so that the collector has run (V8 collects an idle heap within a few seconds) and
  // the readings compare live memory rather than garbage.
  await sleep(QUIET_MS)
  const rssBefore = rssMb(options.child)
  const before = await serviceMetrics(options.url, options.adminCookie)
  const { port } = new URL(options.url)
  const agent = new Agent({ keepAlive: false, maxSockets: Infinity })
  const answers: Array<Promise<{ status: number; seconds: number }>> = []
  // In batches of 100, each connected before the next: 1 000 connections at once would overflow the listen backlog.
  for (let batch = 0; batch < HELD; batch += 100) {
    const connected: Array<Promise<void>> = []
    for (const satellite of satellites.slice(batch, batch + 100)) {
      let onSocket!: () => void
      connected.push(new Promise((resolve) => (onSocket = resolve)))
      answers.push(new Promise((resolve, reject) => {
        const began = performance.now()
        const request = httpRequest({ host: '127.0.0.1', port, agent, path: `/api/satellites/${satellite.id}/desired-state?wait=30`, headers: { authorization: `Bearer ${satellite.apiKey}`, 'if-none-match': etag } }, (response) => {
          response.resume()
          response.on('end', () => resolve({ status: response.statusCode ?? 0, seconds: (performance.now() - began) / 1000 }))
        })
        request.on('socket', (socket) => socket.once('connect', onSocket))
        request.on('error', reject)
        request.setTimeout(40_000, () => request.destroy(new Error('no answer to a held long-poll within 40 s')))
        request.end()
      }))
    }
    await Promise.all(connected)
  }
  // Every request past its credential check and waiting, and quiet again.
  await sleep(QUIET_MS)
  const rssHeld = rssMb(options.child)
  const connections = options.dialect === 'postgresql' ? await databaseConnections(options.databaseUrl) : null
  const during = await serviceMetrics(options.url, options.adminCookie)
  const results = await Promise.all(answers)
  agent.destroy()
  const seconds = results.map((result) => result.seconds)
  return {
    polls: HELD, satellites: HELD, rss_before_mb: rssBefore, rss_held_mb: rssHeld, added_mb: round1(rssHeld - rssBefore), target_mb: TARGET_HELD_MB,
    heap_before_mb: before.heapMb, heap_held_mb: during.heapMb,
    db_in_use: connections?.inUse ?? null, db_open: connections?.open ?? null, pool_in_use: during.poolInUse,
    answered_304: results.filter((result) => result.status === 304).length,
    held_s: { min: round1(Math.min(...seconds)), max: round1(Math.max(...seconds)) },
  }
}

let changes = 0

/** A write that changes the installation's instance (its cache directory), so its satellite's document. */
async function change(options: ChannelOptions, seeded: Seeded, installation: string): Promise<void> {
  await apiOf(options.url, 30_000)('PUT', `/api/teams/${seeded.teamId}/mcp/installations/${installation}/values`, { cookie: options.adminCookie }, { values: { 'arg:data_dir': `/var/lib/chan-${++changes}` } })
}

/**
 * Change to wake: a long-poll held on `pollUrl`, then a write through `writeUrl` that changes
 * the satellite's document; the time from the write's answer to the poll's 200.
 */
async function wake(label: string, pollUrl: string, writeUrl: string, options: ChannelOptions, seeded: Seeded): Promise<ChannelResults['wake'][number]> {
  const satellite = seeded.small
  const installation = seeded.small.installations[0]!
  let etag = (await poll(pollUrl, satellite)).etag
  const fromAnswer: number[] = []
  const writes: number[] = []
  for (let n = 0; n < WAKE_SAMPLES; n++) {
    const held = poll(pollUrl, satellite, etag, 30)
    await sleep(HOLD_MS)
    const sent = performance.now()
    await change(options, seeded, installation)
    const answered = performance.now()
    const woke = await held
    if (woke.status !== 200) throw new Error(`${label}: the held long-poll answered ${woke.status}, not 200`)
    if (woke.at < sent) throw new Error(`${label}: the long-poll answered before the write (it was not held)`)
    fromAnswer.push(woke.at - answered)
    writes.push(answered - sent)
    etag = woke.etag
  }
  return { label, from_answer_ms: quantiles(fromAnswer), write_ms: quantiles(writes), target_p99_ms: TARGET_WAKE_P99_MS }
}

/**
 * The first read of the 100-instance document after each change (built again: the changed
 * instance's secrets sealed again), then a read of the kept one; and the first read after each new
 * public key of the satellite, when every secret is sealed again.
 */
async function build(options: ChannelOptions, seeded: Seeded): Promise<ChannelResults['build']> {
  const satellite = seeded.large
  const first = await checkedDocument(options.url, satellite, LARGE, seeded.privateKey)
  const timedRead = async (into: number[]) => {
    const began = performance.now()
    const answer = await poll(options.url, satellite)
    if (answer.status !== 200) throw new Error(`desired-state answered ${answer.status}`)
    into.push(answer.at - began)
  }
  const afterChange: number[] = []
  const kept: number[] = []
  for (let n = 0; n < BUILD_SAMPLES; n++) {
    await change(options, seeded, satellite.installations[n % LARGE]!)
    await timedRead(afterChange)
    await timedRead(kept)
  }
  const afterNewKey: number[] = []
  let keys = { publicKey: '', privateKey: seeded.privateKey }
  for (let n = 0; n < RESEAL_SAMPLES; n++) {
    keys = await keyPair()
    // Replacing a key takes a proof of the current one or a fresh registration token: the bench, as an operator would, uses a token.
    const api = apiOf(options.url, 30_000)
    const { token } = await api<{ token: string }>('POST', '/api/satellites/global/registration-tokens', { cookie: options.adminCookie }, {})
    await api('PUT', `/api/satellites/${satellite.id}/public-key`, { authorization: `Bearer ${satellite.apiKey}` }, { public_key: keys.publicKey, registration_token: token })
    await timedRead(afterNewKey)
  }
  // Every secret sealed to the last key.
  await checkedDocument(options.url, satellite, LARGE, keys.privateKey)
  return {
    instances: LARGE, secrets: LARGE * 2, document_kb: Math.round(Buffer.byteLength(first.text) / 1024),
    after_change_ms: quantiles(afterChange), after_new_key_ms: quantiles(afterNewKey), kept_ms: quantiles(kept),
  }
}

export async function channelWorkloads(options: ChannelOptions): Promise<ChannelResults> {
  let began = performance.now()
  const seconds: string[] = []
  /** Each workload's duration, for the notes: each must stay well under a minute. */
  const timed = async <T>(name: string, workload: () => Promise<T>): Promise<T> => {
    const result = await workload()
    seconds.push(`${name} ${((performance.now() - began) / 1000).toFixed(0)} s`)
    began = performance.now()
    return result
  }
  const seeded = await timed('setup', () => seedChannel(options.url, options.adminCookie))
  const measurements = [await timed('unchanged polls', () => unchanged(options, seeded))]
  const builds = await timed('builds', () => build(options, seeded))
  const wakes = [await timed('change to wake', () => wake('same instance', options.url, options.url, options, seeded))]
  if (options.startAnother !== undefined) {
    const other = await options.startAnother()
    try {
      wakes.push(await timed('across instances', () => wake('written on A, held on B', other.url, options.url, options, seeded)))
    } finally {
      await stop(other.child)
    }
  }
  const heldPolls = await timed('held polls', () => held(options))
  const notes = [`channel: ${SMALL} + ${LARGE} installations with two secrets each, set up through the API; durations: ${seconds.join(', ')}`]
  return { measurements, held: heldPolls, wake: wakes, build: builds, notes }
}

/** The channel's figures besides the table, one line each. */
export function channelLines(results: ChannelResults): string[] {
  const { held: h, build: b } = results
  const met = (ok: boolean) => (ok ? 'met' : 'MISSED')
  const database = h.db_in_use === null ? 'SQLite: no pool' : `${h.db_in_use} in use of ${h.db_open} open (pg_stat_activity), pool in use ${h.pool_in_use}`
  return [
    `${h.polls} held long-polls (wait=30, one per satellite): RSS ${h.rss_before_mb} → ${h.rss_held_mb} MB, +${h.added_mb} MB (≤ ${h.target_mb} MB ${met(h.added_mb <= h.target_mb)}; JavaScript heap in use ${h.heap_before_mb} → ${h.heap_held_mb} MB); database connections while they wait: ${database}; ${h.answered_304} answered 304 after ${h.held_s.min}–${h.held_s.max} s`,
    ...results.wake.map((w) => `change to wake, ${w.label}: ${w.from_answer_ms.p50}/${w.from_answer_ms.p99} ms p50/p99 from the write's answer to the held 200 (≤ ${w.target_p99_ms} ms ${met(w.from_answer_ms.p99 <= w.target_p99_ms)}; ${w.from_answer_ms.samples} samples; the write itself ${w.write_ms.p50}/${w.write_ms.p99} ms)`),
    `document of ${b.instances} instances (${b.secrets} sealed secrets, ${b.document_kb} KB), p50/p99: first read after one installation changed ${b.after_change_ms.p50}/${b.after_change_ms.p99} ms (${b.after_change_ms.samples} samples), after a new public key (every secret sealed again) ${b.after_new_key_ms.p50}/${b.after_new_key_ms.p99} ms (${b.after_new_key_ms.samples}), kept ${b.kept_ms.p50}/${b.kept_ms.p99} ms`,
  ]
}
