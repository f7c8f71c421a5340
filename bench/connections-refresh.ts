/// <reference path="../test/helpers/oidc-provider.d.ts" />
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http'
import type { AddressInfo } from 'node:net'
import { mkdtempSync, rmSync } from 'node:fs'
import { cpus, loadavg, tmpdir } from 'node:os'
import { join } from 'node:path'
import type { FastifyInstance } from 'fastify'
import Provider from 'oidc-provider'
import { buildApp } from '../src/app.js'
import { loadConfig } from '../src/config.js'
import type { ConnectionRefresher } from '../src/modules/connections/refresher.js'
import { connectionTokensBox } from '../src/modules/connections/tokens-box.js'
import { createTestDatabase } from '../test/helpers/database.js'

/**
 * `npm run bench:connections`: the refresher of upstream OAuth tokens at 10 000 connections, on
 * SQLite and on PostgreSQL. Two instances of the service share one database (on SQLite one file,
 * as two processes would); a share of the connections is due. Both instances' own refreshers are
 * ticked side by side until nothing is due, against an authorization server on loopback:
 * oidc-provider (the library the connection tests use), and a counting token endpoint of the
 * bench's own that answers the refresh-token grant (RFC 6749, section 6) and does nothing else.
 * Both count every use of every refresh token, so that a token refreshed twice (by both
 * instances, or twice by one) shows as a reuse; a used token is replayed after the run to show
 * that a reuse is noticed.
 *
 * It reports, per server and dialect: every due token refreshed exactly once (none twice, none
 * left), before its expiry, the not-due ones untouched; each instance's ticks (count, outcomes,
 * time per tick); the wall time from the first tick to the last refresh, the refreshes per
 * second, and the time of a tick that finds nothing due. Figures, not assertions.
 *   BENCH_CONNECTIONS_TOTAL  (default 10 000)                 connections in the database
 *   BENCH_CONNECTIONS_DUE    (default 2 000)                  of them due now
 *   BENCH_CONNECTIONS_SERVER (default counting,oidc-provider) the authorization servers
 */

const TOTAL = Number(process.env.BENCH_CONNECTIONS_TOTAL ?? 10_000)
const DUE = Number(process.env.BENCH_CONNECTIONS_DUE ?? 2_000)
/** A due token expires this long after the bench starts refreshing: the refresh must come first. */
const DUE_EXPIRY_MS = 120_000
const SECRET = 'bench-connections-secret-0123456789-abcdefghijklmnop'
const INSERT_CHUNK = 500
/** Ticks measured after the run, when nothing is due. */
const IDLE_TICKS = 20

/** The authorization server the refreshers talk to, and what it saw. */
interface TokenServer {
  kind: string
  issuer: string
  host: string
  resource: string
  clientId: string
  /** The refresh token connection n starts with. */
  firstRefreshToken(n: number): Promise<string>
  /** Successful refreshes of connection n's tokens: when each happened. */
  refreshedAt: Map<number, number[]>
  /** Refresh tokens presented after they had been used (a second refresh of the same token). */
  reused: number
  /** Refresh requests refused for another reason. */
  unknown: number
  requests: number
  close(): Promise<void>
}

/**
 * A loopback authorization server reduced to what the refresher uses: RFC 8414 metadata, and a
 * token endpoint for `grant_type=refresh_token` from a public client. Refresh token `rt.<n>.<g>`
 * belongs to connection n, generation g; only the current generation is accepted (rotation).
 */
