import type { ChannelRepository } from '../../db/repositories/channel.js'
import type { DesiredStamps } from '../../db/repositories/desired-stamps.js'
import type { SatellitesRepository } from '../../db/repositories/satellites.js'
import type { Database } from '../../db/types.js'
import { errors } from '../../http/errors.js'
import type { Clock } from '../../lib/clock.js'
import type { AuditLog } from '../audit/service.js'
import type { ValueBox } from '../installations/sealed-values.js'
import { isUsablePublicKey } from '../satellites/sealing.js'
import { DesiredStates } from './desired-states.js'
import type { BuildDeps } from './documents.js'
import { ChannelReports } from './reports.js'

/** The satellite control channel: documents and their long-polls, reports, and the key secrets are sealed to. */
export class Channel {
  readonly documents: DesiredStates
  readonly reports: ChannelReports

  constructor(private readonly deps: {
    database: Database; channel: ChannelRepository; satellites: SatellitesRepository; stamps: DesiredStamps; box: ValueBox; specKey: Buffer; audit: AuditLog; clock: Clock
    /** Where an instance that could not be resolved for an unexpected reason is logged. */
    log?: BuildDeps['log']
  }) {
    this.documents = new DesiredStates({ feed: deps.database.changes, channel: deps.channel, box: deps.box, specKey: deps.specKey, clock: deps.clock, log: deps.log })
    this.reports = new ChannelReports({ channel: deps.channel, documents: this.documents, clock: deps.clock })
  }

  /** Replaces the satellite's public key; its document is sealed to the new one from the next read. */
  async setPublicKey(satelliteId: string, publicKey: string): Promise<void> {
    if (!(await isUsablePublicKey(publicKey))) throw errors.validation([{ field: 'public_key', message: 'is not an X25519 public key', in: 'body' }])
    const { database, satellites, stamps, audit } = this.deps
    await database.transaction(async (tx) => {
      if (!(await satellites.with(tx).setPublicKey(satelliteId, publicKey, new Date(this.deps.clock.now())))) throw errors.unauthorized()
      await stamps.with(tx).satellites([satelliteId])
      await audit.record('satellite.public_key_changed', { target: satelliteId }, tx)
    })
  }

  close(): void {
    this.documents.close()
  }
}
