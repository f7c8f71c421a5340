import type { ConnectionEnding } from '../../db/repositories/connections.js'
import { roleHas, type GlobalRole, type Permission } from '../../auth/permissions.js'
import { sessionsRepository } from '../../db/repositories/sessions.js'
import type { UserFilter, UserRow, UsersRepository } from '../../db/repositories/users.js'
import type { Database } from '../../db/types.js'
import { errors } from '../../http/errors.js'
import type { Clock } from '../../lib/clock.js'
import type { AuditLog } from '../audit/service.js'
import { mapUserConflict } from '../auth/service.js'
import type { TeamService } from '../teams/service.js'

export interface Deps {
  database: Database
  users: UsersRepository
  teamService: TeamService
  audit: AuditLog
  clock: Clock
  /** Ends the user's connections to remote servers; revocation runs after the commit. */
  endConnections?: ConnectionEnding
}

/** Who acts, as the policy hook saw them. Their role is read again under the lock. */
export interface Actor {
  id: string
  ip: string
}

export interface UserPatch {
  username?: string
  email?: string
  first_name?: string | null
  last_name?: string | null
  email_verified?: boolean
}

const emailTaken = () => errors.conflict('EMAIL_TAKEN', 'This email is already registered.')
const usernameTaken = () => errors.conflict('USERNAME_TAKEN', 'This username is already taken.')
const lastAdmin = () => errors.conflict('LAST_ADMIN', 'The last global admin cannot be demoted or deleted.')

/**
 * What a global admin does to other users. The rules that keep at least one global
 * admin are checked and applied in one transaction that holds the admins lock, so concurrent
 * demotions or deletions cannot both pass the count.
 */
export class UserAdministration {
  constructor(private readonly deps: Deps) {}

  list(filter: UserFilter): Promise<{ rows: UserRow[]; total: number }> {
    return this.deps.users.list(filter)
  }

  async get(id: string): Promise<UserRow> {
    const user = await this.deps.users.findById(id)
    if (user === undefined) throw errors.notFound('User')
    return user
  }

  async update(id: string, patch: UserPatch, actor: Actor): Promise<UserRow> {
    const { database, users, audit, clock } = this.deps
    return database.transaction(async (tx) => {
      const txUsers = users.with(tx)
      const user = await txUsers.findById(id)
      if (user === undefined) throw errors.notFound('User')
      const email = patch.email?.toLowerCase()
      // '' matches nobody: only values that actually change are checked against other users.
      const newEmail = email !== undefined && email !== user.email.toLowerCase() ? email : ''
      const newUsername = patch.username !== undefined && patch.username.toLowerCase() !== user.username.toLowerCase() ? patch.username : ''
      if (newEmail !== '' || newUsername !== '') {
        const taken = await txUsers.taken(newEmail, newUsername)
        if (taken.email) throw emailTaken()
        if (taken.username) throw usernameTaken()
      }
      const updated = await txUsers.update(id, {
        ...(patch.username !== undefined ? { username: patch.username } : {}),
        ...(email !== undefined ? { email } : {}),
        ...(patch.first_name !== undefined ? { firstName: patch.first_name } : {}),
        ...(patch.last_name !== undefined ? { lastName: patch.last_name } : {}),
        ...(patch.email_verified !== undefined ? { emailVerified: patch.email_verified } : {}),
        updatedAt: new Date(clock.now()),
      })
      await audit.record('user.updated', { actorId: actor.id, ip: actor.ip, target: id, details: { fields: Object.keys(patch) } }, tx)
      return updated!
    }).catch((error: unknown) => {
      // A concurrent write that slipped past the pre-check still answers 409.
      throw mapUserConflict(error)
    })
  }

  /** One's own role cannot be changed (409 CANNOT_CHANGE_OWN_ROLE); the last admin stays one. */
  async changeRole(id: string, roleId: GlobalRole, actor: Actor): Promise<UserRow> {
    if (id === actor.id) throw errors.conflict('CANNOT_CHANGE_OWN_ROLE', 'You cannot change your own role.')
    const { database, users, audit, clock } = this.deps
    return database.transaction(async (tx) => {
      const txUsers = users.with(tx)
      await txUsers.lockAdmins()
      const user = await txUsers.findById(id)
      if (user === undefined) throw errors.notFound('User')
      if (user.roleId === roleId) return user
      if (user.roleId === 'global_admin' && (await txUsers.countAdmins()) <= 1) throw lastAdmin()
      await this.assertStillPermitted(txUsers, actor, 'roles.manage')
      const updated = await txUsers.update(id, { roleId, updatedAt: new Date(clock.now()) })
      await audit.record('user.role_changed', { actorId: actor.id, ip: actor.ip, target: id, details: { from: user.roleId, to: roleId } }, tx)
      return updated!
    })
  }

  /**
   * Deletes the user with their sessions, default team and memberships (the membership rows go
   * with the user row by ON DELETE CASCADE, email tokens likewise), in one transaction. Teams
   * the user owned pass to another team_admin, or are deleted when none is left.
   */
  async remove(id: string, actor: Actor): Promise<void> {
    if (id === actor.id) throw errors.conflict('CANNOT_DELETE_SELF', 'You cannot delete your own account here.')
    const { database, users, teamService, audit } = this.deps
    const afterCommit: Array<() => Promise<void>> = []
    await database.transaction(async (tx) => {
      const txUsers = users.with(tx)
      await txUsers.lockAdmins()
      const user = await txUsers.findById(id)
      if (user === undefined) throw errors.notFound('User')
      if (user.roleId === 'global_admin' && (await txUsers.countAdmins()) <= 1) throw lastAdmin()
      await this.assertStillPermitted(txUsers, actor, 'users.delete')
      await sessionsRepository(database, tx).deleteForUser(id)
      // Their connections to remote servers end (and are revoked upstream once this commits).
      if (this.deps.endConnections !== undefined) afterCommit.push(await this.deps.endConnections({ userId: id }, 'user_deleted', tx))
      await teamService.handOverOwnedTeams(id, tx, afterCommit)
      await txUsers.delete(id)
      await audit.record('user.deleted', { actorId: actor.id, ip: actor.ip, target: id, details: { username: user.username, role_id: user.roleId } }, tx)
    })
    for (const after of afterCommit) await after()
  }

  /**
   * The policy hook checked the actor's role before this transaction waited for the lock; an
   * admin demoted meanwhile (by the change that held it) must not act on the old role.
   */
  private async assertStillPermitted(txUsers: UsersRepository, actor: Actor, permission: Permission): Promise<void> {
    const current = await txUsers.findById(actor.id)
    if (current === undefined || !roleHas(current.roleId, permission)) throw errors.forbidden({ required_permission: permission })
  }
}
