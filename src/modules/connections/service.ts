import type { UserActor } from '../../auth/caller.js'
import type { ConnectionFilter, ConnectionRow, ConnectionsRepository, EndingReason } from '../../db/repositories/connections.js'
import type { DesiredStamps } from '../../db/repositories/desired-stamps.js'
import type { InstallationsRepository } from '../../db/repositories/installations.js'
import type { TeamsRepository } from '../../db/repositories/teams.js'
import type { Database, Db } from '../../db/types.js'
import { errors } from '../../http/errors.js'
import type { AuditLog } from '../audit/service.js'
import type { Revoker } from './revocation.js'
import type { ConnectionTokens, TokensBox } from './tokens-box.js'

/** A connection as its owner (or a team admin, for the team's) sees it: never a token. */
export interface ConnectionView {
  key: string
  scope: 'team' | 'user'
  status: 'connected' | 'expired' | 'missing'
  account: string | null
  scopes: string[]
  expires_at: string | null
  connected_at: string | null
}

export interface MyConnectionView extends Omit<ConnectionView, 'scope'> {
  installation_id: string
  team_id: string
  scope: 'team' | 'user'
}


/**
 * Reading and ending connections. Endings read and delete the rows inside the caller's
 * transaction, and answer what to do after it commits: revoke the tokens upstream (best effort),
 * so a rolled-back ending revokes nothing.
 */
export class ConnectionService {
  constructor(private readonly deps: {
    database: Database
    connections: ConnectionsRepository
    installations: InstallationsRepository
    teams: TeamsRepository
    stamps: DesiredStamps
    box: TokensBox
    revoker: Revoker
    audit: AuditLog
  }) {}

  /** For each oauth input of the installation: the caller's own connection (user scope) or the team's. */
  async forInstallation(teamId: string, installationId: string, actor: UserActor): Promise<ConnectionView[]> {
    const detail = await this.deps.installations.find(teamId, installationId)
    if (detail === undefined) throw errors.notFound('Installation')
    const rows = await this.deps.connections.ofInstallation(installationId, [actor.userId, 'team'])
    return detail.installation.inputs.filter((input) => input.kind === 'oauth').map((input) => {
      const owner = input.scope === 'team' ? 'team' : actor.userId
      const row = rows.find((candidate) => candidate.inputKey === input.key && candidate.owner === owner)
      return row === undefined
        ? { key: input.key, scope: input.scope, status: 'missing', account: null, scopes: [], expires_at: null, connected_at: null }
        : this.view(row, input.scope)
    })
  }

  /** The caller's own connections, every team. */
  async mine(userId: string, teamId?: string): Promise<MyConnectionView[]> {
    const rows = (await this.deps.connections.ofUser(userId)).filter((row) => teamId === undefined || row.teamId === teamId)
    return rows.map((row) => ({ installation_id: row.installationId, team_id: row.teamId, ...this.view(row, 'user') }))
  }

  /** Forgets one connection: the caller's own (user scope), or the team's (a team admin). */
  async delete(teamId: string, installationId: string, key: string, actor: UserActor): Promise<void> {
    const detail = await this.deps.installations.find(teamId, installationId)
    if (detail === undefined) throw errors.notFound('Installation')
    const input = detail.installation.inputs.find((candidate) => candidate.kind === 'oauth' && candidate.key === key)
    if (input === undefined) throw errors.notFound('Connection')
    if (input.scope === 'team' && !actor.isGlobalAdmin && (await this.deps.teams.roleOf(actor.userId, teamId)) !== 'team_admin') {
      throw errors.forbidden({ required_permission: 'team.installations.manage' }, 'Forbidden: a team connection is removed by a team admin.')
    }
    const owner = input.scope === 'team' ? 'team' : actor.userId
    const after = await this.deps.database.transaction(async (tx) => {
      const ended = await this.end({ installationId, inputKey: key, owner }, 'deleted', tx, actor)
      if (ended.count === 0) throw errors.notFound('Connection')
      return ended.after
    })
    await after()
  }

  /**
   * The ending hook of the other modules (a member leaving, an installation, user or team deleted):
   * run inside their transaction, it deletes the connections (and pending sign-ins) `filter`
   * names, audits each, moves the satellites' documents on, and answers the revocation to run
   * after the commit.
   */
  async end(filter: ConnectionFilter, reason: EndingReason, tx: Db, actor?: Partial<UserActor>): Promise<{ count: number; after: () => Promise<void> }> {
    const connections = this.deps.connections.with(tx)
    await connections.deleteFlows({ userId: filter.userId, teamId: filter.teamId, installationId: filter.installationId })
    const rows = await connections.delete(filter)
    if (rows.length > 0) {
      const satellites = await connections.satellitesOf([...new Set(rows.map((row) => row.installationId))])
      await this.deps.stamps.with(tx).satellites(satellites)
    }
    for (const row of rows) {
      await this.deps.audit.record('connection.deleted', {
        actorId: actor?.userId ?? null, ip: actor?.ip ?? null, target: row.id,
        details: { team_id: row.teamId, installation_id: row.installationId, key: row.inputKey, issuer: row.issuer, owner: row.userId === null ? 'team' : row.userId, reason },
      }, tx)
    }
    return { count: rows.length, after: () => this.deps.revoker.revokeAll(rows) }
  }

  private view(row: ConnectionRow, scope: 'team' | 'user'): ConnectionView {
    let tokens: ConnectionTokens | null = null
    try {
      tokens = this.deps.box.openTokens({ installationId: row.installationId, userId: row.userId, inputKey: row.inputKey }, row.sealed)
    } catch {
      // Sealed under another secret (a rotation not run): shown without its details.
    }
    return {
      key: row.inputKey, scope, status: row.status, account: tokens?.account ?? null,
      scopes: tokens === null || tokens.scope === '' ? [] : tokens.scope.split(' '),
      expires_at: tokens?.expires_at ?? null, connected_at: row.connectedAt.toISOString(),
    }
  }
}
