import type { FastifyInstance, LightMyRequestResponse } from 'fastify'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { ConfigError } from '../../src/config.js'
import { DEFAULT_PASSWORD, login, register, registerAndLogin } from '../helpers/accounts.js'
import { createTestContext, testConfig, type TestContext } from '../helpers/app.js'
import { DIALECTS } from '../helpers/database.js'
import { ALL_SCOPES, bearer, CLI_CLIENT_ID, issueTokens, refresh, revoke } from '../helpers/oauth.js'
import { parseExposition, valueOf, type Sample } from '../helpers/prometheus.js'
import { until } from '../helpers/until.js'

const METRICS_TOKEN = 'scrape-0123456789-abcdefghij'
const NO_IP_LIMIT = { RATE_LIMIT_ENABLED: 'false' }
const LOCKOUT = { maxFailures: 2, windowMs: 900_000, lockMs: 900_000 }
const CONTENT_TYPE = 'text/plain; version=0.0.4; charset=utf-8'

const getMetrics = (app: FastifyInstance, headers: Record<string, string> = {}) => app.inject({ method: 'GET', url: '/api/metrics', headers })

function expectRefused(response: LightMyRequestResponse, status: 401 | 403): void {
  expect(response.statusCode).toBe(status)
  expect(response.headers['content-type']).toContain('application/json')
  expect(response.json()).toMatchObject({ success: false, code: status === 401 ? 'UNAUTHORIZED' : 'FORBIDDEN', error: expect.any(String) })
}

