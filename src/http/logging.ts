import type { FastifyServerOptions } from 'fastify'
import type { Config } from '../config.js'

/** pino options: secrets never reach the log (SPEC §8). */
export function loggerOptions(config: Config): FastifyServerOptions['logger'] {
  return {
    level: config.logLevel,
    redact: {
      paths: [
        'req.headers.authorization',
        'req.headers.cookie',
        'res.headers["set-cookie"]',
        '*.password',
        '*.new_password',
        '*.current_password',
        '*.token',
        '*.access_token',
        '*.refresh_token',
        '*.client_secret',
        '*.code_verifier',
        '*.api_key',
      ],
      censor: '[redacted]',
    },
  }
}
