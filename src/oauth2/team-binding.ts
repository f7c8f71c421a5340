import type { OAuthDeps } from './deps.js'

/**
 * Whether a grant's team still stands behind it: the user is a member of the team the grant (and
 * every token of it) names. Satellites decide access from `team_id`, so a token says nothing about
 * a team its user has left or that is gone. A global admin is no exception: the consent page binds
 * a grant only to a team the user is a member of, and the binding holds only as long as that
 * membership. A grant without a team (none was chosen) has nothing to lose.
 */
export async function teamStillHeld(deps: Pick<OAuthDeps, 'teams'>, userId: string, teamId: string | null): Promise<boolean> {
  return teamId === null || (await deps.teams.roleOf(userId, teamId)) !== null
}
