import type { FastifyRequest, FastifyServerOptions } from 'fastify'
import type { Config } from '../config.js'

/**
 * The request as each request log line shows it. The query string is left out: links carry
 * secrets there (email verification and reset tokens, the provider's code and state).
 */
function requestForLog(request: FastifyRequest) {
  const query = request.url.indexOf('?')
  return {
    method: request.method,
    url: query === -1 ? request.url : `${request.url.slice(0, query)}?[query omitted]`,
    host: request.host,
    remoteAddress: request.ip,
    remotePort: request.socket?.remotePort,
  }
}

/** pino options: secrets never reach the log (SPEC §8). */
export function loggerOptions(config: Config): FastifyServerOptions['logger'] {
  return {
    level: config.logLevel,
    serializers: { req: requestForLog },
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
