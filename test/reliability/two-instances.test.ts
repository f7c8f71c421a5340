/**
 * Two real server processes (`node dist/src/server.js`) on two ports, sharing one fresh PostgreSQL
 * database and one Redis, behave as one service over real HTTP: sessions, role and password
 * changes, OAuth codes and refresh-token rotation, installations and their values, settings and
 * per-IP rate limits all cross from one instance to the other.
 *
 * Both instances get the same PUBLIC_URL (the OAuth issuer must be shared): the address of
 * instance A, as if A stood behind the public name. The OAuth client library reaches one instance
 * or the other through a custom fetch that sends the issuer's URLs to the chosen instance, as a load
 * balancer would.
 *
 * Per-IP budgets live in Redis. This file keeps its counters apart from other test files running
 * on the same Redis: the instances use a Redis database of their own (an empty one among 1–15,
 * flushed afterwards), and the rate-limit test sends from a loopback source address of its own
 * (127.x.y.z, all routed to lo on Linux), so the logins of the other tests do not eat its budget.
 */
import { randomBytes, randomInt } from 'node:crypto'
import { request as httpRequest, type IncomingHttpHeaders } from 'node:http'
import { Redis } from 'ioredis'
import * as oauth from 'oauth4webapi'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { DEFAULT_PASSWORD } from '../helpers/accounts.js'
import { createTestDatabase, type TestDatabase } from '../helpers/database.js'
import { weatherDocument } from '../helpers/installations.js'
import { authorizationUrl, CALLBACK, cliClient, freePort, insecure, noClientAuth } from '../helpers/oauth-e2e.js'
import { serverBuilt, SERVER_ENTRY, startServerProcess, type ServerProcess } from '../helpers/server-process.js'

const REDIS_HOST = '127.0.0.1'
const REDIS_PORT = 6379
/** The default per-IP budget of login + register attempts a minute (src/auth/limits.ts). */
const LOGIN_BUDGET = 20
/** The promise of the settings cache: another instance's change is seen within this. */
const SETTINGS_BOUND_MS = 5_000
const REQUEST_TIMEOUT_MS = 10_000

interface Instance {
  name: 'A' | 'B'
  process: ServerProcess
  /** Where this instance listens: `http://127.0.0.1:<port>`. */
  url: string
}

interface Answer {
  status: number
  headers: Headers
  json: any
  text: string
}

interface CallOptions {
  cookie?: string
  bearer?: string
  body?: unknown
  accept?: string
}

/** One request over real HTTP; unsafe methods carry the public Origin, as a browser on the service's page would. */
async function call(instance: Instance, method: 'GET' | 'POST' | 'PUT' | 'DELETE', path: string, options: CallOptions = {}): Promise<Answer> {
  const headers: Record<string, string> = { accept: options.accept ?? 'application/json' }
  if (options.cookie !== undefined) headers.cookie = options.cookie
  if (options.bearer !== undefined) headers.authorization = `Bearer ${options.bearer}`
  if (method !== 'GET') headers.origin = publicUrl
  if (options.body !== undefined) headers['content-type'] = 'application/json'
  const response = await fetch(`${instance.url}${path}`, {
    method,
    headers,
    redirect: 'manual',
    signal: AbortSignal.timeout(REQUEST_TIMEOUT_MS),
    ...(options.body === undefined ? {} : { body: JSON.stringify(options.body) }),
  })
  const text = await response.text()
  let json: unknown
  try {
    json = JSON.parse(text)
  } catch {
    json = undefined
  }
  return { status: response.status, headers: response.headers, json, text }
}

/** The `auth_session=<value>` pair a response set, if it set a non-empty one. */
function sessionCookieOf(answer: Answer): string | undefined {
  return answer.headers.getSetCookie().map((line) => line.split(';')[0]!).find((pair) => pair.startsWith('auth_session=') && pair !== 'auth_session=')
}

interface Account {
  id: string
  username: string
  email: string
  /** The session registration started. */
  cookie: string
}

async function registerOn(instance: Instance, username: string): Promise<Account> {
  const email = `${username}@example.com`
  const answer = await call(instance, 'POST', '/api/auth/email/register', { body: { username, email, password: DEFAULT_PASSWORD } })
  expect(answer.status, answer.text).toBe(201)
  const cookie = sessionCookieOf(answer)
  expect(cookie, 'registration signs the user in').toBeDefined()
  return { id: answer.json.data.user.id, username, email, cookie: cookie! }
}

async function loginOn(instance: Instance, login: string, password: string): Promise<{ answer: Answer; cookie: string | undefined }> {
  const answer = await call(instance, 'POST', '/api/auth/email/login', { body: { login, password } })
  return { answer, cookie: sessionCookieOf(answer) }
}

/** A fetch for oauth4webapi that sends every URL of the public origin to `instance`, and records where it went. */
function via(instance: Instance, log: string[]): (url: string, options: oauth.CustomFetchOptions<string, unknown>) => Promise<Response> {
  return (url, options) => {
    const target = new URL(url)
    expect(target.origin, 'oauth4webapi only talks to the issuer').toBe(publicUrl)
    const routed = new URL(`${target.pathname}${target.search}`, instance.url)
    log.push(`${instance.name} ${options.method} ${target.pathname}`)
    return fetch(routed, { method: options.method, headers: options.headers, body: options.body as NonNullable<Parameters<typeof fetch>[1]>['body'], redirect: options.redirect, signal: AbortSignal.timeout(REQUEST_TIMEOUT_MS) })
  }
}

