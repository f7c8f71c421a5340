/**
 * The unique index or constraint a write violated, or null for any other error. Drizzle wraps
 * driver errors, so the cause chain is searched. Repositories use this to map a violation of a
 * promise the API makes (email, username, slug…) to its own 409 code.
 */
export function violatedUniqueIndex(error: unknown): string | null {
  for (let current = error, depth = 0; current instanceof Error && depth < 4; current = current.cause, depth++) {
    const { code, constraint } = current as { code?: unknown; constraint?: unknown }
    if (code === '23505') return typeof constraint === 'string' ? constraint : ''
    if (code === 'SQLITE_CONSTRAINT_UNIQUE' || code === 'SQLITE_CONSTRAINT_PRIMARYKEY') {
      // "UNIQUE constraint failed: index 'users_email_unique'" or "… failed: teams.slug"
      return /failed: (?:index '([^']+)'|(.+))$/.exec(current.message)?.slice(1).find(Boolean) ?? ''
    }
  }
  return null
}

/**
 * The database could not be reached, or the connection a statement ran on was lost or stopped
 * answering: not the request's fault, worth trying again shortly (503 DATABASE_UNAVAILABLE). The
 * PostgreSQL pool (db/drivers/pg.ts) raises it, with the driver's error as `cause`, for every failure that
 * is not an answer of the server itself.
 */
export class DatabaseUnavailableError extends Error {
  constructor(cause: unknown) {
    super(`database unavailable: ${cause instanceof Error ? cause.message : String(cause)}`, { cause })
    this.name = 'DatabaseUnavailableError'
  }
}
