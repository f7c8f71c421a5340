import type { FastifyError, FastifyInstance } from 'fastify'
import { AppError, errors } from './errors.js'
import { toFieldProblems } from './validation.js'

const BODY_LIMIT_CODES = new Set(['FST_ERR_CTP_BODY_TOO_LARGE'])
const BAD_JSON_CODES = new Set(['FST_ERR_CTP_EMPTY_JSON_BODY', 'FST_ERR_CTP_INVALID_JSON_BODY'])
/** Connection-level failures: the database is down or restarting, not the request's fault. */
const DB_UNAVAILABLE_CODES = new Set([
  'ECONNREFUSED', 'ECONNRESET', 'ETIMEDOUT', 'EPIPE', 'ENOTFOUND',
  '57P01', '57P02', '57P03', '08000', '08001', '08003', '08006', 'SQLITE_BUSY',
])
const UNIQUE_VIOLATION_CODES = new Set(['23505', 'SQLITE_CONSTRAINT_UNIQUE', 'SQLITE_CONSTRAINT_PRIMARYKEY'])
/** A write that refers to a row deleted meanwhile (a concurrent delete), not a server fault. */
const FOREIGN_KEY_CODES = new Set(['23503', 'SQLITE_CONSTRAINT_FOREIGNKEY'])

/** SPEC §2.3: every thrown error becomes one envelope here, and only here. */
export function installErrorHandler(app: FastifyInstance, { bodyLimit }: { bodyLimit: number }): void {
  app.setErrorHandler((error: FastifyError, request, reply) => {
    const appError = toAppError(error, bodyLimit)
    // OAuth protocol endpoints answer RFC 6749 errors for every failure (SPEC §2.1).
    const oauthStyle = request.routeOptions.config?.oauthErrors
    const rfcError = appError.oauthError ?? (oauthStyle === undefined ? undefined : rfcErrorFor(appError.statusCode, oauthStyle))
    if (appError.statusCode >= 500) request.log.error({ err: error }, 'request failed')
    else request.log.info({ code: appError.code, statusCode: appError.statusCode }, appError.message)
    if (appError.headers) reply.headers(appError.headers)
    return reply.code(appError.statusCode).send({
      success: false,
      ...(rfcError === undefined ? { error: appError.message } : { error: rfcError, error_description: appError.message }),
      code: appError.code,
      ...(appError.details === undefined ? {} : { details: appError.details }),
    })
  })

  app.setNotFoundHandler((request) => {
    throw errors.routeNotFound(request.method, request.url)
  })
}

export interface OAuthErrorStyle {
  /** The RFC error for a 400 of the request's shape (default invalid_request). */
  invalid?: string
  /** The RFC error for a 401 (default invalid_client). */
  unauthorized?: string
}

function rfcErrorFor(status: number, style: OAuthErrorStyle): string {
  if (status >= 500) return status === 503 ? 'temporarily_unavailable' : 'server_error'
  if (status === 401) return style.unauthorized ?? 'invalid_client'
  if (status === 403) return 'access_denied'
  if (status === 429) return 'temporarily_unavailable'
  return style.invalid ?? 'invalid_request'
}

function toAppError(error: FastifyError, bodyLimit: number): AppError {
  if (error instanceof AppError) return error
  if (error.validation) return errors.validation(toFieldProblems(error.validation, error.validationContext ?? 'body'))
  if (error.code === 'FST_ERR_CTP_INVALID_MEDIA_TYPE') return errors.unsupportedMediaType()
  if (BODY_LIMIT_CODES.has(error.code)) return errors.payloadTooLarge(bodyLimit)
  if (BAD_JSON_CODES.has(error.code) || (error instanceof SyntaxError && error.statusCode === 400)) return errors.invalidJson()

  const cause = databaseCause(error)
  if (cause !== null && DB_UNAVAILABLE_CODES.has(cause)) return errors.databaseUnavailable()
  if (cause !== null && UNIQUE_VIOLATION_CODES.has(cause)) return errors.conflict('CONFLICT', 'This conflicts with an existing record.')
  if (cause !== null && FOREIGN_KEY_CODES.has(cause)) return errors.conflict('CONFLICT', 'This refers to something that no longer exists.')

  // Fastify's own client errors (bad content length, malformed URL, …) keep their status.
  if (typeof error.statusCode === 'number' && error.statusCode >= 400 && error.statusCode < 500) {
    return new AppError(error.statusCode, 'BAD_REQUEST', error.message)
  }
  return errors.internal()
}

/** Drizzle wraps driver errors; the driver's code sits on the error or its cause. */
function databaseCause(error: unknown): string | null {
  for (let current = error, depth = 0; current instanceof Error && depth < 4; current = current.cause, depth++) {
    const code = (current as { code?: unknown }).code
    if (typeof code === 'string' && (DB_UNAVAILABLE_CODES.has(code) || UNIQUE_VIOLATION_CODES.has(code) || FOREIGN_KEY_CODES.has(code))) return code
  }
  return null
}
