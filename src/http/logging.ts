import { createRequire } from 'node:module'
import { LogController, type FastifyReply, type FastifyRequest, type FastifyServerOptions } from 'fastify'
import pino from 'pino'
import type PinoPretty from 'pino-pretty'
import type { Config } from '../config.js'
import { LineBatch } from './log-batch.js'
import { RequestLogger } from './request-logger.js'
import { routeOptionsOf } from './route-options.js'

declare module 'fastify' {
  interface FastifyReply {
    /** The error code of an error answer, for the request's log line. */
    errorCode: string | null
  }
}

/**
 * The request as its log line shows it. The query string is left out: links carry secrets there
 * (email verification and reset tokens, the provider's code and state). So is a path parameter
 * named `token` (an invitation link's).
 */
function requestForLog(request: FastifyRequest) {
  const query = request.url.indexOf('?')
  const path = withoutPathToken(request, query === -1 ? request.url : request.url.slice(0, query))
  return {
    method: request.method,
    url: query === -1 ? path : `${path}?[query omitted]`,
    remoteAddress: request.ip,
  }
}

/** The segment a route's `:token` matched, replaced; the route's own pattern says which segment it is. */
function withoutPathToken(request: FastifyRequest, path: string): string {
  const pattern = routeOptionsOf(request)?.url
  if (pattern === undefined || !pattern.includes('/:token')) return path
  const patternParts = pattern.split('/')
  const parts = path.split('/')
  if (parts.length !== patternParts.length) return pattern
  return parts.map((part, index) => (patternParts[index] === ':token' ? '[token omitted]' : part)).join('/')
}

const replyForLog = (reply: { statusCode: number }) => ({ statusCode: reply.statusCode })

declare module 'fastify' {
  interface FastifyContextConfig {
    /** Health probes: their successful answers are logged at debug level, not info. */
    quietLog?: boolean
  }
}

/**
 * One log line per request, when it completes: method, URL, client address, status, response
 * time and, for an error answer, its code and the route that answered it (4xx answers are not
 * logged separately; a route's pattern groups the lines of `/api/teams/:id` together). The
 * "incoming request" line is at debug level, and so are successful health probes. Logging is
 * most of the cost of a cheap request: measured on /api/health, two lines per request (Fastify's
 * default) took a quarter of the service's throughput.
 */
export class AccessLog extends LogController {
  override incomingRequest(request: FastifyRequest): void {
    request.log.debug({ req: request }, 'incoming request')
  }

  override requestCompleted(error: Error | null | undefined, request: FastifyRequest, reply: FastifyReply): void {
    if (error) {
      reply.log.error({ req: request, res: reply, err: error, responseTime: reply.elapsedTime }, 'request errored')
      return
    }
    // Load balancers probe health every few seconds; those lines would drown the rest.
    const quiet = reply.errorCode === null && routeOptionsOf(request).config?.quietLog === true
    if (!(reply.log as unknown as PinoInternals).isLevelEnabled(quiet ? 'debug' : 'info')) return
    // The request's own logger is seldom built (request-logger.ts): the line is the parent's, with the request's bindings.
    const log = (reply.log instanceof RequestLogger ? reply.log.parent : reply.log) as unknown as PinoInternals
    if (!quiet && writesOwnFormat(log)) return void stream(log).write(accessLine(requestBindings(reply.log), request, reply))
    const fields = reply.errorCode === null
      ? { req: request, res: reply, responseTime: reply.elapsedTime }
      : { req: request, res: reply, responseTime: reply.elapsedTime, code: reply.errorCode, route: routeOptionsOf(request).url }
    if (quiet) reply.log.debug(fields, 'request completed')
    else reply.log.info(fields, 'request completed')
  }
}

const { chindingsSym, formattersSym, mixinSym, streamSym, timeSym, messageKeySym } = pino.symbols

/** A pino logger's internals, which the hand-written access line reads (pino.symbols). */
interface PinoInternals extends Record<symbol, unknown> {
  isLevelEnabled(level: string): boolean
}

