import { parseArgs } from 'node:util'
import { loadConfig, readEnvironment } from '../config.js'
import { openDatabase } from '../db/drivers/client.js'
import { catalogueSize, seedCatalogue } from './seed/catalogue.js'
import { SEED_CATEGORIES } from './seed/vocabulary.js'

/**
 * `npm run seed:catalogue -- --servers 100000 [--database-url <url>] [--categories 24] [--seed 42] [--no-versions]`:
 * fills the MCP catalogue of the database named by DATABASE_URL (or --database-url) with
 * realistic global servers, for load tests and local development. Migrates first; adds to what
 * the catalogue holds (categories are created when missing, slugs stay unique).
 */
const USAGE = 'usage: npm run seed:catalogue -- --servers <n> [--database-url <url>] [--categories <0-' +
  `${SEED_CATEGORIES.length}>] [--seed <n>] [--batch-size <n>] [--no-versions]`

function integer(name: string, raw: string | undefined, fallback: number, min: number, max: number): number {
  if (raw === undefined) return fallback
  const value = Number(raw)
  if (!/^\d+$/.test(raw) || value < min || value > max) {
    console.error(`--${name} must be an integer between ${min} and ${max} (got "${raw}")\n${USAGE}`)
    process.exit(2)
  }
  return value
}

let values: Record<string, string | boolean | undefined>
try {
  ;({ values } = parseArgs({
    options: {
      'servers': { type: 'string' },
      'database-url': { type: 'string' },
      'categories': { type: 'string' },
      'seed': { type: 'string' },
      'batch-size': { type: 'string' },
      'no-versions': { type: 'boolean' },
      'help': { type: 'boolean', short: 'h' },
    },
    strict: true,
  }))
} catch (error) {
  console.error(`${error instanceof Error ? error.message : error}\n${USAGE}`)
  process.exit(2)
}
if (values.help === true) {
  console.info(USAGE)
  process.exit(0)
}
if (values.servers === undefined) {
  console.error(USAGE)
  process.exit(2)
}
const servers = integer('servers', values.servers as string, 0, 0, 10_000_000)
const categories = integer('categories', values.categories as string | undefined, 24, 0, SEED_CATEGORIES.length)
const seed = integer('seed', values.seed as string | undefined, 42, 0, 2 ** 32 - 1)
const batchSize = values['batch-size'] === undefined ? undefined : integer('batch-size', values['batch-size'] as string, 1000, 1, 10_000)
const databaseUrl = values['database-url'] as string | undefined

try {
  const env = readEnvironment()
  const config = loadConfig(databaseUrl === undefined ? env : { ...env, DATABASE_URL: databaseUrl })
  const database = openDatabase(config.database, { poolSize: 1, onPoolError: (error) => console.error(error.message) })
  try {
    await database.migrate()
    const where = config.database.dialect === 'sqlite' ? `SQLite ${config.database.path}` : `PostgreSQL ${redacted(config.database.url)}`
    console.info(`seeding ${servers} servers into ${where} (seed ${seed}, ${categories} categories)`)
    let reported = 0
    const result = await seedCatalogue(database, {
      servers, categories, seed, batchSize, versions: values['no-versions'] !== true,
      onProgress: (done, total) => {
        if (process.stdout.isTTY && (done - reported >= 10_000 || done === total)) {
          reported = done
          process.stdout.write(`\r  ${done} / ${total}`)
          if (done === total) process.stdout.write('\n')
        }
      },
    })
    const seconds = result.ms / 1000
    console.info(
      `added ${result.servers} servers (${result.tags} tags, ${result.versions} versions)` +
        `${result.skipped > 0 ? `, skipped ${result.skipped} whose slug was taken meanwhile` : ''}; ` +
        `${result.categoriesUsed} categories (${result.categoriesCreated} created) in ${seconds.toFixed(1)} s, ` +
        `${Math.round(result.servers / Math.max(seconds, 0.001))} servers/s`,
    )
    console.info(`the catalogue holds ${await catalogueSize(database)} servers`)
  } finally {
    await database.close()
  }
} catch (error) {
  console.error(error instanceof Error ? error.message : error)
  process.exitCode = 1
}

/** The URL without its password, for the console. */
function redacted(url: string): string {
  try {
    const parsed = new URL(url)
    if (parsed.password !== '') parsed.password = '***'
    return parsed.toString()
  } catch {
    return 'postgres://…'
  }
}
