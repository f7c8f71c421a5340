import { isoOrNull } from '../../http/envelope.js'
import { registrationTokenStatus, type RegistrationTokenRow } from '../../db/repositories/registration-tokens.js'
import { satelliteStatus, type SatelliteRow } from '../../db/repositories/satellites.js'
import { isoTime } from '../../lib/iso-time.js'
import { keyFingerprint } from './fingerprint.js'

export function tokenView(row: RegistrationTokenRow, now: Date) {
  return {
    id: row.id,
    scope: row.scope,
    team_id: row.teamId,
    created_by: row.createdBy,
    status: registrationTokenStatus(row, now),
    expires_at: isoTime(row.expiresAt),
    used_at: isoOrNull(row.usedAt),
    used_by_satellite_id: row.usedBySatelliteId,
    revoked_at: isoOrNull(row.revokedAt),
    created_at: isoTime(row.createdAt),
  }
}

/** `silentSince`: heartbeats before it make a reporting satellite `offline`. */
export function satelliteView(row: SatelliteRow, silentSince: Date) {
  return {
    id: row.id,
    name: row.name,
    satellite_type: row.satelliteType,
    team_id: row.teamId,
    status: satelliteStatus(row, silentSince),
    capabilities: row.capabilities,
    satellite_url: row.satelliteUrl,
    system_info: row.systemInfo,
    system_metrics: row.systemMetrics,
    version: row.version,
    isolation: row.isolation,
    runtimes: row.runtimes,
    public_key_fingerprint: keyFingerprint(row.publicKey),
    public_key_changed_at: isoOrNull(row.publicKeyChangedAt),
    last_heartbeat_at: isoOrNull(row.lastHeartbeatAt),
    disabled_at: isoOrNull(row.disabledAt),
    registered_at: isoTime(row.registeredAt),
    created_at: isoTime(row.createdAt),
    updated_at: isoTime(row.updatedAt),
  }
}
