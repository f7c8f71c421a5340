import { Counter, Gauge, Registry } from 'prom-client'
import { keptAnswersStats } from '../../db/feed/kept-answers.js'
import type { Database, PoolStats, QueryTimer } from '../../db/types.js'
import { processMetrics } from './process.js'
import { CountingHistogram } from './histogram.js'
import { RequestMetrics } from './requests.js'
import type { ToolCallMetrics } from '../usage/service.js'

/** Why a login was refused; never who tried (labels are public to every scraper, and bounded). */
export type LoginFailure = 'unknown_login' | 'wrong_password' | 'locked'
const LOGIN_FAILURES: readonly LoginFailure[] = ['unknown_login', 'wrong_password', 'locked']

/** The grants that issue tokens. */
export type IssuingGrant = 'authorization_code' | 'refresh_token'
const GRANTS: readonly IssuingGrant[] = ['authorization_code', 'refresh_token']

/**
 * Why tokens were revoked: a client's RFC 7009 request (a refresh token takes its whole grant with
 * it), or a replayed code or refresh token, which ends the grant (RFC 6749 §4.1.2, RFC 9700 §4.14.2).
 */
export type Revocation = 'revocation_request' | 'code_reused' | 'refresh_token_reused'
const REVOCATIONS: readonly Revocation[] = ['revocation_request', 'code_reused', 'refresh_token_reused']

/** What the login code counts. */
export interface LoginMetrics {
  failed(reason: LoginFailure): void
  /** A failure that locked the account. */
  lockedOut(): void
}

/** What the OAuth token code counts. */
export interface TokenMetrics {
  issued(grant: IssuingGrant, withRefreshToken: boolean): void
  revoked(reason: Revocation): void
}

/** Most answers take well under a millisecond; the default buckets start at 5 ms. */
const REQUEST_BUCKETS = [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10]
const QUERY_BUCKETS = [0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 10]

/**
 * The counters and histograms of one app, in a registry of its own (several apps in one process,
 * as in the tests, must not count into each other), plus the process's metrics when scraped.
 * Series whose labels are known in advance start at zero, so that a rate can be taken from the
 * first scrape on.
 */
export class Metrics {
  readonly registry = new Registry()
  readonly requests: RequestMetrics
  /** Told the duration of every database statement. */
  readonly queries: QueryTimer
  readonly logins: LoginMetrics
  readonly tokens: TokenMetrics
  readonly toolCalls: ToolCallMetrics
  private pool: Pick<Database, 'poolStats'> | null = null
  private kept: object | null = null

  constructor() {
    const registers = [this.registry]
    this.requests = new RequestMetrics(new CountingHistogram(
      'http_request_duration_seconds',
      'Time to answer HTTP requests, by method, route pattern ("unmatched" when no route matched) and status code; _count is the number of requests.',
      REQUEST_BUCKETS,
      registers,
    ))

    const queries = new CountingHistogram(
      'db_query_duration_seconds',
      'Time the database took to answer each statement (transaction statements included).',
      QUERY_BUCKETS,
      registers,
    )
    const statements = queries.series({})
    this.queries = (seconds) => queries.observe(statements, seconds)

    const loginFailures = new Counter({
      name: 'auth_login_failures_total',
      help: 'Refused email logins, by reason: unknown_login, wrong_password, locked (the account was locked already).',
      labelNames: ['reason'] as const,
      registers,
    })
    const lockouts = new Counter({ name: 'auth_lockouts_total', help: 'Accounts locked after too many failed logins.', registers })
    const failures = new Map(LOGIN_FAILURES.map((reason) => [reason, loginFailures.labels(reason)]))
    for (const child of failures.values()) child.inc(0)
    this.logins = {
      failed: (reason) => failures.get(reason)!.inc(),
      lockedOut: () => lockouts.inc(),
    }

    const issued = new Counter({
      name: 'oauth_tokens_issued_total',
      help: 'OAuth tokens issued, by grant type and token type (access, refresh).',
      labelNames: ['grant_type', 'token_type'] as const,
      registers,
    })
    const revoked = new Counter({
      name: 'oauth_tokens_revoked_total',
      help: 'OAuth token revocations, by reason: revocation_request (RFC 7009; a refresh token takes its grant with it), code_reused and refresh_token_reused (the grant ends).',
      labelNames: ['reason'] as const,
      registers,
    })
    for (const grant of GRANTS) for (const type of ['access', 'refresh']) issued.labels(grant, type).inc(0)
    for (const reason of REVOCATIONS) revoked.labels(reason).inc(0)
    this.tokens = {
      issued: (grant, withRefreshToken) => {
        issued.labels(grant, 'access').inc()
        if (withRefreshToken) issued.labels(grant, 'refresh').inc()
      },
      revoked: (reason) => revoked.labels(reason).inc(),
    }

    const toolCalls = new Counter({
      name: 'mcp_tool_calls_total',
      help: 'MCP tool calls reported by satellites, by outcome (ok, error, refused); a batch posted again is counted once. Per team, user or tool: the usage API.',
      labelNames: ['outcome'] as const,
      registers,
    })
    const outcomes = new Map((['ok', 'error', 'refused'] as const).map((outcome) => [outcome, toolCalls.labels(outcome)]))
    for (const child of outcomes.values()) child.inc(0)
    this.toolCalls = { counted: (outcome, calls) => outcomes.get(outcome)!.inc(calls) }
  }

