import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import type { FastifyInstance } from 'fastify'
import { buildApp, type BuildOptions } from '../../src/app.js'
import { loadConfig, type Config } from '../../src/config.js'
import { createTestDatabase, type TestDatabase, type TestDialect } from './database.js'

export const TEST_SECRET = 'test-secret-0123456789-abcdefghijklmnopqrstuvwxyz'

export interface TestContext {
  dialect: TestDialect
  database: TestDatabase
  /** A temporary DATA_DIR, removed by `close`. */
  dataDir: string
  /** Builds an app on this context's database (several may run at once, like instances). */
  build(options?: BuildOptions & { env?: Record<string, string> }): Promise<TestApp>
  close(): Promise<void>
}

export interface TestApp {
  app: FastifyInstance
  config: Config
}

/**
 * One database per test file and dialect. `file: true` puts SQLite in a file (needed when two
 * apps must share it, or a restart must find it); otherwise SQLite runs in memory.
 */
export async function createTestContext(dialect: TestDialect, { file = false } = {}): Promise<TestContext> {
  const dataDir = mkdtempSync(join(tmpdir(), 'svc-test-'))
  const database = await createTestDatabase(dialect, file ? dataDir : undefined)
  const apps: FastifyInstance[] = []
  return {
    dialect,
    database,
    dataDir,
    async build({ env = {}, ...options } = {}) {
      const config = testConfig({ DATABASE_URL: database.url, DATA_DIR: dataDir, ...env })
      const app = await buildApp(config, { logger: false, ...options })
      apps.push(app)
      return { app, config }
    },
    async close() {
      await Promise.all(apps.map((app) => app.close()))
      await database.drop()
      rmSync(dataDir, { recursive: true, force: true })
    },
  }
}

export function testConfig(env: Record<string, string> = {}): Config {
  return loadConfig({
    ENCRYPTION_SECRET: TEST_SECRET,
    LOG_LEVEL: 'silent',
    PUBLIC_URL: 'http://localhost:3000',
    ...env,
  })
}
