import { randomUUID } from 'node:crypto'
import { STATUS_CODES } from 'node:http'
import type { Socket } from 'node:net'
import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest, FastifyServerOptions, HTTPMethods } from 'fastify'
import { DatabaseUnavailableError } from '../db/errors.js'
import { AppError, errors, type ErrorCode } from './errors.js'
import { errorForLog } from './logging.js'
import { prefersHtml, refusalPage, sendPage } from './pages.js'
import { toFieldProblems } from './validation.js'
import { routeOptionsOf } from './route-options.js'

/** The router's limit on one path parameter; longer ones answer 400 before routing. */
export const MAX_PARAM_LENGTH = 1000

const BODY_LIMIT_CODES = new Set(['FST_ERR_CTP_BODY_TOO_LARGE'])
const BAD_JSON_CODES = new Set(['FST_ERR_CTP_EMPTY_JSON_BODY', 'FST_ERR_CTP_INVALID_JSON_BODY'])
/**
 * The database cannot serve now, which is not the request's fault. A connection PostgreSQL's pool
 * could not open or lost arrives typed (DatabaseUnavailableError, see db/drivers/pg.ts), never judged by
 * its text; besides that, these codes: SQLSTATE class 08 (connection exception) and 57P01–57P03
 * (the server shuts down, crashed, or is starting), and SQLite busy past its timeout.
 */
const DB_UNAVAILABLE_CODES = new Set(['57P01', '57P02', '57P03', '08000', '08001', '08003', '08004', '08006', 'SQLITE_BUSY'])
const UNIQUE_VIOLATION_CODES = new Set(['23505', 'SQLITE_CONSTRAINT_UNIQUE', 'SQLITE_CONSTRAINT_PRIMARYKEY'])
/** A write that refers to a row deleted meanwhile (a concurrent delete), not a server fault. */
const FOREIGN_KEY_CODES = new Set(['23503', 'SQLITE_CONSTRAINT_FOREIGNKEY'])
/**
 * PostgreSQL ended the transaction to let a concurrent one through: a deadlock it broke (40P01) or a
 * serialization failure (40001). Everything the transaction wrote was rolled back, so sending the
 * request again is safe: a race with another request, not a server fault.
 */
const CONCURRENT_ABORT_CODES = new Set(['40P01', '40001'])

export interface ErrorHandlerOptions {
  bodyLimit: number
  /** Paths whose routes do not exist although the router holds them (a plugin that failed after adding routes). */
  hidden?: (url: string) => boolean
}

/** Every thrown error becomes one envelope here, and only here. */
export function installErrorHandler(app: FastifyInstance, { bodyLimit, hidden }: ErrorHandlerOptions): void {
  app.setErrorHandler(coreErrorHandler(bodyLimit))

  // A path the router knows for other methods answers 405 with `Allow`; any other, 404.
  app.setNotFoundHandler((request) => {
    const allowed = hidden?.(request.url) ? [] : allowedMethods(app, request.url)
    throw allowed.length === 0 || allowed.includes(request.method)
      ? errors.routeNotFound(request.method, request.url)
      : errors.methodNotAllowed(request.method, request.url, allowed)
  })
}

/**
 * The methods the router serves `url` with, sorted; none for a path it does not know. HEAD comes
 * with every GET route. OPTIONS counts only beside another method: the CORS preflight route,
 * when CORS is configured, answers every path.
 */
function allowedMethods(app: FastifyInstance, url: string): string[] {
  const allowed = app.supportedMethods.filter((method) => app.findRoute({ method: method as HTTPMethods, url }) !== null).sort()
  return allowed.some((method) => method !== 'OPTIONS') ? allowed : []
}

const coreRaised = new WeakSet<object>()

/**
 * Marks an error the core's onRequest hook raised (shutdown, setup, CSRF, rate limit, policy): an
 * extension plugin's own error handler passes such errors on to the core's.
 */
