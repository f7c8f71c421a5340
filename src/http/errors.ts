import type { ErrorCode } from './error-codes.js'
import type { ErrorDetails, FieldProblem, ForbiddenDetails } from './envelope.js'

export type { ErrorCode, FieldProblem }

/**
 * Errors with stable codes (every one listed in http/error-codes.ts). Code throws them; the one error handler
 * (http/error-handler.ts) turns them into the envelope. An AppError is a deliberate answer,
 * so its text reaches the caller; any other error becomes a generic 500.
 */
export class AppError extends Error {
  /** Extra response headers (e.g. WWW-Authenticate, Retry-After). */
  headers?: Record<string, string>

  constructor(
    readonly statusCode: number,
    readonly code: ErrorCode,
    message: string,
    readonly details?: ErrorDetails,
  ) {
    // A refusal (4xx) is an answer, not a fault: no stack trace is captured for it (capturing one
    // is most of the cost of making an error, more so with --enable-source-maps).
    const stackTraceLimit = Error.stackTraceLimit
    if (statusCode < 500) Error.stackTraceLimit = 0
    super(message)
    Error.stackTraceLimit = stackTraceLimit
    this.name = 'AppError'
  }

  /**
   * The RFC 6749 error code, for the OAuth protocol endpoints: the body then says
   * `error: <rfc code>, error_description: <text>` next to `code`.
   */
  oauthError?: string

  withHeaders(headers: Record<string, string>): this {
    this.headers = { ...this.headers, ...headers }
    return this
  }
}

/** An OAuth 2.0 protocol error (RFC 6749 §5.2 and friends); `code` defaults to its upper case. */
export function oauthError(statusCode: number, error: Lowercase<ErrorCode>, description: string): AppError
export function oauthError(statusCode: number, error: string, description: string, code: ErrorCode): AppError
export function oauthError(statusCode: number, error: string, description: string, code = error.toUpperCase() as ErrorCode): AppError {
  const appError = new AppError(statusCode, code, description)
  appError.oauthError = error
  return appError
}

export const UNAUTHORIZED_TEXT = 'Unauthorized: Authentication required.'

export const errors = {
  validation: (details: FieldProblem[], message = 'Request validation failed.') =>
    new AppError(400, 'VALIDATION_ERROR', message, details),
  invalidJson: () => new AppError(400, 'INVALID_JSON', 'The request body is not valid JSON.'),
  jsonTooDeep: (maxDepth: number) =>
    new AppError(400, 'JSON_TOO_DEEP', `The request body is nested more than ${maxDepth} levels deep (objects and arrays); no route accepts deeper documents.`),
  unauthorized: (reason?: string) =>
    new AppError(401, 'UNAUTHORIZED', reason ? `${UNAUTHORIZED_TEXT} ${reason}` : UNAUTHORIZED_TEXT),
  forbidden: (details: ForbiddenDetails, message = 'Forbidden: you are not allowed to do this.') =>
    new AppError(403, 'FORBIDDEN', message, details),
  notFound: (what = 'Resource') => new AppError(404, 'NOT_FOUND', `${what} not found.`),
  routeNotFound: (method: string, url: string) =>
    new AppError(404, 'NOT_FOUND', `Route ${method} ${url.split('?')[0]} not found; the API's routes are listed at /documentation.`),
  /** The path exists for other methods: RFC 9110 §15.5.6 asks for the `Allow` header. */
  methodNotAllowed: (method: string, url: string, allowed: readonly string[]) =>
    new AppError(405, 'METHOD_NOT_ALLOWED', `Method ${method} is not allowed on ${url.split('?')[0]}; it answers ${allowed.join(', ')}.`)
      .withHeaders({ allow: allowed.join(', ') }),
  invalidUrl: () => new AppError(400, 'INVALID_URL', 'The request URL is malformed (invalid percent-encoding).'),
  satelliteDisabled: () =>
    new AppError(403, 'SATELLITE_DISABLED', 'This satellite is disabled by an administrator; its key is refused until it is enabled again.'),
  conflict: (code: ErrorCode, message: string) => new AppError(409, code, message),
  payloadTooLarge: (limit: number) =>
    new AppError(413, 'PAYLOAD_TOO_LARGE', `The request body is larger than ${limit} bytes.`),
  unsupportedMediaType: () =>
    new AppError(415, 'UNSUPPORTED_MEDIA_TYPE', 'The request body must be sent as Content-Type: application/json.'),
  databaseNotConfigured: () =>
    new AppError(503, 'DATABASE_NOT_CONFIGURED', 'The database is not configured yet: POST /api/db/setup first.'),
  // A 503 says when to come back (RFC 9110 §10.2.3): a second is enough for another instance, or
  // for the pool to reach the database again after a restart or a failover.
  shuttingDown: () =>
    new AppError(503, 'SHUTTING_DOWN', 'The service is shutting down; send the request again (another instance, or this one after its restart).')
      .withHeaders({ 'retry-after': '1' }),
  databaseUnavailable: () =>
    new AppError(503, 'DATABASE_UNAVAILABLE', 'The database is not answering; try again shortly.').withHeaders({ 'retry-after': '1' }),
  internal: () => new AppError(500, 'INTERNAL_ERROR', 'Internal server error.'),
}
