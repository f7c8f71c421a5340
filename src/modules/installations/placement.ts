import type { InstallationsRepository, SatelliteLoad } from '../../db/repositories/installations.js'
import type { SatellitesRepository } from '../../db/repositories/satellites.js'
import type { Db } from '../../db/types.js'
import { errors } from '../../http/errors.js'
import type { Clock } from '../../lib/clock.js'
import { OFFLINE_AFTER_MS } from '../satellites/service.js'

/**
 * Where an installation may run. A team's own satellites run anything of the team. A global
 * satellite runs every team's instances side by side, so a server a team defined itself (code
 * nobody else reviewed) goes there only when a global admin allows it and the satellite keeps
 * its instances apart (isolation other than `none`); and no team may fill one: it places at most
 * a quota of installations on each.
 *
 * The quota counts installations, not instances: a per-user installation counts once however many
 * members run their own instance of it. Placement decides where an installation goes when it is
 * created, moved or placed again; members joining or setting their values add instances without
 * placing anything, and a quota that such ordinary changes could overrun after the fact would
 * leave nothing sensible to do about it.
 */

/** The global admins' choices that placement follows (settings `global.team_servers_on_global_satellites` and `global.team_quota_per_global_satellite`). */
export interface PlacementRules {
  teamServersOnGlobal: boolean
  quotaPerGlobalSatellite: number
}

export type ServerVisibility = 'global' | 'team'

/** What placement needs to know of a satellite. */
export interface PlacementSatellite {
  name: string
  satelliteType: 'global' | 'team'
  isolation: 'none' | 'process-sandbox' | 'container'
}

/** Why a server of this visibility may not run on this satellite (a sentence), or null when it may. */
export function refusal(visibility: ServerVisibility, satellite: PlacementSatellite, rules: PlacementRules): string | null {
  if (satellite.satelliteType !== 'global' || visibility === 'global') return null
  if (!rules.teamServersOnGlobal) {
    return `${satellite.name} is a global satellite, and team-defined servers run only on the team's own satellites (a global admin may allow them on global satellites that isolate their instances)`
  }
  if (satellite.isolation === 'none') {
    return `the global satellite ${satellite.name} does not isolate its instances (isolation: none), and team-defined servers run on a global satellite only when it does`
  }
  return null
}

/** Why an installation waits unplaced, as its readers are told. */
export function unplacedReason(visibility: ServerVisibility, rules: PlacementRules): string {
  const quota = `${rules.quotaPerGlobalSatellite} installation${rules.quotaPerGlobalSatellite === 1 ? '' : 's'} per team on each`
  if (visibility === 'team' && !rules.teamServersOnGlobal) {
    return "No satellite of the team is online; team-defined servers do not run on shared satellites. It is placed as soon as one of the team's satellites is online."
  }
  if (visibility === 'team') {
    return `No satellite of the team is online, nor a global satellite that isolates its instances and has room for the team (${quota}). It is placed as soon as one is.`
  }
  return `No satellite runs it yet: it is placed as soon as one of the team's satellites, or a global one with room for the team (${quota}), is online.`
}

/** Which installation is placed: of which team, of a server of which visibility, and its id when it exists (it is not counted against its own move). */
export interface Placing {
  teamId: string
  visibility: ServerVisibility
  installationId?: string
}

const byLoad = (a: SatelliteLoad, b: SatelliteLoad) => a.installations - b.installations || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0)

export class Placement {
  constructor(private readonly deps: {
    installations: InstallationsRepository
    satellites: SatellitesRepository
    rules: () => Promise<PlacementRules>
    clock: Clock
  }) {}

  rules(): Promise<PlacementRules> {
    return this.deps.rules()
  }

  /**
   * A satellite asked for by id: the team's or a global one (another team's is 404), enabled
   * (400), allowed for the server (400 saying why) and, when global, with room under the team's
   * quota (409 SATELLITE_QUOTA_EXCEEDED). Null or absent: the automatic placement. `rules` are
   * read before the transaction (a settings read may need a connection of its own).
   */
  async choose(placing: Placing, satelliteId: string | null | undefined, rules: PlacementRules, tx: Db): Promise<string | null> {
    if (satelliteId === undefined || satelliteId === null) return this.automatic(placing, rules, tx)
    const satellite = await this.deps.satellites.with(tx).find(satelliteId)
    if (satellite === undefined || (satellite.satelliteType === 'team' && satellite.teamId !== placing.teamId)) throw errors.notFound('Satellite')
    if (satellite.disabledAt !== null) throw invalidSatellite(`the satellite ${satellite.name} is disabled`)
    const refused = refusal(placing.visibility, satellite, rules)
    if (refused !== null) throw invalidSatellite(refused)
    if (satellite.satelliteType === 'global') {
      const placed = await this.deps.installations.with(tx).teamCountOn(satellite.id, placing.teamId, placing.installationId)
      if (placed >= rules.quotaPerGlobalSatellite) {
        throw errors.conflict('SATELLITE_QUOTA_EXCEEDED',
          `The team has ${placed} installation${placed === 1 ? '' : 's'} on the global satellite ${satellite.name}, its quota there (global.team_quota_per_global_satellite = ${rules.quotaPerGlobalSatellite}); ` +
          "choose another satellite, one of the team's own, or none for the automatic placement.")
      }
    }
    return satellite.id
  }

  /**
   * The online satellite of the team with the fewest installations (ties by id), else such a
   * global satellite among those the server may run on and that have room for the team; null
   * when there is none.
   */
  async automatic(placing: Placing, rules: PlacementRules, tx: Db): Promise<string | null> {
    const online = await this.deps.installations.with(tx).onlineSatellites(placing.teamId, new Date(this.deps.clock.now() - OFFLINE_AFTER_MS), placing.installationId)
    const own = online.filter((satellite) => satellite.satelliteType === 'team' && satellite.teamId === placing.teamId)
    const shared = online.filter((satellite) => satellite.satelliteType === 'global'
      && refusal(placing.visibility, satellite, rules) === null && satellite.ofTeam < rules.quotaPerGlobalSatellite)
    return (own.sort(byLoad)[0] ?? shared.sort(byLoad)[0])?.id ?? null
  }
}

const invalidSatellite = (message: string) => errors.validation([{ field: 'satellite_id', message, in: 'body' }])