/** A request logger's bindings as its lines show them: `,"pid":…,"hostname":…,"reqId":…`. */
const requestBindings = (log: unknown): string =>
  log instanceof RequestLogger ? log.lineBindings() : ((log as PinoInternals)[chindingsSym] as string)

const stream = (log: PinoInternals) => log[streamSym] as { write(line: string): void }

/** A logger built from `loggerOptions` (any stream): its lines are shaped as `accessLine` writes them. */
const writesOwnFormat = (log: PinoInternals): boolean =>
  (log[formattersSym] as { log?: unknown } | undefined)?.log === censorSecrets && log[timeSym] === pino.stdTimeFunctions.epochTime && log[mixinSym] === undefined && log[messageKeySym] === 'msg'

/**
 * The access line, serialized by hand: byte for byte what pino writes for
 * `info({ req, res, responseTime, code, route }, 'request completed')` through this module's
 * serializers, but for the response time, given to the microsecond (`millis`); at a sixth of the
 * cost (pino's generic serializer was the largest single cost of a refused request). Only for
 * loggers built from `loggerOptions` (see `writesOwnFormat`).
 */
function accessLine(bindings: string, request: FastifyRequest, reply: FastifyReply): string {
  const { method, url, remoteAddress } = requestForLog(request)
  let line = `{"level":30,"time":${Date.now()}${bindings},"req":{"method":${JSON.stringify(method)},"url":${JSON.stringify(url)}`
  if (remoteAddress !== undefined) line += `,"remoteAddress":${JSON.stringify(remoteAddress)}`
  line += `},"res":{"statusCode":${reply.statusCode}},"responseTime":${millis(reply.elapsedTime)}`
  if (reply.errorCode !== null) {
    line += `,"code":${JSON.stringify(reply.errorCode)}`
    const route = routeOptionsOf(request).url
    if (route !== undefined) line += `,"route":${JSON.stringify(route)}`
  }
  return `${line},"msg":"request completed"}\n`
}

/**
 * A duration in milliseconds, to the microsecond, as a JSON number (`0.123`, `12.040`). Printing
 * every digit of the double (`0.12345678901234`) took half a microsecond, 40 % of the line.
 */
export function millis(ms: number): string {
  const micros = Math.round(ms * 1000)
  const whole = Math.trunc(micros / 1000)
  const fraction = micros - whole * 1000
  return `${whole}.${fraction < 10 ? '00' : fraction < 100 ? '0' : ''}${fraction}`
}

const CENSOR = '[redacted]'
const SECRET_KEYS = new Set([
  'password', 'new_password', 'current_password', 'token', 'access_token', 'refresh_token', 'client_secret', 'code_verifier', 'api_key',
])

const isPlainObject = (value: unknown): value is Record<string, unknown> =>
  value !== null && typeof value === 'object' && Object.getPrototypeOf(value) === Object.prototype

/**
 * Secret-named keys of a logged object, at its top level and one level down (what pino's
 * `*.password` paths would cover), are censored. Done here rather than with wildcard redact paths,
 * which run a cloning stringifier over every value of every line: measured, 13 µs instead of 4 µs
 * for a request's two log lines.
 */
function censorSecrets(object: Record<string, unknown>): Record<string, unknown> {
  let copy: Record<string, unknown> | null = null
  for (const key in object) {
    const value = object[key]
    if (SECRET_KEYS.has(key)) {
      ;(copy ??= { ...object })[key] = CENSOR
    } else if (isPlainObject(value)) {
      let inner: Record<string, unknown> | null = null
      for (const name in value) if (SECRET_KEYS.has(name)) (inner ??= { ...value })[name] = CENSOR
      if (inner !== null) (copy ??= { ...object })[key] = inner
    }
  }
  return copy ?? object
}

/** Properties of an error worth logging; anything else (a failed query's parameters, PostgreSQL's `detail` with the row) stays out. */
const ERROR_FIELDS = ['code', 'statusCode', 'errno', 'syscall', 'address', 'port', 'severity', 'constraint', 'table', 'column', 'routine'] as const
const MAX_CAUSES = 4

/**
 * Errors as log lines show them. Drizzle's failed-query error puts the statement's parameters in
 * its message (an Argon2 hash, a token digest, an email…); the statement text is kept, the values
 * are not. Only known fields are copied, so a driver adding a field cannot leak it either.
 */
