#!/usr/bin/env node
// A soak of the service as a cluster, under faults, on 127.0.0.1 only:
//
//   HAProxy (deploy/cluster/haproxy.cfg) :8080 ──► three instances :3101–3103 (node dist/src/server.js)
//   HAProxy :6432 ──► the writable PostgreSQL 15 node: primary :5440, streaming hot standby :5441
//   Redis :6390 (the shared per-IP limits)
//
// Everything is set up in a fresh temporary directory, driven through the balancer only, and torn
// down at the end (success, failure or Ctrl-C). While virtual users log in, read, refresh OAuth
// tokens, write to the catalogue and to installations and long-poll as satellites, it kills an
// instance, restarts Redis, and stops the primary and promotes the standby. Every answer is
// classified, every acknowledged write is kept in a ledger and checked at the end, and ONE summary
// table is printed. Exit status 0 only without violations and without lost writes.
//
// Run as root (PostgreSQL runs as the `postgres` user through runuser), after `npm run build`:
//   node scripts/cluster-soak.mjs
//
// Options (environment variables):
//   SOAK_SECONDS=150     how long the virtual users run (faults are placed within it; at least 60)
//   SOAK_USERS=4         ordinary users (besides the admin), each with its own X-Forwarded-For address
//   SOAK_SATELLITES=3    satellites paired with the team, each long-polling its desired state
//   SOAK_WRITERS=2       virtual users creating catalogue servers, and as many creating installations
//   SOAK_FAULTS=instance,redis,failover   which faults to inject (a comma list; empty: none)
//   SOAK_THROUGHPUT=1    afterwards, measure GET /api/users/me through the balancer with 1 and with
//                        3 instances (autocannon, SOAK_THROUGHPUT_SECONDS=10 each, 20 connections)
//   SOAK_KEEP=1          keep the temporary directory (instance logs, PostgreSQL, HAProxy, Redis logs)
//   SOAK_PG_BIN=/usr/lib/postgresql/15/bin
//
// Ports used (all on 127.0.0.1, all must be free): 8080 (HTTP), 8404 (HAProxy statistics), 8405
// (HAProxy runtime API), 6432 (PostgreSQL through HAProxy), 5440, 5441, 6390, 3101–3103.

import { spawn, execFile } from 'node:child_process'
import { createHash, generateKeyPairSync, randomBytes } from 'node:crypto'
import { chownSync, chmodSync, existsSync, mkdirSync, mkdtempSync, openSync, closeSync, rmSync, writeFileSync, readFileSync } from 'node:fs'
import { connect as netConnect } from 'node:net'
import { dirname, join, resolve } from 'node:path'
import { fileURLToPath } from 'node:url'
import { promisify } from 'node:util'
import pg from 'pg'

const run = promisify(execFile)
const root = resolve(dirname(fileURLToPath(import.meta.url)), '..')

// ---------------------------------------------------------------------------------------------
// Options
// ---------------------------------------------------------------------------------------------

const int = (name, fallback, min) => {
  const value = process.env[name] === undefined || process.env[name] === '' ? fallback : Number(process.env[name])
  if (!Number.isInteger(value) || value < min) throw new Error(`${name} must be an integer ≥ ${min}`)
  return value
}
const SECONDS = int('SOAK_SECONDS', 150, 60)
const USERS = int('SOAK_USERS', 4, 1)
const SATELLITES = int('SOAK_SATELLITES', 3, 1)
const WRITERS = int('SOAK_WRITERS', 2, 1)
const FAULTS = (process.env.SOAK_FAULTS ?? 'instance,redis,failover').split(',').map((each) => each.trim()).filter(Boolean)
const THROUGHPUT = ['1', 'true', 'yes'].includes(process.env.SOAK_THROUGHPUT ?? '')
const THROUGHPUT_SECONDS = int('SOAK_THROUGHPUT_SECONDS', 10, 1)
const KEEP = ['1', 'true', 'yes'].includes(process.env.SOAK_KEEP ?? '')
const PG_BIN = process.env.SOAK_PG_BIN ?? '/usr/lib/postgresql/15/bin'
for (const fault of FAULTS) if (!['instance', 'redis', 'failover'].includes(fault)) throw new Error(`unknown fault in SOAK_FAULTS: ${fault}`)

const LB = 'http://127.0.0.1:8080'
const STATS = 'http://127.0.0.1:8404/stats;csv'
const ADMIN_API = { host: '127.0.0.1', port: 8405 }
const PG_PRIMARY = 5440
const PG_STANDBY = 5441
const REDIS_PORT = 6390
const APP_PORTS = [3101, 3102, 3103]
const PORTS = [8080, 8404, 8405, 6432, PG_PRIMARY, PG_STANDBY, REDIS_PORT, ...APP_PORTS]
const REQUEST_TIMEOUT_MS = 15_000
const POLL_WAIT_S = 10
const PASSWORD = 'correct horse battery staple'
const CLIENT_ID = 'service-gateway-cli'
const REDIRECT_URI = 'http://127.0.0.1:8976/oauth/callback'
const SCOPE = 'user:read teams:read offline_access mcp:read'
// Whole run: setup, soak, checks and throughput must end by then, else everything is torn down.
const DEADLINE_MS = (SECONDS + 300 + (THROUGHPUT ? 4 * THROUGHPUT_SECONDS + 30 : 0)) * 1000

// ---------------------------------------------------------------------------------------------
// Processes and teardown
// ---------------------------------------------------------------------------------------------

const started = Date.now()
const say = (text) => process.stderr.write(`[soak ${((Date.now() - started) / 1000).toFixed(1).padStart(6)}s] ${text}\n`)
let base = null
const children = new Set() // every process started in the foreground
const pgDirs = [] // data directories whose postgres may be running
let tornDown = false

function startProcess(name, command, args, options = {}) {
  const log = openSync(options.log ?? join(base, `${name}.log`), 'a')
  const child = spawn(command, args, { cwd: options.cwd ?? base, env: options.env ?? process.env, stdio: ['ignore', log, log] })
  closeSync(log)
  child.soakName = name
  children.add(child)
  child.on('exit', () => children.delete(child))
  return child
}

function stopProcess(child, signal = 'SIGKILL') {
  if (child === null || child === undefined || child.exitCode !== null || child.signalCode !== null) return Promise.resolve()
  return new Promise((resolve) => {
    child.once('exit', resolve)
    child.kill(signal)
  })
}

