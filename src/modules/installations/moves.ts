import type { DesiredStamps } from '../../db/repositories/desired-stamps.js'
import type { InstallationsRepository, Unplaced } from '../../db/repositories/installations.js'
import type { SatelliteRow, SatellitesRepository } from '../../db/repositories/satellites.js'
import type { TeamsRepository } from '../../db/repositories/teams.js'
import type { Database, Db } from '../../db/types.js'
import type { Clock } from '../../lib/clock.js'
import type { AuditLog } from '../audit/service.js'
import { OFFLINE_AFTER_MS } from '../satellites/service.js'
import { dropUnapproved } from './own-values.js'
import type { Placement, PlacementRules } from './placement.js'

/** How many unplaced installations one satellite's heartbeat places at most (the rest at the next one). */
const PLACEMENTS_PER_HEARTBEAT = 100

/** A satellite as placement sees it: whose it is and how it isolates its instances. */
export type MovingSatellite = Pick<SatelliteRow, 'id' | 'teamId' | 'satelliteType' | 'isolation'>

/**
 * Installations moving without anyone asking: placed when a satellite comes online, released
 * from a global satellite that may no longer run them, placed again when their satellite is
 * disabled or deleted. Each placement runs in a transaction of its own under the team's lock, so
 * quotas are counted one placement at a time; a move drops the members' own values the new
 * satellite may not have (own-values.ts).
 */
export class InstallationMoves {
  constructor(private readonly deps: {
    database: Database
    installations: InstallationsRepository
    satellites: SatellitesRepository
    teams: TeamsRepository
    stamps: DesiredStamps
    audit: AuditLog
    clock: Clock
    placement: Placement
  }) {}

  /**
   * A satellite sent a heartbeat: first, a global satellite gives up the team servers'
   * installations it may no longer run (the setting is off, or it reports no isolation); then it
   * takes the installations waiting for it (of its team, or those of any team it may run), each
   * placed where the automatic placement puts it now.
   */
  async placeWaiting(satellite: MovingSatellite): Promise<void> {
    const rules = await this.deps.placement.rules()
    await this.releaseFrom(satellite, rules)
    await this.placeOnto(satellite, rules)
  }

  /**
   * A satellite (re-)registered or reported: a global one that may no longer run team servers
   * gives up their installations at once (placed again elsewhere, or waiting), before it can read
   * another document.
   */
  async releaseFrom(satellite: MovingSatellite, rules?: PlacementRules): Promise<void> {
    if (satellite.satelliteType !== 'global') return
    const current = rules ?? (await this.deps.placement.rules())
    if (current.teamServersOnGlobal && satellite.isolation !== 'none') return
    const reason = current.teamServersOnGlobal ? 'the satellite does not isolate its instances' : 'team servers may not run on global satellites'
    const released = await this.deps.database.transaction((tx) => this.release({ satelliteId: satellite.id }, reason, tx))
    await this.placeEach(released)
  }

  /**
   * Run in the transaction that writes `global.team_servers_on_global_satellites`: switched off,
   * every global satellite gives up the team servers' installations in that same transaction.
   * Answers what to do once it committed: place them again (or, switched on, place what waits).
   */
  async teamServersSettingWritten(allowed: boolean, tx: Db): Promise<() => Promise<void>> {
    const released = allowed ? [] : await this.release('every global satellite', 'team servers may not run on global satellites', tx)
    return () => (allowed ? this.placeAllWaiting() : this.placeEach(released))
  }

  /** A satellite was disabled: its installations are placed again the automatic way. */
  async releaseSatellite(satelliteId: string): Promise<void> {
    await this.placeEach(await this.deps.installations.unplaceFrom(satelliteId, this.now()))
  }

  /** Places whatever waits, on any online satellite (after a satellite was deleted or disabled, or a placement setting changed). */
  async placeAllWaiting(): Promise<void> {
    const rules = await this.deps.placement.rules()
    for (const satellite of await this.deps.installations.allOnline(new Date(this.deps.clock.now() - OFFLINE_AFTER_MS))) await this.placeOnto(satellite, rules)
  }

  /** The installations waiting that `satellite` may take, each placed where the automatic placement puts it. */
  private async placeOnto(satellite: MovingSatellite, rules: PlacementRules): Promise<void> {
    const intake = satellite.satelliteType === 'team' && satellite.teamId !== null
      ? { teamId: satellite.teamId }
      : { satelliteId: satellite.id, teamServers: rules.teamServersOnGlobal && satellite.isolation !== 'none', quota: rules.quotaPerGlobalSatellite }
    await this.placeEach(await this.deps.installations.unplaced(intake, PLACEMENTS_PER_HEARTBEAT), rules)
  }

  /** Places each of these unplaced installations, one transaction each, under its team's lock (quotas are counted one placement at a time). */
  private async placeEach(waiting: readonly Unplaced[], rules?: PlacementRules): Promise<void> {
    if (waiting.length === 0) return
    const current = rules ?? (await this.deps.placement.rules())
    const { installations, database } = this.deps
    for (const { id, teamId } of waiting) {
      await database.transaction(async (tx) => {
        await this.deps.teams.with(tx).lock(teamId)
        const found = await installations.with(tx).unplacedOne(id)
        if (found === undefined) return
        const satelliteId = await this.deps.placement.automatic({ teamId, visibility: found.visibility, installationId: id }, current, tx)
        if (satelliteId === null || !(await installations.with(tx).place(id, satelliteId, this.now()))) return
        await this.dropUnapprovedOn(tx, { id, teamId }, satelliteId)
        await this.deps.stamps.with(tx).satellites([satelliteId])
        await this.deps.audit.record('installation.placed', { target: id, details: { team_id: teamId, satellite_id: satelliteId } }, tx)
      })
    }
  }

  /** Unplaces the team servers' installations of global satellites that may no longer run them; their documents change with it. */
  private async release(from: { satelliteId: string } | 'every global satellite', reason: string, tx: Db): Promise<Unplaced[]> {
    const released = await this.deps.installations.with(tx).releaseTeamServers(from, this.now())
    await this.deps.stamps.with(tx).satellites(released.map((row) => row.satelliteId))
    for (const row of released) {
      await this.deps.audit.record('installation.released', { target: row.id, details: { team_id: row.teamId, satellite_id: row.satelliteId, reason } }, tx)
    }
    return released
  }

  /** The installation moved to `satelliteId`: its members' own values not approved for that satellite are dropped. */
  async dropUnapprovedOn(tx: Db, installation: { id: string; teamId: string }, satelliteId: string, actor?: { userId: string; ip: string }): Promise<void> {
    const satellite = await this.deps.satellites.with(tx).find(satelliteId)
    if (satellite === undefined) return
    await dropUnapproved(this.deps, tx, {
      installationId: installation.id, teamId: installation.teamId, satelliteId, now: this.now(),
      satellite: { type: satellite.satelliteType, publicKey: satellite.publicKey },
      ...(actor === undefined ? {} : { actor: { userId: actor.userId, ip: actor.ip } }),
    })
  }

  private now(): Date {
    return new Date(this.deps.clock.now())
  }
}