export function errorForLog(error: unknown, depth = 0): unknown {
  if (!(error instanceof Error)) return error
  const record = error as Error & Record<string, unknown>
  const message = typeof record.query === 'string' && 'params' in record ? `Failed query: ${record.query}` : error.message
  const logged: Record<string, unknown> = {
    type: error.name,
    message,
    stack: error.stack?.replace(error.message, message),
  }
  for (const field of ERROR_FIELDS) if (record[field] !== undefined) logged[field] = record[field]
  if (error.cause !== undefined && depth < MAX_CAUSES) logged.cause = errorForLog(error.cause, depth + 1)
  return logged
}

const logError = (error: Error) => errorForLog(error) as { type: string; message: string; stack: string }

/** How long a log line may wait in the buffer before it is written. */
const LOG_FLUSH_MS = 100

/**
 * Standard output, written synchronously in chunks of about 4 KiB (log-batch.ts): a busy instance
 * makes one system call for many lines, a quiet one writes what it has every 100 ms (nothing when
 * it has nothing), and what is pending is written when the process exits. (pino's asynchronous
 * mode hands every write to a libuv thread: measured, that cost more per request than the line
 * itself.)
 */
function bufferedStdout() {
  if (stdout === null) {
    // sonic-boom writes each chunk at once (and copes with a pipe that is full or a write that is cut short).
    const batch = new LineBatch(pino.destination({ dest: 1, sync: true }), 4096)
    setInterval(() => batch.flush(), LOG_FLUSH_MS).unref()
    process.once('exit', () => batch.flushSync())
    stdout = batch
  }
  return stdout
}

/** One per process, shared by every app it builds: standard output is one. */
let stdout: LineBatch | null = null

/** Folded into a pretty line's text rather than printed as fields beneath it. */
const FOLDED_FIELDS = 'pid,hostname,req,res,responseTime,reqId,code,route'

/**
 * A pretty line's text: a request line reads `GET /api/users/me 200 1.4 ms`, and any line's error
 * code and request id follow its message, so that a line stays one line unless it carries more.
 */
function prettyMessage(log: Record<string, unknown>, messageKey: string): string {
  const message = String(log[messageKey] ?? '')
  const req = log.req as { method?: string; url?: string } | undefined
  let text = message
  if (req !== undefined) {
    const res = log.res as { statusCode?: number } | undefined
    const time = typeof log.responseTime === 'number' ? `${log.responseTime.toFixed(1)} ms` : undefined
    const request = [req.method, req.url, res?.statusCode, log.code, time].filter((part) => part !== undefined && part !== null).join(' ')
    text = message === 'request completed' ? request : `${message}: ${request}`
  } else if (typeof log.code === 'string') {
    text = `${message} [${log.code}]`
  }
  return log.reqId === undefined ? text : `${text} (${String(log.reqId)})`
}

/**
 * Human-readable lines for a person at a terminal: local times, a level name, the request folded
 * into one line. pino-pretty is loaded only then.
 */
function prettyStdout() {
  if (pretty === null) {
    const build = createRequire(import.meta.url)('pino-pretty') as typeof PinoPretty
    pretty = build({ sync: true, translateTime: 'SYS:HH:MM:ss.l', ignore: FOLDED_FIELDS, messageFormat: prettyMessage })
  }
  return pretty
}

let pretty: PinoPretty.PrettyStream | null = null

/**
 * pino options: secrets never reach the log; JSON lines go to standard output in chunks, pretty
 * ones (LOG_FORMAT=pretty) as they come.
 */
export function loggerOptions(config: Config): FastifyServerOptions['logger'] {
  return {
    level: config.logLevel,
    stream: config.logFormat === 'pretty' ? prettyStdout() : bufferedStdout(),
    // Requests and replies are logged by these serializers only, which never include headers
    // (cookies, Authorization, Set-Cookie): no redaction pass is needed (it cost 1 µs a line).
    serializers: { req: requestForLog, res: replyForLog, err: logError, error: logError },
    formatters: { log: censorSecrets },
  }
}