async function teardown() {
  if (tornDown) return
  tornDown = true
  await Promise.all([...children].map((child) => stopProcess(child)))
  for (const dir of pgDirs) {
    if (existsSync(join(dir, 'postmaster.pid'))) {
      await run('runuser', ['-u', 'postgres', '--', join(PG_BIN, 'pg_ctl'), '-D', dir, '-m', 'immediate', '-w', 'stop']).catch(() => undefined)
    }
  }
  if (base !== null) {
    if (KEEP) say(`kept ${base} (instance logs app1.log…app3.log, haproxy.log, redis.log, pg/*.log)`)
    else rmSync(base, { recursive: true, force: true })
  }
}

let interrupted = false
for (const signal of ['SIGINT', 'SIGTERM']) {
  process.on(signal, () => {
    if (interrupted) return
    interrupted = true
    say(`${signal}: tearing down`)
    teardown().finally(() => process.exit(130))
  })
}
const deadline = setTimeout(() => {
  say(`the run passed its bound of ${DEADLINE_MS / 1000} s: tearing down`)
  teardown().finally(() => process.exit(2))
}, DEADLINE_MS)
deadline.unref()

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms))

async function until(what, check, timeoutMs, everyMs = 250) {
  const end = Date.now() + timeoutMs
  let last
  while (Date.now() < end) {
    try {
      if (await check()) return
    } catch (error) {
      last = error
    }
    await sleep(everyMs)
  }
  throw new Error(`timed out waiting for ${what}${last ? `: ${last.message}` : ''}`)
}

function portFree(port) {
  return new Promise((resolve) => {
    const socket = netConnect({ host: '127.0.0.1', port })
    socket.once('connect', () => {
      socket.destroy()
      resolve(false)
    })
    socket.once('error', () => resolve(true))
  })
}

/** One command to HAProxy's runtime API (a TCP socket on 127.0.0.1). */
function haproxyCommand(command) {
  return new Promise((resolve, reject) => {
    const socket = netConnect(ADMIN_API)
    let out = ''
    socket.setEncoding('utf8')
    socket.on('data', (chunk) => (out += chunk))
    socket.on('end', () => resolve(out))
    socket.on('error', reject)
    socket.write(`${command}\n`)
  })
}

