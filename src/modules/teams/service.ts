import type { UserActor } from '../../auth/caller.js'
import type { TeamRole } from '../../auth/permissions.js'
import { asOwnDefaultTeam, type CallerTeam, type TeamRow, type TeamsRepository, type TeamWithCount } from '../../db/repositories/teams.js'
import type { UsersRepository } from '../../db/repositories/users.js'
import type { ConnectionEnding } from '../../db/repositories/connections.js'
import type { Database, Db } from '../../db/types.js'
import { AppError, errors } from '../../http/errors.js'
import type { Clock } from '../../lib/clock.js'
import type { AuditEntry, AuditLog } from '../audit/service.js'
import type { SettingsService } from '../settings/service.js'

/** Who was added, and whether the caller named them by email (they typed the address). */
export interface AddedMember {
  userId: string
  byEmail: boolean
}

export interface TeamView extends TeamWithCount {
  role: TeamRole | null
}

const defaultTeam = (what: string) => errors.conflict('DEFAULT_TEAM', `A default team cannot be ${what}.`)
const notMember = () => errors.notFound('Member')

/** Teams, membership and ownership. No Fastify types here. */
export class TeamService {
  constructor(private readonly deps: {
    database: Database; teams: TeamsRepository; users: UsersRepository; settings: SettingsService; audit: AuditLog; clock: Clock
    /** Ends connections to remote servers (a member leaving, a team deleted); revocation runs after the commit. */
    endConnections?: ConnectionEnding
    /** Seats the team's pending invitations hold (they count against `team.member_limit`), read inside the transaction. */
    pendingSeats?: (teamId: string, tx: Db) => Promise<number>
  }) {}

  /** Ends the connections `filter` names inside `tx`; answers what to run after the commit. */
  private async endConnections(filter: Parameters<ConnectionEnding>[0], reason: Parameters<ConnectionEnding>[1], tx: Db): Promise<() => Promise<void>> {
    return this.deps.endConnections === undefined ? async () => {} : this.deps.endConnections(filter, reason, tx)
  }

  forUser(userId: string): Promise<CallerTeam[]> {
    return this.deps.teams.forUser(userId)
  }

  /** `carried`: the default team the credential lookup already read (then no query is made). */
  async defaultOf(userId: string, carried?: TeamRow | null): Promise<CallerTeam> {
    if (carried !== undefined && carried !== null) return asOwnDefaultTeam(carried)
    const team = await this.deps.teams.defaultOf(userId)
    if (team === undefined) throw errors.notFound('Default team')
    return team
  }

  /** Membership was checked by the route policy (a non-member got 404 there). */
  async get(teamId: string, actor: UserActor): Promise<TeamView> {
    const team = await this.deps.teams.find(teamId)
    if (team === undefined) throw errors.notFound('Team')
    return { ...team, role: await this.deps.teams.roleOf(actor.userId, teamId) }
  }

  /** The caller owns it and is its team_admin. At most `team.creation_limit` non-default teams. */
  async create(actor: UserActor, input: { name: string; description?: string }): Promise<TeamView> {
    const { database, teams, settings } = this.deps
    const limit = await settings.get('team.creation_limit')
    const id = await database.transaction(async (tx) => {
      const txTeams = teams.with(tx)
      await txTeams.lockOwner(actor.userId)
      if ((await txTeams.countOwnedNonDefault(actor.userId)) >= limit) {
        throw errors.conflict('TEAM_LIMIT_REACHED', `You may own at most ${limit} teams besides your default team.`)
      }
      const team = await txTeams.create({ ownerId: actor.userId, name: input.name, description: input.description ?? null, isDefault: false }, this.now())
      await this.deps.audit.record('team.created', teamEvent(actor, team.id, { name: team.name }), tx)
      return team.id
    })
    return this.get(id, actor)
  }

  async update(teamId: string, patch: { name?: string; description?: string | null }, actor: UserActor): Promise<TeamView> {
    const team = await this.existing(teamId)
    if (team.isDefault && patch.name !== undefined && patch.name !== team.name) throw defaultTeam('renamed')
    await this.deps.teams.update(teamId, patch, this.now())
    return this.get(teamId, actor)
  }

