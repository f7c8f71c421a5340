import { installationsRepository, type InstallationsRepository } from '../../db/repositories/installations.js'
import { settingsRepository } from '../../db/repositories/settings.js'
import type { Database } from '../../db/types.js'
import { rotateSettingsSecret, type RotationReport } from '../settings/secret-rotation.js'
import { installationValueBox, type ValueBox, type ValuePlace } from './sealed-values.js'
import { connectionsRepository } from '../../db/repositories/connections.js'
import { upstreamClientsRepository } from '../../db/repositories/upstream-clients.js'
import { resealConnections, type ConnectionsReport } from '../connections/secret-rotation.js'
import { twoFactorRepository } from '../../db/repositories/two-factor.js'
import { resealTwoFactorSecrets, type TwoFactorReport } from '../two-factor/secret-rotation.js'

/**
 * Moving the sealed installation values from one ENCRYPTION_SECRET to another, together with the
 * secret settings: one transaction for both, so a service never starts with half its secrets
 * under each.
 */

export interface InstallationValuesReport {
  /** Opened with the old secret, sealed again with the new one. */
  reencrypted: number
  /** Already sealed with the new secret (set since the change, or an earlier run); left as they are. */
  current: number
}

export interface SecretRotationReport {
  settings: RotationReport
  installationValues: InstallationValuesReport
  /** Connection tokens and upstream client secrets. */
  connections: ConnectionsReport
  /** Users' TOTP secrets. */
  twoFactor: TwoFactorReport
}

/** Where a value is kept, as an operator reads it; never what it holds. */
export function placeName({ installationId, userId, key }: ValuePlace): string {
  return `value ${key} of installation ${installationId}${userId === null ? '' : ` (member ${userId})`}`
}

function tryOpen(box: ValueBox, sealed: string, place: ValuePlace): string | null {
  try {
    return box.open(sealed, place)
  } catch {
    return null
  }
}

/**
 * Seals every sealed value again under `to`, each bound to its own place as before: a value
 * opens only with the secret and the place it was sealed with, so one copied into another row
 * opens under neither secret and is named among the refused. Writes nothing and answers the
 * refused places when there are any; `repository` is bound to the rotation's transaction.
 */
export async function resealInstallationValues(
  repository: InstallationsRepository,
  { from, to }: { from: string; to: string },
): Promise<{ report: InstallationValuesReport; refused: string[] }> {
  const previous = installationValueBox(from)
  const next = installationValueBox(to)
  const report: InstallationValuesReport = { reencrypted: 0, current: 0 }
  const refused: string[] = []
  const writes: Array<{ place: ValuePlace; sealed: string; previous: string }> = []
  for (const { sealed, ...place } of await repository.sealedValues()) {
    const plaintext = tryOpen(previous, sealed, place)
    if (plaintext !== null) writes.push({ place, sealed: next.seal(plaintext, place), previous: sealed })
    else if (tryOpen(next, sealed, place) !== null) report.current++
    else refused.push(placeName(place))
  }
  if (refused.length > 0) return { report, refused }
  for (const write of writes) {
    // Set again by someone meanwhile: throwing rolls the whole rotation back.
    if (!(await repository.reseal(write.place, write.sealed, write.previous))) {
      throw new Error(`${placeName(write.place)} changed while it was being re-encrypted; nothing was written`)
    }
    report.reencrypted++
  }
  return { report, refused }
}

/**
 * Re-encrypts everything sealed under ENCRYPTION_SECRET that the database keeps — the secret
 * settings, the installation values, the connections' tokens and client secrets and the two-factor secrets — from `from` to `to`, in one transaction, or changes
 * nothing (`RotationRefused` names every value that opens under neither secret).
 */
export async function rotateEncryptionSecret(database: Database, secrets: { from: string; to: string }): Promise<SecretRotationReport> {
  let installationValues: InstallationValuesReport = { reencrypted: 0, current: 0 }
  let connections: ConnectionsReport = { reencrypted: 0, current: 0 }
  let twoFactor: TwoFactorReport = { reencrypted: 0, current: 0 }
  const settings = await rotateSettingsSecret(settingsRepository(database), secrets, async (tx) => {
    const { report, refused } = await resealInstallationValues(installationsRepository(database, tx), secrets)
    installationValues = report
    const sealed = await resealConnections(connectionsRepository(database, tx), upstreamClientsRepository(database, tx), secrets)
    connections = sealed.report
    const totp = await resealTwoFactorSecrets(twoFactorRepository(database, tx), secrets)
    twoFactor = totp.report
    return [...refused, ...sealed.refused, ...totp.refused]
  })
  return { settings, installationValues, connections, twoFactor }
}
