import type { FastifyRequest } from 'fastify'
import { userCaller } from '../../http/current-user.js'
import { roleHas, type Permission, type TeamPermission } from '../../auth/permissions.js'
import type { TeamsRepository } from '../../db/repositories/teams.js'
import type { GlobalRole } from '../../auth/permissions.js'

/** The user managing satellites or their tokens, and from where (for the audit trail). */
export interface SatelliteActor {
  userId: string
  role: GlobalRole
  ip: string
}

export function satelliteActor(request: FastifyRequest): SatelliteActor {
  const caller = userCaller(request)
  return { userId: caller.userId, role: caller.role, ip: request.ip }
}

/**
 * Whether the actor may act on a satellite or token of `teamId` (null: a global one): with the
 * global permission, or with the team permission in that team. Callers answer 404 when not, so
 * that nobody learns what exists in a team they do not administer.
 */
export async function mayActOn(
  actor: SatelliteActor, teamId: string | null, permissions: { global: Permission; team: TeamPermission }, teams: TeamsRepository,
): Promise<boolean> {
  if (roleHas(actor.role, permissions.global)) return true
  if (teamId === null) return false
  const role = await teams.roleOf(actor.userId, teamId)
  return role !== null && roleHas(role, permissions.team)
}