  async delete(teamId: string, actor: UserActor): Promise<void> {
    let revoke = async () => {}
    await this.inTeam(teamId, async (txTeams, team, tx) => {
      if (team.isDefault) throw defaultTeam('deleted')
      if (team.ownerId !== actor.userId && !actor.isGlobalAdmin) throw onlyOwner()
      revoke = await this.endConnections({ teamId }, 'team_deleted', tx)
      await txTeams.delete(teamId)
      await this.deps.audit.record('team.deleted', teamEvent(actor, teamId, { name: team.name, owner_id: team.ownerId }), tx)
    })
    await revoke()
  }

  members(teamId: string) {
    return this.deps.teams.members(teamId)
  }

  /** Existing users only, by email or username; at most `team.member_limit` members, pending invitations included. */
  async addMember(teamId: string, login: string, role: TeamRole, actor: UserActor): Promise<AddedMember> {
    const { database, teams, users, settings } = this.deps
    const limit = await settings.get('team.member_limit')
    const user = await users.findByLogin(login)
    if (user === undefined) throw errors.notFound('User')
    await this.inTeam(teamId, async (txTeams, team, tx) => {
      if (team.isDefault) throw defaultTeam('given other members')
      if ((await txTeams.roleOf(user.id, teamId)) !== null) {
        throw errors.conflict('ALREADY_MEMBER', 'This user is already a member of the team.')
      }
      // A user deleted meanwhile is not found, on either dialect; the lock keeps them until commit.
      if (!(await users.with(tx).lockUser(user.id))) throw errors.notFound('User')
      if ((await txTeams.countMembers(teamId)) + (await this.deps.pendingSeats?.(teamId, tx) ?? 0) >= limit) {
        throw errors.conflict('MEMBER_LIMIT_REACHED', `A team may have at most ${limit} members, pending invitations included.`)
      }
      if (!(await txTeams.addMember(teamId, user.id, role, this.now()))) {
        throw errors.conflict('ALREADY_MEMBER', 'This user is already a member of the team.')
      }
      await this.deps.audit.record('team.member_added', teamEvent(actor, teamId, { user_id: user.id, role }), tx)
    }, database)
    return { userId: user.id, byEmail: login.includes('@') }
  }

  /** The owner stays team_admin, and the last team_admin cannot be demoted. */
  async changeRole(teamId: string, userId: string, role: TeamRole, actor: UserActor): Promise<void> {
    await this.inTeam(teamId, async (txTeams, team, tx) => {
      const current = await txTeams.roleOf(userId, teamId)
      if (current === null) throw notMember()
      if (current === role) return
      if (team.ownerId === userId) throw errors.conflict('OWNER_ROLE', 'The owner is always a team_admin; transfer ownership first.')
      if (current === 'team_admin' && (await txTeams.countMembers(teamId, 'team_admin')) <= 1) {
        throw errors.conflict('LAST_TEAM_ADMIN', 'The last team_admin cannot be demoted.')
      }
      await txTeams.setRole(teamId, userId, role)
      await this.deps.audit.record('team.member_role_changed', teamEvent(actor, teamId, { user_id: userId, from: current, to: role }), tx)
    })
  }

  /** Removing someone needs team.members.manage; leaving needs only membership. The owner cannot go. */
  async removeMember(teamId: string, userId: string, actor: UserActor): Promise<void> {
    let revoke = async () => {}
    await this.inTeam(teamId, async (txTeams, team, tx) => {
      const leaving = userId === actor.userId
      if (!leaving && !actor.isGlobalAdmin && (await txTeams.roleOf(actor.userId, teamId)) !== 'team_admin') {
        throw errors.forbidden({ required_permission: 'team.members.manage' })
      }
      const role = await txTeams.roleOf(userId, teamId)
      if (role === null) throw notMember()
      if (team.ownerId === userId) {
        throw errors.conflict('OWNER_CANNOT_LEAVE', 'The owner cannot be removed or leave; transfer ownership first.')
      }
      await txTeams.removeMember(teamId, userId)
      // Their own connections to the team's remote servers end with the membership.
      revoke = await this.endConnections({ teamId, userId }, leaving ? 'member_left' : 'member_removed', tx)
      await this.deps.audit.record(leaving ? 'team.member_left' : 'team.member_removed', teamEvent(actor, teamId, { user_id: userId, role }), tx)
    })
    await revoke()
  }

