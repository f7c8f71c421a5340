import type { AbuseLimits } from '../../auth/limits.js'
import type { UserRow, UsersRepository } from '../../db/repositories/users.js'
import type { AppError } from '../../http/errors.js'
import type { AuditLog } from '../audit/service.js'
import { lockedOut } from './errors.js'

/** Where a failure came from, for the audit event. */
export interface FailureContext {
  ip: string
}

/**
 * A wrong code (or password) in a two-factor flow counts against the account exactly like a failed
 * login: one atomic update of the users row, so the count holds across instances, and the failure
 * that reaches the limit locks the account (429) for logins and codes alike.
 */
export class Failures {
  constructor(private readonly deps: { users: UsersRepository; audit: AuditLog; limits: AbuseLimits; metrics?: { lockedOut(): void } }) {}

  /** Counts and audits the failure; answers the error to throw: 429 when it locked the account, else `refusal`. */
  async count(user: UserRow, now: Date, context: FailureContext, event: 'user.two_factor_failed' | 'user.login_failed', details: Record<string, string>, refusal: AppError): Promise<AppError> {
    const { users, audit, limits, metrics } = this.deps
    const { lockedUntil } = await users.recordFailedLogin(user.id, { now, ...limits.lockout })
    await audit.record(event, { actorId: user.id, ip: context.ip, target: user.id, details })
    if (lockedUntil === null || lockedUntil <= now) return refusal
    metrics?.lockedOut()
    return lockedOut(lockedUntil, now)
  }
}