function clientOptions(instance: Instance, log: string[]) {
  return { ...insecure, [oauth.customFetch]: via(instance, log) }
}

/** The oauth4webapi error of a refused token request, or a failure when it was not refused. */
async function refusal(promise: Promise<unknown>): Promise<oauth.ResponseBodyError> {
  const outcome = await promise.then(
    (value) => new Error(`expected the token endpoint to refuse, got ${JSON.stringify(value)}`),
    (error: unknown) => error,
  )
  expect(outcome).toBeInstanceOf(oauth.ResponseBodyError)
  return outcome as oauth.ResponseBodyError
}

interface PlainAnswer {
  status: number
  headers: IncomingHttpHeaders
  json: any
}

/**
 * A JSON POST sent from the loopback source address `localAddress` (node:http, since the global
 * fetch of this Node has no public way to choose its source address). No keep-alive.
 */
function postFrom(localAddress: string, instance: Instance, path: string, body: unknown): Promise<PlainAnswer> {
  const payload = JSON.stringify(body)
  return new Promise((resolve, reject) => {
    const request = httpRequest(new URL(path, instance.url), {
      method: 'POST',
      localAddress,
      agent: false,
      timeout: REQUEST_TIMEOUT_MS,
      headers: { 'content-type': 'application/json', 'content-length': Buffer.byteLength(payload), accept: 'application/json' },
    }, (response) => {
      let text = ''
      response.setEncoding('utf8')
      response.on('data', (chunk: string) => (text += chunk))
      response.on('end', () => {
        try {
          resolve({ status: response.statusCode ?? 0, headers: response.headers, json: JSON.parse(text) })
        } catch (error) {
          reject(new Error(`not JSON (${response.statusCode}): ${text}`, { cause: error }))
        }
      })
      response.on('error', reject)
    })
    request.on('timeout', () => request.destroy(new Error(`no answer within ${REQUEST_TIMEOUT_MS} ms`)))
    request.on('error', reject)
    request.end(payload)
  })
}

/** A Redis database (1–15) that is empty right now, for this file alone; flushed when it held leftovers. */
async function claimRedisDatabase(): Promise<{ db: number; client: Redis }> {
  const candidates = Array.from({ length: 15 }, (_, index) => index + 1).sort(() => Math.random() - 0.5)
  for (const db of candidates) {
    const client = new Redis({ host: REDIS_HOST, port: REDIS_PORT, db, lazyConnect: true, connectTimeout: 2_000, maxRetriesPerRequest: 1 })
    await client.connect()
    if ((await client.dbsize()) === 0) return { db, client }
    client.disconnect()
  }
  // Every database holds something (leftovers of killed runs): take one and start it clean.
  const db = candidates[0]!
  const client = new Redis({ host: REDIS_HOST, port: REDIS_PORT, db, lazyConnect: true, connectTimeout: 2_000, maxRetriesPerRequest: 1 })
  await client.connect()
  await client.flushdb()
  return { db, client }
}

let publicUrl = ''