/** Server states from the statistics page: { 'instances/app1': 'UP', 'postgresql_writable/pg_primary': 'DOWN', … }. */
async function serverStates() {
  const response = await fetch(STATS, { signal: AbortSignal.timeout(2_000) })
  const lines = (await response.text()).trim().split('\n')
  const header = lines[0].replace(/^# /, '').split(',')
  const at = (name) => header.indexOf(name)
  const states = {}
  for (const line of lines.slice(1)) {
    const cells = line.split(',')
    if (cells[at('svname')] === 'FRONTEND' || cells[at('svname')] === 'BACKEND') continue
    states[`${cells[at('pxname')]}/${cells[at('svname')]}`] = cells[at('status')]
  }
  return states
}

// ---------------------------------------------------------------------------------------------
// The parts of the cluster
// ---------------------------------------------------------------------------------------------

const pgDir = (name) => join(base, 'pg', name)
const asPostgres = (binary, args) => run('runuser', ['-u', 'postgres', '--', join(PG_BIN, binary), ...args], { maxBuffer: 1 << 24 })

async function startPostgres() {
  const uid = Number((await run('id', ['-u', 'postgres'])).stdout.trim())
  const gid = Number((await run('id', ['-g', 'postgres'])).stdout.trim())
  mkdirSync(join(base, 'pg'))
  chownSync(join(base, 'pg'), uid, gid)
  const primary = pgDir('primary')
  const standby = pgDir('standby')
  pgDirs.push(primary, standby)
  await asPostgres('initdb', ['--auth=trust', '-U', 'postgres', '-D', primary])
  writeFileSync(join(primary, 'postgresql.auto.conf'), [
    `port = ${PG_PRIMARY}`,
    "listen_addresses = '127.0.0.1'",
    `unix_socket_directories = '${join(base, 'pg')}'`,
    'wal_level = replica',
    'hot_standby = on',
    'max_wal_senders = 5',
    'max_connections = 200',
    'fsync = off', // a throwaway cluster on a shared machine; replication is what is under test
    '',
  ].join('\n'))
  await asPostgres('pg_ctl', ['-D', primary, '-l', join(base, 'pg', 'primary.log'), '-w', 'start'])
  const admin = new pg.Client({ host: '127.0.0.1', port: PG_PRIMARY, user: 'postgres', database: 'postgres' })
  await admin.connect()
  await admin.query('create database service')
  await admin.end()
  await asPostgres('pg_basebackup', ['-h', '127.0.0.1', '-p', String(PG_PRIMARY), '-U', 'postgres', '-D', standby, '-R', '-X', 'stream', '-c', 'fast'])
  // The copy carries the primary's settings; only the port differs.
  writeFileSync(join(standby, 'postgresql.auto.conf'), readFileSync(join(standby, 'postgresql.auto.conf'), 'utf8').replace(`port = ${PG_PRIMARY}`, `port = ${PG_STANDBY}`))
  chownSync(join(standby, 'postgresql.auto.conf'), uid, gid)
  await asPostgres('pg_ctl', ['-D', standby, '-l', join(base, 'pg', 'standby.log'), '-w', 'start'])
  await until('the standby streaming from the primary', async () => {
    const client = new pg.Client({ host: '127.0.0.1', port: PG_PRIMARY, user: 'postgres', database: 'postgres' })
    await client.connect()
    try {
      return (await client.query("select count(*)::int n from pg_stat_replication where state = 'streaming'")).rows[0].n === 1
    } finally {
      await client.end()
    }
  }, 20_000)
}

let redis = null
function startRedis() {
  redis = startProcess('redis', 'redis-server', ['--port', String(REDIS_PORT), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'])
  return until('Redis', () => portFree(REDIS_PORT).then((free) => !free), 10_000)
}

let haproxy = null
async function startHaproxy() {
  haproxy = startProcess('haproxy', 'haproxy', ['-db', '-f', join(root, 'deploy/cluster/haproxy.cfg')])
  // HAProxy starts with every server up until its checks say otherwise: the standby must fail.
  await until('HAProxy to mark the primary writable and the standby not', async () => {
    const states = await serverStates()
    return states['postgresql_writable/pg_primary'] === 'UP' && states['postgresql_writable/pg_standby'] === 'DOWN'
  }, 15_000)
}

const SECRET = randomBytes(36).toString('base64') // 48 characters
const apps = [null, null, null]
function startApp(index) {
  const port = APP_PORTS[index]
  apps[index] = startProcess(`app${index + 1}`, process.execPath, [
    '--enable-source-maps', '--max-semi-space-size=4', '--heap-growing-percent=50', join(root, 'dist/src/server.js'),
  ], {
    cwd: root,
    log: join(base, `app${index + 1}.log`),
    env: {
      PATH: process.env.PATH,
      HOME: process.env.HOME ?? '/root',
      UV_THREADPOOL_SIZE: '2',
      NODE_ENV: 'production',
      PORT: String(port),
      HOST: '127.0.0.1',
      DATA_DIR: join(base, `app${index + 1}-data`),
      DATABASE_URL: 'postgres://postgres@127.0.0.1:6432/service',
      REDIS_URL: `redis://127.0.0.1:${REDIS_PORT}`,
      ENCRYPTION_SECRET: SECRET,
      PUBLIC_URL: LB,
      TRUST_PROXY: '127.0.0.1',
      SHUTDOWN_DRAIN_SECONDS: '3',
      LOG_LEVEL: 'warn',
      LOG_FORMAT: 'json',
    },
  })
}

async function appsReady(indexes = [0, 1, 2]) {
  await until('the instances to be ready', async () => {
    const answers = await Promise.all(indexes.map((index) => fetch(`http://127.0.0.1:${APP_PORTS[index]}/api/health/ready`, { signal: AbortSignal.timeout(2_000) })))
    return answers.every((answer) => answer.status === 200)
  }, 60_000, 500)
}

async function balancerSeesAll() {
  await until('HAProxy to mark every instance up', async () => {
    const states = await serverStates()
    return ['app1', 'app2', 'app3'].every((name) => states[`instances/${name}`] === 'UP')
  }, 30_000)
}

// ---------------------------------------------------------------------------------------------
// HTTP through the balancer, and the classification of every answer
// ---------------------------------------------------------------------------------------------

/** Faults: { name, at, restoredAt, end } in ms since the soak began; `end` closes the window. */
const faults = []
let soakStart = 0
const now = () => Date.now() - soakStart

const KINDS = ['login', 'logout', 'session_read', 'bearer_read', 'refresh', 'reauthorize', 'catalogue_write', 'installation_write', 'satellite_poll', 'heartbeat']
const stats = Object.fromEntries(KINDS.map((kind) => [kind, { sent: 0, ok: 0, fault503: 0, inflight502: 0, expected4xx: 0, violations: 0, latencies: [] }]))
const violations = []
const codes503 = {}
const answers = [] // { kind, start, end, ok, fault503 } for the recovery figures

function inWindow(time) {
  return faults.some((fault) => time >= fault.at && time <= (fault.end ?? Infinity))
}
function killedInstanceAt(startTime, endTime) {
  // Requests already in flight on an instance when it was killed: HAProxy answers 502 and cannot
  // send them elsewhere (the instance may have run them).
  return faults.some((fault) => fault.name === 'instance' && startTime <= fault.at + 50 && endTime >= fault.at)
}

/**
 * Sends one request through the balancer and classifies the answer.
 * `expect(status, body)`: true when the answer is the expected success; `allow4xx(status, body)`:
 * true when a 4xx is explained (e.g. a credential ended on purpose). Returns { status, body, headers }
 * or { error } and the class.
 */
async function request(kind, method, path, { headers = {}, body, form, timeoutMs = REQUEST_TIMEOUT_MS, expect = (s) => s >= 200 && s < 300, allow4xx = () => false, record = true } = {}) {
  const init = { method, headers: { ...headers }, redirect: 'manual', signal: AbortSignal.timeout(timeoutMs) }
  if (body !== undefined) {
    init.headers['content-type'] = 'application/json'
    init.body = JSON.stringify(body)
  } else if (form !== undefined) {
    init.headers['content-type'] = 'application/x-www-form-urlencoded'
    init.body = new URLSearchParams(form).toString()
  }
  const start = now()
  let result
  try {
    const response = await fetch(`${LB}${path}`, init)
    const text = await response.text()
    let json = null
    try {
      json = text === '' ? null : JSON.parse(text)
    } catch {
      json = null
    }
    result = { status: response.status, json, text, headers: response.headers }
  } catch (error) {
    const cause = error.cause?.code ?? error.cause?.message ?? error.name
    result = { status: 0, error: error.name === 'TimeoutError' ? 'timeout' : `connection error (${cause})` }
  }
  const end = now()
  result.class = classify(kind, method, path, result, start, end, expect, allow4xx, record)
  if (record) {
    const entry = stats[kind]
    entry.sent++
    entry[result.class === 'violation' ? 'violations' : result.class]++
    if (result.class === 'ok') entry.latencies.push(end - start)
    answers.push({ kind, start, end, good: result.class === 'ok', bad: result.class !== 'ok' && result.class !== 'expected4xx' })
  }
  return result
}

function classify(kind, method, path, result, start, end, expect, allow4xx, record) {
  const violation = (why) => {
    if (record) violations.push({ at: (start / 1000).toFixed(1), kind, request: `${method} ${path.replace(/[?].*$/, '')}`, status: result.status, why, code: result.json?.code ?? result.json?.error ?? '', server: result.headers?.get('x-served-by') ?? '', requestId: result.headers?.get('x-request-id') ?? '' })
    return 'violation'
  }
  if (result.status === 0) {
    // In flight on the instance that was killed: HAProxy closes the client's connection (a reused
    // server connection) or answers 502. The request may have run; the client cannot know.
    if (result.error !== 'timeout' && killedInstanceAt(start, end)) return 'inflight502'
    return violation(result.error)
  }
  if (expect(result.status, result.json)) return 'ok'
  const status = result.status
  if (status === 503) {
    if (!result.headers.get('retry-after')) return violation('503 without Retry-After')
    if (inWindow(start) || inWindow(end)) {
      const code = result.json?.code ?? 'no JSON code'
      codes503[code] = (codes503[code] ?? 0) + 1
      return 'fault503'
    }
    return violation('503 outside a fault window')
  }
  if (status === 502 && killedInstanceAt(start, end)) return 'inflight502'
  if (status >= 500) return violation(status === 500 ? '500' : `${status}`)
  if (status >= 400 && allow4xx(status, result.json)) return 'expected4xx'
  if (status === 429) return violation('429 rate limited')
  if (status === 401) return violation('401 for a credential that should work')
  return violation(`unexpected ${status}`)
}

// ---------------------------------------------------------------------------------------------
// Accounts, OAuth, catalogue, team and satellites: all through the balancer
// ---------------------------------------------------------------------------------------------

const cookieOf = (result) => result.headers.getSetCookie().map((line) => line.split(';')[0]).filter((pair) => !pair.endsWith('=')).join('; ')

async function setupCall(method, path, options = {}) {
  for (let attempt = 0; ; attempt++) {
    const result = await request('setup', method, path, { ...options, record: false })
    if (result.status >= 200 && result.status < 400) return result
    if (attempt === 5 || (result.status !== 503 && result.status !== 0)) throw new Error(`setup ${method} ${path}: ${result.status} ${result.error ?? result.text.slice(0, 300)}`)
    await sleep(500)
  }
}
stats.setup = { sent: 0, ok: 0, fault503: 0, inflight502: 0, expected4xx: 0, violations: 0, latencies: [] }

/** The authorization-code flow with PKCE for the public client, as the CLI does it. */
async function authorize(user, kind = null) {
  const verifier = randomBytes(32).toString('base64url')
  const query = new URLSearchParams({
    response_type: 'code', client_id: CLIENT_ID, redirect_uri: REDIRECT_URI, scope: SCOPE, state: 'soak',
    code_challenge: createHash('sha256').update(verifier).digest('base64url'), code_challenge_method: 'S256',
  })
  const call = (method, path, options) => (kind === null ? setupCall(method, path, options) : request(kind, method, path, options))
  const headers = { cookie: user.cookie, 'x-forwarded-for': user.ip }
  const auth = await call('GET', `/api/oauth2/auth?${query}`, { headers, expect: (s) => s === 302 || s === 303 })
  if (auth.status !== 302 && auth.status !== 303) return null
  const location = auth.headers.get('location')
  let code
  if (location.startsWith(REDIRECT_URI)) {
    code = new URL(location).searchParams.get('code')
  } else {
    const target = new URL(location, LB)
    const details = await call('GET', `${target.pathname}${target.search}`, { headers: { ...headers, accept: 'application/json' } })
    if (details.status !== 200) return null
    const decided = await call('POST', '/api/oauth2/consent', { headers, body: { request_id: details.json.data.request_id, decision: 'approve', csrf_token: details.json.data.csrf_token } })
    if (decided.status !== 200) return null
    code = new URL(decided.json.data.redirect_url).searchParams.get('code')
  }
  const token = await call('POST', '/api/oauth2/token', {
    headers: { 'x-forwarded-for': user.ip },
    form: { grant_type: 'authorization_code', code, redirect_uri: REDIRECT_URI, client_id: CLIENT_ID, code_verifier: verifier },
  })
  if (token.status !== 200) return null
  return { access: token.json.access_token, refresh: token.json.refresh_token }
}

const ledger = { servers: [], installations: [], sessions: [], satellites: [], unackedWrites: { catalogue_write: 0, installation_write: 0, login: 0 } }
const refreshNotes = { ambiguous: 0, retriedOk: 0, foundSpent: 0, stillUnknownAtEnd: 0, details: [] }

async function setup() {
  const admin = { name: 'admin', ip: '10.0.0.1' }
  await setupCall('POST', '/api/auth/email/register', { headers: { 'x-forwarded-for': admin.ip }, body: { username: 'soakadmin', email: 'admin@soak.example', password: PASSWORD } })
  const adminLogin = await setupCall('POST', '/api/auth/email/login', { headers: { 'x-forwarded-for': admin.ip }, body: { login: 'soakadmin', password: PASSWORD } })
  admin.cookie = cookieOf(adminLogin)
  const me = await setupCall('GET', '/api/users/me', { headers: { cookie: admin.cookie, 'x-forwarded-for': admin.ip } })
  if (me.json.data.role !== 'global_admin' && me.json.data.user?.role !== 'global_admin' && !JSON.stringify(me.json).includes('global_admin')) throw new Error(`the first user is not global admin: ${me.text}`)

  const users = []
  for (let index = 1; index <= USERS; index++) {
    const user = { name: `user${index}`, ip: `10.0.1.${index}`, loginIp: `10.0.2.${index}`, grant: 0 }
    await setupCall('POST', '/api/auth/email/register', { headers: { 'x-forwarded-for': user.ip }, body: { username: user.name, email: `${user.name}@soak.example`, password: PASSWORD } })
    user.cookie = cookieOf(await setupCall('POST', '/api/auth/email/login', { headers: { 'x-forwarded-for': user.ip }, body: { login: user.name, password: PASSWORD } }))
    const tokens = await authorize(user)
    if (tokens === null) throw new Error(`the OAuth flow failed for ${user.name}`)
    Object.assign(user, tokens)
    users.push(user)
  }

  const adminHeaders = { cookie: admin.cookie, 'x-forwarded-for': admin.ip }
  const imported = await setupCall('POST', '/api/mcp/servers/import', { headers: adminHeaders, body: [weatherDocument('io.github.soak/weather')] })
  const weather = imported.json.data.results[0]
  if (!weather.server_id) throw new Error(`the import did not create the server: ${imported.text}`)
  const team = (await setupCall('POST', '/api/teams', { headers: adminHeaders, body: { name: 'Soak' } })).json.data.team

  const satellites = []
  for (let index = 1; index <= SATELLITES; index++) {
    const token = (await setupCall('POST', `/api/teams/${team.id}/satellites/registration-tokens`, { headers: adminHeaders, body: {} })).json.data.token
    const { publicKey } = generateKeyPairSync('x25519')
    const ip = `10.0.3.${index}`
    const registered = await setupCall('POST', '/api/satellites/register', {
      headers: { authorization: `Bearer ${token}`, 'x-forwarded-for': ip },
      body: { name: `soak-sat-${index}`, satellite_url: `http://127.0.0.1:${7100 + index}`, system_info: { os: 'linux', arch: 'x64', node_version: process.version, memory_mb: 1024 }, public_key: publicKey.export({ format: 'jwk' }).x },
    })
    const satellite = { id: registered.json.data.satellite.id, key: registered.json.data.api_key, ip, etag: null }
    await setupCall('POST', `/api/satellites/${satellite.id}/heartbeat`, { headers: { authorization: `Bearer ${satellite.key}`, 'x-forwarded-for': ip }, body: heartbeatBody() })
    satellites.push(satellite)
    ledger.satellites.push(satellite)
  }
  return { admin, users, weatherId: weather.server_id, team, satellites }
}

const heartbeatBody = () => ({ status: 'active', system_metrics: { cpu_usage_percent: 5, memory_usage_mb: 128, uptime_seconds: Math.round(process.uptime()) } })

/** A registry server.json (revision 2025-12-11): an npm package with secret, required and defaulted inputs. */
function weatherDocument(name) {
  return {
    $schema: 'https://static.modelcontextprotocol.io/schemas/2025-12-11/server.schema.json',
    name,
    description: 'Forecasts and alerts.',
    version: '1.4.0',
    packages: [{
      registryType: 'npm',
      identifier: '@example/weather-mcp',
      version: '1.4.0',
      runtimeHint: 'npx',
      transport: { type: 'stdio' },
      packageArguments: [{ type: 'positional', valueHint: 'data_dir', description: 'Where forecasts are cached', format: 'filepath', isRequired: true }],
      environmentVariables: [
        { name: 'WEATHER_API_KEY', description: 'Key of the weather provider', isRequired: true, isSecret: true },
        { name: 'LOG_LEVEL', description: 'How much to log', default: 'info', choices: ['debug', 'info', 'warn'] },
      ],
    }],
  }
}

// ---------------------------------------------------------------------------------------------
// Virtual users
// ---------------------------------------------------------------------------------------------

let running = true
let serial = 0
const unique = (prefix) => `${prefix}-${process.pid}-${++serial}-${randomBytes(3).toString('hex')}`

async function loop(body, thinkMs) {
  while (running) {
    await body()
    if (running) await sleep(thinkMs)
  }
}

function virtualUsers(world) {
  const { admin, users, weatherId, team, satellites } = world
  const adminHeaders = { cookie: admin.cookie, 'x-forwarded-for': admin.ip }
  const loops = []

  // Logins: each user from an address of its own for logins, about 12 a minute (the per-IP budget
  // for login and registration is 20 a minute). One in three sessions is logged out again.
  for (const user of users) {
    loops.push(loop(async () => {
      const login = await request('login', 'POST', '/api/auth/email/login', { headers: { 'x-forwarded-for': user.loginIp }, body: { login: user.name, password: PASSWORD } })
      if (login.class !== 'ok') {
        ledger.unackedWrites.login++
        return
      }
      const session = { user: user.name, cookie: cookieOf(login), loggedOut: false, logoutUnknown: false }
      ledger.sessions.push(session)
      if (ledger.sessions.length % 3 === 0) {
        const out = await request('logout', 'POST', '/api/auth/logout', { headers: { cookie: session.cookie, 'x-forwarded-for': user.loginIp } })
        if (out.class === 'ok') session.loggedOut = true
        else session.logoutUnknown = true
      } else {
        await request('session_read', 'GET', '/api/users/me', { headers: { cookie: session.cookie, 'x-forwarded-for': user.loginIp } })
      }
    }, 5_000))
  }

  // Session and bearer reads.
  for (const user of users) {
    loops.push(loop(() => request('session_read', 'GET', '/api/users/me', { headers: { cookie: user.cookie, 'x-forwarded-for': user.ip } }), 40))
    loops.push(loop(async () => {
      const grant = user.grant
      await request('bearer_read', 'GET', '/api/users/me', {
        headers: { authorization: `Bearer ${user.access}`, 'x-forwarded-for': user.ip },
        // A grant ended by a refresh-token replay takes its access tokens with it (see below).
        allow4xx: (status) => status === 401 && (user.grant !== grant || user.grantEnded === true),
      })
    }, 40))
  }

  // OAuth refreshes, rotating: the newest refresh token of each answer is kept. A refresh that got
  // no answer (or a 503) may or may not have spent the token; the client tries the same token
  // again: a 200 says it was not spent, invalid_grant says it was (and the replay ended the grant,
  // so the client authorizes again).
  for (const user of users) {
    loops.push(loop(async () => {
      if (user.grantEnded) {
        const tokens = await authorize(user, 'reauthorize')
        if (tokens !== null) {
          Object.assign(user, tokens, { grantEnded: false, ambiguous: null })
        }
        return
      }
      const retrying = user.ambiguous !== null && user.ambiguous !== undefined
      const refresh = await request('refresh', 'POST', '/api/oauth2/token', {
        headers: { 'x-forwarded-for': user.ip },
        form: { grant_type: 'refresh_token', refresh_token: user.refresh, client_id: CLIENT_ID },
        expect: (status) => status === 200,
        allow4xx: (status, json) => retrying && status === 400 && json?.error === 'invalid_grant',
      })
      if (refresh.status === 200) {
        if (retrying) {
          refreshNotes.retriedOk++
          refreshNotes.details.push(`${user.name}: the token of an unanswered refresh at ${user.ambiguous.at}s (${user.ambiguous.why}) was still valid`)
        }
        user.ambiguous = null
        user.access = refresh.json.access_token
        user.refresh = refresh.json.refresh_token
      } else if (retrying && refresh.status === 400) {
        refreshNotes.foundSpent++
        refreshNotes.details.push(`${user.name}: the token of an unanswered refresh at ${user.ambiguous.at}s (${user.ambiguous.why}) had been spent; its replay ended the grant`)
        user.ambiguous = null
        user.grant++
        user.grantEnded = true
      } else if (refresh.status === 0 || refresh.status >= 500) {
        if (!retrying) {
          refreshNotes.ambiguous++
          user.ambiguous = { at: (now() / 1000).toFixed(1), why: refresh.status === 0 ? refresh.error : `${refresh.status} ${refresh.json?.code ?? ''}`.trim() }
        }
      }
    }, 3_000))
  }

  // Catalogue writes (the admin) and installation writes (the team's owner, the admin too).
  for (let writer = 0; writer < WRITERS; writer++) {
    loops.push(loop(async () => {
      const name = unique('soak-server')
      const created = await request('catalogue_write', 'POST', '/api/mcp/servers/global', {
        headers: adminHeaders,
        body: { name, description: 'Created by the cluster soak.', transport_type: 'stdio', packages: [{ registry_type: 'npm', identifier: `@soak/${name}`, version: '1.0.0' }] },
        expect: (status) => status === 201,
      })
      if (created.class === 'ok') ledger.servers.push({ id: created.json.data.server.id, name })
      else ledger.unackedWrites.catalogue_write++
    }, 100))
    loops.push(loop(async () => {
      const name = unique('soak-inst')
      const created = await request('installation_write', 'POST', `/api/teams/${team.id}/mcp/installations`, {
        headers: adminHeaders,
        body: { server_id: weatherId, name, values: { 'env:WEATHER_API_KEY': `key-${name}`, 'arg:data_dir': '/srv/cache' } },
        expect: (status) => status === 201,
      })
      if (created.class === 'ok') ledger.installations.push({ id: created.json.data.installation.id, name })
      else ledger.unackedWrites.installation_write++
    }, 150))
  }

  // Satellites: long-polls of their desired state with the last ETag, and a heartbeat every 20 s.
  for (const satellite of satellites) {
    const headers = { authorization: `Bearer ${satellite.key}`, 'x-forwarded-for': satellite.ip }
    loops.push(loop(async () => {
      const poll = await request('satellite_poll', 'GET', `/api/satellites/${satellite.id}/desired-state?wait=${POLL_WAIT_S}`, {
        headers: satellite.etag === null ? headers : { ...headers, 'if-none-match': satellite.etag },
        timeoutMs: (POLL_WAIT_S + 15) * 1000,
        expect: (status) => status === 200 || status === 304,
      })
      if (poll.status === 200) satellite.etag = poll.headers.get('etag')
    }, 50))
    loops.push(loop(() => request('heartbeat', 'POST', `/api/satellites/${satellite.id}/heartbeat`, { headers, body: heartbeatBody() }), 20_000))
  }
  return loops
}

// ---------------------------------------------------------------------------------------------
// Faults
// ---------------------------------------------------------------------------------------------

/**
 * Closes a fault's window once the cluster has been whole again for 5 s without a break: every
 * instance ready (asked directly) and up in HAProxy, and a PostgreSQL node passing the writable
 * check. `wholeAt` is the start of that period; 503s answered later are violations.
 */
async function closeWindowWhenWhole(fault) {
  const STABLE_MS = 5_000
  const end = Date.now() + 60_000
  let since = null
  while (Date.now() < end && running) {
    let whole = false
    try {
      const states = await serverStates()
      const ready = await Promise.all(APP_PORTS.map((port) => fetch(`http://127.0.0.1:${port}/api/health/ready`, { signal: AbortSignal.timeout(1_000) }).then((answer) => answer.status === 200, () => false)))
      whole = ready.every(Boolean) && ['app1', 'app2', 'app3'].every((name) => states[`instances/${name}`] === 'UP') &&
        Object.entries(states).some(([name, state]) => name.startsWith('postgresql_writable/') && state === 'UP')
    } catch {
      whole = false
    }
    if (!whole) since = null
    else if (since === null) since = now()
    else if (now() - since >= STABLE_MS) {
      fault.wholeAt = since
      fault.end = now()
      return
    }
    await sleep(250)
  }
  fault.end = now()
  if (since === null) fault.neverWhole = true
  else fault.wholeAt = since
}

async function killInstance() {
  const fault = { name: 'instance', label: 'SIGKILL app2, restarted after 10 s', at: now() }
  faults.push(fault)
  say('fault: SIGKILL of app2')
  await stopProcess(apps[1], 'SIGKILL')
  await sleep(10_000)
  say('restarting app2')
  startApp(1)
  fault.restoredAt = now()
  await closeWindowWhenWhole(fault)
}

async function restartRedis() {
  const fault = { name: 'redis', label: 'Redis SIGKILL, restarted after 5 s', at: now() }
  faults.push(fault)
  say('fault: SIGKILL of Redis')
  await stopProcess(redis, 'SIGKILL')
  await sleep(5_000)
  say('restarting Redis')
  await startRedis()
  fault.restoredAt = now()
  await closeWindowWhenWhole(fault)
}

async function failover() {
  const fault = { name: 'failover', label: 'primary stopped (fast), standby promoted', at: now() }
  faults.push(fault)
  say('fault: stopping the primary (pg_ctl stop -m fast)')
  await asPostgres('pg_ctl', ['-D', pgDir('primary'), '-m', 'fast', '-w', 'stop'])
  fault.stoppedAt = now()
  say('promoting the standby (pg_ctl promote)')
  await asPostgres('pg_ctl', ['-D', pgDir('standby'), '-w', 'promote'])
  fault.restoredAt = now()
  await closeWindowWhenWhole(fault)
}

// ---------------------------------------------------------------------------------------------
// The ledger, checked through the balancer at the end
// ---------------------------------------------------------------------------------------------

async function pool(items, concurrency, worker) {
  let next = 0
  await Promise.all(Array.from({ length: concurrency }, async () => {
    while (next < items.length) {
      const item = items[next++]
      await worker(item)
    }
  }))
}

/** A check's request: retried on 503/timeouts (the cluster is whole by then; they would be noted). */
async function checkCall(method, path, options) {
  for (let attempt = 0; attempt < 5; attempt++) {
    const result = await request('check', method, path, { ...options, record: false })
    if (result.status !== 503 && result.status !== 0) return result
    checkRetries++
    await sleep(1_000)
  }
  return { status: -1 }
}
let checkRetries = 0

async function checkLedger(world) {
  const { admin, users, team } = world
  const adminHeaders = { cookie: admin.cookie, 'x-forwarded-for': admin.ip }
  const result = { servers: [0, 0], installations: [0, 0], sessions: [0, 0], loggedOut: [0, 0], refresh: [0, 0], satellites: [0, 0], missing: [] }
  await pool(ledger.servers, 8, async (server) => {
    const answer = await checkCall('GET', `/api/mcp/servers/${server.id}`, { headers: adminHeaders })
    if (answer.status === 200 && answer.json.data.server.name === server.name) result.servers[0]++
    else {
      result.servers[1]++
      result.missing.push(`server ${server.id} (${server.name}): ${answer.status}`)
    }
  })
  await pool(ledger.installations, 8, async (installation) => {
    const answer = await checkCall('GET', `/api/teams/${team.id}/mcp/installations/${installation.id}`, { headers: adminHeaders })
    if (answer.status === 200 && answer.json.data.installation.name === installation.name) result.installations[0]++
    else {
      result.installations[1]++
      result.missing.push(`installation ${installation.id} (${installation.name}): ${answer.status}`)
    }
  })
  await pool(ledger.sessions, 8, async (session) => {
    if (session.logoutUnknown) return
    const answer = await checkCall('GET', '/api/users/me', { headers: { cookie: session.cookie, 'x-forwarded-for': '10.0.9.1' } })
    if (session.loggedOut) {
      if (answer.status === 401) result.loggedOut[0]++
      else {
        result.loggedOut[1]++
        result.missing.push(`a logged-out session of ${session.user} still answers ${answer.status}`)
      }
    } else if (answer.status === 200) result.sessions[0]++
    else {
      result.sessions[1]++
      result.missing.push(`a session of ${session.user}: ${answer.status}`)
    }
  })
  for (const user of users) {
    if (user.ambiguous !== null && user.ambiguous !== undefined) {
      refreshNotes.stillUnknownAtEnd++
      refreshNotes.details.push(`${user.name}: its last refresh (${user.ambiguous.at}s, ${user.ambiguous.why}) had no answer when the soak ended; not checked`)
      continue
    }
    if (user.grantEnded) {
      refreshNotes.details.push(`${user.name}: its grant had been ended by a replay and was not authorized again before the end; not checked`)
      continue
    }
    const answer = await checkCall('POST', '/api/oauth2/token', { headers: { 'x-forwarded-for': user.ip }, form: { grant_type: 'refresh_token', refresh_token: user.refresh, client_id: CLIENT_ID } })
    if (answer.status === 200) result.refresh[0]++
    else {
      result.refresh[1]++
      result.missing.push(`the newest refresh token of ${user.name}: ${answer.status} ${answer.json?.error ?? ''}`)
    }
  }
  for (const satellite of ledger.satellites) {
    const answer = await checkCall('GET', `/api/satellites/${satellite.id}/desired-state?wait=0`, { headers: { authorization: `Bearer ${satellite.key}`, 'x-forwarded-for': satellite.ip } })
    if (answer.status === 200) result.satellites[0]++
    else {
      result.satellites[1]++
      result.missing.push(`satellite ${satellite.id}: ${answer.status}`)
    }
  }
  return result
}

// ---------------------------------------------------------------------------------------------
// Throughput: 1 and 3 instances behind the balancer
// ---------------------------------------------------------------------------------------------

async function autocannon(cookie) {
  const { stdout } = await run(join(root, 'node_modules/.bin/autocannon'), [
    '-j', '-c', '20', '-d', String(THROUGHPUT_SECONDS), '-H', `cookie=${cookie}`, '-H', 'x-forwarded-for=10.0.8.1', `${LB}/api/users/me`,
  ], { maxBuffer: 1 << 24 })
  const report = JSON.parse(stdout)
  return { rps: report.requests.average, p50: report.latency.p50, p99: report.latency.p99, non2xx: report.non2xx, errors: report.errors + report.timeouts }
}

async function throughput(world) {
  const cookie = world.users[0].cookie
  await haproxyCommand('disable server instances/app2')
  await haproxyCommand('disable server instances/app3')
  await sleep(1_000)
  const one = await autocannon(cookie)
  await haproxyCommand('enable server instances/app2')
  await haproxyCommand('enable server instances/app3')
  await balancerSeesAll()
  const three = await autocannon(cookie)
  return { one, three }
}

// ---------------------------------------------------------------------------------------------
// The summary
// ---------------------------------------------------------------------------------------------

const percentile = (values, p) => {
  if (values.length === 0) return '-'
  const sorted = [...values].sort((a, b) => a - b)
  return String(sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))])
}

