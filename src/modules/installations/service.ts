import type { ChannelRepository } from '../../db/repositories/channel.js'
import type { ConnectionStatuses } from '../../db/repositories/connection-statuses.js'
import type { ConnectionEnding } from '../../db/repositories/connections.js'
import type { DesiredStamps } from '../../db/repositories/desired-stamps.js'
import type { InstallationRow, InstallationsRepository } from '../../db/repositories/installations.js'
import type { SatellitesRepository } from '../../db/repositories/satellites.js'
import type { ServerVersionsRepository } from '../../db/repositories/server-versions.js'
import type { ServersRepository } from '../../db/repositories/servers.js'
import type { TeamsRepository } from '../../db/repositories/teams.js'
import type { Database, Db } from '../../db/types.js'
import type { Clock } from '../../lib/clock.js'
import type { AuditLog } from '../audit/service.js'
import { InstallationReads } from './installation-reads.js'
import { InstallationWrites } from './installation-writes.js'
import { InstallationMoves } from './moves.js'
import type { OAuthProbe } from './oauth-inputs.js'
import { Placement, type PlacementRules } from './placement.js'
import type { ValueBox } from './sealed-values.js'
import { ValueWrites } from './value-writes.js'

/** What the installations of teams are built from. */
export interface InstallationDeps {
  database: Database
  installations: InstallationsRepository
  servers: ServersRepository
  versions: ServerVersionsRepository
  satellites: SatellitesRepository
  teams: TeamsRepository
  /** Marks the satellites whose desired-state documents a write changes. */
  stamps: DesiredStamps
  /** What satellites reported of the instances: tools and log lines. */
  channel: ChannelRepository
  /** Whether the OAuth connections installations need are live (their status `needs_auth`); absent: none are read. */
  connectionStatuses?: ConnectionStatuses
  box: ValueBox
  audit: AuditLog
  clock: Clock
  /** The global admins' placement settings, as they are now. */
  placementRules: () => Promise<PlacementRules>
  /** Learns whether a remote server asks for OAuth sign-in (absent: no oauth inputs are derived). */
  oauth?: OAuthProbe
  /** Finds again the tools held under pinning (tools-service.ts), when pin_tools changes. */
  refreshHeld?: (tx: Db, installation: InstallationRow) => Promise<unknown>
  /** Ends connections whose oauth input is gone (or changed scope), or whose installation is deleted. */
  endConnections?: ConnectionEnding
}

/**
 * The installations of teams: what each runs, with which values, where. No Fastify types here.
 * Reads answer from the caller's point of view; writes (of installations, of their values) run
 * in the team's transaction; moves place installations no one asked to move (a satellite came
 * online, was disabled, or a setting changed what may run where).
 */
export interface InstallationService {
  reads: InstallationReads
  writes: InstallationWrites
  values: ValueWrites
  moves: InstallationMoves
}

export function createInstallationService(deps: InstallationDeps): InstallationService {
  const placement = new Placement({ installations: deps.installations, satellites: deps.satellites, rules: deps.placementRules, clock: deps.clock })
  const moves = new InstallationMoves({ ...deps, placement })
  const reads = new InstallationReads({ ...deps, placement })
  return {
    reads,
    writes: new InstallationWrites({ ...deps, placement, moves, reads }),
    values: new ValueWrites({ ...deps, reads }),
    moves,
  }
}
