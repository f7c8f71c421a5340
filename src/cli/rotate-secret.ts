import { loadConfig, readEnvironment } from '../config.js'
import { openDatabase } from '../db/drivers/client.js'
import { rotateEncryptionSecret } from '../modules/installations/secret-rotation.js'

/**
 * `OLD_ENCRYPTION_SECRET=<previous> npm run secret:rotate`: re-encrypts every secret setting,
 * every sealed installation value, connection token and two-factor secret in the database named by DATABASE_URL from the previous secret
 * to the configured ENCRYPTION_SECRET, in one transaction. Both secrets come from the environment (or `.env`), never from the command
 * line, where shell history and the process list would keep them; neither is ever printed.
 */
const USAGE = 'usage: OLD_ENCRYPTION_SECRET=<previous secret> npm run secret:rotate   (the new secret is ENCRYPTION_SECRET)'

const env = readEnvironment()
const from = env.OLD_ENCRYPTION_SECRET?.trim()
if (process.argv.length > 2 || from === undefined || from === '') {
  console.error(USAGE)
  process.exit(2)
}
try {
  const config = loadConfig(env)
  const database = openDatabase(config.database, { poolSize: 1, onPoolError: (error) => console.error(error.message) })
  try {
    await database.migrate()
    const { settings, installationValues, connections, twoFactor } = await rotateEncryptionSecret(database, { from, to: config.encryptionSecret })
    const list = (keys: string[]) => (keys.length === 0 ? 'none' : keys.join(', '))
    console.info(`Re-encrypted with ENCRYPTION_SECRET: ${list(settings.reencrypted)}.`)
    if (settings.current.length > 0) console.info(`Already under ENCRYPTION_SECRET, left as they are: ${list(settings.current)}.`)
    if (settings.defaults.length > 0) console.info(`Never set (their default applies under any secret): ${list(settings.defaults)}.`)
    console.info(
      `Installation secret values: ${installationValues.reencrypted} re-encrypted, ` +
        `${installationValues.current} already under ENCRYPTION_SECRET.`,
    )
    console.info(`Connection tokens and upstream client secrets: ${connections.reencrypted} re-encrypted, ${connections.current} already under ENCRYPTION_SECRET.`)
    console.info(`Two-factor secrets: ${twoFactor.reencrypted} re-encrypted, ${twoFactor.current} already under ENCRYPTION_SECRET.`)
    console.info('Sessions, OAuth tokens, satellite keys, registration tokens and two-factor recovery codes issued under the old secret no longer work.')
  } finally {
    await database.close()
  }
} catch (error) {
  console.error(error instanceof Error ? error.message : error)
  process.exitCode = 1
}