/** For a fault: per kind, the failures meanwhile and when the kind was answered well for good. */
function recovery(fault) {
  const until = fault.end ?? now()
  const per = {}
  for (const kind of KINDS) {
    const during = answers.filter((answer) => answer.kind === kind && answer.end >= fault.at && answer.start <= until)
    const bad = during.filter((answer) => answer.bad)
    const lastBad = bad.reduce((latest, answer) => Math.max(latest, answer.end), -1)
    const firstGood = answers.filter((answer) => answer.kind === kind && answer.good && answer.start >= fault.at).reduce((first, answer) => Math.min(first, answer.end), Infinity)
    const goodAfterBad = answers.filter((answer) => answer.kind === kind && answer.good && answer.start >= lastBad).reduce((first, answer) => Math.min(first, answer.end), Infinity)
    per[kind] = { failed: bad.length, firstGood: firstGood === Infinity ? null : firstGood - fault.at, recovered: bad.length === 0 ? 0 : goodAfterBad === Infinity ? null : goodAfterBad - fault.at }
  }
  return per
}

function table(rows) {
  const widths = [0, 0]
  for (const row of rows) if (row.length === 2) row.forEach((cell, index) => (widths[index] = Math.max(widths[index], cell.length)))
  const width = Math.min(160, widths[0] + widths[1] + 7)
  const line = (left, middle, right) => `${left}${'─'.repeat(widths[0] + 2)}${middle}${'─'.repeat(Math.max(0, width - widths[0] - 5))}${right}`
  const out = [line('┌', '┬', '┐')]
  for (const row of rows) {
    if (row === '-') out.push(line('├', '┼', '┤'))
    else out.push(`│ ${row[0].padEnd(widths[0])} │ ${row[1].padEnd(width - widths[0] - 7)} │`)
  }
  out.push(line('└', '┴', '┘'))
  return out.join('\n')
}