describe('two server processes on one PostgreSQL database and one Redis behave as one service', () => {
  let database: TestDatabase | undefined
  let redis: Redis | undefined
  let redisDb = 0
  const started: ServerProcess[] = []
  let a: Instance
  let b: Instance
  let admin: Account

  /** Starts A and B in parallel; A's address is the PUBLIC_URL of both. Retries when a probed port got taken meanwhile. */
  async function startBoth(databaseUrl: string, redisUrl: string): Promise<[Instance, Instance]> {
    let lastError: unknown
    for (let attempt = 0; attempt < 3; attempt += 1) {
      const [portA, portB] = [await freePort(), await freePort()]
      if (portA === portB) continue
      publicUrl = `http://127.0.0.1:${portA}`
      const env = (port: number) => ({ PORT: String(port), PUBLIC_URL: publicUrl, DATABASE_URL: databaseUrl, REDIS_URL: redisUrl })
      const results = await Promise.allSettled([portA, portB].map((port) => startServerProcess(env(port), { timeoutMs: 20_000 })))
      for (const result of results) if (result.status === 'fulfilled') started.push(result.value)
      if (results.every((result) => result.status === 'fulfilled')) {
        const [first, second] = results.map((result) => (result as PromiseFulfilledResult<ServerProcess>).value)
        expect(first!.url).toBe(`http://127.0.0.1:${portA}`)
        expect(second!.url).toBe(`http://127.0.0.1:${portB}`)
        return [{ name: 'A', process: first!, url: first!.url }, { name: 'B', process: second!, url: second!.url }]
      }
      lastError = results.find((result) => result.status === 'rejected')?.reason
      await Promise.all(started.splice(0).map((process) => process.stop('SIGKILL')))
      if (!/EADDRINUSE/.test(String(lastError))) break
    }
    throw lastError
  }

  beforeAll(async () => {
    if (!serverBuilt) throw new Error(`${SERVER_ENTRY} is missing: run \`npm run build\` first`)
    database = await createTestDatabase('postgresql')
    const claimed = await claimRedisDatabase()
    redis = claimed.client
    redisDb = claimed.db
    ;[a, b] = await startBoth(database.url, `redis://${REDIS_HOST}:${REDIS_PORT}/${redisDb}`)
    admin = await registerOn(a, 'twin_admin') // the first user: global admin
    expect((await call(b, 'GET', '/api/users/me', { cookie: admin.cookie })).json.data.role_id).toBe('global_admin')
  }, 50_000)

  afterAll(async () => {
    // Always both processes, the database and the Redis database, whatever failed before.
    // SIGTERM first (graceful close, at most 10 s), SIGKILL if a process outlives that.
    const stop = async (process: ServerProcess) => {
      const killer = setTimeout(() => void process.stop('SIGKILL'), 12_000)
      try {
        return await process.stop('SIGTERM')
      } finally {
        clearTimeout(killer)
      }
    }
    const exits = await Promise.allSettled(started.map(stop))
    await Promise.allSettled([
      database?.drop(),
      redis?.flushdb().finally(() => redis?.disconnect()),
    ])
    for (const exit of exits) if (exit.status === 'rejected') throw exit.reason
  }, 20_000)

  it('a session made by a login on A works on B, for reads and writes', async () => {
    const alice = await registerOn(b, 'twin_alice')
    const { answer, cookie } = await loginOn(a, alice.email, DEFAULT_PASSWORD)
    expect(answer.status, answer.text).toBe(200)
    expect(cookie).toBeDefined()
    expect(cookie).not.toBe(alice.cookie)

    const me = await call(b, 'GET', '/api/users/me', { cookie })
    expect(me.status, me.text).toBe(200)
    expect(me.json.data).toMatchObject({ id: alice.id, username: 'twin_alice', role_id: 'global_user' })
    const team = await call(b, 'GET', '/api/teams/me/default', { cookie })
    expect(team.status, team.text).toBe(200)
    expect(team.json.data.team.name).toBe('twin_alice')

    // A write on B with A's session, read back on A.
    const updated = await call(b, 'PUT', '/api/auth/profile/update', { cookie, body: { first_name: 'Alice' } })
    expect(updated.status, updated.text).toBe(200)
    const onA = await call(a, 'GET', '/api/users/me', { cookie })
    expect(onA.status, onA.text).toBe(200)
    expect(onA.json.data.first_name).toBe('Alice')
  })

  it('a logout on A refuses the cookie on B at the next request', async () => {
    const carl = await registerOn(a, 'twin_carl')
    expect((await call(b, 'GET', '/api/users/me', { cookie: carl.cookie })).status).toBe(200)
    const out = await call(a, 'POST', '/api/auth/logout', { cookie: carl.cookie })
    expect(out.status, out.text).toBe(200)
    const refused = await call(b, 'GET', '/api/users/me', { cookie: carl.cookie })
    expect(refused.status, refused.text).toBe(401)
    expect(refused.json).toMatchObject({ success: false, code: 'UNAUTHORIZED' })
    expect((await call(a, 'GET', '/api/users/me', { cookie: carl.cookie })).status).toBe(401)
  })

  it('a role change made on A applies on B at the user\'s next request, both ways', async () => {
    const bob = await registerOn(b, 'twin_bob')
    const viewUsers = () => call(b, 'GET', '/api/admin/users?limit=1', { cookie: bob.cookie })

    const before = await viewUsers()
    expect(before.status, before.text).toBe(403)
    expect(before.json).toMatchObject({ code: 'FORBIDDEN', details: { required_permission: 'users.view' } })

    const promoted = await call(a, 'PUT', `/api/admin/users/${bob.id}/role`, { cookie: admin.cookie, body: { role_id: 'global_admin' } })
    expect(promoted.status, promoted.text).toBe(200)
    const after = await viewUsers()
    expect(after.status, after.text).toBe(200)
    expect(after.json.data.pagination.total).toBeGreaterThanOrEqual(2)

    const demoted = await call(a, 'PUT', `/api/admin/users/${bob.id}/role`, { cookie: admin.cookie, body: { role_id: 'global_user' } })
    expect(demoted.status, demoted.text).toBe(200)
    const again = await viewUsers()
    expect(again.status, again.text).toBe(403)
    expect(again.json.code).toBe('FORBIDDEN')
  })

  it('a password change on A ends the user\'s other sessions on B; the new password logs in on B', async () => {
    const dora = await registerOn(a, 'twin_dora') // session 1, made on A
    const second = await loginOn(b, 'twin_dora', DEFAULT_PASSWORD) // session 2, made on B
    expect(second.answer.status, second.answer.text).toBe(200)
    expect((await call(b, 'GET', '/api/users/me', { cookie: second.cookie })).status).toBe(200)

    const newPassword = `new ${randomBytes(8).toString('hex')} password`
    const changed = await call(a, 'PUT', '/api/auth/email/change-password', { cookie: dora.cookie, body: { current_password: DEFAULT_PASSWORD, new_password: newPassword } })
    expect(changed.status, changed.text).toBe(200)

    // B learns of it through the change feed, a few milliseconds after A's commit (the benchmark
    // measures that delay's p99 against its 100 ms target); a request that reaches B first may
    // still be answered. Polled, so the test holds the promise (refused without waiting for any
    // timer) and not a race between the notification and the next request.
    const deadline = performance.now() + SETTINGS_BOUND_MS
    let other = await call(b, 'GET', '/api/users/me', { cookie: second.cookie })
    while (other.status === 200 && performance.now() < deadline) {
      await new Promise((resolve) => setTimeout(resolve, 10))
      other = await call(b, 'GET', '/api/users/me', { cookie: second.cookie })
    }
    expect(other.status, other.text).toBe(401)
    expect(other.json.code).toBe('UNAUTHORIZED')
    // The session that changed the password stays, on either instance.
    expect((await call(b, 'GET', '/api/users/me', { cookie: dora.cookie })).status).toBe(200)

    const old = await loginOn(b, dora.email, DEFAULT_PASSWORD)
    expect(old.answer.status, old.answer.text).toBe(401)
    expect(old.answer.json.code).toBe('INVALID_CREDENTIALS')
    const fresh = await loginOn(b, dora.email, newPassword)
    expect(fresh.answer.status, fresh.answer.text).toBe(200)
    const me = await call(a, 'GET', '/api/users/me', { cookie: fresh.cookie })
    expect(me.status, me.text).toBe(200)
    expect(me.json.data.id).toBe(dora.id)
  })

  describe('OAuth with oauth4webapi, across the instances', () => {
    let erin: Account
    let as: oauth.AuthorizationServer
    const routes: string[] = []
    let tokens: oauth.TokenEndpointResponse

    beforeAll(async () => {
      erin = await registerOn(a, 'twin_erin')
    })

    /**
     * The browser (with erin's session) opens the authorization URL on A and approves there, unless
     * a remembered consent sends it straight back; answers the callback the client validated
     * (state, and iss against the shared issuer, RFC 9207) and the PKCE verifier.
     */
    async function authorizeOnA(scope: string): Promise<{ callback: URLSearchParams; codeVerifier: string; consented: boolean }> {
      const auth = await authorizationUrl(as, scope)
      expect(auth.url.origin).toBe(publicUrl)
      const started = await call(a, 'GET', `${auth.url.pathname}${auth.url.search}`, { cookie: erin.cookie, accept: 'text/html' })
      expect(started.status, started.text).toBe(302)
      let redirect = new URL(started.headers.get('location')!, publicUrl)
      const consented = redirect.origin === publicUrl
      if (consented) {
        expect(redirect.pathname).toBe('/api/oauth2/consent')
        const requestId = redirect.searchParams.get('request_id')!
        expect(requestId).toMatch(/\S/)
        const details = await call(a, 'GET', `/api/oauth2/consent?request_id=${encodeURIComponent(requestId)}`, { cookie: erin.cookie })
        expect(details.status, details.text).toBe(200)
        expect(details.json.data).toMatchObject({ request_id: requestId, signed_in: true, csrf_token: expect.any(String) })
        const approved = await call(a, 'POST', '/api/oauth2/consent', {
          cookie: erin.cookie, body: { request_id: requestId, decision: 'approve', csrf_token: details.json.data.csrf_token },
        })
        expect(approved.status, approved.text).toBe(200)
        redirect = new URL(approved.json.data.redirect_url)
      }
      expect(`${redirect.origin}${redirect.pathname}`).toBe(CALLBACK)
      return { callback: oauth.validateAuthResponse(as, cliClient, redirect, auth.state), codeVerifier: auth.codeVerifier, consented }
    }

    it('discovery through either instance gives the one shared issuer', async () => {
      const issuer = new URL(publicUrl)
      const documents = []
      for (const instance of [a, b]) {
        const response = await oauth.discoveryRequest(issuer, { algorithm: 'oauth2', ...clientOptions(instance, routes) })
        documents.push(await oauth.processDiscoveryResponse(issuer, response))
      }
      expect(routes).toEqual(['A GET /.well-known/oauth-authorization-server', 'B GET /.well-known/oauth-authorization-server'])
      expect(documents[0]!.issuer).toBe(publicUrl)
      expect(documents[1]).toEqual(documents[0])
      as = documents[0]!
      expect(as.token_endpoint).toBe(`${publicUrl}/api/oauth2/token`)
    })

    it('authorize and consent on A, the code exchanged on B; the tokens work on both; the code is spent for A too', async () => {
      expect(as, 'discovery ran').toBeDefined()
      const { callback, codeVerifier, consented } = await authorizeOnA('user:read teams:read offline_access')
      expect(consented, 'the first authorization asks for consent').toBe(true)
      routes.length = 0
      const exchanged = await oauth.authorizationCodeGrantRequest(as, cliClient, noClientAuth, callback, CALLBACK, codeVerifier, clientOptions(b, routes))
      tokens = await oauth.processAuthorizationCodeResponse(as, cliClient, exchanged)
      expect(routes).toEqual(['B POST /api/oauth2/token'])
      expect(tokens).toMatchObject({ token_type: 'bearer', access_token: expect.any(String), refresh_token: expect.any(String) })
      expect(tokens.scope!.split(' ').sort()).toEqual(['offline_access', 'teams:read', 'user:read'])

      for (const instance of [a, b]) {
        const me = await call(instance, 'GET', '/api/users/me', { bearer: tokens.access_token })
        expect(me.status, `${instance.name}: ${me.text}`).toBe(200)
        expect(me.json.data.id).toBe(erin.id)
      }

      // The code was spent on B: replayed on A it is refused.
      const replay = await refusal(oauth.authorizationCodeGrantRequest(as, cliClient, noClientAuth, callback, CALLBACK, codeVerifier, clientOptions(a, routes))
        .then((response) => oauth.processAuthorizationCodeResponse(as, cliClient, response)))
      expect(replay.error).toBe('invalid_grant')
      expect(replay.status).toBe(400)
    })

    it('refresh on A, the old refresh token replayed on B: invalid_grant, and the whole grant is revoked everywhere', async () => {
      expect(tokens?.refresh_token, 'the exchange ran').toBeDefined()
      // The replayed code above revoked the grant of the first exchange; authorize afresh on A, exchange on B.
      const { callback, codeVerifier } = await authorizeOnA('user:read teams:read offline_access')
      const first = await oauth.processAuthorizationCodeResponse(as, cliClient,
        await oauth.authorizationCodeGrantRequest(as, cliClient, noClientAuth, callback, CALLBACK, codeVerifier, clientOptions(b, routes)))
      expect((await call(a, 'GET', '/api/users/me', { bearer: first.access_token })).status).toBe(200)

      routes.length = 0
      const rotated = await oauth.processRefreshTokenResponse(as, cliClient,
        await oauth.refreshTokenGrantRequest(as, cliClient, noClientAuth, first.refresh_token!, clientOptions(a, routes)))
      expect(rotated.refresh_token).toBeDefined()
      expect(rotated.refresh_token).not.toBe(first.refresh_token)
      expect((await call(b, 'GET', '/api/users/me', { bearer: rotated.access_token })).status).toBe(200)

      const reuse = await refusal(oauth.refreshTokenGrantRequest(as, cliClient, noClientAuth, first.refresh_token!, clientOptions(b, routes))
        .then((response) => oauth.processRefreshTokenResponse(as, cliClient, response)))
      expect(routes).toEqual(['A POST /api/oauth2/token', 'B POST /api/oauth2/token'])
      expect(reuse.error).toBe('invalid_grant')
      expect(reuse.status).toBe(400)

      // Every token of the grant is dead on both instances, the rotated ones included.
      for (const instance of [a, b]) {
        for (const token of [rotated.access_token, first.access_token]) {
          const refused = await call(instance, 'GET', '/api/users/me', { bearer: token })
          expect(refused.status, `${instance.name}: ${refused.text}`).toBe(401)
          expect(refused.headers.get('www-authenticate')).toMatch(/invalid_token/)
        }
      }
      const next = await refusal(oauth.refreshTokenGrantRequest(as, cliClient, noClientAuth, rotated.refresh_token!, clientOptions(a, routes))
        .then((response) => oauth.processRefreshTokenResponse(as, cliClient, response)))
      expect(next.error).toBe('invalid_grant')

      // The reuse was recorded once, by B.
      const audit = await call(a, 'GET', `/api/admin/audit-log?type=oauth.refresh_token_reused&actor_id=${erin.id}`, { cookie: admin.cookie })
      expect(audit.status, audit.text).toBe(200)
      expect(audit.json.data.events).toHaveLength(1)
    })
  })

  it('the catalogue\'s promises hold across A and B: one slug, one version, the latest mark, and no stale cached page', async () => {
    const cookie = admin.cookie
    const listed = async (instance: Instance) => (await call(instance, 'GET', '/api/mcp/servers?limit=100', { cookie })).json.data.servers.map((server: { slug: string }) => server.slug)
    // A caches the first page before B writes.
    expect(await listed(a)).not.toContain('twin-slug')

    const creates = await Promise.all(Array.from({ length: 10 }, (_, i) =>
      call(i % 2 === 0 ? a : b, 'POST', '/api/mcp/servers/global', { cookie, body: { name: `Twin ${i}`, slug: 'twin-slug' } })))
    expect(creates.map((answer) => answer.status).sort()).toEqual([201, ...Array(9).fill(409)])
    for (const answer of creates.filter((one) => one.status === 409)) expect(answer.json.code).toBe('SLUG_TAKEN')
    expect(await listed(a)).toContain('twin-slug')
    expect(await listed(b)).toContain('twin-slug')

    const versions = ['1.0.0', '1.0.0', '1.0.0+a', '1.1.0', '1.1.0', '2.0.0-rc.1', '1.2.0', '1.2.0+b']
    const added = await Promise.all(versions.map((version, i) =>
      call(i % 2 === 0 ? b : a, 'POST', '/api/mcp/servers/twin-slug/versions', { cookie, body: { version } })))
    expect(added.filter((answer) => answer.status === 201)).toHaveLength(4)
    expect(added.filter((answer) => answer.status === 409).every((answer) => answer.json.code === 'VERSION_EXISTS')).toBe(true)
    for (const instance of [a, b]) {
      const server = await call(instance, 'GET', '/api/mcp/servers/twin-slug', { cookie })
      // 1.2.0 and 1.2.0+b are one version: whichever landed first holds it.
      const latest = server.json.data.server.latest_version
      expect(['1.2.0', '1.2.0+b']).toContain(latest)
      const marked = (await call(instance, 'GET', '/api/mcp/servers/twin-slug/versions', { cookie })).json.data.versions.filter((v: { is_latest: boolean }) => v.is_latest)
      expect(marked.map((v: { version: string }) => v.version)).toEqual([latest])
    }
  })

  describe('satellites across the instances', () => {
    // Registrations share one per-IP budget in Redis (10 a minute): these tests send 7.
    const SYSTEM_INFO = { os: 'linux', arch: 'x64', node_version: 'v20.11.0', memory_mb: 2048 }
    const METRICS = { cpu_usage_percent: 3.5, memory_usage_mb: 256, uptime_seconds: 60 }

    async function tokenOn(instance: Instance): Promise<{ id: string; token: string }> {
      const answer = await call(instance, 'POST', '/api/satellites/global/registration-tokens', { cookie: admin.cookie, body: {} })
      expect(answer.status, `${instance.name}: ${answer.text}`).toBe(201)
      expect(answer.json.data.token).toMatch(/^service_satellite_global_/)
      return answer.json.data
    }
    const registerOnInstance = (instance: Instance, token: string, name: string) =>
      call(instance, 'POST', '/api/satellites/register', { bearer: token, body: { name, system_info: SYSTEM_INFO } })
    const heartbeatOn = (instance: Instance, id: string, apiKey: string) =>
      call(instance, 'POST', `/api/satellites/${id}/heartbeat`, { bearer: apiKey, body: { status: 'active', system_metrics: METRICS } })
    /** The token as the list on `instance` shows it. */
    async function listedToken(instance: Instance, id: string): Promise<{ status: string; used_by_satellite_id: string | null } | undefined> {
      const answer = await call(instance, 'GET', '/api/satellites/registration-tokens?limit=100', { cookie: admin.cookie })
      expect(answer.status, answer.text).toBe(200)
      return answer.json.data.tokens.find((token: { id: string }) => token.id === id)
    }

    for (const [made, spent] of [['A', 'B'], ['B', 'A']] as const) {
      it(`a registration token made on ${made} and spent on ${spent} is refused on ${made} (401, used)`, async () => {
        const [maker, spender] = made === 'A' ? [a, b] : [b, a]
        const { id, token } = await tokenOn(maker)
        const name = `twin-spent-on-${spent.toLowerCase()}`
        const registered = await registerOnInstance(spender, token, name)
        expect(registered.status, registered.text).toBe(201)
        expect(registered.json.data.api_key).toMatch(/^service_satkey_/)
        const satelliteId = registered.json.data.satellite.id

        const replay = await registerOnInstance(maker, token, `${name}-again`)
        expect(replay.status, replay.text).toBe(401)
        expect(replay.json).toMatchObject({ success: false, code: 'INVALID_REGISTRATION_TOKEN', details: { reason: 'used' } })
        for (const instance of [a, b]) {
          expect(await listedToken(instance, id), instance.name).toMatchObject({ status: 'used', used_by_satellite_id: satelliteId })
        }
        const listed = await call(maker, 'GET', '/api/satellites?limit=100', { cookie: admin.cookie })
        expect(listed.json.data.satellites.map((satellite: { name: string }) => satellite.name)).toContain(name)
        expect(listed.json.data.satellites.map((satellite: { name: string }) => satellite.name)).not.toContain(`${name}-again`)
      })
    }

    it('a key issued on A heartbeats on B; disabled on A it is refused on B at once (403 SATELLITE_DISABLED); enabled on B it works on A', async () => {
      const { token } = await tokenOn(a)
      const registered = await registerOnInstance(a, token, 'twin-heartbeat')
      expect(registered.status, registered.text).toBe(201)
      const { satellite: { id }, api_key: apiKey } = registered.json.data

      const beat = await heartbeatOn(b, id, apiKey)
      expect(beat.status, beat.text).toBe(200)
      expect(beat.json.data.satellite).toMatchObject({ id, status: 'active' })
      const seen = await call(a, 'GET', `/api/satellites/${id}`, { cookie: admin.cookie })
      expect(seen.json.data.satellite).toMatchObject({ status: 'active', system_metrics: METRICS })
      expect(seen.json.data.satellite.last_heartbeat_at).toBe(beat.json.data.satellite.last_heartbeat_at)

      const disabled = await call(a, 'PUT', `/api/satellites/${id}`, { cookie: admin.cookie, body: { status: 'disabled' } })
      expect(disabled.status, disabled.text).toBe(200)
      const refused = await heartbeatOn(b, id, apiKey)
      expect(refused.status, refused.text).toBe(403)
      expect(refused.json.code).toBe('SATELLITE_DISABLED')
      expect((await heartbeatOn(a, id, apiKey)).json.code).toBe('SATELLITE_DISABLED')

      const enabled = await call(b, 'PUT', `/api/satellites/${id}`, { cookie: admin.cookie, body: { status: 'active' } })
      expect(enabled.status, enabled.text).toBe(200)
      const back = await heartbeatOn(a, id, apiKey)
      expect(back.status, back.text).toBe(200)
    })

    it('one registration token fired at A and B at once: exactly one 201, the other 401 (used)', async () => {
      const { id, token } = await tokenOn(b)
      const answers = await Promise.all([registerOnInstance(a, token, 'twin-race-a'), registerOnInstance(b, token, 'twin-race-b')])
      const texts = answers.map((answer) => `${answer.status} ${answer.text}`).join('\n')
      expect(answers.map((answer) => answer.status).sort(), texts).toEqual([201, 401])
      const winner = answers.find((answer) => answer.status === 201)!
      const loser = answers.find((answer) => answer.status === 401)!
      expect(loser.json, texts).toMatchObject({ code: 'INVALID_REGISTRATION_TOKEN', details: { reason: 'used' } })
      const satelliteId = winner.json.data.satellite.id
      expect(await listedToken(a, id)).toMatchObject({ status: 'used', used_by_satellite_id: satelliteId })

      const names = (await call(a, 'GET', '/api/satellites?limit=100', { cookie: admin.cookie })).json.data.satellites
        .map((satellite: { name: string }) => satellite.name).filter((name: string) => name.startsWith('twin-race-'))
      expect(names).toEqual([winner.json.data.satellite.name])
      expect((await heartbeatOn(answers.indexOf(winner) === 0 ? b : a, satelliteId, winner.json.data.api_key)).status).toBe(200)
    })
  })

  it('an installation made on A with a secret value reads the same on B; values set on B show on A; no secret in any answer', async () => {
    const teamKey = `wk-live-${randomBytes(12).toString('hex')}`
    const ownToken = `ghp-own-${randomBytes(12).toString('hex')}`
    const answers: Answer[] = []
    const ok = async (pending: Promise<Answer>, status = 200) => {
      const answer = await pending
      expect(answer.status, answer.text).toBe(status)
      answers.push(answer)
      return answer
    }
    const cookie = admin.cookie
    const imported = await ok(call(a, 'POST', '/api/mcp/servers/import', { cookie, body: [weatherDocument('io.github.twins/weather')] }))
    const serverId: string = imported.json.data.results[0].server_id
    const team = await ok(call(a, 'POST', '/api/teams', { cookie, body: { name: 'Twin installs' } }), 201)
    const teamId: string = team.json.data.team.id
    const gus = await registerOn(b, 'twin_gus')
    await ok(call(b, 'POST', `/api/teams/${teamId}/members`, { cookie, body: { login: gus.username, role: 'team_user' } }), 201)

    // Made on A, with a secret team value; each member sets their own PERSONAL_TOKEN.
    const created = await ok(call(a, 'POST', `/api/teams/${teamId}/mcp/installations`, {
      cookie,
      body: {
        server_id: serverId, name: 'twin-weather', user_scoped: ['env:PERSONAL_TOKEN'],
        values: { 'env:WEATHER_API_KEY': teamKey, 'env:LOG_LEVEL': 'debug', 'arg:data_dir': '/var/cache/twins' },
      },
    }), 201)
    const url = `/api/teams/${teamId}/mcp/installations/${created.json.data.installation.id as string}`
    const inputOf = (answer: Answer, key: string) => answer.json.data.installation.inputs.find((input: { key: string }) => input.key === key)

    // B reads what A wrote, as A reads it, for the admin and for the member.
    for (const account of [admin, gus]) {
      const [onA, onB] = [await ok(call(a, 'GET', url, { cookie: account.cookie })), await ok(call(b, 'GET', url, { cookie: account.cookie }))]
      expect(onB.json).toEqual(onA.json)
      expect(inputOf(onB, 'env:WEATHER_API_KEY')).toMatchObject({ secret: true, is_set: true })
      expect(inputOf(onB, 'env:WEATHER_API_KEY')).not.toHaveProperty('value')
      expect(inputOf(onB, 'env:LOG_LEVEL')).toMatchObject({ is_set: true, value: 'debug' })
      expect(onB.json.data.installation).toMatchObject({ instance_mode: 'per_user', missing_inputs: ['env:PERSONAL_TOKEN'], status: 'needs_config' })
    }
    expect((await ok(call(b, 'GET', url, { cookie }))).json.data.installation).toEqual(created.json.data.installation)
    const listOf = async (instance: Instance) => (await ok(call(instance, 'GET', `/api/users/me/mcp/installations?team_id=${teamId}`, { cookie: gus.cookie }))).json.data
    expect(await listOf(b)).toEqual(await listOf(a))

    // Set on B: a team value by the admin, the member's own secret by the member; A shows both.
    await ok(call(b, 'PUT', `${url}/values`, { cookie, body: { values: { 'env:LOG_LEVEL': 'warn' } } }))
    const own = await ok(call(b, 'PUT', `${url}/my-values`, { cookie: gus.cookie, body: { values: { 'env:PERSONAL_TOKEN': ownToken } } }))
    expect(own.json.data.values).toEqual([expect.objectContaining({ key: 'env:PERSONAL_TOKEN', secret: true, is_set: true })])
    const seenOnA = await ok(call(a, 'GET', url, { cookie: gus.cookie }))
    expect(inputOf(seenOnA, 'env:LOG_LEVEL')).toMatchObject({ value: 'warn' })
    expect(inputOf(seenOnA, 'env:WEATHER_API_KEY')).toMatchObject({ is_set: true })
    expect(seenOnA.json.data.installation).toMatchObject({ missing_inputs: [], status: 'pending' })
    expect(seenOnA.json.data.installation.spec_revision).toBeGreaterThan(created.json.data.installation.spec_revision)
    const mineOnA = await ok(call(a, 'GET', `${url}/my-values`, { cookie: gus.cookie }))
    expect(mineOnA.json.data.values).toEqual([expect.objectContaining({ key: 'env:PERSONAL_TOKEN', is_set: true })])
    // The admin's own value is not the member's.
    const adminsOwn = await ok(call(a, 'GET', `${url}/my-values`, { cookie }))
    expect(adminsOwn.json.data.values).toEqual([expect.objectContaining({ key: 'env:PERSONAL_TOKEN', is_set: false })])
    expect((await ok(call(b, 'GET', url, { cookie: gus.cookie }))).json).toEqual(seenOnA.json)

    for (const answer of answers) {
      expect(answer.text).not.toContain(teamKey)
      expect(answer.text).not.toContain(ownToken)
    }
  })

  it(`a settings change on A is seen by B within ${SETTINGS_BOUND_MS} ms`, async () => {
    const fay = await registerOn(b, 'twin_fay')
    const meOnB = () => call(b, 'GET', '/api/users/me', { cookie: fay.cookie })
    const setLogin = (value: boolean) => call(a, 'PUT', '/api/settings/global.enable_login', { cookie: admin.cookie, body: { value } })

    /** Polls B until `done` holds; answers the delay since `since`, or fails past the bound. */
    async function pollB(done: (answer: Answer) => boolean, since: number): Promise<number> {
      for (;;) {
        const answer = await meOnB()
        const elapsed = performance.now() - since
        if (done(answer)) return elapsed
        expect([200, 403], answer.text).toContain(answer.status)
        if (elapsed > SETTINGS_BOUND_MS) throw new Error(`B still answered ${answer.status} ${elapsed.toFixed(0)} ms after the change on A`)
        await new Promise((resolve) => setTimeout(resolve, 25))
      }
    }

    // B has read the setting (login on) just now, so it holds it in its cache.
    expect((await meOnB()).status).toBe(200)
    try {
      const off = await setLogin(false)
      const offAt = performance.now()
      expect(off.status, off.text).toBe(200)
      // A sees its own change at once.
      const onA = await call(a, 'GET', '/api/users/me', { cookie: fay.cookie })
      expect(onA.status, onA.text).toBe(403)
      expect(onA.json.code).toBe('LOGIN_DISABLED')
      const disableDelay = await pollB((answer) => answer.status === 403 && answer.json?.code === 'LOGIN_DISABLED', offAt)
      // The global admin keeps working on B, so that login can be switched back on.
      expect((await call(b, 'GET', '/api/users/me', { cookie: admin.cookie })).status).toBe(200)

      const on = await setLogin(true)
      const onAt = performance.now()
      expect(on.status, on.text).toBe(200)
      const enableDelay = await pollB((answer) => answer.status === 200, onAt)
      console.info(`settings propagation A → B: login off seen after ${disableDelay.toFixed(0)} ms, back on after ${enableDelay.toFixed(0)} ms`)
      expect(disableDelay).toBeLessThan(SETTINGS_BOUND_MS)
      expect(enableDelay).toBeLessThan(SETTINGS_BOUND_MS)
    } finally {
      // Never leave login off for the tests after this one.
      await setLogin(true)
    }
  }, 20_000)

  it(`per-IP limits are one budget across A and B (${LOGIN_BUDGET} login attempts a minute)`, async () => {
    // A source address no other request of any test uses, so the budget is this test's alone.
    const source = `127.${randomInt(1, 255)}.${randomInt(0, 256)}.${randomInt(1, 255)}`
    const attempt = (instance: Instance) => postFrom(source, instance, '/api/auth/email/login', { login: `nobody-${randomBytes(4).toString('hex')}`, password: 'not the password' })

    const statuses: string[] = []
    const refusals: PlainAnswer[] = []
    const plan: Instance[] = [...Array<Instance>(12).fill(a), ...Array<Instance>(12).fill(b), a]
    for (const instance of plan) {
      const answer = await attempt(instance)
      statuses.push(`${instance.name}${answer.status}`)
      if (answer.status === 429) refusals.push(answer)
      else expect(answer.json.code).toBe('INVALID_CREDENTIALS')
    }
    // 12 on A and 8 on B spend the 20; neither instance would have refused on its own count.
    expect(statuses).toEqual([
      ...Array(12).fill('A401'),
      ...Array(LOGIN_BUDGET - 12).fill('B401'),
      ...Array(24 - LOGIN_BUDGET).fill('B429'),
      'A429',
    ])
    for (const refused of refusals) {
      expect(refused.json).toMatchObject({ success: false, code: 'RATE_LIMITED' })
      const retryAfter = Number(refused.headers['retry-after'])
      expect(retryAfter).toBeGreaterThan(0)
      expect(retryAfter).toBeLessThanOrEqual(60)
    }

    // The count lives in Redis, one key for the address, counting every attempt from both instances.
    const keys = await redis!.keys(`*loginOrRegister:${source}`)
    expect(keys).toHaveLength(1)
    expect(Number(await redis!.get(keys[0]!))).toBe(plan.length)

    // Per IP: the loopback address of the other tests still has budget.
    const elsewhere = await loginOn(b, `nobody-${randomBytes(4).toString('hex')}`, 'not the password')
    expect(elsewhere.answer.status, elsewhere.answer.text).toBe(401)
  }, 40_000)

  it('neither instance logged an error or a fatal line during all of this', () => {
    for (const instance of [a, b]) {
      // The log is pino JSON with numeric levels (info lines prove the format the filter reads).
      expect(instance.process.output()).toMatch(/"level":30\b/)
      const lines = instance.process.output().split('\n').filter((line) => /"level":(50|60)\b/.test(line))
      expect(lines, `instance ${instance.name}`).toEqual([])
    }
  })
})