async function startCountingServer(): Promise<TokenServer> {
  const generation = new Map<number, number>()
  const refreshedAt = new Map<number, number[]>()
  const state = { reused: 0, unknown: 0, requests: 0 }
  const http = createServer((request, response) => void handle(request, response))
  await new Promise<void>((resolve) => http.listen(0, '127.0.0.1', resolve))
  const host = `127.0.0.1:${(http.address() as AddressInfo).port}`
  const issuer = `http://${host}`
  const json = (response: ServerResponse, status: number, body: unknown) => {
    response.writeHead(status, { 'content-type': 'application/json', 'cache-control': 'no-store' }).end(JSON.stringify(body))
  }

  async function handle(request: IncomingMessage, response: ServerResponse): Promise<void> {
    const chunks: Buffer[] = []
    for await (const chunk of request as AsyncIterable<Buffer>) chunks.push(chunk)
    const path = new URL(request.url ?? '/', issuer).pathname
    if (path === '/.well-known/oauth-authorization-server' || path === '/.well-known/openid-configuration') {
      return json(response, 200, {
        issuer, token_endpoint: `${issuer}/token`, authorization_endpoint: `${issuer}/authorize`,
        response_types_supported: ['code'], grant_types_supported: ['authorization_code', 'refresh_token'],
        code_challenge_methods_supported: ['S256'], token_endpoint_auth_methods_supported: ['none'],
      })
    }
    if (path === '/.well-known/oauth-protected-resource/mcp') {
      return json(response, 200, { resource: `${issuer}/mcp`, authorization_servers: [issuer] })
    }
    if (path === '/mcp') {
      response.writeHead(401, { 'www-authenticate': `Bearer resource_metadata="${issuer}/.well-known/oauth-protected-resource/mcp"` }).end()
      return
    }
    if (path !== '/token' || request.method !== 'POST') return json(response, 404, { error: 'not_found' })
    state.requests += 1
    const form = new URLSearchParams(Buffer.concat(chunks).toString('utf8'))
    const match = /^rt\.(\d+)\.(\d+)$/.exec(form.get('refresh_token') ?? '')
    if (form.get('grant_type') !== 'refresh_token' || match === null) {
      state.unknown += 1
      return json(response, 400, { error: 'invalid_grant' })
    }
    const n = Number(match[1])
    const presented = Number(match[2])
    const current = generation.get(n) ?? 0
    if (presented !== current) {
      if (presented < current) state.reused += 1
      else state.unknown += 1
      return json(response, 400, { error: 'invalid_grant' })
    }
    generation.set(n, current + 1)
    refreshedAt.set(n, [...(refreshedAt.get(n) ?? []), Date.now()])
    return json(response, 200, {
      access_token: `at.${n}.${current + 1}`, refresh_token: `rt.${n}.${current + 1}`,
      token_type: 'Bearer', expires_in: 3600, scope: 'mcp',
    })
  }

  return {
    kind: 'a counting token endpoint', issuer, host, resource: `${issuer}/mcp`, clientId: 'bench-client', refreshedAt,
    firstRefreshToken: async (n) => `rt.${n}.0`,
    get reused() { return state.reused },
    get unknown() { return state.unknown },
    get requests() { return state.requests },
    close: () => new Promise<void>((resolve) => (http.closeAllConnections(), http.close(() => resolve()))),
  } as TokenServer
}

/**
 * oidc-provider, the library the connection tests use, with refresh-token rotation and resource
 * indicators (JWT access tokens for the resource), on loopback. Its refresh tokens are minted
 * directly through its models (a grant per connection, account `bench-<n>`), as the code flow
 * would have left them. Its storage is a plain Map: the library's own in-memory store keeps only
 * 1 000 entries. A refresh token used twice is refused by the library itself ("refresh token
 * already used", and the grant revoked): counted as reused.
 */