function summary(world, checked, measured, soakMs) {
  const rows = []
  const seconds = soakMs / 1000
  rows.push(['cluster', `3 instances behind HAProxy, PostgreSQL primary + hot standby, Redis; ${USERS} users + admin, ${SATELLITES} satellites, ${WRITERS}+${WRITERS} writers`])
  rows.push(['soak', `${seconds.toFixed(1)} s; faults: ${FAULTS.join(', ') || 'none'}`])
  rows.push('-')
  rows.push(['kind', 'sent  ok  503(fault)  cut(in flight at kill)  4xx(explained)  violations  p50/p99 ms of ok'])
  let total = 0
  for (const kind of KINDS) {
    const entry = stats[kind]
    total += entry.sent
    rows.push([kind, `${entry.sent}  ${entry.ok}  ${entry.fault503}  ${entry.inflight502}  ${entry.expected4xx}  ${entry.violations}  ${percentile(entry.latencies, 50)}/${percentile(entry.latencies, 99)}`])
  }
  rows.push(['all', `${total} requests, ${(total / seconds).toFixed(1)} req/s through the balancer; ${violations.length} violations`])
  rows.push(['503 in fault windows', Object.entries(codes503).map(([code, count]) => `${code} ${count}`).join(', ') || 'none'])
  rows.push('-')
  for (const fault of faults) {
    const per = recovery(fault)
    const window = fault.end === undefined ? 'open' : `${((fault.end - fault.at) / 1000).toFixed(1)} s`
    const whole = fault.neverWhole ? 'never whole again within 60 s' : `whole again (5 s without a break) ${((fault.wholeAt - fault.at) / 1000).toFixed(1)} s after`
    const counted = answers.filter((answer) => answer.start >= fault.at && answer.start <= (fault.end ?? Infinity))
    rows.push([`fault ${fault.name}`, `at ${(fault.at / 1000).toFixed(1)} s: ${fault.label}; restored ${(((fault.restoredAt ?? fault.at) - fault.at) / 1000).toFixed(1)} s after, ${whole}; window ${window}, ${counted.filter((answer) => answer.bad).length} failed answers in it`])
    const parts = Object.entries(per).filter(([, value]) => value.failed > 0).map(([kind, value]) => `${kind} ${value.failed} failed, ok again after ${value.recovered === null ? 'never' : `${(value.recovered / 1000).toFixed(1)} s`}`)
    rows.push(['  recovery', parts.length === 0 ? 'no request failed' : parts.join('; ')])
    const firsts = Object.entries(per).filter(([, value]) => value.firstGood !== null).map(([kind, value]) => `${kind} ${(value.firstGood / 1000).toFixed(1)}`)
    rows.push(['  first ok after (s)', firsts.join(', ')])
  }
  rows.push('-')
  rows.push(['ledger: servers', `${ledger.servers.length} acknowledged, ${checked.servers[0]} present, ${checked.servers[1]} missing (${ledger.unackedWrites.catalogue_write} unacknowledged, not checked)`])
  rows.push(['ledger: installations', `${ledger.installations.length} acknowledged, ${checked.installations[0]} present, ${checked.installations[1]} missing (${ledger.unackedWrites.installation_write} unacknowledged, not checked)`])
  const unknownLogouts = ledger.sessions.filter((session) => session.logoutUnknown).length
  rows.push(['ledger: sessions', `${ledger.sessions.length} from logins: ${checked.sessions[0]} work, ${checked.sessions[1]} lost; logged out ${checked.loggedOut[0]} refused, ${checked.loggedOut[1]} still working; ${unknownLogouts} logouts without an answer, not checked`])
  rows.push(['ledger: refresh tokens', `${world.users.length} users: newest acknowledged token refreshes for ${checked.refresh[0]}, fails for ${checked.refresh[1]}`])
  rows.push(['  unanswered refreshes', `${refreshNotes.ambiguous}: retried and valid ${refreshNotes.retriedOk}, found spent (grant ended by the replay) ${refreshNotes.foundSpent}, unknown at the end ${refreshNotes.stillUnknownAtEnd}`])
  for (const detail of refreshNotes.details.slice(0, 8)) rows.push(['', detail])
  rows.push(['ledger: satellites', `${ledger.satellites.length} keys: ${checked.satellites[0]} accepted, ${checked.satellites[1]} refused`])
  if (checkRetries > 0) rows.push(['  check retries', `${checkRetries} check requests answered 503 or timed out and were sent again`])
  for (const missing of checked.missing.slice(0, 10)) rows.push(['  LOST', missing])
  if (measured !== null) {
    rows.push('-')
    for (const [label, figures] of [['throughput 1 instance', measured.one], ['throughput 3 instances', measured.three]]) {
      rows.push([label, `GET /api/users/me (session), 20 connections, ${THROUGHPUT_SECONDS} s: ${figures.rps.toFixed(0)} req/s, p50 ${figures.p50} ms, p99 ${figures.p99} ms, non-2xx ${figures.non2xx}, errors ${figures.errors}`])
    }
  }
  rows.push('-')
  for (const violation of violations.slice(0, 15)) {
    rows.push(['VIOLATION', `${violation.at}s ${violation.kind} ${violation.request}: ${violation.why}${violation.code ? ` ${violation.code}` : ''}${violation.server ? ` via ${violation.server}` : ''}${violation.requestId ? ` req ${violation.requestId}` : ''}`])
  }
  if (violations.length > 15) rows.push(['VIOLATION', `… and ${violations.length - 15} more`])
  const lost = checked.servers[1] + checked.installations[1] + checked.sessions[1] + checked.loggedOut[1] + checked.refresh[1] + checked.satellites[1]
  const pass = violations.length === 0 && lost === 0
  rows.push(['result', pass ? 'PASS: no violation, no lost write' : `FAIL: ${violations.length} violations, ${lost} ledger failures`])
  return { text: table(rows), pass }
}

