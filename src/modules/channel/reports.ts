import type { ChannelRepository, InstanceLogRow } from '../../db/repositories/channel.js'
import type { Database, Db } from '../../db/types.js'
import { newId } from '../../db/ids.js'
import { topics } from '../../db/feed/topics.js'
import type { ReportedTool } from '../../formats/satellite-reports.js'
import { errors } from '../../http/errors.js'
import type { Clock } from '../../lib/clock.js'
import type { InstanceFacts } from './documents.js'
import type { DesiredStates } from './desired-states.js'
import { mask, maskedForms } from './masking.js'
import { hashOf } from '../installations/tool-governance.js'

/** Whether two reports name the same tools with the same definitions. */
const sameTools = (a: readonly ReportedTool[], b: readonly ReportedTool[]): boolean => {
  const key = (tools: readonly ReportedTool[]) => tools.map((tool) => `${tool.name}\n${hashOf(tool)}`).sort().join('\n')
  return a.length === b.length && key(a) === key(b)
}

/** See ChannelReports: governance around the storing of a tools report, inside its transaction. */
export type ToolsReportHook = (tx: Db, installationId: string, store: () => Promise<boolean>) => Promise<void>

export type Phase = 'starting' | 'running' | 'degraded' | 'failed' | 'stopped'

export interface ObservedInstance {
  instance_id: string
  spec_hash: string
  phase: Phase
  message?: string
  started_at?: string
}

export interface LogLine {
  at: string
  stream: 'stdout' | 'stderr' | 'event'
  text: string
}

/**
 * What satellites report: phases, tools and log lines of the instances placed on them. A report is
 * taken only about an instance of the satellite's current document — not another satellite's,
 * not one it no longer runs — and a phase only for the spec that is current: a late report about
 * a spec that changed since says nothing about what runs now.
 */
export class ChannelReports {
  constructor(private readonly deps: {
    channel: ChannelRepository; documents: DesiredStates; clock: Clock
    /** Runs transactions: a tools report is stored and governed in one. */
    database: Pick<Database, 'transaction' | 'db' | 'changes'>
    /**
     * Tool governance: wraps the storing of each tools report in the same transaction (`store`
     * answers whether the instance's list, names and definition hashes, changed), so what is held
     * is never read apart from the tools that hold it.
     */
    onTools?: ToolsReportHook
  }) {}

  async observed(satelliteId: string, instances: ObservedInstance[]): Promise<{ accepted: number; ignored: number }> {
    const current = await this.instancesOf(satelliteId)
    let accepted = 0
    const now = this.now()
    const teams = new Set<string>()
    for (const report of instances) {
      const facts = current.get(report.instance_id)
      if (facts === undefined || facts.specHash !== report.spec_hash) continue
      await this.deps.channel.putPhase({
        instanceId: report.instance_id, installationId: facts.installationId, userId: facts.userId, satelliteId,
        specRevision: facts.specRevision, specHash: facts.specHash, phase: report.phase, message: report.message ?? null,
        startedAt: report.started_at === undefined ? null : new Date(report.started_at), reportedAt: now,
      })
      teams.add(facts.teamId)
      accepted++
    }
    // The teams' lists show the phases: this instance answers with them at its next request (the
    // database's trigger tells the others, and this one too, once its notification arrives).
    for (const teamId of teams) this.deps.database.changes.tell(this.deps.database.db, topics.installations(teamId))
    return { accepted, ignored: instances.length - accepted }
  }

  async tools(satelliteId: string, instanceId: string, tools: ReportedTool[]): Promise<number> {
    const facts = await this.placed(satelliteId, instanceId)
    const reportedAt = this.now()
    await this.deps.database.transaction(async (tx) => {
      const channel = this.deps.channel.with(tx)
      const store = async (): Promise<boolean> => {
        const before = (await channel.allStatesOf(facts.installationId)).find((state) => state.instanceId === instanceId)?.tools ?? []
        await channel.putTools({
          instanceId, installationId: facts.installationId, userId: facts.userId, satelliteId, specRevision: facts.specRevision,
          specHash: facts.specHash, tools, reportedAt,
        })
        return !sameTools(before, tools)
      }
      if (this.deps.onTools === undefined) await store()
      else await this.deps.onTools(tx, facts.installationId, store)
      this.deps.database.changes.tell(tx, topics.installations(facts.teamId))
    })
    return tools.length
  }

  /** Stores lines with the instance's own secret values (and their encoded forms, masking.ts) masked first. */
  async logs(satelliteId: string, instanceId: string, lines: LogLine[]): Promise<number> {
    const facts = await this.placed(satelliteId, instanceId)
    const secrets = maskedForms(facts.maskedValues)
    const rows: InstanceLogRow[] = lines.map((line) => ({
      id: newId(), instanceId, installationId: facts.installationId, userId: facts.userId, at: new Date(line.at), stream: line.stream,
      text: mask(line.text, secrets),
    }))
    await this.deps.channel.appendLogs(instanceId, rows)
    return rows.length
  }

  private async instancesOf(satelliteId: string): Promise<Map<string, InstanceFacts>> {
    const built = await this.deps.documents.current(satelliteId)
    if (built === undefined) throw errors.unauthorized()
    return built.instances
  }

  /** An instance of the satellite's current document; 404 otherwise (another satellite's, or one it no longer runs). */
  private async placed(satelliteId: string, instanceId: string): Promise<InstanceFacts> {
    const facts = (await this.instancesOf(satelliteId)).get(instanceId)
    if (facts === undefined) throw errors.notFound('Instance')
    return facts
  }

  private now(): Date {
    return new Date(this.deps.clock.now())
  }
}
