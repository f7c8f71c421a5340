import { Writable } from 'node:stream'
import type { FastifyServerOptions } from 'fastify'
import { loggerOptions } from '../../src/http/logging.js'
import { testConfig } from './app.js'

export interface LogCapture {
  /** Every line the app's logger wrote, in order. */
  readonly lines: string[]
  /** The app's own logger options (serializers, redaction) at `level`, writing into `lines`. */
  readonly logger: FastifyServerOptions['logger']
  text(from?: number): string
}

export function captureLogs(level = 'trace'): LogCapture {
  const lines: string[] = []
  const stream = new Writable({
    write(chunk, _encoding, done) {
      lines.push(String(chunk))
      done()
    },
  })
  const options = loggerOptions(testConfig({ LOG_LEVEL: level })) as object
  return {
    lines,
    logger: { ...options, level, stream } as FastifyServerOptions['logger'],
    text: (from = 0) => lines.slice(from).join(''),
  }
}
