import type { DatabaseTarget } from '../../config.js'
import { DatabaseUnavailableError } from '../errors.js'

/** Where DATABASE_URL points, as a log line may show it: never the password. */
export interface DatabaseAddress {
  host: string
  port: number
  database: string
  user: string
}

/** Why the database could not be reached at start, in words an operator can act on. */
export interface StartFailure {
  /** One sentence naming host, port, database and user, then what to do. */
  text: string
  address: DatabaseAddress
  /** The driver's code (a SQLSTATE such as 3D000, or an errno such as ECONNREFUSED), when it gave one. */
  code: string | undefined
}

/**
 * The service gave up on the database at start; the reason is already logged, in one line.
 * The process entry exits non-zero on it, without a stack trace.
 */
export class DatabaseStartError extends Error {
  constructor(message: string, options?: ErrorOptions) {
    super(message, options)
    this.name = 'DatabaseStartError'
  }
}

export function postgresAddress(url: string): DatabaseAddress {
  const parsed = new URL(url)
  const user = decodeURIComponent(parsed.username)
  return {
    // libpq's `?host=` (a socket directory, say) wins over the URL's host, as it does in pg.
    host: parsed.searchParams.get('host') ?? (parsed.hostname === '' ? 'localhost' : parsed.hostname),
    port: parsed.port === '' ? 5432 : Number(parsed.port),
    database: decodeURIComponent(parsed.pathname.slice(1)) || user,
    user: user === '' ? '(default user)' : user,
  }
}

/**
 * Describes a failure to connect to PostgreSQL, or null for anything else (a failed migration,
 * a bug, SQLite), which is not worth waiting for. Every connection the pool or the migration
 * could not open arrives as a DatabaseUnavailableError (see pg.ts), so this is decided by the
 * error's origin; the driver's code underneath (a SQLSTATE from the server, an errno from the
 * socket) only picks the words.
 */
export function describeStartFailure(error: unknown, target: DatabaseTarget): StartFailure | null {
  if (target.dialect !== 'postgresql' || !wrapsUnavailable(error)) return null
  const address = postgresAddress(target.url)
  const { host, port, database, user } = address
  const at = `${host}:${port}`
  const cause = driverError(error)
  const code = cause?.code
  const serverSays = cause?.message ?? 'unknown error'
  const text = ((): string => {
    switch (code) {
      case '3D000':
        return `PostgreSQL database "${database}" does not exist on ${at} (user ${user}); create it with: createdb -h ${host} -p ${port} -U ${user} ${database}`
      case '28P01':
        return `PostgreSQL at ${at} refused the password of user "${user}" (database ${database}); check the user and password in DATABASE_URL`
      case '28000':
        return `PostgreSQL at ${at} refused user "${user}" for database ${database}: ${serverSays}; create the role (createuser) or allow the connection in pg_hba.conf`
      case '57P03':
        return `PostgreSQL at ${at} is still starting up (database ${database}, user ${user})`
      case '53300':
        return `PostgreSQL at ${at} has no connection left for user "${user}" (database ${database}); raise max_connections or lower DATABASE_POOL_SIZE`
      case 'ECONNREFUSED':
        return `nothing accepts connections on ${at} (database ${database}, user ${user}); start PostgreSQL there, or correct the host and port in DATABASE_URL`
      case 'ENOTFOUND':
      case 'EAI_AGAIN':
        return `the PostgreSQL host "${host}" cannot be resolved (port ${port}, database ${database}, user ${user}); correct the host in DATABASE_URL`
      case 'ETIMEDOUT':
      case 'EHOSTUNREACH':
      case 'ENETUNREACH':
        return `PostgreSQL at ${at} cannot be reached (database ${database}, user ${user}): ${serverSays}; check the network and firewall`
      default:
        return `cannot connect to PostgreSQL at ${at} (database ${database}, user ${user}): ${serverSays}`
    }
  })()
  return { text, address, code }
}

function wrapsUnavailable(error: unknown): boolean {
  for (let current = error, depth = 0; current instanceof Error && depth < 4; current = current.cause, depth++) {
    if (current instanceof DatabaseUnavailableError) return true
  }
  return false
}

/**
 * The driver's own error under the wrappers. A host name with several addresses (localhost: ::1
 * and 127.0.0.1) fails with an AggregateError of one error per address; the first tells.
 */
function driverError(error: unknown): { code?: string; message: string } | null {
  let current: unknown = error
  for (let depth = 0; depth < 6 && current instanceof Error; depth++) {
    const { code } = current as { code?: unknown }
    if (typeof code === 'string') return { code, message: current.message }
    if (current instanceof AggregateError && current.errors[0] instanceof Error) current = current.errors[0]
    else if (current.cause instanceof Error) current = current.cause
    else return { message: current.message }
  }
  return null
}
