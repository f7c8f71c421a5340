import type { ChannelRepository } from '../../db/repositories/channel.js'
import type { DesiredStamps } from '../../db/repositories/desired-stamps.js'
import type { SatellitesRepository } from '../../db/repositories/satellites.js'
import type { Database } from '../../db/types.js'
import type { Clock } from '../../lib/clock.js'
import type { AuditLog } from '../audit/service.js'
import type { ValueBox } from '../installations/sealed-values.js'
import { DesiredStates } from './desired-states.js'
import type { BuildDeps } from './documents.js'
import { ChannelReports, type ToolsReportHook } from './reports.js'

/** The satellite control channel: documents and their long-polls, and reports. */
export class Channel {
  readonly documents: DesiredStates
  readonly reports: ChannelReports

  constructor(private readonly deps: {
    database: Database; channel: ChannelRepository; satellites: SatellitesRepository; stamps: DesiredStamps; box: ValueBox; specKey: Buffer; audit: AuditLog; clock: Clock
    /** Where an instance that could not be resolved for an unexpected reason is logged. */
    log?: BuildDeps['log']
    /** The OAuth connections whose access tokens instances send. */
    connections?: BuildDeps['connections']
    /** Tool governance, told after each tools report (see ChannelReports). */
    onTools?: ToolsReportHook
  }) {
    this.documents = new DesiredStates({
      feed: deps.database.changes, channel: deps.channel, box: deps.box, specKey: deps.specKey, clock: deps.clock, log: deps.log, connections: deps.connections,
    })
    this.reports = new ChannelReports({ database: deps.database, channel: deps.channel, documents: this.documents, clock: deps.clock, onTools: deps.onTools })
  }

  close(): void {
    this.documents.close()
  }
}
