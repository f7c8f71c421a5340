import type { FastifyRequest } from 'fastify'
import { errors } from '../../http/errors.js'
import type { TeamActor } from './service.js'

export function teamActor(request: FastifyRequest): TeamActor {
  const caller = request.caller
  if (caller?.kind !== 'user') throw errors.unauthorized()
  return { userId: caller.userId, isGlobalAdmin: caller.role === 'global_admin' }
}
