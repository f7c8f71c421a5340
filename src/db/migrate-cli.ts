import { ConfigError, loadConfig } from '../config.js'
import { openDatabase } from './drivers/client.js'

/** `npm run db:migrate`: applies pending migrations to DATABASE_URL and exits. */
try {
  const config = loadConfig()
  const database = openDatabase(config.database, {
    poolSize: 1,
    onPoolError: (error) => console.error('database connection error:', error.message),
  })
  try {
    await database.migrate()
    console.info(`migrations applied (${config.database.dialect})`)
  } finally {
    await database.close()
  }
} catch (error) {
  console.error(error instanceof ConfigError ? error.message : error)
  process.exitCode = 1
}