export function raisedByCore<E>(error: E): E {
  if (typeof error === 'object' && error !== null) coreRaised.add(error)
  return error
}

/** Errors that are the service's to answer: its refusals, validation, body parsing. */
export const isCoreError = (error: FastifyError): boolean =>
  coreRaised.has(error) || error.validation !== undefined || (typeof error.code === 'string' && error.code.startsWith('FST_'))

export type ErrorHandler = (error: FastifyError, request: FastifyRequest, reply: FastifyReply) => unknown

/**
 * The service's error handler; plugin error handlers defer to it for the errors the core raised.
 * It returns nothing: a returned reply is a thenable to Fastify, which would then wait for the
 * response to finish (stream listeners on every error answer) only to do nothing.
 */
export function coreErrorHandler(bodyLimit: number): ErrorHandler {
  return (error, request, reply) => {
    // A route may have a lower limit than the service's (plugin collection documents): name that one.
    sendError(request, reply, toAppError(error, routeOptionsOf(request).bodyLimit ?? bodyLimit), error)
  }
}

function sendError(request: FastifyRequest, reply: FastifyReply, appError: AppError, cause: unknown): FastifyReply {
  // OAuth protocol endpoints answer RFC 6749 errors for every failure.
  const oauthStyle = routeOptionsOf(request).config?.oauthErrors
  const rfcError = appError.oauthError ?? (oauthStyle === undefined ? undefined : rfcErrorFor(appError.statusCode, oauthStyle))
  // A 500 is a fault: logged with its error and stack. A 502 or 503 is an expected condition (a
  // database outage, setup mode, mail switched off, an SMTP server refusing, a shutdown): a warning
  // naming the code, the route and the underlying reason, without a stack. A refusal (4xx) is
  // logged once, by the request's own line, with its code and route.
  if (appError.statusCode === 500) request.log.error({ err: cause }, 'request failed')
  else if (appError.statusCode > 500) {
    const reason = cause === appError ? undefined : causeText(cause)
    request.log.warn({ code: appError.code, route: routeOptionsOf(request).url, ...(reason === undefined ? {} : { reason }) }, appError.message)
  }
  reply.errorCode = appError.code
  if (appError.headers) reply.headers(appError.headers)
  // A browser that followed a link or sent a form reads a page, not an envelope.
  const page = routeOptionsOf(request).config?.htmlRefusals
  if (page !== undefined && prefersHtml(request)) return sendPage(reply, appError.statusCode, refusalPage(appError, page.hint, page.links))
  return reply.code(appError.statusCode).send({
    success: false,
    ...(rfcError === undefined ? { error: appError.message } : { error: rfcError, error_description: appError.message }),
    code: appError.code,
    ...(appError.details === undefined ? {} : { details: appError.details }),
  })
}

/**
 * Errors the router raises before any route or hook runs (a malformed percent-encoding, a path
 * parameter past the router's limit): the same envelope, headers and request id as any answer.
 */
export function frameworkErrors(headers: Readonly<Record<string, string>>): NonNullable<FastifyServerOptions['frameworkErrors']> {
  return (error, request, reply) => {
    reply.headers(headers)
    reply.header('x-request-id', request.id)
    const appError = error.code === 'FST_ERR_MAX_PARAM_LENGTH'
      ? errors.validation([{ field: 'params', message: `must be at most ${MAX_PARAM_LENGTH} characters`, in: 'params' }])
      : error.code === 'FST_ERR_BAD_URL' ? errors.invalidUrl() : toAppError(error, 0)
    void sendError(request, reply, appError, error)
  }
}

/**
 * Requests Node's HTTP parser refuses before Fastify sees them (a request line or headers past
 * 16 KiB, bytes that are not HTTP): an envelope written straight to the socket, then closed. No
 * request or reply exists at this stage, so the response is serialized here by hand.
 */
