import type { TeamRole } from '../../auth/permissions.js'
import { asOwnDefaultTeam, type CallerTeam, type TeamRow, type TeamsRepository, type TeamWithCount } from '../../db/repositories/teams.js'
import type { UsersRepository } from '../../db/repositories/users.js'
import type { Database, Db } from '../../db/types.js'
import { AppError, errors } from '../../http/errors.js'
import type { Clock } from '../../lib/clock.js'
import type { SettingsService } from '../settings/service.js'

/** Who acts on a team; a global admin holds every team permission. */
export interface TeamActor {
  userId: string
  isGlobalAdmin: boolean
}

export interface TeamView extends TeamWithCount {
  role: TeamRole | null
}

const defaultTeam = (what: string) => errors.conflict('DEFAULT_TEAM', `A default team cannot be ${what}.`)
const notMember = () => errors.notFound('Member')

/** Teams, membership and ownership. No Fastify types here. */
export class TeamService {
  constructor(private readonly deps: { database: Database; teams: TeamsRepository; users: UsersRepository; settings: SettingsService; clock: Clock }) {}

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
  async get(teamId: string, actor: TeamActor): Promise<TeamView> {
    const team = await this.deps.teams.find(teamId)
    if (team === undefined) throw errors.notFound('Team')
    return { ...team, role: await this.deps.teams.roleOf(actor.userId, teamId) }
  }

  /** The caller owns it and is its team_admin. At most `team.creation_limit` non-default teams. */
  async create(actor: TeamActor, input: { name: string; description?: string }): Promise<TeamView> {
    const { database, teams, settings } = this.deps
    const limit = await settings.get('team.creation_limit')
    const id = await database.transaction(async (tx) => {
      const txTeams = teams.with(tx)
      await txTeams.lockOwner(actor.userId)
      if ((await txTeams.countOwnedNonDefault(actor.userId)) >= limit) {
        throw errors.conflict('TEAM_LIMIT_REACHED', `You may own at most ${limit} teams besides your default team.`)
      }
      const team = await txTeams.create({ ownerId: actor.userId, name: input.name, description: input.description ?? null, isDefault: false }, this.now())
      return team.id
    })
    return this.get(id, actor)
  }

  async update(teamId: string, patch: { name?: string; description?: string | null }, actor: TeamActor): Promise<TeamView> {
    const team = await this.existing(teamId)
    if (team.isDefault && patch.name !== undefined && patch.name !== team.name) throw defaultTeam('renamed')
    await this.deps.teams.update(teamId, patch, this.now())
    return this.get(teamId, actor)
  }

  async delete(teamId: string, actor: TeamActor): Promise<void> {
    const team = await this.existing(teamId)
    if (team.isDefault) throw defaultTeam('deleted')
    if (team.ownerId !== actor.userId && !actor.isGlobalAdmin) throw onlyOwner()
    await this.deps.teams.delete(teamId)
  }

  members(teamId: string) {
    return this.deps.teams.members(teamId)
  }

  /** Existing users only, by email or username; at most `team.member_limit` members. */
  async addMember(teamId: string, login: string, role: TeamRole): Promise<void> {
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
      if ((await txTeams.countMembers(teamId)) >= limit) {
        throw errors.conflict('MEMBER_LIMIT_REACHED', `A team may have at most ${limit} members.`)
      }
      if (!(await txTeams.addMember(teamId, user.id, role, this.now()))) {
        throw errors.conflict('ALREADY_MEMBER', 'This user is already a member of the team.')
      }
    }, database)
  }

  /** The owner stays team_admin, and the last team_admin cannot be demoted. */
  async changeRole(teamId: string, userId: string, role: TeamRole): Promise<void> {
    await this.inTeam(teamId, async (txTeams, team) => {
      const current = await txTeams.roleOf(userId, teamId)
      if (current === null) throw notMember()
      if (current === role) return
      if (team.ownerId === userId) throw errors.conflict('OWNER_ROLE', 'The owner is always a team_admin; transfer ownership first.')
      if (current === 'team_admin' && (await txTeams.countMembers(teamId, 'team_admin')) <= 1) {
        throw errors.conflict('LAST_TEAM_ADMIN', 'The last team_admin cannot be demoted.')
      }
      await txTeams.setRole(teamId, userId, role)
    })
  }

  /** Removing someone needs team.members.manage; leaving needs only membership. The owner cannot go. */
  async removeMember(teamId: string, userId: string, actor: TeamActor): Promise<void> {
    await this.inTeam(teamId, async (txTeams, team) => {
      const leaving = userId === actor.userId
      if (!leaving && !actor.isGlobalAdmin && (await txTeams.roleOf(actor.userId, teamId)) !== 'team_admin') {
        throw errors.forbidden({ required_permission: 'team.members.manage' })
      }
      if ((await txTeams.roleOf(userId, teamId)) === null) throw notMember()
      if (team.ownerId === userId) {
        throw errors.conflict('OWNER_CANNOT_LEAVE', 'The owner cannot be removed or leave; transfer ownership first.')
      }
      await txTeams.removeMember(teamId, userId)
    })
  }

  /** To a member, who becomes team_admin; by the owner or a global admin. */
  async transferOwnership(teamId: string, newOwnerId: string, actor: TeamActor): Promise<TeamView> {
    await this.inTeam(teamId, async (txTeams, team) => {
      if (team.isDefault) throw defaultTeam('transferred')
      if (team.ownerId !== actor.userId && !actor.isGlobalAdmin) throw onlyOwner()
      if ((await txTeams.roleOf(newOwnerId, teamId)) === null) throw notMember()
      await txTeams.setRole(teamId, newOwnerId, 'team_admin')
      await txTeams.setOwner(teamId, newOwnerId, this.now())
    })
    return this.get(teamId, actor)
  }

  /**
   * When a user is deleted, each non-default team they own
   * passes to its longest-standing other team_admin, or is deleted when there is none.
   * Runs inside the deletion's transaction.
   */
  async handOverOwnedTeams(userId: string, tx: Db): Promise<void> {
    const txTeams = this.deps.teams.with(tx)
    // No team can be created for, or handed to, the user meanwhile.
    await txTeams.lockOwner(userId)
    for (const team of await txTeams.ownedNonDefault(userId)) {
      await txTeams.lock(team.id)
      // Re-read under the lock: a concurrent transfer may have handed it to someone else.
      if ((await txTeams.find(team.id))?.ownerId !== userId) continue
      const successor = await txTeams.successor(team.id, userId)
      if (successor === null) await txTeams.delete(team.id)
      else await txTeams.setOwner(team.id, successor, this.now())
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

function onlyOwner(): AppError {
  return new AppError(403, 'FORBIDDEN', 'Only the owner or a global admin may do this.', { required_role: 'owner' })
}
