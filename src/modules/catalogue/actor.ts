import type { FastifyRequest } from 'fastify'
import { userCaller } from '../../http/current-user.js'
import type { CatalogueViewer } from '../../db/repositories/server-filters.js'

/** Who reads or changes the catalogue, and from where (for the audit trail). */
export interface CatalogueActor extends CatalogueViewer {
  ip: string
}

export function catalogueActor(request: FastifyRequest): CatalogueActor {
  const caller = userCaller(request)
  return { userId: caller.userId, isGlobalAdmin: caller.role === 'global_admin', ip: request.ip }
}
