import type { ConnectionsRepository } from '../../db/repositories/connections.js'
import type { UpstreamClientsRepository } from '../../db/repositories/upstream-clients.js'
import { connectionTokensBox } from './tokens-box.js'

/**
 * Moving what the connections keep sealed — their tokens, and the client secrets of upstream
 * registrations — from one ENCRYPTION_SECRET to another, inside the rotation's transaction. Each
 * stays bound to its own place (connection, issuer); one that opens under neither secret is named
 * among the refused, and then nothing is written.
 */

export interface ConnectionsReport {
  /** Opened with the old secret, sealed again with the new one. */
  reencrypted: number
  /** Already sealed with the new secret. */
  current: number
}

function tryOpen(open: () => string): string | null {
  try {
    return open()
  } catch {
    return null
  }
}

export async function resealConnections(
  connections: ConnectionsRepository, clients: UpstreamClientsRepository, { from, to }: { from: string; to: string },
): Promise<{ report: ConnectionsReport; refused: string[] }> {
  const previous = connectionTokensBox(from)
  const next = connectionTokensBox(to)
  const report: ConnectionsReport = { reencrypted: 0, current: 0 }
  const refused: string[] = []
  const writes: Array<() => Promise<boolean>> = []
  for (const row of await connections.sealedConnections()) {
    const place = { installationId: row.installationId, userId: row.userId, inputKey: row.inputKey }
    const tokens = tryOpen(() => JSON.stringify(previous.openTokens(place, row.sealed)))
    if (tokens !== null) writes.push(() => connections.reseal(row.id, next.sealTokens(place, JSON.parse(tokens)), row.sealed))
    else if (tryOpen(() => JSON.stringify(next.openTokens(place, row.sealed))) !== null) report.current++
    else refused.push(`connection ${row.inputKey} of installation ${row.installationId}${row.userId === null ? '' : ` (member ${row.userId})`}`)
  }
  for (const { issuer, sealed } of await clients.sealedSecrets()) {
    const secret = tryOpen(() => previous.openClientSecret(issuer, sealed))
    if (secret !== null) writes.push(() => clients.reseal(issuer, next.sealClientSecret(issuer, secret), sealed))
    else if (tryOpen(() => next.openClientSecret(issuer, sealed)) !== null) report.current++
    else refused.push(`client secret of the upstream registration at ${issuer}`)
  }
  if (refused.length > 0) return { report, refused }
  for (const write of writes) {
    if (!(await write())) throw new Error('A connection changed while it was being re-encrypted; nothing was written')
    report.reencrypted++
  }
  return { report, refused }
}
