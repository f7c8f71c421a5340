import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import type { FastifyBaseLogger } from 'fastify'
import type { Config } from '../config.js'
import { AppError, errors } from '../http/errors.js'
import type { Services } from '../services.js'
import { openDatabase } from './client.js'
import type { Database, Dialect } from './types.js'

export interface DatabaseStatus {
  configured: boolean
  initialized: boolean
  dialect: Dialect | null
}

const CHOICE_FILE = 'database-setup.json'
const PURGE_EVERY_MS = 60 * 60 * 1000

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
  ) {}

  async start(): Promise<void> {
    const remembered = this.rememberedChoice()
    if (remembered !== null && remembered !== this.config.database.dialect) {
      this.log.warn({ remembered, configured: this.config.database.dialect }, 'DATABASE_URL names another dialect than the one set up before; using DATABASE_URL')
    }
    if (this.config.databaseAutoSetup || remembered !== null) {
      this.claimed = true
      await this.connect()
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
      this.log.error({ err: error }, 'database setup failed')
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

  async close(): Promise<void> {
    clearInterval(this.purgeTimer)
    const services = this.services
    this.services = null
    await services?.database.close()
  }

  private async connect(): Promise<void> {
    const database = openDatabase(this.config.database, {
      poolSize: this.config.databasePoolSize,
      onPoolError: (error) => this.log.warn({ err: error }, 'database connection lost; the pool reconnects'),
    })
    try {
      await database.migrate()
      const services = await this.build(database)
      this.services = services
      const purge = () => services.purgeExpired().catch((error: unknown) => this.log.warn({ err: error }, 'purging expired credentials failed'))
      void purge()
      this.purgeTimer = setInterval(purge, PURGE_EVERY_MS).unref()
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
