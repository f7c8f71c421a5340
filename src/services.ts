import type { CredentialVerifiers } from './auth/caller.js'
import { noCredentials } from './auth/caller.js'
import type { Config } from './config.js'
import { settingsRepository } from './db/repositories/settings.js'
import type { Database } from './db/types.js'
import type { Clock } from './lib/clock.js'
import { deriveKey } from './lib/keys.js'
import { createSecretBox } from './lib/secret-box.js'
import { SettingsService } from './modules/settings/service.js'

/** Everything the routes use, built once when the database is ready and passed in. */
export interface Services {
  database: Database
  settings: SettingsService
  credentials: CredentialVerifiers
}

export interface ServiceOptions {
  config: Config
  clock: Clock
  /** Replaces credential checks (tests of the policy mechanism; later issues provide real ones). */
  credentials?: Partial<CredentialVerifiers>
}

export async function createServices(database: Database, { config, clock, credentials }: ServiceOptions): Promise<Services> {
  const settings = new SettingsService({
    repository: settingsRepository(database),
    box: createSecretBox(deriveKey(config.encryptionSecret, 'settings-encryption')),
    clock,
    config,
  })
  await settings.init()
  return {
    database,
    settings,
    credentials: { ...noCredentials, ...credentials },
  }
}