export function clientErrorHandler(headers: Readonly<Record<string, string>>): NonNullable<FastifyServerOptions['clientErrorHandler']> {
  const fixed = Object.entries(headers).map(([name, value]) => `${name}: ${value}\r\n`).join('')
  return function onClientError(this: FastifyInstance, error: Error & { code?: string }, socket: Socket) {
    if (error.code === 'ECONNRESET' || !socket.writable) return
    const [status, code, text]: readonly [number, ErrorCode, string] =
      error.code === 'HPE_HEADER_OVERFLOW' ? [431, 'HEADERS_TOO_LARGE', 'The request line and headers are larger than 16 KiB.'] as const
      : error.code === 'ERR_HTTP_REQUEST_TIMEOUT' ? [408, 'REQUEST_TIMEOUT', 'The request was not received in time.'] as const
      : [400, 'BAD_REQUEST', 'The request is not valid HTTP.'] as const
    const id = randomUUID()
    const body = JSON.stringify({ success: false, error: text, code })
    this.log.info({ reqId: id, code, parserError: error.code }, text)
    socket.end(
      `HTTP/1.1 ${status} ${STATUS_CODES[status]}\r\ncontent-type: application/json; charset=utf-8\r\n` +
      `content-length: ${Buffer.byteLength(body)}\r\nx-request-id: ${id}\r\n${fixed}connection: close\r\n\r\n${body}`,
    )
  }
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

  if (databaseUnavailable(error)) return errors.databaseUnavailable()
  const cause = databaseCause(error)
  if (cause !== null && UNIQUE_VIOLATION_CODES.has(cause)) return errors.conflict('CONFLICT', 'This conflicts with an existing record.')
  if (cause !== null && FOREIGN_KEY_CODES.has(cause)) return errors.conflict('CONFLICT', 'This refers to something that no longer exists.')
  if (cause !== null && CONCURRENT_ABORT_CODES.has(cause)) {
    return errors.conflict('CONFLICT', 'A concurrent change got in the way of this one; nothing of it was written. Send it again.')
  }

  // Fastify's own client errors (bad content length, malformed URL, …) keep their status.
  if (typeof error.statusCode === 'number' && error.statusCode >= 400 && error.statusCode < 500) {
    return new AppError(error.statusCode, 'BAD_REQUEST', error.message)
  }
  return errors.internal()
}

/**
 * What lies under an expected 5xx, as one line: the innermost error's message, with its code
 * (a database outage's ECONNREFUSED or 57P01). Run through errorForLog first, so that a failed
 * statement's parameters stay out.
 */
function causeText(error: unknown): string | undefined {
  let current = errorForLog(error) as { message?: unknown; code?: unknown; cause?: unknown } | undefined
  for (let depth = 0; current?.cause !== undefined && depth < 4; depth++) current = current.cause as typeof current
  if (current === undefined || typeof current.message !== 'string') return undefined
  return typeof current.code === 'string' ? `${current.message} (${current.code})` : current.message
}

/** Drizzle wraps driver errors; the driver's code sits on the error or its cause. */
function databaseCause(error: unknown): string | null {
  for (let current = error, depth = 0; current instanceof Error && depth < 4; current = current.cause, depth++) {
    const code = (current as { code?: unknown }).code
    if (typeof code === 'string' && (UNIQUE_VIOLATION_CODES.has(code) || FOREIGN_KEY_CODES.has(code) || CONCURRENT_ABORT_CODES.has(code))) return code
  }
  return null
}

/** Whether the error, or one it wraps (drizzle's DrizzleQueryError carries the driver's as `cause`), says the database cannot serve now. */
function databaseUnavailable(error: unknown): boolean {
  for (let current = error, depth = 0; current instanceof Error && depth < 4; current = current.cause, depth++) {
    if (current instanceof DatabaseUnavailableError) return true
    const code = (current as { code?: unknown }).code
    if (typeof code === 'string' && DB_UNAVAILABLE_CODES.has(code)) return true
  }
  return false
}
