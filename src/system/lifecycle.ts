import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import type { FastifyBaseLogger } from 'fastify'
import type { Config } from '../config.js'
import { openDatabase } from '../db/drivers/client.js'
import { DatabaseStartError, describeStartFailure } from '../db/drivers/start-failure.js'
import type { Database, Dialect, QueryTimer } from '../db/types.js'
import { AppError, errors } from '../http/errors.js'
import type { Services } from '../services.js'

export interface DatabaseStatus {
  configured: boolean
  initialized: boolean
  dialect: Dialect | null
}

const CHOICE_FILE = 'database-setup.json'
const PURGE_EVERY_MS = 60 * 60 * 1000
/** The first wait before connecting again at start; it doubles up to the cap. */
const FIRST_RETRY_MS = 250
const MAX_RETRY_MS = 5_000

/**
 * Owns the database connection and the services built on it. With
 * DATABASE_AUTO_SETUP=true, or once setup has been done before (the choice is remembered in
 * DATA_DIR), it connects and migrates at start; otherwise it waits for POST /api/db/setup and
 * everything else answers 503 until then.
 */
export class DatabaseLifecycle {
  private services: Services | null = null
  private claimed = false
  private purgeTimer: NodeJS.Timeout | undefined

  constructor(
    private readonly config: Config,
    private readonly log: FastifyBaseLogger,
    private readonly build: (database: Database) => Promise<Services>,
    /** Told the duration of every statement (metrics). */
    private readonly onQuery?: QueryTimer,
  ) {}

  async start(): Promise<void> {
    const remembered = this.rememberedChoice()
    if (remembered !== null && remembered !== this.config.database.dialect) {
      this.log.warn({ remembered, configured: this.config.database.dialect }, 'DATABASE_URL names another dialect than the one set up before; using DATABASE_URL')
    }
    if (this.config.databaseAutoSetup || remembered !== null) {
      this.claimed = true
      await this.connectAtStart()
    }
  }

  async setup(type: Dialect): Promise<DatabaseStatus> {
    if (this.claimed) throw errors.conflict('ALREADY_CONFIGURED', 'The database is already configured.')
    if (type !== this.config.database.dialect) {
      throw errors.validation(
        [{ field: 'type', message: `must match DATABASE_URL, which names ${this.config.database.dialect}`, in: 'body' }],
        'The requested database type does not match DATABASE_URL.',
      )
    }
    // Claimed before the first await: a concurrent second call gets 409, not a second migration.
    this.claimed = true
    try {
      await this.connect()
    } catch (error) {
      this.claimed = false
      const failure = describeStartFailure(error, this.config.database)
      if (failure === null) this.log.error({ err: error }, 'database setup failed')
      else this.log.error({ ...failure.address, code: failure.code }, `database setup failed: ${failure.text}`)
      throw new AppError(503, 'DATABASE_UNAVAILABLE', 'The database named by DATABASE_URL could not be set up; see the server log.')
    }
    this.remember(type)
    return this.status()
  }

  status(): DatabaseStatus {
    return {
      configured: this.claimed,
      initialized: this.services !== null,
      dialect: this.claimed ? this.config.database.dialect : null,
    }
  }

  /** The services, or 503 DATABASE_NOT_CONFIGURED while there is no database yet. */
  get current(): Services {
    if (this.services === null) throw errors.databaseNotConfigured()
    return this.services
  }

  get ready(): boolean {
    return this.services !== null
  }

  /** Set on SIGTERM with a drain period: readiness answers 503 so the load balancer looks elsewhere. */
  draining = false

  /** Answers the satellites' held long-polls now: closing has begun. */
  releaseHeld(): void {
    this.services?.channel.close()
  }

  async close(): Promise<void> {
    clearInterval(this.purgeTimer)
    this.services?.registrySyncSchedule.stop()
    await this.services?.connectionRefresher.stop()
    this.services?.channel.close()
    const services = this.services
    this.services = null
    await services?.database.close()
  }

  /**
   * The first connection. While PostgreSQL cannot be reached (not started yet, the database not
   * created yet: a compose file may start it after the service) it is tried again, waiting longer
   * each time, until DATABASE_CONNECT_TIMEOUT has passed. The reason is logged in one line when it
   * first appears or changes, and once more when giving up; the process entry then exits non-zero.
   * Any other failure (a migration, SQLite's file) gives up at once.
   */
  private async connectAtStart(): Promise<void> {
    const timeoutMs = this.config.databaseConnectTimeoutMs
    const deadline = Date.now() + timeoutMs
    let wait = FIRST_RETRY_MS
    let reported: string | null = null
    for (;;) {
      try {
        await this.connect()
        if (reported !== null) this.log.info('connected to the database')
        return
      } catch (error) {
        const failure = describeStartFailure(error, this.config.database)
        if (failure === null) {
          this.log.error({ err: error }, 'the database could not be prepared at start')
          throw new DatabaseStartError('the database could not be prepared at start', { cause: error })
        }
        const fields = { ...failure.address, code: failure.code }
        const left = deadline - Date.now()
        if (left <= 0) {
          this.log.error(fields, `${failure.text}; gave up after ${timeoutMs / 1000} s (DATABASE_CONNECT_TIMEOUT)`)
          throw new DatabaseStartError(failure.text, { cause: error })
        }
        if (failure.text !== reported) this.log.warn(fields, `${failure.text}; trying again for up to ${Math.ceil(left / 1000)} s`)
        reported = failure.text
        await new Promise((resolve) => setTimeout(resolve, Math.min(wait, left)))
        wait = Math.min(wait * 2, MAX_RETRY_MS)
      }
    }
  }

  private async connect(): Promise<void> {
    const database = openDatabase(this.config.database, {
      poolSize: this.config.databasePoolSize,
      onPoolError: (error) => this.log.warn({ err: error }, 'database connection lost; the pool reconnects'),
      onQuery: this.onQuery,
    })
    try {
      await database.migrate()
      const services = await this.build(database)
      this.services = services
      const purge = () => services.purgeExpired().catch((error: unknown) => this.log.warn({ err: error }, 'purging expired credentials failed'))
      void purge()
      this.purgeTimer = setInterval(purge, PURGE_EVERY_MS).unref()
      services.registrySyncSchedule.start()
      services.connectionRefresher.start()
    } catch (error) {
      await database.close().catch(() => {})
      throw error
    }
  }

  private rememberedChoice(): Dialect | null {
    const file = join(this.config.dataDir, CHOICE_FILE)
    if (!existsSync(file)) return null
    const { dialect } = JSON.parse(readFileSync(file, 'utf8')) as { dialect?: Dialect }
    return dialect ?? null
  }

  private remember(dialect: Dialect): void {
    mkdirSync(this.config.dataDir, { recursive: true })
    writeFileSync(join(this.config.dataDir, CHOICE_FILE), `${JSON.stringify({ dialect, configured_at: new Date().toISOString() })}\n`)
  }
}
