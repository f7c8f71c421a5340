import { randomUUID } from 'node:crypto'
import type { ConnectionRow, ConnectionsRepository } from '../../db/repositories/connections.js'
import type { DesiredStamps } from '../../db/repositories/desired-stamps.js'
import type { Database } from '../../db/types.js'
import type { Clock } from '../../lib/clock.js'
import type { AuditLog } from '../audit/service.js'
import type { RefreshGrant } from './refresh-grant.js'
import { tokensFrom } from './token-response.js'
import type { TokensBox } from './tokens-box.js'

/** How often an instance looks for connections due for refresh. */
export const REFRESH_EVERY_MS = 15_000
/** How long a claimed connection is this instance's alone: far beyond one refresh (the outbound timeout is 5 s). */
export const REFRESH_LEASE_MS = 60_000
/** Connections claimed at once; a tick claims again while it got a full batch. */
export const REFRESH_BATCH = 50
/** Refreshes under way at once on one instance. */
const PARALLEL = 4
/** A failed refresh is tried again after this, doubling up to MAX_BACKOFF_MS. */
const FIRST_BACKOFF_MS = 30_000
const MAX_BACKOFF_MS = 60 * 60_000
/** The wait before the next attempt after the `failures`-th failure in a row. */
export const backoffMs = (failures: number): number => Math.min(MAX_BACKOFF_MS, FIRST_BACKOFF_MS * 2 ** Math.max(0, failures - 1))

export interface RefresherLogger {
  info(object: object, message: string): void
  warn(object: object, message: string): void
  error(object: object, message: string): void
}

export interface TickOutcome {
  refreshed: number
  expired: number
  postponed: number
  /** Leases that ran out before the write (another instance may have taken the row meanwhile). */
  lost: number
}

/**
 * Keeps OAuth connections' access tokens fresh. Every instance of the service ticks; each tick
 * claims the connections that are due with a lease in the database (on PostgreSQL the candidate
 * rows are locked with SKIP LOCKED, so two instances never claim the same one), refreshes them,
 * and writes the outcome only while its lease holds:
 *
 * - new tokens: written in one update (a rotated refresh token replaces the old one in the same
 *   write), the token revision grows, and the satellite running the installation has its document
 *   stamp moved in that transaction, so its held long-poll answers with the new token;
 * - `invalid_grant`: the connection is expired for good (never tried again), audited as
 *   `connection.refreshed_failed`, and the satellite's document loses the instance;
 * - anything else: tried again later, waiting longer after each failure in a row.
 *
 * Nothing it meets is thrown from a tick; no token reaches a log line.
 */
export class ConnectionRefresher {
  private timer: NodeJS.Timeout | undefined
  private running: Promise<TickOutcome> | null = null
  private stopping = false
  /** This instance's name in leases. */
  readonly owner = `refresher-${randomUUID()}`

  constructor(private readonly deps: {
    database: Database
    connections: ConnectionsRepository
    stamps: DesiredStamps
    tokens: Pick<TokensBox, 'openTokens' | 'sealTokens'>
    grant: Pick<RefreshGrant, 'refresh'>
    audit: AuditLog
    clock: Clock
    log: RefresherLogger
    everyMs?: number
    leaseMs?: number
    batch?: number
  }) {}

  /** Starts ticking; the timer does not keep the process alive. */
  start(): void {
    if (this.timer !== undefined) return
    this.timer = setInterval(() => void this.tick(), this.deps.everyMs ?? REFRESH_EVERY_MS)
    this.timer.unref()
  }

  /**
   * Stops ticking; resolves once a tick under way has finished the refreshes it began (before the
   * database closes). Connections it claimed but did not begin keep their lease until it runs out,
   * then another instance takes them.
   */
  async stop(): Promise<void> {
    clearInterval(this.timer)
    this.timer = undefined
    this.stopping = true
    await this.running
    this.stopping = false
  }

  /** One look: refreshes every connection due now. One tick at a time on this instance; never rejects. */
  tick(): Promise<TickOutcome> {
    this.running ??= this.look().finally(() => {
      this.running = null
    })
    return this.running
  }

