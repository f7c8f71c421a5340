import type { SettingsRepository } from '../../db/repositories/settings.js'
import type { Db } from '../../db/types.js'
import { deriveKey } from '../../lib/keys.js'
import { createSecretBox, type SecretBox } from '../../lib/secret-box.js'

/**
 * Moving the secret settings from one ENCRYPTION_SECRET to another, and what to tell an operator
 * whose settings were sealed under a secret the service no longer has.
 */

export const settingsBox = (secret: string): SecretBox => createSecretBox(deriveKey(secret, 'settings-encryption'))

export function unreadableSecretsWarning(keys: readonly string[]): string {
  return (
    `Encrypted settings ${keys.join(', ')} cannot be decrypted with the current ENCRYPTION_SECRET (was it changed or lost?); ` +
    'they act as unset until fixed. Start with the previous ENCRYPTION_SECRET, or re-encrypt them with ' +
    '`OLD_ENCRYPTION_SECRET=<previous secret> npm run secret:rotate`, or set them again ' +
    '(PUT /api/settings/<key>, or `npm run settings:set -- <key> <value>`).'
  )
}

export interface RotationReport {
  /** Opened with the old secret, sealed again with the new one. */
  reencrypted: string[]
  /** Already sealed with the new secret (set again since the change); left as they are. */
  current: string[]
  /** Never set and sealed under neither secret: they hold their default whatever the secret. */
  defaults: string[]
}

/** Refused as a whole: these set values open with neither secret. */
export class RotationRefused extends Error {
  /**
   * `keys` are settings; `elsewhere` names other sealed values by where they are kept (never by
   * what they hold).
   */
  constructor(readonly keys: readonly string[], readonly elsewhere: readonly string[] = []) {
    super(
      `Nothing was changed: ${[...keys, ...elsewhere].join(', ')} cannot be decrypted with OLD_ENCRYPTION_SECRET (nor with ENCRYPTION_SECRET). ` +
        'Check the old secret; a value whose secret is lost can only be set again.',
    )
    this.name = 'RotationRefused'
  }
}

/**
 * Other data sealed under ENCRYPTION_SECRET, re-encrypted in the settings' transaction: answers
 * the places it cannot open (the rotation is then refused and rolled back as a whole).
 */
export type SealedElsewhere = (tx: Db) => Promise<readonly string[]>

function tryOpen(box: SecretBox, sealed: string): string | null {
  try {
    return box.open(sealed)
  } catch {
    return null
  }
}

/**
 * Re-encrypts every secret setting (the core's and the plugins') from `from` to `to` in one
 * transaction, or changes nothing. Values already under `to` are accepted, so an interrupted or
 * repeated rotation, or a secret set again after the change, is no obstacle. `elsewhere` joins
 * the transaction: whatever it cannot open is refused together with the settings that do not open.
 */
export async function rotateSettingsSecret(
  repository: SettingsRepository,
  { from, to }: { from: string; to: string },
  elsewhere?: SealedElsewhere,
): Promise<RotationReport> {
  if (from === to) throw new Error('OLD_ENCRYPTION_SECRET equals ENCRYPTION_SECRET: there is nothing to re-encrypt.')
  const previous = settingsBox(from)
  const next = settingsBox(to)
  const report: RotationReport = { reencrypted: [], current: [], defaults: [] }
  const lost: string[] = []
  await repository.reseal((rows) => {
    const writes = []
    for (const row of rows) {
      const plaintext = tryOpen(previous, row.value)
      if (plaintext !== null) {
        writes.push({ key: row.key, value: next.seal(plaintext), previous: row.value })
        report.reencrypted.push(row.key)
      } else if (tryOpen(next, row.value) !== null) report.current.push(row.key)
      else if (row.setAt === null) report.defaults.push(row.key)
      else lost.push(row.key)
    }
    return writes
  }, async (tx) => {
    const refused = elsewhere === undefined ? [] : await elsewhere(tx)
    if (lost.length > 0 || refused.length > 0) throw new RotationRefused(lost, refused)
  })
  return report
}
