import { errors } from './errors.js'
import type { UserCaller } from '../auth/caller.js'

/**
 * A token bound to a team at consent reaches that team only. Null for sessions and for
 * tokens bound to no team (issued before consent chose one): they reach every team of the user.
 */
export const boundTeam = (caller: UserCaller): string | null => (caller.via === 'bearer' ? (caller.teamId ?? null) : null)

/** Another team than the token's: 403, whether or not that team exists (so no existence is learnt). */
export const anotherTeam = (bound: string) =>
  errors.forbidden({ bound_team_id: bound }, 'Forbidden: this token is bound to another team; it reaches only the team chosen when it was approved.')

/** Refuses a team id that the caller's token does not reach. */
export function assertTeamInReach(caller: UserCaller, teamId: string): void {
  const bound = boundTeam(caller)
  if (bound !== null && teamId !== bound) throw anotherTeam(bound)
}

/**
 * The team a caller-wide view (`/api/users/me/mcp/*`) answers for: the one asked for, narrowed to
 * the token's team. Asking for another team explicitly is refused (403) rather than answered
 * empty, so that a client with the wrong token learns why instead of seeing nothing.
 */
export function teamWithinReach(caller: UserCaller, requested: string | undefined): string | undefined {
  const bound = boundTeam(caller)
  if (bound === null) return requested
  if (requested !== undefined && requested !== bound) throw anotherTeam(bound)
  return bound
}