  private async look(): Promise<TickOutcome> {
    const outcome: TickOutcome = { refreshed: 0, expired: 0, postponed: 0, lost: 0 }
    const batch = this.deps.batch ?? REFRESH_BATCH
    try {
      while (!this.stopping) {
        const claimed = await this.deps.connections.claimDue(new Date(this.deps.clock.now()), this.owner, this.deps.leaseMs ?? REFRESH_LEASE_MS, batch)
        for (let at = 0; at < claimed.length && !this.stopping; at += PARALLEL) {
          await Promise.all(claimed.slice(at, at + PARALLEL).map(async (row) => {
            const result = await this.refreshOne(row)
            outcome[result] += 1
          }))
        }
        if (claimed.length < batch) break
      }
    } catch (error) {
      this.deps.log.error({ err: error }, 'the connection refresher could not claim connections; it tries again at its next tick')
    }
    if (outcome.refreshed + outcome.expired + outcome.postponed + outcome.lost > 0) this.deps.log.info({ ...outcome }, 'connections refreshed')
    return outcome
  }

  private async refreshOne(row: ConnectionRow): Promise<keyof TickOutcome> {
    const { tokens, grant, clock, log } = this.deps
    const fields = { connection_id: row.id, installation_id: row.installationId, key: row.inputKey, issuer: row.issuer }
    const place = { installationId: row.installationId, userId: row.userId, inputKey: row.inputKey }
    try {
      const current = tokens.openTokens(place, row.sealed)
      if (current.refresh_token === undefined) {
        // Nothing to refresh with: it stays connected until its server refuses the access token.
        return (await this.write(row, { sealed: row.sealed, refreshAt: null })) ? 'refreshed' : 'lost'
      }
      const result = await grant.refresh(row, current.refresh_token)
      if (result.kind === 'refreshed') {
        // A new refresh token replaces the old one (rotation); without one the old one stays.
        const { sealedTokens, refreshAt } = tokensFrom(result.response, current.scope, current.account, new Date(clock.now()), (next) => tokens.sealTokens(place, next), current)
        return (await this.write(row, { sealed: sealedTokens, refreshAt })) ? 'refreshed' : 'lost'
      }
      if (result.kind === 'refused') {
        const expired = await this.expire(row, result.reason)
        if (expired) {
          log.info({ ...fields, reason: result.reason }, result.reason === 'invalid_grant'
            ? 'a connection expired: its authorization server refused the refresh token (invalid_grant); its owner must connect again'
            : 'a connection expired: the registration that issued its tokens is gone; its owner must connect again')
        }
        return expired ? 'expired' : 'lost'
      }
      return (await this.postpone(row, result.reason)) ? 'postponed' : 'lost'
    } catch (error) {
      // Not the server's fault (tokens that do not open, a database failure): logged, and tried again later.
      log.error({ ...fields, err: error }, 'a connection could not be refreshed')
      return (await this.postpone(row, 'an internal error').catch(() => false)) ? 'postponed' : 'lost'
    }
  }

  /** New tokens, and the document of the satellite that runs the installation moves with them. */
  private write(row: ConnectionRow, update: { sealed: string; refreshAt: Date | null }): Promise<boolean> {
    return this.deps.database.transaction(async (tx) => {
      const done = await this.deps.connections.with(tx).completeRefresh(row.id, this.owner, { ...update, now: new Date(this.deps.clock.now()) })
      if (done) await this.deps.stamps.with(tx).ofInstallations([row.installationId])
      return done
    })
  }

  private expire(row: ConnectionRow, reason: 'invalid_grant' | 'client_gone'): Promise<boolean> {
    return this.deps.database.transaction(async (tx) => {
      const done = await this.deps.connections.with(tx).markExpired(row.id, this.owner, new Date(this.deps.clock.now()))
      if (!done) return false
      await this.deps.stamps.with(tx).ofInstallations([row.installationId])
      await this.deps.audit.record('connection.refreshed_failed', {
        actorId: null, target: row.installationId,
        details: { connection_id: row.id, installation_id: row.installationId, team_id: row.teamId, user_id: row.userId, key: row.inputKey, issuer: row.issuer, reason },
      }, tx)
      return true
    })
  }

  private async postpone(row: ConnectionRow, reason: string): Promise<boolean> {
    const failures = row.failures + 1
    const wait = backoffMs(failures)
    const done = await this.deps.connections.postpone(row.id, this.owner, new Date(this.deps.clock.now() + wait), failures)
    if (done) {
      this.deps.log.warn({ connection_id: row.id, installation_id: row.installationId, key: row.inputKey, issuer: row.issuer, failures, retry_in_seconds: Math.round(wait / 1000) },
        `a connection could not be refreshed (${reason}); trying again later`)
    }
    return done
  }
}