// ---------------------------------------------------------------------------------------------
// Main
// ---------------------------------------------------------------------------------------------

async function main() {
  if (process.getuid?.() !== 0) throw new Error('run as root: PostgreSQL is started as the postgres user through runuser')
  if (!existsSync(join(root, 'dist/src/server.js'))) throw new Error('dist/src/server.js is missing: run npm run build first')
  const busy = []
  for (const port of PORTS) if (!(await portFree(port))) busy.push(port)
  if (busy.length > 0) throw new Error(`ports already in use on 127.0.0.1: ${busy.join(', ')}`)

  base = mkdtempSync('/tmp/cluster-soak-')
  chmodSync(base, 0o755)
  say(`temporary directory ${base}`)
  await startPostgres()
  say('PostgreSQL primary :5440 and streaming standby :5441 up')
  await startRedis()
  await startHaproxy()
  say('Redis :6390 and HAProxy :8080/:6432 up (the primary passes the writable check, the standby fails it)')
  for (const index of [0, 1, 2]) startApp(index)
  await appsReady()
  await balancerSeesAll()
  say('three instances ready and up in HAProxy')
  const world = await setup()
  say(`set up through the balancer: admin, ${world.users.length} users with sessions and OAuth grants, a catalogue server, a team, ${world.satellites.length} satellites`)

  soakStart = Date.now()
  const plan = []
  const at = (fraction) => Math.round(SECONDS * 1000 * fraction)
  if (FAULTS.includes('instance')) plan.push([at(0.12), killInstance])
  if (FAULTS.includes('redis')) plan.push([at(0.4), restartRedis])
  if (FAULTS.includes('failover')) plan.push([at(0.62), failover])
  const loops = virtualUsers(world)
  const injected = (async () => {
    for (const [when, inject] of plan) {
      await sleep(Math.max(0, when - now()))
      if (!running) return
      await inject()
    }
  })()
  say(`soak running for ${SECONDS} s with ${loops.length} virtual users`)
  await sleep(SECONDS * 1000)
  running = false
  const soakMs = now()
  say('soak over: waiting for the virtual users and the fault injector to finish')
  await injected
  await Promise.all(loops)
  for (const fault of faults) if (fault.end === undefined) fault.end = now()
  await appsReady().catch(() => undefined)
  await balancerSeesAll().catch((error) => say(`not every instance is up: ${error.message}`))
  say('checking the ledger through the balancer')
  const checked = await checkLedger(world)
  let measured = null
  if (THROUGHPUT) {
    say(`throughput: 1 then 3 instances, ${THROUGHPUT_SECONDS} s each`)
    measured = await throughput(world)
  }
  const { text, pass } = summary(world, checked, measured, soakMs)
  process.stdout.write(`${text}\n`)
  if (violations.length > 0 && KEEP) say(`instance logs: ${base}/app1.log … app3.log (match X-Request-Id)`)
  return pass
}

let status = 1
try {
  status = (await main()) ? 0 : 1
} catch (error) {
  say(`failed: ${error.stack ?? error}`)
  if (base !== null) {
    for (const name of ['app1', 'app2', 'app3', 'haproxy']) {
      const file = join(base, `${name}.log`)
      if (existsSync(file)) say(`--- last lines of ${name}.log ---\n${readFileSync(file, 'utf8').split('\n').slice(-8).join('\n')}`)
    }
  }
  status = 1
} finally {
  running = false
  await teardown()
}
process.exit(status)
