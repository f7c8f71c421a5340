import type { UserActor } from '../../auth/caller.js'
import type { DesiredStamps } from '../../db/repositories/desired-stamps.js'
import type { InstallationsRepository } from '../../db/repositories/installations.js'
import type { SatellitesRepository } from '../../db/repositories/satellites.js'
import type { TeamsRepository } from '../../db/repositories/teams.js'
import type { Database, Db } from '../../db/types.js'
import type { InstallationInput } from '../../formats/installation-inputs.js'
import { errors } from '../../http/errors.js'
import type { Clock } from '../../lib/clock.js'
import type { AuditLog } from '../audit/service.js'
import type { InstallationReads } from './installation-reads.js'
import { approvalFor } from './own-values.js'
import type { ValueBox } from './sealed-values.js'
import type { InstallationView } from './schemas.js'
import { lockedInstallation, teamTransaction } from './team-writes.js'
import { checkValues, type ValueMap } from './values.js'

/**
 * Setting the values of an installation's inputs: the team's (team-scoped keys) and a member's
 * own (user-scoped keys). Each write checks every key first and writes all or nothing, in the
 * team's transaction (team-writes.ts); it changes what the satellite runs, so the document moves.
 */
export class ValueWrites {
  constructor(private readonly deps: {
    database: Database
    installations: InstallationsRepository
    satellites: SatellitesRepository
    teams: TeamsRepository
    /** Marks the satellites whose desired-state documents a write changes. */
    stamps: DesiredStamps
    box: ValueBox
    audit: AuditLog
    clock: Clock
    /** What a write answers: the installation (or the caller's values) as the caller reads it now. */
    reads: Pick<InstallationReads, 'get' | 'myValues'>
  }) {}

  /** The team's values (team-scoped keys), all or nothing. */
  async setValues(teamId: string, id: string, values: ValueMap, actor: UserActor): Promise<InstallationView> {
    await teamTransaction(this.deps, teamId, async (tx) => {
      const current = await lockedInstallation(this.deps.installations, teamId, id, tx)
      const problems = checkValues(current.inputs, values, 'team')
      if (problems.length > 0) throw errors.validation(problems)
      if (Object.keys(values).length === 0) return
      await writeValues(this.deps, tx, id, null, current.inputs, values, this.now(), null)
      await this.deps.stamps.with(tx).satellites([current.satelliteId])
      await this.deps.installations.with(tx).update(id, {}, { respec: true, now: this.now() })
      await this.deps.audit.record('installation.values_set', {
        actorId: actor.userId, ip: actor.ip, target: id, details: { team_id: teamId, ...keysOf(values) },
      }, tx)
    })
    return this.deps.reads.get(teamId, id, actor)
  }

  /** The caller's own values of user-scoped keys; only a member of the team has any. */
  async setMyValues(teamId: string, id: string, values: ValueMap, actor: UserActor): Promise<InstallationView['inputs']> {
    await teamTransaction(this.deps, teamId, async (tx) => {
      if ((await this.deps.teams.with(tx).roleOf(actor.userId, teamId)) === null) {
        throw errors.forbidden({ required_role: 'team member' }, 'Forbidden: only members of the team set their own values.')
      }
      const current = await lockedInstallation(this.deps.installations, teamId, id, tx)
      const problems = checkValues(current.inputs, values, 'user')
      if (problems.length > 0) throw errors.validation(problems)
      if (Object.keys(values).length === 0) return
      // The member approves the satellite the installation is on now: their values are sealed to its key only (or to a global satellite).
      const satellite = current.satelliteId === null ? undefined : await this.deps.satellites.with(tx).find(current.satelliteId)
      const approved = approvalFor(satellite === undefined ? null : { type: satellite.satelliteType, publicKey: satellite.publicKey })
      await writeValues(this.deps, tx, id, actor.userId, current.inputs, values, this.now(), approved)
      await this.deps.stamps.with(tx).satellites([current.satelliteId])
      await this.deps.installations.with(tx).update(id, {}, { respec: true, now: this.now() })
      await this.deps.audit.record('installation.my_values_set', {
        actorId: actor.userId, ip: actor.ip, target: id, details: { team_id: teamId, ...keysOf(values) },
      }, tx)
    })
    return this.deps.reads.myValues(teamId, id, actor)
  }

  private now(): Date {
    return new Date(this.deps.clock.now())
  }
}

/**
 * Writes checked values: null unsets; a secret input's value is sealed to its place.
 * `approvedKey`: a member's, the satellite key they set it for.
 */
export async function writeValues(
  deps: { installations: InstallationsRepository; box: ValueBox },
  tx: Db, installationId: string, userId: string | null, inputs: readonly InstallationInput[], values: ValueMap, now: Date, approvedKey: string | null,
): Promise<void> {
  const installations = deps.installations.with(tx)
  for (const [key, value] of Object.entries(values)) {
    if (value === null) {
      await installations.deleteValue(installationId, userId, key)
      continue
    }
    const secret = inputs.find((input) => input.key === key)?.secret ?? true
    await installations.putValue({
      installationId, userId, key, updatedAt: now, approvedKey,
      value: secret ? null : value,
      sealed: secret ? deps.box.seal(value, { installationId, userId, key }) : null,
    })
  }
}

/** The audit details of a values write: which keys were set and which unset, never a value. */
const keysOf = (values: ValueMap) => ({
  set: Object.keys(values).filter((key) => values[key] !== null),
  unset: Object.keys(values).filter((key) => values[key] === null),
})
