import { sql } from 'drizzle-orm'
import { boolean, index, integer, jsonb, pgTable, primaryKey, text, timestamp, uniqueIndex } from 'drizzle-orm/pg-core'
import type { InstallationInput } from '../../../formats/installation-inputs.js'
import type { ReportedTool } from '../../../formats/satellite-reports.js'
import type { ToolDefinition } from '../../../formats/tool-definitions.js'
import { teams, users } from './accounts.js'
import { mcpServers, mcpServerVersions } from './catalogue.js'
import { satellites } from './satellites.js'

/**
 * A team's use of one catalogue server at one version: what runs (the target and the inputs
 * derived from the version for it), where (the satellite) and in which state. The values of the
 * inputs are rows of `mcp_installation_values`.
 */
export const mcpInstallations = pgTable('mcp_installations', {
  id: text('id').primaryKey(),
  teamId: text('team_id').notNull().references(() => teams.id, { onDelete: 'cascade' }),
  /** No cascade: a server or version in use is not deleted (409), except with the team that owns both. */
  serverId: text('server_id').notNull().references(() => mcpServers.id),
  versionId: text('version_id').notNull().references(() => mcpServerVersions.id),
  name: text('name').notNull(),
  trackLatest: boolean('track_latest').notNull(),
  targetKind: text('target_kind', { enum: ['package', 'remote'] }).notNull(),
  targetIndex: integer('target_index').notNull(),
  /** `stdio`, `streamable-http` or `sse`: how the target is reached. */
  transport: text('transport').notNull(),
  /** Derived from the version for the target, with the scope the team admins chose for each. */
  inputs: jsonb('inputs').$type<InstallationInput[]>().notNull(),
  satelliteId: text('satellite_id').references(() => satellites.id, { onDelete: 'set null' }),
  desired: text('desired', { enum: ['running', 'stopped'] }).notNull(),
  /** `none`: the satellite gives the instance no network at all. */
  network: text('network', { enum: ['full', 'none'] }).notNull().default('full'),
  /** Moves with every change to what runs; the satellite channel's documents follow it. */
  specRevision: integer('spec_revision').notNull(),
  restartGeneration: integer('restart_generation').notNull(),
  /** Tools the satellite must not offer (null: none by name). At most one of this and `allowed_tools` is set. */
  disabledTools: jsonb('disabled_tools').$type<string[]>(),
  /** The only tools the satellite may offer (null: no allow-list); a tool reported later outside it is refused at once. */
  allowedTools: jsonb('allowed_tools').$type<string[]>(),
  /** Tool definitions are pinned: a tool new or changed since its approval is held until a team admin approves it. */
  pinTools: boolean('pin_tools').notNull().default(false),
  /** The tools held now (new or changed under pin_tools), as last found at a report or an approval; each change is audited once. */
  heldTools: jsonb('held_tools').$type<Array<{ name: string; hash: string }>>().notNull().default(sql`'[]'::jsonb`),
  createdBy: text('created_by').notNull(),
  createdAt: timestamp('created_at', { withTimezone: true, mode: 'date' }).notNull(),
  updatedAt: timestamp('updated_at', { withTimezone: true, mode: 'date' }).notNull(),
}, (t) => [
  uniqueIndex('mcp_installations_team_name_unique').on(t.teamId, t.name),
  index('mcp_installations_satellite_idx').on(t.satelliteId),
  index('mcp_installations_server_idx').on(t.serverId, t.trackLatest),
  index('mcp_installations_version_idx').on(t.versionId),
])

/**
 * The value of one input: the team's (`user_id` null) or one member's own (a user-scoped input).
 * A secret value is only in `sealed` (AES-256-GCM, bound to installation, user and key); any other
 * is in `value`.
 */
