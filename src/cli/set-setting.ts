import { loadConfig } from '../config.js'
import { openDatabase } from '../db/drivers/client.js'
import { settingsRepository } from '../db/repositories/settings.js'
import { AppError } from '../http/errors.js'
import { systemClock } from '../lib/clock.js'
import { deriveKey } from '../lib/keys.js'
import { createSecretBox } from '../lib/secret-box.js'
import { unreadableSecretsWarning } from '../modules/settings/secret-rotation.js'
import { SettingsService } from '../modules/settings/service.js'

/**
 * `npm run settings:set -- <key> <value>`: changes a setting straight in the database named by
 * DATABASE_URL, for when nobody can sign in to do it through the API (e.g. Enable Login was
 * switched off and no admin session is left). Running instances see it within seconds. Setting a
 * secret that the current ENCRYPTION_SECRET cannot decrypt makes it readable again.
 */
const [key, raw] = process.argv.slice(2)
if (key === undefined || raw === undefined) {
  console.error('usage: npm run settings:set -- <key> <value>   (e.g. global.enable_login true)')
  process.exit(2)
}
try {
  const config = loadConfig()
  const database = openDatabase(config.database, { poolSize: 1, onPoolError: (error) => console.error(error.message) })
  try {
    await database.migrate()
    const settings = new SettingsService({
      repository: settingsRepository(database),
      box: createSecretBox(deriveKey(config.encryptionSecret, 'settings-encryption')),
      clock: systemClock,
      config,
    })
    await settings.init()
    const type = settings.definition(key)?.type
    const value = type === 'boolean' ? raw === 'true' ? true : raw === 'false' ? false : raw : type === 'number' ? Number(raw) : raw
    await settings.update([{ key, value }])
    console.info(`${key} set`)
    const unreadable = settings.unreadable()
    if (unreadable.length > 0) console.warn(unreadableSecretsWarning(unreadable))
  } finally {
    await database.close()
  }
} catch (error) {
  const details = error instanceof AppError && Array.isArray(error.details) ? ` ${JSON.stringify(error.details)}` : ''
  console.error(error instanceof Error ? `${error.message}${details}` : error)
  process.exitCode = 1
}