  /**
   * Exports the connection pool of a database that has one (PostgreSQL), read at scrape time.
   * Called when the database is opened: in setup mode the gauges appear once it is set up.
   */
  watchPool(database: Pick<Database, 'poolStats'>): void {
    if (database.poolStats === undefined) return
    if (this.pool === null) this.registerPoolGauges()
    this.pool = database
  }

  /**
   * Exports what the credential lookups answered from memory (kept-answers.ts), read at scrape
   * time. Called when the database is opened.
   */
  watchKeptAnswers(database: object): void {
    if (this.kept === null) this.registerKeptAnswers()
    this.kept = database
  }

  get contentType(): string {
    return this.registry.contentType
  }

  /** The text exposition of this app's metrics and the process's. */
  scrape(): Promise<string> {
    return Registry.merge([processMetrics(), this.registry]).metrics()
  }

  private registerKeptAnswers(): void {
    const registers = [this.registry]
    const read = () => (this.kept === null ? [] : keptAnswersStats(this.kept))
    const counted = new Map<string, number>()
    new Counter({
      name: 'credential_cache_lookups_total',
      help: 'Credential lookups (session, access token, satellite key) by lookup and result: hit (answered from memory), miss (read, with change notifications received), bypassed (read: notifications not received). On SQLite these lookups check the database change stamp instead and are not counted here.',
      labelNames: ['lookup', 'result'] as const,
      registers,
      collect() {
        for (const stats of read()) {
          for (const result of ['hit', 'miss', 'bypassed'] as const) {
            const total = result === 'hit' ? stats.hits : result === 'miss' ? stats.misses : stats.bypassed
            const key = `${stats.name}/${result}`
            const delta = total - (counted.get(key) ?? 0)
            counted.set(key, total)
            if (delta > 0) this.inc({ lookup: stats.name, result }, delta)
          }
        }
      },
    })
    new Gauge({
      name: 'credential_cache_entries',
      help: 'Credential answers kept in memory, by lookup.',
      labelNames: ['lookup'] as const,
      registers,
      collect() {
        for (const stats of read()) this.set({ lookup: stats.name }, stats.size)
      },
    })
  }

  private registerPoolGauges(): void {
    const registers = [this.registry]
    const read = (): PoolStats => this.pool?.poolStats?.() ?? { total: 0, idle: 0, waiting: 0, max: 0 }
    new Gauge({
      name: 'db_pool_connections',
      help: 'Open connections of the PostgreSQL pool, by state (idle, in_use).',
      labelNames: ['state'] as const,
      registers,
      collect() {
        const { total, idle } = read()
        this.set({ state: 'idle' }, idle)
        this.set({ state: 'in_use' }, total - idle)
      },
    })
    new Gauge({
      name: 'db_pool_waiting',
      help: 'Statements and transactions waiting for a free connection of the PostgreSQL pool.',
      registers,
      collect() {
        this.set(read().waiting)
      },
    })
    new Gauge({
      name: 'db_pool_max_connections',
      help: 'Size limit of the PostgreSQL pool (DATABASE_POOL_SIZE).',
      registers,
      collect() {
        this.set(read().max)
      },
    })
  }
}