export const mcpInstallationValues = pgTable('mcp_installation_values', {
  installationId: text('installation_id').notNull().references(() => mcpInstallations.id, { onDelete: 'cascade' }),
  userId: text('user_id').references(() => users.id, { onDelete: 'cascade' }),
  key: text('key').notNull(),
  value: text('value'),
  sealed: text('sealed'),
  /**
   * A member's own value: the fingerprint of the satellite key it was set for. It is sealed only
   * to a global satellite or to a satellite holding that same key, so a team admin who moves the
   * installation (or re-keys a team satellite) cannot have a member's secret sealed to a key of
   * their choosing. Null for team values.
   */
  approvedKey: text('approved_key'),
  updatedAt: timestamp('updated_at', { withTimezone: true, mode: 'date' }).notNull(),
}, (t) => [
  uniqueIndex('mcp_installation_values_team_unique').on(t.installationId, t.key).where(sql`${t.userId} is null`),
  uniqueIndex('mcp_installation_values_user_unique').on(t.installationId, t.userId, t.key).where(sql`${t.userId} is not null`),
  index('mcp_installation_values_user_idx').on(t.userId),
])

/**
 * What a satellite last reported about one instance of an installation (the shared one, or one
 * member's own): its phase for the spec it reported, and the tools it serves. Instance ids are
 * derived from installation and member (see the desired-state document), so a row exists only
 * once a satellite reported.
 */
export const mcpInstanceStates = pgTable('mcp_instance_states', {
  instanceId: text('instance_id').primaryKey(),
  installationId: text('installation_id').notNull().references(() => mcpInstallations.id, { onDelete: 'cascade' }),
  userId: text('user_id').references(() => users.id, { onDelete: 'cascade' }),
  satelliteId: text('satellite_id').notNull().references(() => satellites.id, { onDelete: 'cascade' }),
  /** The installation's spec_revision the reported spec belongs to. */
  specRevision: integer('spec_revision').notNull(),
  specHash: text('spec_hash').notNull(),
  phase: text('phase', { enum: ['starting', 'running', 'degraded', 'failed', 'stopped'] }).notNull(),
  message: text('message'),
  startedAt: timestamp('started_at', { withTimezone: true, mode: 'date' }),
  tools: jsonb('tools').$type<ReportedTool[]>().notNull(),
  reportedAt: timestamp('reported_at', { withTimezone: true, mode: 'date' }).notNull(),
}, (t) => [
  index('mcp_instance_states_installation_idx').on(t.installationId),
])

/** Log lines an instance wrote, as its satellite reported them (secret values masked); the newest 1 000 per instance are kept. */
export const mcpInstanceLogs = pgTable('mcp_instance_logs', {
  id: text('id').primaryKey(),
  instanceId: text('instance_id').notNull(),
  installationId: text('installation_id').notNull().references(() => mcpInstallations.id, { onDelete: 'cascade' }),
  userId: text('user_id').references(() => users.id, { onDelete: 'cascade' }),
  at: timestamp('at', { withTimezone: true, mode: 'date' }).notNull(),
  stream: text('stream', { enum: ['stdout', 'stderr', 'event'] }).notNull(),
  text: text('text').notNull(),
}, (t) => [
  index('mcp_instance_logs_instance_idx').on(t.instanceId, t.id),
  index('mcp_instance_logs_installation_idx').on(t.installationId, t.id),
])

/**
 * The tool definitions a team admin approved for an installation (pinning): one per tool name,
 * the definition as reported when approved (shown beside a changed one) and its hash.
 */
export const installationToolApprovals = pgTable('installation_tool_approvals', {
  installationId: text('installation_id').notNull().references(() => mcpInstallations.id, { onDelete: 'cascade' }),
  name: text('name').notNull(),
  hash: text('hash').notNull(),
  definition: jsonb('definition').$type<ToolDefinition>().notNull(),
  approvedBy: text('approved_by').notNull(),
  approvedAt: timestamp('approved_at', { withTimezone: true, mode: 'date' }).notNull(),
}, (t) => [
  primaryKey({ columns: [t.installationId, t.name] }),
])
