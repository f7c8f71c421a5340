import type { InstallationsRepository } from '../../db/repositories/installations.js'
import type { Db } from '../../db/types.js'
import type { AuditLog } from '../audit/service.js'
import { keyFingerprint } from '../satellites/fingerprint.js'

/**
 * A member's own values (of user-scoped inputs, such as a personal token) reach a satellite only
 * where the member agreed to: a global satellite, which the service's operators run for every
 * team, or the satellite whose public key the member's value was set for (its fingerprint is
 * kept with the value). A team's own satellite is run by the team's admins: without this rule an
 * admin could move a per-user installation to a satellite they just registered, or re-key one,
 * and have every member's token sealed to a private key they hold.
 */

/** The satellite a value would be sealed to: its kind and public key. */
export interface SealingSatellite {
  type: 'global' | 'team'
  publicKey: string | null
}

/** A member's value row as far as this rule reads it. */
export interface OwnValue {
  /** False once dropped by a move (the row stays, empty, so the member is told). */
  held: boolean
  approvedKey: string | null
}

/**
 * Whether a member's value may be used on `satellite` (null: unplaced, nothing is sealed yet).
 * `fingerprint`: the satellite key's, when the caller has it already.
 */
export function usableOn(value: OwnValue, satellite: SealingSatellite | null, fingerprint = satellite === null ? null : keyFingerprint(satellite.publicKey)): boolean {
  if (!value.held) return false
  if (satellite === null || satellite.type === 'global') return true
  return value.approvedKey !== null && value.approvedKey === fingerprint
}

/** What a member's value records when they set it: the key of the satellite it would be sealed to now. */
export const approvalFor = (satellite: SealingSatellite | null): string | null => (satellite === null ? null : keyFingerprint(satellite.publicKey))

/**
 * An installation moved to `satellite`: the members' own values that may not be used there are
 * dropped (emptied, so that each member is told and sets them again), in the move's transaction,
 * and the drop is audited with the keys only.
 */
export async function dropUnapproved(
  deps: { installations: InstallationsRepository; audit: AuditLog },
  tx: Db,
  move: { installationId: string; teamId: string; satelliteId: string; satellite: SealingSatellite; now: Date; actor?: { userId: string; ip: string } },
): Promise<void> {
  if (move.satellite.type === 'global') return
  const fingerprint = keyFingerprint(move.satellite.publicKey)
  const rows = deps.installations.with(tx)
  const dropped = new Map<string, string[]>()
  for (const row of await rows.allValuesOf(move.installationId)) {
    if (row.userId === null) continue
    const held = row.value !== null || row.sealed !== null
    if (!held || usableOn({ held, approvedKey: row.approvedKey }, move.satellite, fingerprint)) continue
    await rows.dropValue(move.installationId, row.userId, row.key, move.now)
    dropped.set(row.userId, [...(dropped.get(row.userId) ?? []), row.key])
  }
  if (dropped.size === 0) return
  await deps.audit.record('installation.own_values_dropped', {
    actorId: move.actor?.userId ?? null, ip: move.actor?.ip ?? null, target: move.installationId,
    details: {
      team_id: move.teamId, satellite_id: move.satelliteId,
      members: [...dropped].map(([userId, keys]) => ({ user_id: userId, keys })),
    },
  }, tx)
}