describe.each(DIALECTS)('GET /api/metrics on %s', (dialect) => {
  let ctx: TestContext
  let app: FastifyInstance
  let admin: { cookie: string }
  let user: { cookie: string }

  /** Scrapes with METRICS_TOKEN and parses the answer strictly. */
  async function scrape(target = app): Promise<{ samples: Sample[]; body: string }> {
    const response = await getMetrics(target, bearer(METRICS_TOKEN))
    expect(response.statusCode, response.body).toBe(200)
    return { samples: parseExposition(response.body), body: response.body }
  }
  const count = (samples: Sample[], name: string, labels: Record<string, string> = {}) => valueOf(samples, name, labels) ?? 0

  beforeAll(async () => {
    // In a file, so that a second app sees the same accounts and sessions.
    ctx = await createTestContext(dialect, { file: true })
    app = (await ctx.build({ env: { METRICS_TOKEN, ...NO_IP_LIMIT }, limits: { lockout: LOCKOUT } })).app
    // The database's first user is its global admin.
    admin = await registerAndLogin(app, { username: 'admin', email: 'admin@example.com' })
    user = await registerAndLogin(app, { username: 'regular', email: 'regular@example.com' })
  })
  afterAll(() => ctx.close())

  describe('who may read it', () => {
    it('refuses a caller without credentials: 401 in the error envelope, with a Bearer challenge', async () => {
      const response = await getMetrics(app)
      expectRefused(response, 401)
      expect(response.headers['www-authenticate']).toBe('Bearer')
    })

    it.each([
      ['a wrong token', `Bearer ${METRICS_TOKEN}x`],
      ['a prefix of the token', `Bearer ${METRICS_TOKEN.slice(0, -1)}`],
      ['a malformed Authorization header', `Basic ${METRICS_TOKEN}`],
      ['a satellite key', `Bearer service_satkey_${METRICS_TOKEN}`],
    ])('refuses %s with 401 invalid_token', async (_label, authorization) => {
      const response = await getMetrics(app, { authorization })
      expectRefused(response, 401)
      expect(response.headers['www-authenticate']).toBe('Bearer error="invalid_token"')
    })

    it("refuses an admin's OAuth access token: only METRICS_TOKEN is a bearer here", async () => {
      const tokens = await issueTokens(app, admin.cookie, 'mcp:read')
      expectRefused(await getMetrics(app, bearer(tokens.access_token)), 401)
    })

    it("refuses a regular user's session with 403", async () => {
      const response = await getMetrics(app, { cookie: user.cookie })
      expectRefused(response, 403)
      expect(response.json().details).toEqual({ required_permission: 'global_admin' })
    })

    it('answers METRICS_TOKEN as a bearer token with the Prometheus text format', async () => {
      const response = await getMetrics(app, bearer(METRICS_TOKEN))
      expect(response.statusCode).toBe(200)
      expect(response.headers['content-type']).toBe(CONTENT_TYPE)
      expect(response.headers['x-request-id']).toEqual(expect.any(String))
      const samples = parseExposition(response.body)
      expect(samples.length).toBeGreaterThan(50)
      expect(response.body).toMatch(/^# HELP http_request_duration_seconds /m)
      expect(response.body).toMatch(/^# TYPE http_request_duration_seconds histogram$/m)
    })

    it("answers a global admin's session", async () => {
      const response = await getMetrics(app, { cookie: admin.cookie })
      expect(response.statusCode).toBe(200)
      expect(response.headers['content-type']).toBe(CONTENT_TYPE)
      expect(() => parseExposition(response.body)).not.toThrow()
    })

    it('without METRICS_TOKEN admits admin sessions only: no bearer token is ever accepted', async () => {
      const { app: untokened } = await ctx.build({ env: NO_IP_LIMIT })
      expectRefused(await getMetrics(untokened), 401)
      expectRefused(await getMetrics(untokened, bearer(METRICS_TOKEN)), 401)
      expectRefused(await getMetrics(untokened, { cookie: user.cookie }), 403)
      expect((await getMetrics(untokened, { cookie: admin.cookie })).statusCode).toBe(200)
    })
  })

  describe('what it counts', () => {
    it('counts requests by method, route pattern and status; unknown routes share one label; raw URLs never appear', async () => {
      const before = (await scrape()).samples
      const health = { method: 'GET', route: '/api/health', status_code: '200' }
      const server = { method: 'GET', route: '/api/mcp/servers/:id', status_code: '404' }
      const unmatched = { method: 'GET', route: 'unmatched', status_code: '404' }

      for (let i = 0; i < 3; i++) expect((await app.inject({ method: 'GET', url: '/api/health' })).statusCode).toBe(200)
      const missing = await app.inject({ method: 'GET', url: '/api/mcp/servers/no-such-server-7f3a', headers: { cookie: admin.cookie } })
      expect(missing.statusCode).toBe(404)
      for (const url of ['/api/nowhere-91c2', '/api/elsewhere-5d0e?token=hunter2']) {
        expect((await app.inject({ method: 'GET', url })).statusCode).toBe(404)
      }

      const { samples, body } = await scrape()
      expect(count(samples, 'http_request_duration_seconds_count', health) - count(before, 'http_request_duration_seconds_count', health)).toBe(3)
      expect(count(samples, 'http_request_duration_seconds_count', server) - count(before, 'http_request_duration_seconds_count', server)).toBe(1)
      expect(count(samples, 'http_request_duration_seconds_count', unmatched) - count(before, 'http_request_duration_seconds_count', unmatched)).toBe(2)
      // A histogram: cumulative buckets up to +Inf, whose count is _count, and a positive sum.
      expect(valueOf(samples, 'http_request_duration_seconds_bucket', { ...health, le: '+Inf' })).toBe(valueOf(samples, 'http_request_duration_seconds_count', health))
      expect(valueOf(samples, 'http_request_duration_seconds_sum', health)).toBeGreaterThan(0)
      for (const raw of ['no-such-server-7f3a', 'nowhere-91c2', 'elsewhere-5d0e', 'hunter2']) expect(body).not.toContain(raw)
    })

    it('counts failed logins by reason, and the failure that locks an account', async () => {
      const before = (await scrape()).samples
      const victim = { username: 'victim', email: 'victim@example.com' }
      expect((await register(app, victim)).statusCode).toBe(201)

      expect((await login(app, 'nobody@example.com', DEFAULT_PASSWORD)).response.statusCode).toBe(401)
      expect((await login(app, victim.email, 'wrong password')).response.statusCode).toBe(401)
      // The second failure reaches maxFailures: this one locks the account.
      expect((await login(app, victim.email, 'wrong password')).response.statusCode).toBe(429)
      // Refused while locked, even with the right password; that is no new lockout.
      expect((await login(app, victim.email, DEFAULT_PASSWORD)).response.statusCode).toBe(429)

      const { samples, body } = await scrape()
      const delta = (name: string, labels: Record<string, string> = {}) => count(samples, name, labels) - count(before, name, labels)
      expect(delta('auth_login_failures_total', { reason: 'unknown_login' })).toBe(1)
      expect(delta('auth_login_failures_total', { reason: 'wrong_password' })).toBe(2)
      expect(delta('auth_login_failures_total', { reason: 'locked' })).toBe(1)
      expect(delta('auth_lockouts_total')).toBe(1)
      for (const secret of ['victim', 'nobody', 'wrong password', DEFAULT_PASSWORD]) expect(body).not.toContain(secret)
    })

    it('counts OAuth tokens issued by grant and token type, and revocations by reason', async () => {
      const before = (await scrape()).samples
      const issued = await issueTokens(app, admin.cookie, ALL_SCOPES.join(' '))
      const refreshed = await refresh(app, issued.refresh_token!)
      expect(refreshed.statusCode).toBe(200)
      // The spent refresh token again: a replay, which ends the grant.
      expect((await refresh(app, issued.refresh_token!)).statusCode).toBe(400)
      const second = await issueTokens(app, admin.cookie, 'mcp:read')
      expect((await revoke(app, { token: second.access_token, client_id: CLI_CLIENT_ID })).statusCode).toBe(200)

      const { samples, body } = await scrape()
      const delta = (name: string, labels: Record<string, string>) => count(samples, name, labels) - count(before, name, labels)
      expect(delta('oauth_tokens_issued_total', { grant_type: 'authorization_code', token_type: 'access' })).toBe(2)
      expect(delta('oauth_tokens_issued_total', { grant_type: 'authorization_code', token_type: 'refresh' })).toBe(1)
      expect(delta('oauth_tokens_issued_total', { grant_type: 'refresh_token', token_type: 'access' })).toBe(1)
      expect(delta('oauth_tokens_issued_total', { grant_type: 'refresh_token', token_type: 'refresh' })).toBe(1)
      expect(delta('oauth_tokens_revoked_total', { reason: 'refresh_token_reused' })).toBe(1)
      expect(delta('oauth_tokens_revoked_total', { reason: 'revocation_request' })).toBe(1)
      expect(delta('oauth_tokens_revoked_total', { reason: 'code_reused' })).toBe(0)
      for (const token of [issued.access_token, issued.refresh_token!, second.access_token]) expect(body).not.toContain(token)
    })

    it('times database statements, and on PostgreSQL exports the connection pool', async () => {
      const before = (await scrape()).samples
      // The caller's teams are read from the database (a credential check may be answered from memory).
      expect((await app.inject({ method: 'GET', url: '/api/teams/me', headers: { cookie: user.cookie } })).statusCode).toBe(200)
      const { samples } = await scrape()
      expect(count(samples, 'db_query_duration_seconds_count')).toBeGreaterThan(count(before, 'db_query_duration_seconds_count'))
      expect(count(samples, 'db_query_duration_seconds_sum')).toBeGreaterThan(0)
      const pool = samples.filter((sample) => sample.name.startsWith('db_pool_'))
      if (dialect === 'sqlite') {
        expect(pool).toEqual([])
        return
      }
      const idle = valueOf(samples, 'db_pool_connections', { state: 'idle' })
      const inUse = valueOf(samples, 'db_pool_connections', { state: 'in_use' })
      expect(idle).toBeGreaterThanOrEqual(0)
      expect(inUse).toBeGreaterThanOrEqual(0)
      // The statement just answered left its connection open.
      expect(idle! + inUse!).toBeGreaterThanOrEqual(1)
      expect(valueOf(samples, 'db_pool_waiting')).toBe(0)
      // DATABASE_POOL_SIZE's default.
      expect(valueOf(samples, 'db_pool_max_connections')).toBe(10)
    })

    it('counts the credential lookups answered from memory (on SQLite, after its change stamp is compared)', async () => {
      const lookups = (samples: Awaited<ReturnType<typeof scrape>>['samples'], result: string) =>
        valueOf(samples, 'credential_cache_lookups_total', { lookup: 'session_by_digest', result }) ?? 0
      if (dialect === 'postgresql') await until(() => app.services.database.changes.up, { what: 'the change feed' })
      const before = (await scrape()).samples
      for (let index = 0; index < 3; index++) {
        expect((await app.inject({ method: 'GET', url: '/api/users/me', headers: { cookie: user.cookie } })).statusCode).toBe(200)
      }
      const { samples } = await scrape()
      expect(lookups(samples, 'hit') - lookups(before, 'hit')).toBeGreaterThanOrEqual(2)
      expect(valueOf(samples, 'credential_cache_entries', { lookup: 'session_by_digest' })).toBeGreaterThanOrEqual(1)
    })

    it('exports the process: event-loop lag, CPU, memory', async () => {
      const { samples } = await scrape()
      for (const name of ['nodejs_eventloop_lag_seconds', 'nodejs_eventloop_lag_p99_seconds', 'process_cpu_user_seconds_total', 'process_resident_memory_bytes', 'nodejs_heap_size_used_bytes']) {
        expect(valueOf(samples, name), name).toBeGreaterThanOrEqual(0)
      }
    })

    it('keeps the counts of apps in one process apart', async () => {
      const { app: other } = await ctx.build({ env: { METRICS_TOKEN, ...NO_IP_LIMIT } })
      const health = { method: 'GET', route: '/api/health', status_code: '200' }
      expect((await app.inject({ method: 'GET', url: '/api/health' })).statusCode).toBe(200)
      expect(valueOf((await scrape(other)).samples, 'http_request_duration_seconds_count', health)).toBeUndefined()
      expect((await other.inject({ method: 'GET', url: '/api/health' })).statusCode).toBe(200)
      expect(valueOf((await scrape(other)).samples, 'http_request_duration_seconds_count', health)).toBe(1)
      expect(valueOf((await scrape(other)).samples, 'http_request_duration_seconds_count', { route: '/api/metrics', status_code: '200' })).toBe(2)
    })
  })
})

describe('METRICS_TOKEN', () => {
  it('is optional', () => {
    expect(testConfig().metricsToken).toBeNull()
    expect(testConfig({ METRICS_TOKEN: METRICS_TOKEN }).metricsToken).toBe(METRICS_TOKEN)
  })

  it.each([
    ['shorter than 16 characters', 'short-token-15ch'.slice(0, 15)],
    ['holding a character a bearer token cannot carry', 'scrape token with spaces'],
    ['holding a quote', 'scrape"0123456789abcdef'],
    ['starting with the satellites\' prefix', 'service_satkey_0123456789abcdef'],
  ])('is refused when %s, by name', (_label, value) => {
    expect(() => testConfig({ METRICS_TOKEN: value })).toThrow(ConfigError)
    expect(() => testConfig({ METRICS_TOKEN: value })).toThrow(/METRICS_TOKEN must be at least 16 characters/)
  })
})
