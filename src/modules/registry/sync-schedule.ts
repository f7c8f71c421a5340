import { AppError } from '../../http/errors.js'
import type { Clock } from '../../lib/clock.js'
import type { SettingsService } from '../settings/service.js'
import { SYNC_INTERVAL_SETTING, UPSTREAM_URL_SETTING, type RegistrySync } from './sync.js'
import type { SyncStateRepository } from './sync-state.js'

/** How often the interval's timer looks whether a run is due. */
export const SYNC_CHECK_EVERY_MS = 60_000
/** After a failed scheduled run, this instance waits at most this long (less when the interval is shorter) before trying again. */
export const SYNC_RETRY_AFTER_FAILURE_MS = 10 * 60_000

export interface SyncLogger {
  info(object: object, message: string): void
  warn(object: object, message: string): void
}

/**
 * Runs the sync on its own when `catalogue.registry_sync_interval_minutes` is above 0 and the
 * last successful run is older than that. Every instance looks, but a run takes the same lease as
 * one asked for by hand, so one instance runs it. Nothing it meets is thrown: a run in progress
 * elsewhere is noted at info, a failure logged as a warning, and this instance tries again after
 * the interval or SYNC_RETRY_AFTER_FAILURE_MS, whichever comes first.
 */
export class RegistrySyncSchedule {
  private timer: NodeJS.Timeout | undefined
  private running: Promise<ScheduledOutcome> | null = null
  private lastFailureAt = Number.NEGATIVE_INFINITY

  constructor(private readonly deps: {
    sync: RegistrySync
    settings: SettingsService
    state: SyncStateRepository
    clock: Clock
    log: SyncLogger
    /** How often to look (SYNC_CHECK_EVERY_MS); tests look more often. */
    everyMs?: number
  }) {}

  /** Starts looking; the timer does not keep the process alive. */
  start(): void {
    if (this.timer !== undefined) return
    this.timer = setInterval(() => void this.tick(), this.deps.everyMs ?? SYNC_CHECK_EVERY_MS)
    this.timer.unref()
  }

  stop(): void {
    clearInterval(this.timer)
    this.timer = undefined
  }

  /** Looks once: runs the sync when it is due. Never rejects. */
  tick(): Promise<ScheduledOutcome> {
    // One look at a time on this instance: a slow run is not joined by the next minute's look.
    this.running ??= this.look().finally(() => {
      this.running = null
    })
    return this.running
  }

  private async look(): Promise<ScheduledOutcome> {
    const { settings, state, clock, log, sync } = this.deps
    try {
      const minutes = await settings.get(SYNC_INTERVAL_SETTING)
      if (minutes <= 0 || (await settings.get(UPSTREAM_URL_SETTING)).trim() === '') return 'off'
      const intervalMs = minutes * 60_000
      const now = clock.now()
      if (now - this.lastFailureAt < Math.min(intervalMs, SYNC_RETRY_AFTER_FAILURE_MS)) return 'not_due'
      const { lastSyncedAt } = await state.read()
      if (lastSyncedAt !== null && now - lastSyncedAt.getTime() < intervalMs) return 'not_due'
      const outcome = await sync.run(null)
      log.info({ counts: outcome.counts, pages: outcome.pages, next_since: outcome.next_since }, 'scheduled sync from the upstream registry finished')
      return 'synced'
    } catch (error) {
      if (error instanceof AppError && error.code === 'SYNC_IN_PROGRESS') {
        log.info({ code: error.code }, 'scheduled sync skipped: another run holds the lease')
        return 'busy'
      }
      this.lastFailureAt = clock.now()
      if (error instanceof AppError) log.warn({ code: error.code }, `scheduled sync from the upstream registry failed: ${error.message}`)
      else log.warn({ err: error }, 'scheduled sync from the upstream registry failed')
      return 'failed'
    }
  }
}

export type ScheduledOutcome = 'off' | 'not_due' | 'synced' | 'busy' | 'failed'
