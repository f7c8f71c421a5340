import type { FastifyRequest } from 'fastify'
import type { UserActor, UserCaller } from '../auth/caller.js'
import type { UserRow, UsersRepository } from '../db/repositories/users.js'
import { errors } from './errors.js'

/** The caller, who must be a user (every session or dual route guarantees it). */
export function userCaller(request: FastifyRequest): UserCaller {
  const caller = request.caller
  if (caller === null || caller.kind !== 'user') throw errors.unauthorized()
  return caller
}

/** The calling user's row: carried by the credential check when it loaded it, else read once. */
export async function currentUser(request: FastifyRequest, users: Pick<UsersRepository, 'findById'>): Promise<UserRow> {
  const caller = userCaller(request)
  const user = caller.user ?? (await users.findById(caller.userId))
  if (user === undefined) throw errors.unauthorized()
  return user
}

/** The calling user as the actor of a request; `caller` when the route found the user otherwise (a page's session). */
export function requestActor(request: FastifyRequest, caller: Pick<UserCaller, 'userId' | 'role'> = userCaller(request)): UserActor {
  return { userId: caller.userId, isGlobalAdmin: caller.role === 'global_admin', ip: request.ip }
}
