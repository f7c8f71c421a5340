import type { TwoFactorRepository } from '../../db/repositories/two-factor.js'
import type { UsersRepository } from '../../db/repositories/users.js'
import type { Database } from '../../db/types.js'
import type { Clock } from '../../lib/clock.js'
import type { AuditLog } from '../audit/service.js'

/** What switching two-factor off touches: the users row, the two-factor rows and the audit trail. */
export interface RemovalDeps {
  database: Database
  users: UsersRepository
  repository: TwoFactorRepository
  audit: AuditLog
  clock: Clock
}

/**
 * Switches a user's two-factor off in one transaction: the secret, the recovery codes and pending
 * sign-in challenges go, the users row says off (which the credential caches hear of), and the
 * event is audited. `proof`, when given, must be spent in the same transaction (a code raced
 * against itself switches it off once). Shared by the user's own disable, an admin's reset and
 * the command-line tool.
 */
export async function removeTwoFactor(
  { database, users, repository, audit, clock }: RemovalDeps,
  userId: string,
  by: { actorId: string | null; ip: string | null; method: string },
  proof?: (repository: TwoFactorRepository) => Promise<boolean>,
): Promise<'done' | 'not_enabled' | 'refused'> {
  return database.transaction(async (tx) => {
    await users.with(tx).lockUser(userId)
    const current = await users.with(tx).findById(userId)
    if (current === undefined || current.twoFactorEnabledAt === null) return 'not_enabled'
    if (proof !== undefined && !(await proof(repository.with(tx)))) return 'refused'
    const now = new Date(clock.now())
    await repository.with(tx).deleteAll(userId)
    await users.with(tx).update(userId, { twoFactorEnabledAt: null, updatedAt: now })
    await audit.record('user.two_factor_disabled', { actorId: by.actorId, ip: by.ip, target: userId, details: { method: by.method } }, tx)
    return 'done'
  })
}
