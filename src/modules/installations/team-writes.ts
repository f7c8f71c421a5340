import type { InstallationRow, InstallationsRepository } from '../../db/repositories/installations.js'
import type { TeamsRepository } from '../../db/repositories/teams.js'
import { topics } from '../../db/feed/topics.js'
import type { Database, Db } from '../../db/types.js'
import { errors } from '../../http/errors.js'

/**
 * How every write to a team's installations begins: one transaction that first takes the team's
 * row (so writes of one team queue, and a team deleted meanwhile is a 404, since a global admin
 * passes the route's check for any id), then the installation's row.
 */
export interface TeamWriteDeps {
  database: Database
  teams: TeamsRepository
  installations: InstallationsRepository
}

/** `write` inside a transaction that holds the team's row; the team must exist. */
export function teamTransaction<T>(deps: Pick<TeamWriteDeps, 'database' | 'teams'>, teamId: string, write: (tx: Db) => Promise<T>): Promise<T> {
  return deps.database.transaction(async (tx) => {
    // This instance's lists of the team end at the commit (the database's trigger tells the others).
    deps.database.changes.tell(tx, topics.installations(teamId))
    const teams = deps.teams.with(tx)
    await teams.lock(teamId)
    if ((await teams.find(teamId)) === undefined) throw errors.notFound('Team')
    return write(tx)
  })
}

/** The installation's row, locked for the rest of the transaction; 404 when the team has no such installation. */
export async function lockedInstallation(installations: InstallationsRepository, teamId: string, id: string, tx: Db): Promise<InstallationRow> {
  const row = await installations.with(tx).lock(teamId, id)
  if (row === undefined) throw errors.notFound('Installation')
  return row
}