async function startOidcProvider(): Promise<TokenServer> {
  const store = new Map<string, Record<string, unknown>>()
  class MapAdapter {
    constructor(private readonly model: string) {}
    private key = (id: string) => `${this.model}:${id}`
    async upsert(id: string, payload: Record<string, unknown>) { store.set(this.key(id), payload) }
    async find(id: string) { return store.get(this.key(id)) }
    async findByUid(uid: string) { return [...store.values()].find((payload) => payload.uid === uid) }
    async findByUserCode() { return undefined }
    async consume(id: string) { const payload = store.get(this.key(id)); if (payload !== undefined) payload.consumed = Math.floor(Date.now() / 1000) }
    async destroy(id: string) { store.delete(this.key(id)) }
    async revokeByGrantId(grantId: string) { for (const [key, payload] of store) if (payload.grantId === grantId) store.delete(key) }
  }
  const http = createServer()
  await new Promise<void>((resolve) => http.listen(0, '127.0.0.1', resolve))
  const host = `127.0.0.1:${(http.address() as AddressInfo).port}`
  const issuer = `http://${host}`
  const resource = `${issuer}/mcp`
  const clientId = 'bench-client'
  const provider = new Provider(issuer, {
    adapter: MapAdapter as never,
    clients: [{ client_id: clientId, token_endpoint_auth_method: 'none', grant_types: ['authorization_code', 'refresh_token'], response_types: ['code'], redirect_uris: ['http://127.0.0.1:3999/api/oauth/upstream/callback'] }],
    scopes: ['openid', 'offline_access', 'mcp:tools'],
    findAccount: async (_ctx: unknown, id: string) => ({ accountId: id, claims: async () => ({ sub: id }) }),
    rotateRefreshToken: true,
    ttl: { AccessToken: 3600, RefreshToken: 14 * 24 * 3600, Grant: 14 * 24 * 3600 },
    features: {
      devInteractions: { enabled: false },
      resourceIndicators: {
        enabled: true,
        defaultResource: () => resource,
        useGrantedResource: () => true,
        getResourceServerInfo: () => ({ scope: 'mcp:tools', audience: resource, accessTokenTTL: 3600, accessTokenFormat: 'jwt', jwt: { sign: { alg: 'RS256' } } }),
      },
    },
  })
  const refreshedAt = new Map<number, number[]>()
  const state = { reused: 0, unknown: 0, requests: 0 }
  const indexOf = (accountId: unknown) => Number(String(accountId).replace(/^bench-/, ''))
  const events = provider as unknown as { on(event: string, listener: (ctx: { oidc: { entities: Record<string, unknown> } }, error?: unknown) => void): void }
  events.on('grant.success', (ctx) => {
    const rotated = ctx.oidc.entities.RotatedRefreshToken as { accountId: string } | undefined
    if (rotated === undefined) return
    const n = indexOf(rotated.accountId)
    refreshedAt.set(n, [...(refreshedAt.get(n) ?? []), Date.now()])
  })
  events.on('grant.error', (_ctx, error) => {
    const { error_detail: detail, error_description: description } = error as { error_detail?: string; error_description?: string }
    if (/already used/.test(`${detail} ${description}`)) state.reused += 1
    else state.unknown += 1
  })
  const callback = provider.callback()
  http.on('request', (request, response) => {
    // The remote server's part, for the installation's probe: its challenge and its metadata (RFC 9728).
    if (request.url === '/mcp') {
      request.resume()
      response.writeHead(401, { 'www-authenticate': `Bearer resource_metadata="${issuer}/.well-known/oauth-protected-resource/mcp"` }).end()
      return
    }
    if (request.url === '/.well-known/oauth-protected-resource/mcp') {
      response.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ resource, authorization_servers: [issuer] }))
      return
    }
    if (request.url?.startsWith('/token')) state.requests += 1
    void callback(request, response)
  })
  const models = provider as unknown as {
    Client: { find(id: string): Promise<unknown> }
    Grant: new (fields: { accountId: string; clientId: string }) => { addResourceScope(resource: string, scope: string): void; save(): Promise<string> }
    RefreshToken: new (fields: Record<string, unknown>) => { save(): Promise<string> }
  }
  const client = await models.Client.find(clientId)
  return {
    kind: 'oidc-provider', issuer, host, resource, clientId, refreshedAt,
    async firstRefreshToken(n) {
      const grant = new models.Grant({ accountId: `bench-${n}`, clientId })
      grant.addResourceScope(resource, 'mcp:tools')
      const grantId = await grant.save()
      return new models.RefreshToken({ client, accountId: `bench-${n}`, grantId, gty: 'authorization_code', scope: 'mcp:tools', resource, expiresWithSession: false }).save()
    },
    get reused() { return state.reused },
    get unknown() { return state.unknown },
    get requests() { return state.requests },
    close: () => new Promise<void>((resolve) => (http.closeAllConnections(), http.close(() => resolve()))),
  } as TokenServer
}

