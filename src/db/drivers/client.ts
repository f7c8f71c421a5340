import type { DatabaseTarget } from '../../config.js'
import { openPostgres } from './pg.js'
import { openSqlite } from './sqlite.js'
import type { Database, QueryTimer } from '../types.js'

export interface OpenOptions {
  poolSize: number
  onPoolError: (error: Error) => void
  /** Told the duration of every statement (metrics). */
  onQuery?: QueryTimer
}

/** The dialect follows DATABASE_URL; the rest of the code sees one `Database` either way. */
export function openDatabase(target: DatabaseTarget, { poolSize, onPoolError, onQuery }: OpenOptions): Database {
  return target.dialect === 'sqlite'
    ? openSqlite(target.path, onQuery)
    : openPostgres({ url: target.url, poolSize, onError: onPoolError, onQuery })
}
