import type { ReportedCall, ToolCallOutcome, ToolCallRow, ToolCallsRepository, UsageGroup, UsageRow } from '../../db/repositories/tool-calls.js'
import { errors } from '../../http/errors.js'
import type { Clock } from '../../lib/clock.js'
import type { DesiredStates } from '../channel/desired-states.js'

const HOUR_MS = 3600_000
const DAY_MS = 24 * HOUR_MS
/** Raw calls (and the batch ids that make retries count once) are kept this long. */
export const RAW_RETENTION_MS = 7 * DAY_MS
/** The longest period one usage read covers. */
export const MAX_SPAN_DAYS = 366
const DEFAULT_SPAN_MS = 7 * DAY_MS
/** How far ahead of this service's clock a call may be dated (the satellite's clock may run ahead). */
export const FUTURE_SKEW_MS = HOUR_MS

/** What the ingestion counts (Prometheus; outcome only: no team, user or tool label). */
export interface ToolCallMetrics {
  counted(outcome: ToolCallOutcome, calls: number): void
}

/** Who reads: their own calls, or (a team admin) everyone's. */
export interface UsageViewer {
  userId: string
  admin: boolean
}

export interface UsageAnswer {
  from: Date
  to: Date
  group: UsageGroup
  rows: UsageRow[]
}

/** Tool calls reported by satellites, and the usage read from them. */
export class ToolUsage {
  constructor(private readonly deps: {
    calls: ToolCallsRepository
    documents: DesiredStates
    clock: Clock
    metrics?: ToolCallMetrics
    /** Days the hourly figures are kept. */
    retentionDays: number
  }) {}

  /**
   * Takes a satellite's batch of calls of one of its instances (404 for an instance that is not in
   * its current document: another satellite's, or one it no longer runs). A batch id it posted
   * before is a duplicate and changes nothing.
   */
  async ingest(satelliteId: string, instanceId: string, batchId: string, calls: readonly ReportedCall[]): Promise<{ accepted: number; duplicate: boolean }> {
    // A call dated ahead of now, or before the hourly figures are kept, would count in a period
    // nobody has reached yet, or in one already purged: refused whole, before anything is written.
    const now = this.deps.clock.now()
    const oldest = now - this.deps.retentionDays * DAY_MS
    const outside = calls.findIndex((call) => call.at.getTime() > now + FUTURE_SKEW_MS || call.at.getTime() < oldest)
    if (outside !== -1) {
      throw errors.validation([{ field: `calls[${outside}].at`, message: `must be within the last ${this.deps.retentionDays} days and at most an hour ahead of this service's clock`, in: 'body' }])
    }
    const built = await this.deps.documents.current(satelliteId)
    if (built === undefined) throw errors.unauthorized()
    const facts = built.instances.get(instanceId)
    if (facts === undefined) throw errors.notFound('Instance')
    const teamId = await this.deps.calls.teamOfInstallation(facts.installationId)
    if (teamId === undefined) throw errors.notFound('Instance')
    const taken = await this.deps.calls.ingest({
      satelliteId, batchId, instanceId, installationId: facts.installationId, teamId, receivedAt: new Date(this.deps.clock.now()), calls,
    })
    if (!taken) return { accepted: 0, duplicate: true }
    if (this.deps.metrics !== undefined) {
      const byOutcome = new Map<ToolCallOutcome, number>()
      for (const call of calls) byOutcome.set(call.outcome, (byOutcome.get(call.outcome) ?? 0) + 1)
      for (const [outcome, count] of byOutcome) this.deps.metrics.counted(outcome, count)
    }
    return { accepted: calls.length, duplicate: false }
  }

  /** A team's usage for a period, by hour: `from` rounded down, `to` up; 400 for an empty or too long period. */
  async usage(teamId: string, viewer: UsageViewer, query: { from?: string; to?: string; group_by?: UsageGroup }): Promise<UsageAnswer> {
    const toMs = query.to === undefined ? this.deps.clock.now() : Date.parse(query.to)
    const fromMs = query.from === undefined ? toMs - DEFAULT_SPAN_MS : Date.parse(query.from)
    if (!(fromMs < toMs)) throw errors.validation([{ field: 'from', message: 'must be before `to`' }])
    if (toMs - fromMs > MAX_SPAN_DAYS * DAY_MS) throw errors.validation([{ field: 'from', message: `the period spans at most ${MAX_SPAN_DAYS} days` }])
    const from = new Date(Math.floor(fromMs / HOUR_MS) * HOUR_MS)
    const to = new Date(Math.ceil(toMs / HOUR_MS) * HOUR_MS)
    const group = query.group_by ?? 'tool'
    return { from, to, group, rows: await this.deps.calls.usage(teamId, from, to, group, viewer.admin ? null : viewer.userId) }
  }

  /** An installation's calls, newest first: all for an admin, the viewer's own otherwise; 404 for an installation of another team. */
  async calls(teamId: string, installationId: string, viewer: UsageViewer, limit: number, offset: number): Promise<{ rows: ToolCallRow[]; total: number }> {
    if ((await this.deps.calls.teamOfInstallation(installationId)) !== teamId) throw errors.notFound('Installation')
    return this.deps.calls.callsOf(installationId, viewer.admin ? null : viewer.userId, limit, offset)
  }

  /** Raw calls and batch ids older than 7 days, hourly figures older than the retention. */
  async purge(): Promise<void> {
    const now = this.deps.clock.now()
    await this.deps.calls.purge(new Date(now - RAW_RETENTION_MS), new Date(now - this.deps.retentionDays * DAY_MS))
  }
}