// ---- The service's side ----

/** One instance's refresher, as the service builds it; the bench ticks it itself (its timer's interval is a day). */
function refresherOf(app: FastifyInstance): ConnectionRefresher {
  return app.services.connectionRefresher
}

async function inject(app: FastifyInstance, method: 'GET' | 'POST', url: string, cookie: string | undefined, payload?: unknown): Promise<any> {
  const response = await app.inject({ method, url, headers: cookie === undefined ? {} : { cookie }, ...(payload === undefined ? {} : { payload: payload as object }) })
  if (response.statusCode >= 300) throw new Error(`${method} ${url}: ${response.statusCode} ${response.body}`)
  return response.json().data
}

/** An admin, a team and an installation of a remote server behind the token server, through the API. */
async function seedInstallation(app: FastifyInstance, tokens: TokenServer): Promise<{ teamId: string; installationId: string; key: string }> {
  const registered = await app.inject({ method: 'POST', url: '/api/auth/email/register', payload: { username: 'bench-admin', email: 'bench-admin@example.com', password: 'bench password 1' } })
  const cookie = registered.headers['set-cookie']!.toString().split(';')[0]!
  const { team } = await inject(app, 'POST', '/api/teams', cookie, { name: 'Refresh bench' })
  const imported = await inject(app, 'POST', '/api/mcp/servers/import', cookie, [{
    $schema: 'https://static.modelcontextprotocol.io/schemas/2025-12-11/server.schema.json',
    name: 'io.github.example/refresh-bench', description: 'A remote server protected by OAuth.', version: '1.0.0',
    remotes: [{ type: 'streamable-http', url: tokens.resource }],
  }])
  const serverId = (imported.results as Array<{ server_id: string }>)[0]!.server_id
  // A team satellite runs it, so that every refresh also moves that satellite's document stamp, as in a deployment.
  const registration = await inject(app, 'POST', `/api/teams/${team.id}/satellites/registration-tokens`, cookie, {})
  const paired = await app.inject({
    method: 'POST', url: '/api/satellites/register', headers: { authorization: `Bearer ${registration.token}` },
    payload: { name: 'refresh-bench', system_info: { os: 'linux', arch: 'x64', node_version: process.version, memory_mb: 1024 } },
  })
  if (paired.statusCode !== 201) throw new Error(`the satellite's registration failed: ${paired.statusCode} ${paired.body}`)
  const satelliteId = (paired.json() as { data: { satellite: { id: string } } }).data.satellite.id
  const { installation } = await inject(app, 'POST', `/api/teams/${team.id}/mcp/installations`, cookie, {
    server_id: serverId, name: 'bench', target: { kind: 'remote', index: 0 }, satellite_id: satelliteId,
  })
  const key = (installation.inputs as Array<{ key: string; kind: string }>).find((input) => input.kind === 'oauth')?.key
  if (key === undefined) throw new Error(`the probe found no OAuth: ${JSON.stringify(installation.inputs)}`)
  return { teamId: team.id, installationId: installation.id, key }
}

/** Connection 0's first refresh token: replayed after the run, to show that the server notices a second use. */
let firstOfConnectionZero = ''