  /** To a member, who becomes team_admin; by the owner or a global admin. */
  async transferOwnership(teamId: string, newOwnerId: string, actor: UserActor): Promise<TeamView> {
    await this.inTeam(teamId, async (txTeams, team, tx) => {
      if (team.isDefault) throw defaultTeam('transferred')
      if (team.ownerId !== actor.userId && !actor.isGlobalAdmin) throw onlyOwner()
      if ((await txTeams.roleOf(newOwnerId, teamId)) === null) throw notMember()
      await txTeams.setRole(teamId, newOwnerId, 'team_admin')
      await txTeams.setOwner(teamId, newOwnerId, this.now())
      await this.deps.audit.record('team.owner_transferred', teamEvent(actor, teamId, { user_id: newOwnerId, previous_owner_id: team.ownerId }), tx)
    })
    return this.get(teamId, actor)
  }

  /**
   * When a user is deleted, each non-default team they own
   * passes to its longest-standing other team_admin, or is deleted when there is none.
   * Runs inside the deletion's transaction.
   */
  async handOverOwnedTeams(userId: string, tx: Db, afterCommit: Array<() => Promise<void>> = []): Promise<void> {
    const txTeams = this.deps.teams.with(tx)
    // No team can be created for, or handed to, the user meanwhile.
    await txTeams.lockOwner(userId)
    for (const team of await txTeams.ownedNonDefault(userId)) {
      await txTeams.lock(team.id)
      // Re-read under the lock: a concurrent transfer may have handed it to someone else.
      if ((await txTeams.find(team.id))?.ownerId !== userId) continue
      const successor = await txTeams.successor(team.id, userId)
      if (successor === null) afterCommit.push(await this.endConnections({ teamId: team.id }, 'team_deleted', tx))
      if (successor === null) await txTeams.delete(team.id)
      else await txTeams.setOwner(team.id, successor, this.now())
      // The deletion's own event names who deleted the user; these say what became of the team.
      const entry = { target: team.id, details: { team_id: team.id, reason: 'owner_deleted', previous_owner_id: userId } }
      if (successor === null) await this.deps.audit.record('team.deleted', { ...entry, details: { ...entry.details, name: team.name } }, tx)
      else await this.deps.audit.record('team.owner_transferred', { ...entry, details: { ...entry.details, user_id: successor } }, tx)
    }
    await txTeams.deleteDefaultOf(userId)
  }

  /** Runs `fn` with the team locked, so member counts and roles cannot change underneath. */
  private async inTeam(teamId: string, fn: (txTeams: TeamsRepository, team: TeamWithCount, tx: Db) => Promise<void>, database = this.deps.database): Promise<void> {
    await database.transaction(async (tx) => {
      const txTeams = this.deps.teams.with(tx)
      await txTeams.lock(teamId)
      const team = await txTeams.find(teamId)
      if (team === undefined) throw errors.notFound('Team')
      await fn(txTeams, team, tx)
    })
  }

  private async existing(teamId: string): Promise<TeamWithCount> {
    const team = await this.deps.teams.find(teamId)
    if (team === undefined) throw errors.notFound('Team')
    return team
  }

  private now(): Date {
    return new Date(this.deps.clock.now())
  }
}

/** A team event: the team is the target; details name ids and roles, never an address. */
function teamEvent(actor: UserActor, teamId: string, details: Record<string, unknown>): AuditEntry {
  return { actorId: actor.userId, ip: actor.ip, target: teamId, details: { team_id: teamId, ...details } }
}

function onlyOwner(): AppError {
  return new AppError(403, 'FORBIDDEN', 'Only the owner or a global admin may do this.', { required_role: 'owner' })
}
