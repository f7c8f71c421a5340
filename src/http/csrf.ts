import type { FastifyRequest } from 'fastify'
import type { Config } from '../config.js'
import { SESSION_COOKIE } from '../auth/credentials-from-request.js'
import { AppError } from './errors.js'

const UNSAFE = new Set(['POST', 'PUT', 'PATCH', 'DELETE'])

/**
 * A cookie-carrying unsafe request must come from this service's own origin or a
 * configured one. (Its body must also be JSON, which a cross-site form cannot send without a
 * CORS preflight; the content-type check answers 415 for anything else.) Browsers always send
 * Origin on cross-site unsafe requests, so a missing Origin means a non-browser client.
 */
export function csrfGuard(config: Config): (request: FastifyRequest) => AppError | null {
  const allowed = new Set([new URL(config.publicUrl).origin, ...config.corsOrigins])
  return (request) => {
    if (!UNSAFE.has(request.method) || request.cookies[SESSION_COOKIE] === undefined) return null
    const origin = request.headers.origin
    if (origin === undefined || allowed.has(origin)) return null
    return new AppError(403, 'FORBIDDEN', 'Cross-site request refused: its Origin is not allowed.', { origin })
  }
}