/** TOTAL members with a connection each; the first DUE are due now and expire DUE_EXPIRY_MS later. */
async function seedConnections(app: FastifyInstance, tokens: TokenServer, place: { teamId: string; installationId: string; key: string }, startAt: number): Promise<void> {
  const { db, t } = app.services.database
  const box = connectionTokensBox(SECRET)
  const now = new Date()
  await db.insert(t.upstreamOauthClients).values({
    issuer: tokens.issuer, method: 'manual', clientId: tokens.clientId, clientSecretSealed: null, tokenEndpointAuthMethod: 'none', registeredAt: now, updatedAt: now,
  }).onConflictDoNothing()
  for (let from = 0; from < TOTAL; from += INSERT_CHUNK) {
    const indexes = Array.from({ length: Math.min(INSERT_CHUNK, TOTAL - from) }, (_, i) => from + i)
    const refreshTokens = await Promise.all(indexes.map((n) => (n < DUE ? tokens.firstRefreshToken(n) : Promise.resolve(`rt.${n}.0`))))
    if (from === 0) firstOfConnectionZero = refreshTokens[0]!
    const users = indexes.map((n) => ({ id: `bench-user-${n}`, username: `bench_user_${n}`, email: `bench-user-${n}@example.com`, createdAt: now, updatedAt: now }))
    await db.insert(t.users).values(users)
    await db.insert(t.oauthConnections).values(indexes.map((n) => {
      const due = n < DUE
      const expiresAt = new Date(due ? startAt + DUE_EXPIRY_MS : startAt + 2 * 3600_000)
      return {
        id: `bench-connection-${n}`, installationId: place.installationId, teamId: place.teamId, userId: `bench-user-${n}`, owner: `bench-user-${n}`,
        inputKey: place.key, issuer: tokens.issuer, clientId: tokens.clientId, status: 'connected' as const,
        sealed: box.sealTokens({ installationId: place.installationId, userId: `bench-user-${n}`, inputKey: place.key }, {
          access_token: `at.${n}.0`, refresh_token: refreshTokens[n - from]!, token_type: 'Bearer', expires_at: expiresAt.toISOString(), scope: 'mcp', account: null,
        }),
        // Due ones spread over the last minute, as connections made at different times would be.
        refreshAt: due ? new Date(startAt - 60_000 + (n * 60_000) / DUE) : new Date(expiresAt.getTime() - 5 * 60_000),
        tokenRevision: 0, failures: 0, leaseOwner: null, leaseUntil: null, connectedAt: now, updatedAt: now,
      }
    }))
  }
}

interface TickFigures { ticks: number; busyTicks: number; p50Ms: number; maxMs: number }

const round = (value: number, digits = 1) => Math.round(value * 10 ** digits) / 10 ** digits

function tickFigures(durations: number[], busy: number): TickFigures {
  const sorted = [...durations].sort((a, b) => a - b)
  return { ticks: sorted.length, busyTicks: busy, p50Ms: round(sorted[Math.floor(sorted.length / 2)] ?? 0), maxMs: round(sorted.at(-1) ?? 0) }
}

