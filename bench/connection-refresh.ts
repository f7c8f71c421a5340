import { randomBytes, randomUUID } from 'node:crypto'
import { mkdtempSync, rmSync } from 'node:fs'
import { createServer, type IncomingMessage } from 'node:http'
import type { AddressInfo } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { sql } from 'drizzle-orm'
import type { FastifyInstance } from 'fastify'
import pg from 'pg'
import { buildApp } from '../src/app.js'
import { loadConfig } from '../src/config.js'
import { newId } from '../src/db/ids.js'
import { upstreamClientsRepository } from '../src/db/repositories/upstream-clients.js'
import type { TickOutcome } from '../src/modules/connections/refresher.js'
import { SECRET, PASSWORD } from './service.js'

/**
 * The connection refresher under 10 000 connections, all due at once (the worst burst: every token
 * of a cluster issued in the same minute), with two instances of the service on one database
 * ticking side by side: how long until every token is refreshed (it must be less than the
 * 5 minutes a one-hour token is refreshed ahead of its expiry), the rate, each instance's share,
 * and how many refresh tokens the authorization server saw twice (none is the promise). All the
 * connections belong to installations on one satellite, so every refresh also moves that
 * satellite's document stamp (the row all of them contend for).
 *
 * On SQLite one instance ticks (SQLite has one writer; several instances on one file are for
 * PostgreSQL).
 *
 * The authorization server is a minimal one on loopback (RFC 8414 metadata and a token endpoint
 * answering each refresh at once with new tokens): the figure is the refresher's and the
 * database's, not a real server's. In process: `npm run build && node dist/bench/connection-refresh.js`
 * (`--sqlite` or `--postgresql` for one dialect; PostgreSQL from BENCH_DATABASE_URL or
 * TEST_DATABASE_URL, default postgres://postgres@127.0.0.1:5432/postgres).
 */

const CONNECTIONS = Number(process.env.BENCH_CONNECTIONS ?? 10_000)
/** The lifetime of the tokens the server issues: refreshed 5 minutes ahead (a fifth would be 12). */
const LIFETIME_SECONDS = 3600
const WINDOW_MS = 5 * 60_000
const GIVE_UP_MS = Number(process.env.BENCH_GIVE_UP_MS ?? 10 * 60_000)

interface TokenServer { issuer: string; host: string; presented: Map<string, number>; requests: () => number; close(): Promise<void> }

