import type { FastifyRequest } from 'fastify'
import { userCaller } from '../../auth/current-user.js'
import type { TeamActor } from './service.js'

export function teamActor(request: FastifyRequest): TeamActor {
  const caller = userCaller(request)
  return { userId: caller.userId, isGlobalAdmin: caller.role === 'global_admin' }
}
