import type { FastifyRequest } from 'fastify'
import { userCaller } from '../../http/current-user.js'
import { roleHas } from '../../auth/permissions.js'
import type { MemberViewer } from './view.js'

/** Who reads a member list: members' addresses are theirs, or a user administrator's (users.view). */
export function memberViewer(request: FastifyRequest): MemberViewer {
  const caller = userCaller(request)
  return { userId: caller.userId, seesEveryEmail: roleHas(caller.role, 'users.view') }
}
