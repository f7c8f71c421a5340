import type { FastifyRequest } from 'fastify'
import type { Config } from '../config.js'
import { SESSION_COOKIE } from '../auth/credentials-from-request.js'
import { AppError } from './errors.js'
import { trustedOrigins } from './origins.js'

const UNSAFE = new Set(['POST', 'PUT', 'PATCH', 'DELETE'])

/**
 * A cookie-carrying unsafe request must come from this service's own origin (any loopback
 * spelling of a loopback PUBLIC_URL counts as its own) or a configured one. (Its body must also
 * be JSON, which a cross-site form cannot send without a CORS preflight; the content-type check
 * answers 415 for anything else.) Browsers always send Origin on cross-site unsafe requests, so a
 * missing Origin means a non-browser client.
 */
export function csrfGuard(config: Config): (request: FastifyRequest) => AppError | null {
  const allowed = trustedOrigins(config)
  return (request) => {
    if (!UNSAFE.has(request.method) || request.cookies[SESSION_COOKIE] === undefined) return null
    const origin = request.headers.origin
    if (origin === undefined || allowed.has(origin)) return null
    return new AppError(403, 'FORBIDDEN', `Cross-site request refused: it was sent from ${origin}, which is neither this service nor an allowed origin.`, { origin })
  }
}