async function benchDialect(dialect: 'sqlite' | 'postgresql', server: 'counting' | 'oidc-provider'): Promise<void> {
  const dataDir = mkdtempSync(join(tmpdir(), 'bench-connections-'))
  const database = await createTestDatabase(dialect, dataDir)
  const tokens = server === 'counting' ? await startCountingServer() : await startOidcProvider()
  const apps: FastifyInstance[] = []
  try {
    const config = loadConfig({
      DATABASE_URL: database.url, DATA_DIR: dataDir, ENCRYPTION_SECRET: SECRET, LOG_LEVEL: 'silent', PUBLIC_URL: 'http://127.0.0.1:3999',
      RATE_LIMIT_ENABLED: 'false', OUTBOUND_ALLOWED_HOSTS: tokens.host,
    })
    for (let i = 0; i < 2; i++) {
      const app = await buildApp(config, { logger: false, connectionRefreshMs: 24 * 3600_000 })
      await app.ready()
      apps.push(app)
    }
    const place = await seedInstallation(apps[0]!, tokens)
    const seedStarted = performance.now()
    const startAt = Date.now()
    await seedConnections(apps[0]!, tokens, place, startAt)
    console.log(`${dialect}, ${tokens.kind}: ${TOTAL} connections written in ${round((performance.now() - seedStarted) / 1000)} s, ${DUE} due`)

    const refreshers = apps.map(refresherOf)
    const durations: number[][] = [[], []]
    const busy = [0, 0]
    const outcomes = [{ refreshed: 0, expired: 0, postponed: 0, lost: 0 }, { refreshed: 0, expired: 0, postponed: 0, lost: 0 }]
    const began = performance.now()
    const beganAt = Date.now()
    let lastRefresh = beganAt
    // Both instances tick side by side, as their timers would, each until a tick finds nothing due.
    await Promise.all(refreshers.map(async (refresher, i) => {
      for (;;) {
        const started = performance.now()
        const outcome = await refresher.tick()
        durations[i]!.push(performance.now() - started)
        const sum = outcome.refreshed + outcome.expired + outcome.postponed + outcome.lost
        for (const name of ['refreshed', 'expired', 'postponed', 'lost'] as const) outcomes[i]![name] += outcome[name]
        if (sum === 0) break
        busy[i]! += 1
        lastRefresh = Date.now()
      }
    }))
    const wallMs = lastRefresh - beganAt
    // The counts are only worth something if a second use shows: replay one used refresh token.
    const reusedBefore = tokens.reused
    const replay = await fetch(`${tokens.issuer}/token`, {
      method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ grant_type: 'refresh_token', refresh_token: firstOfConnectionZero, client_id: tokens.clientId, resource: tokens.resource }).toString(),
    })
    await replay.arrayBuffer()
    const replayNoticed = replay.status === 400 && tokens.reused === reusedBefore + 1
    const reusedDuringRun = reusedBefore
    // What a tick costs when nothing is due (every 15 s on every instance): the claim over all rows.
    const idle: number[] = []
    for (let i = 0; i < IDLE_TICKS; i++) {
      const started = performance.now()
      await refreshers[i % 2]!.tick()
      idle.push(performance.now() - started)
    }

    // What must hold: every due token refreshed once, before it expired; no other touched.
    const { db, t } = apps[0]!.services.database
    const rows = await db.select({ id: t.oauthConnections.id, tokenRevision: t.oauthConnections.tokenRevision, status: t.oauthConnections.status }).from(t.oauthConnections)
    const revisions = new Map(rows.map((row) => [row.id, row]))
    let once = 0
    let twice = 0
    let missing = 0
    let late = 0
    let touched = 0
    for (let n = 0; n < TOTAL; n++) {
      const times = tokens.refreshedAt.get(n) ?? []
      if (n < DUE) {
        if (times.length === 1) once += 1
        else if (times.length === 0) missing += 1
        else twice += 1
        if (times.some((at) => at >= startAt + DUE_EXPIRY_MS)) late += 1
      } else if (times.length > 0 || revisions.get(`bench-connection-${n}`)?.tokenRevision !== 0) touched += 1
    }
    const revisedOnce = rows.filter((row) => row.tokenRevision === 1).length
    console.log(JSON.stringify({
      dialect, server: tokens.kind, connections: TOTAL, due: DUE,
      refreshed_once: once, refreshed_more_than_once: twice, not_refreshed: missing, after_expiry: late, not_due_touched: touched,
      reused_refresh_tokens: reusedDuringRun, replayed_token_noticed: replayNoticed, unknown_refresh_tokens: tokens.unknown, token_requests: tokens.requests - 1, rows_at_revision_1: revisedOnce,
      wall_ms: Math.round(wallMs), refreshes_per_second: round(DUE / (wallMs / 1000)),
      instance_a: { ...tickFigures(durations[0]!, busy[0]!), ...outcomes[0] }, instance_b: { ...tickFigures(durations[1]!, busy[1]!), ...outcomes[1] },
      idle_tick_ms: tickFigures(idle, 0),
      total_ms: Math.round(performance.now() - began),
    }, null, 2))
  } finally {
    await Promise.all(apps.map((app) => app.close()))
    await tokens.close()
    await database.drop()
    rmSync(dataDir, { recursive: true, force: true })
  }
}

console.log(`bench:connections on ${cpus().length} × ${cpus()[0]?.model ?? 'unknown CPU'}, load ${loadavg().map((l) => l.toFixed(1)).join(' ')}, ${new Date().toISOString()}`)
const only = process.argv[2]
const servers = (process.env.BENCH_CONNECTIONS_SERVER ?? 'counting,oidc-provider').split(',') as Array<'counting' | 'oidc-provider'>
for (const server of servers) {
  for (const dialect of ['sqlite', 'postgresql'] as const) {
    if (only === undefined || only === dialect) await benchDialect(dialect, server)
  }
}