async function startTokenServer(): Promise<TokenServer> {
  const presented = new Map<string, number>()
  let requests = 0
  const server = createServer((request, response) => {
    void (async () => {
      const issuer = `http://${request.headers.host}`
      if (request.method === 'GET' && request.url === '/.well-known/oauth-authorization-server') {
        response.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({
          issuer, authorization_endpoint: `${issuer}/authorize`, token_endpoint: `${issuer}/token`, response_types_supported: ['code'],
        }))
        return
      }
      if (request.method === 'POST' && request.url === '/token') {
        requests += 1
        const form = new URLSearchParams(await bodyOf(request))
        const token = form.get('refresh_token') ?? ''
        presented.set(token, (presented.get(token) ?? 0) + 1)
        response.writeHead(200, { 'content-type': 'application/json', 'cache-control': 'no-store' }).end(JSON.stringify({
          access_token: randomBytes(24).toString('base64url'), token_type: 'Bearer', expires_in: LIFETIME_SECONDS, refresh_token: randomBytes(24).toString('base64url'),
        }))
        return
      }
      response.writeHead(404).end()
    })()
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const { port } = server.address() as AddressInfo
  return {
    issuer: `http://127.0.0.1:${port}`, host: `127.0.0.1:${port}`, presented, requests: () => requests,
    close: () => new Promise((resolve) => server.close(() => resolve())),
  }
}

async function bodyOf(request: IncomingMessage): Promise<string> {
  const chunks: Buffer[] = []
  for await (const chunk of request as AsyncIterable<Buffer>) chunks.push(chunk)
  return Buffer.concat(chunks).toString('utf8')
}

interface Database { url: string; drop(): Promise<void> }

async function databaseFor(dialect: 'sqlite' | 'postgresql'): Promise<Database> {
  if (dialect === 'sqlite') {
    const dir = mkdtempSync(join(tmpdir(), 'bench-refresh-'))
    return { url: `sqlite:${dir}/bench.db`, drop: async () => rmSync(dir, { recursive: true, force: true }) }
  }
  const admin = process.env.BENCH_DATABASE_URL ?? process.env.TEST_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres'
  const name = `bench_refresh_${randomBytes(4).toString('hex')}`
  const query = async (statement: string) => {
    const client = new pg.Client({ connectionString: admin })
    await client.connect()
    try {
      await client.query(statement)
    } finally {
      await client.end()
    }
  }
  await query(`create database ${name}`)
  const url = new URL(admin)
  url.pathname = `/${name}`
  return { url: url.toString(), drop: () => query(`drop database if exists ${name} with (force)`) }
}

async function ok<T>(app: FastifyInstance, method: 'GET' | 'POST', url: string, cookie: string | undefined, payload?: unknown): Promise<T> {
  const response = await app.inject({ method, url, headers: cookie === undefined ? {} : { cookie }, ...(payload === undefined ? {} : { payload: payload as object }) })
  if (response.statusCode >= 300) throw new Error(`${method} ${url}: ${response.statusCode} ${response.body}`)
  return response.json().data as T
}

/** A global admin, a satellite with a key, and one remote installation needing a team connection, placed on it. */
async function installation(app: FastifyInstance): Promise<{ installationId: string; teamId: string }> {
  const registered = await app.inject({ method: 'POST', url: '/api/auth/email/register', payload: { username: 'bench', email: 'bench@example.test', password: PASSWORD } })
  const cookie = registered.headers['set-cookie']!.toString().split(';')[0]!
  const teams = await ok<{ teams: Array<{ id: string; is_default: boolean }> }>(app, 'GET', '/api/users/me/teams', cookie)
  const teamId = teams.teams.find((team) => team.is_default)!.id
  const token = await ok<{ token: string }>(app, 'POST', `/api/teams/${teamId}/satellites/registration-tokens`, cookie, {})
  const publicKey = Buffer.from(randomBytes(32)).toString('base64url')
  const paired = await app.inject({
    method: 'POST', url: '/api/satellites/register', headers: { authorization: `Bearer ${token.token}` },
    payload: { name: 'bench-refresh-satellite', public_key: publicKey, satellite_url: 'http://127.0.0.1:7999', system_info: { os: 'linux', arch: 'x64', node_version: process.version, memory_mb: 1024 } },
  })
  const { satellite, api_key: apiKey } = paired.json().data as { satellite: { id: string }; api_key: string }
  await app.inject({ method: 'POST', url: `/api/satellites/${satellite.id}/heartbeat`, headers: { authorization: `Bearer ${apiKey}` }, payload: { status: 'active' } })
  const imported = await ok<{ results: Array<{ server_id: string }> }>(app, 'POST', '/api/mcp/servers/import', cookie, [{
    $schema: 'https://static.modelcontextprotocol.io/schemas/2025-12-11/server.schema.json',
    name: 'io.github.example/bench-refresh', description: 'A remote server behind OAuth.', version: '1.0.0',
    remotes: [{ type: 'streamable-http', url: 'https://mcp.bench.example/mcp' }],
  }])
  const created = await ok<{ installation: { id: string } }>(app, 'POST', `/api/teams/${teamId}/mcp/installations`, cookie, {
    server_id: imported.results[0]!.server_id, target: { kind: 'remote', index: 0 }, satellite_id: satellite.id, auth: 'oauth', team_connections: ['oauth:https://mcp.bench.example/mcp'],
  })
  return { installationId: created.installation.id, teamId }
}

/** CONNECTIONS team connections of the installation (one per key), all due now. */
async function seed(app: FastifyInstance, issuer: string, installationId: string, teamId: string): Promise<void> {
  const { database, connectionTokens } = app.services
  const now = new Date()
  await upstreamClientsRepository(database).put({ issuer, method: 'manual', clientId: 'bench', clientSecretSealed: null, tokenEndpointAuthMethod: 'none', registeredAt: now, updatedAt: now })
  for (let from = 0; from < CONNECTIONS; from += 500) {
    const rows = []
    for (let index = from; index < Math.min(CONNECTIONS, from + 500); index++) {
      const inputKey = `oauth:https://mcp.bench.example/mcp/${index}`
      rows.push({
        id: newId(), installationId, teamId, userId: null, owner: 'team', inputKey, issuer, clientId: 'bench', status: 'connected' as const,
        sealed: connectionTokens.sealTokens({ installationId, userId: null, inputKey }, {
          access_token: randomBytes(24).toString('base64url'), refresh_token: `seed-${index}-${randomUUID()}`, token_type: 'Bearer',
          expires_at: new Date(now.getTime() + WINDOW_MS).toISOString(), scope: '', account: null,
        }),
        refreshAt: now, tokenRevision: 0, failures: 0, leaseOwner: null, leaseUntil: null, connectedAt: now, updatedAt: now,
      })
    }
    await database.db.insert(database.t.oauthConnections).values(rows)
  }
}

async function refreshedCount(app: FastifyInstance): Promise<number> {
  const { database } = app.services
  const rows = await database.db.select({ n: sql<number>`count(*)`.mapWith(Number) }).from(database.t.oauthConnections).where(sql`token_revision > 0`)
  return rows[0]?.n ?? 0
}

async function run(dialect: 'sqlite' | 'postgresql'): Promise<void> {
  const server = await startTokenServer()
  const database = await databaseFor(dialect)
  const config = loadConfig({
    ENCRYPTION_SECRET: SECRET, LOG_LEVEL: 'silent', PUBLIC_URL: 'http://localhost:3000', DATABASE_URL: database.url, DATA_DIR: mkdtempSync(join(tmpdir(), 'bench-refresh-data-')),
    OUTBOUND_ALLOWED_HOSTS: server.host, RATE_LIMIT_ENABLED: 'false',
  })
  // The timers are left far apart: the bench ticks both instances itself, side by side.
  // SQLite has one writer: one instance (two in one process would wait on each other's write lock
  // with the event loop blocked, which two processes do not). PostgreSQL: two, side by side.
  const instances = dialect === 'sqlite' ? 1 : 2
  const apps: FastifyInstance[] = []
  for (let index = 0; index < instances; index++) apps.push(await buildApp(config, { logger: false, connectionRefreshMs: 3_600_000 }))
  try {
    await Promise.all(apps.map((app) => app.ready()))
    const one = apps[0]!
    const { installationId, teamId } = await installation(one)
    const seeding = Date.now()
    await seed(one, server.issuer, installationId, teamId)
    console.info(`${dialect}: ${CONNECTIONS} connections stored in ${((Date.now() - seeding) / 1000).toFixed(1)} s, all due`)

    const shares = apps.map(() => ({ refreshed: 0, expired: 0, postponed: 0, lost: 0, ticks: 0 }))
    const started = Date.now()
    let done = 0
    await Promise.all(apps.map(async (app, index) => {
      while (done < CONNECTIONS && Date.now() - started < GIVE_UP_MS) {
        const outcome: TickOutcome = await app.services.connectionRefresher.tick()
        const share = shares[index]!
        share.ticks += 1
        for (const key of ['refreshed', 'expired', 'postponed', 'lost'] as const) share[key] += outcome[key]
        if (outcome.refreshed === 0) done = await refreshedCount(one)
      }
    }))
    const elapsed = Date.now() - started
    const twice = [...server.presented.values()].filter((count) => count > 1).length
    const refreshed = await refreshedCount(one)
    console.info(`${dialect}: ${refreshed}/${CONNECTIONS} refreshed in ${(elapsed / 1000).toFixed(1)} s (${Math.round(refreshed / (elapsed / 1000))}/s; ` +
      `the window is ${WINDOW_MS / 1000} s): token requests ${server.requests()}, refresh tokens presented twice ${twice}; ` +
      shares.map((share, index) => `instance ${index + 1}: ${share.refreshed} refreshed in ${share.ticks} ticks, ${share.postponed} postponed, ${share.lost} lost`).join('; '))
  } finally {
    await Promise.all(apps.map((app) => app.close()))
    await server.close()
    await database.drop()
  }
}

const only = process.argv.includes('--sqlite') ? ['sqlite' as const] : process.argv.includes('--postgresql') ? ['postgresql' as const] : ['sqlite' as const, 'postgresql' as const]
for (const dialect of only) await run(dialect)
