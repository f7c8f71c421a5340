import { index, integer, primaryKey, sqliteTable, text } from 'drizzle-orm/sqlite-core'

/**
 * Tool calls as satellites report them: who called which tool of which installation, how it ended
 * and how long it took — never the arguments or the result. No foreign keys: a call stays a record
 * of what happened after its installation is gone, until the retention purge removes it (7 days).
 */
export const toolCalls = sqliteTable('tool_calls', {
  id: text('id').primaryKey(),
  satelliteId: text('satellite_id').notNull(),
  instanceId: text('instance_id').notNull(),
  installationId: text('installation_id').notNull(),
  teamId: text('team_id').notNull(),
  /** The `sub` of the token the call came with; null when the satellite knew none. */
  userId: text('user_id'),
  clientId: text('client_id'),
  tool: text('tool').notNull(),
  outcome: text('outcome', { enum: ['ok', 'error', 'refused'] }).notNull(),
  durationMs: integer('duration_ms').notNull(),
  at: integer('at', { mode: 'timestamp_ms' }).notNull(),
}, (t) => [
  index('tool_calls_installation_at_idx').on(t.installationId, t.at),
  index('tool_calls_team_at_idx').on(t.teamId, t.at),
  index('tool_calls_at_idx').on(t.at),
])

/** The batches already taken, per satellite: a batch posted again (a retry) is counted once. Kept as long as the raw calls. */
export const toolCallBatches = sqliteTable('tool_call_batches', {
  satelliteId: text('satellite_id').notNull(),
  batchId: text('batch_id').notNull(),
  receivedAt: integer('received_at', { mode: 'timestamp_ms' }).notNull(),
}, (t) => [primaryKey({ columns: [t.satelliteId, t.batchId] }), index('tool_call_batches_received_idx').on(t.receivedAt)])

/**
 * The calls counted per hour, team, installation, user ('' for none) and tool, added to in the
 * transaction that takes a batch: usage is read from here alone. Kept USAGE_RETENTION_DAYS.
 */
export const toolCallHours = sqliteTable('tool_call_hours', {
  teamId: text('team_id').notNull(),
  hour: integer('hour', { mode: 'timestamp_ms' }).notNull(),
  installationId: text('installation_id').notNull(),
  userId: text('user_id').notNull(),
  tool: text('tool').notNull(),
  calls: integer('calls').notNull(),
  ok: integer('ok').notNull(),
  error: integer('error').notNull(),
  refused: integer('refused').notNull(),
  durationMsSum: integer('duration_ms_sum').notNull(),
}, (t) => [
  primaryKey({ columns: [t.teamId, t.hour, t.installationId, t.userId, t.tool] }),
  index('tool_call_hours_hour_idx').on(t.hour),
])
