import type { FastifyBaseLogger, FastifyServerOptions } from 'fastify'
import pino from 'pino'

type Level = 'trace' | 'debug' | 'info' | 'warn' | 'error' | 'fatal'

const { chindingsSym } = pino.symbols

/**
 * A request's logger, built when the request first writes a line of its own. Fastify gives every
 * request a child logger bound to its id, and pino builds one by serializing the bindings and
 * deriving a new logger: on a health probe that was a twentieth of the request's CPU, while most
 * requests write nothing but their access line (which `lineBindings` serves without building it).
 * A call below the level is dropped without building it; the parent's level is read at each call,
 * so a level change applies at once.
 */
export class RequestLogger {
  #logger: pino.Logger | undefined

  constructor(
    readonly parent: pino.Logger,
    private readonly bindings: pino.Bindings,
  ) {}

  private get logger(): pino.Logger {
    return (this.#logger ??= this.parent.child(this.bindings))
  }

  private write(level: Level, args: unknown[]): void {
    if (this.#logger === undefined && !this.parent.isLevelEnabled(level)) return
    const logger = this.logger
    Reflect.apply(logger[level], logger, args)
  }

  trace(...args: unknown[]): void { this.write('trace', args) }
  debug(...args: unknown[]): void { this.write('debug', args) }
  info(...args: unknown[]): void { this.write('info', args) }
  warn(...args: unknown[]): void { this.write('warn', args) }
  error(...args: unknown[]): void { this.write('error', args) }
  fatal(...args: unknown[]): void { this.write('fatal', args) }
  silent(): void {}

  get level(): string {
    return (this.#logger ?? this.parent).level
  }

  set level(level: string) {
    this.logger.level = level
  }

  isLevelEnabled(level: string): boolean {
    return (this.#logger ?? this.parent).isLevelEnabled(level)
  }

  child(bindings: pino.Bindings, options?: pino.ChildLoggerOptions): pino.Logger {
    return this.logger.child(bindings, options)
  }

  /**
   * The request's bindings as they appear in a JSON line (`,"reqId":"…"` after the parent's own),
   * serialized as pino does for plain values: for a parent with no serializer or bindings
   * formatter of its own for them, which the access line's caller checks.
   */
  lineBindings(): string {
    if (this.#logger !== undefined) return (this.#logger as unknown as Record<symbol, string>)[chindingsSym]!
    let line = (this.parent as unknown as Record<symbol, string>)[chindingsSym]!
    for (const key in this.bindings) {
      const value = this.bindings[key] as unknown
      if (value !== undefined) line += `,${JSON.stringify(key)}:${JSON.stringify(value)}`
    }
    return line
  }
}

/**
 * Fastify's child logger factory: a `RequestLogger` for a pino logger, unless the route asks for
 * options of its own (a level, serializers), for which pino's child is built at once.
 */
export const requestLoggerFactory: NonNullable<FastifyServerOptions['childLoggerFactory']> = function (logger, bindings, options) {
  if (typeof (logger as Partial<pino.Logger>).isLevelEnabled !== 'function') return logger.child(bindings, options)
  for (const _ in options) return logger.child(bindings, options)
  return new RequestLogger(logger as unknown as pino.Logger, bindings) as unknown as FastifyBaseLogger
}
