import { sql } from 'drizzle-orm'
import { index, integer, sqliteTable, text, uniqueIndex } from 'drizzle-orm/sqlite-core'
import type { SatelliteMetrics, SatelliteSystemInfo } from '../../../formats/satellite-reports.js'
import { teams } from './accounts.js'

/**
 * One row per registration token, keyed by its JWT `jti`. The token itself is never stored: it is
 * a signed JWT, and this row is what makes it single-use and revocable.
 */
export const satelliteRegistrationTokens = sqliteTable('satellite_registration_tokens', {
  id: text('id').primaryKey(),
  scope: text('scope', { enum: ['global', 'team'] }).notNull(),
  teamId: text('team_id').references(() => teams.id, { onDelete: 'cascade' }),
  /** No foreign key: the record outlives a deleted admin, like the audit trail. */
  createdBy: text('created_by').notNull(),
  expiresAt: integer('expires_at', { mode: 'timestamp_ms' }).notNull(),
  usedAt: integer('used_at', { mode: 'timestamp_ms' }),
  usedBySatelliteId: text('used_by_satellite_id'),
  revokedAt: integer('revoked_at', { mode: 'timestamp_ms' }),
  createdAt: integer('created_at', { mode: 'timestamp_ms' }).notNull(),
}, (t) => [
  index('satellite_registration_tokens_created_idx').on(t.createdAt),
  index('satellite_registration_tokens_team_idx').on(t.teamId, t.createdAt),
  index('satellite_registration_tokens_expires_idx').on(t.expiresAt),
])

export const satellites = sqliteTable('satellites', {
  id: text('id').primaryKey(),
  /** Unique across scopes and teams: a name is how a satellite re-registers. */
  name: text('name').notNull(),
  satelliteType: text('satellite_type', { enum: ['global', 'team'] }).notNull(),
  teamId: text('team_id').references(() => teams.id, { onDelete: 'cascade' }),
  /**
   * `inactive` until the first heartbeat, then what the last one reported. Readers see `offline`
   * when that heartbeat is old, and `disabled` while `disabled_at` is set.
   */
  status: text('status', { enum: ['inactive', 'active', 'degraded', 'error'] }).notNull(),
  /** Set while an admin has the satellite disabled: its key is refused. */
  disabledAt: integer('disabled_at', { mode: 'timestamp_ms' }),
  /** HMAC-SHA256 of the API key's secret; the key itself is never stored. */
  keyDigest: text('key_digest').notNull(),
  capabilities: text('capabilities', { mode: 'json' }).$type<string[]>().notNull(),
  satelliteUrl: text('satellite_url'),
  /** base64url of the raw X25519 public key that secrets in its documents are sealed to; null: it gets no instance with secrets. */
  publicKey: text('public_key'),
  /** When the public key was last replaced (not when first set); null: never replaced. */
  publicKeyChangedAt: integer('public_key_changed_at', { mode: 'timestamp_ms' }),
  /** How the satellite keeps its instances apart, as it reports: `none`, `process-sandbox` or `container`. */
  isolation: text('isolation', { enum: ['none', 'process-sandbox', 'container'] }).notNull().default('none'),
  /** The runtimes it reports it can run (`node`, `npx`, `uvx`, `docker`, …). */
  runtimes: text('runtimes', { mode: 'json' }).$type<string[]>().notNull().default(sql`'[]'`),
  /** Set when the satellite said it stopped cleanly; cleared by its next heartbeat. */
  offlineAt: integer('offline_at', { mode: 'timestamp_ms' }),
  /**
   * Moves in every transaction that changes what this satellite's desired-state document holds
   * (with a change notification): a document kept in memory is current while the stamp is.
   */
  desiredStamp: integer('desired_stamp').notNull().default(0),
  systemInfo: text('system_info', { mode: 'json' }).$type<SatelliteSystemInfo>(),
  systemMetrics: text('system_metrics', { mode: 'json' }).$type<SatelliteMetrics>(),
  version: text('version'),
  lastHeartbeatAt: integer('last_heartbeat_at', { mode: 'timestamp_ms' }),
  registeredAt: integer('registered_at', { mode: 'timestamp_ms' }).notNull(),
  createdAt: integer('created_at', { mode: 'timestamp_ms' }).notNull(),
  updatedAt: integer('updated_at', { mode: 'timestamp_ms' }).notNull(),
}, (t) => [
  uniqueIndex('satellites_name_unique').on(t.name),
  uniqueIndex('satellites_key_digest_unique').on(t.keyDigest),
  index('satellites_team_idx').on(t.teamId, t.createdAt),
  index('satellites_created_idx').on(t.createdAt),
])
