import { sql } from 'drizzle-orm'
import { index, integer, primaryKey, sqliteTable, text, uniqueIndex } from 'drizzle-orm/sqlite-core'
import type { ServerPackage, ServerRemote } from '../../../formats/catalogue-entries.js'
import { teams, users } from './accounts.js'

export const mcpCategories = sqliteTable('mcp_categories', {
  id: text('id').primaryKey(),
  name: text('name').notNull(),
  /** The name lowercased by the service (Unicode-aware, unlike SQLite's lower()): unique. */
  nameKey: text('name_key').notNull(),
  description: text('description'),
  icon: text('icon'),
  sortOrder: integer('sort_order').notNull().default(0),
  createdAt: integer('created_at', { mode: 'timestamp_ms' }).notNull(),
  updatedAt: integer('updated_at', { mode: 'timestamp_ms' }).notNull(),
}, (t) => [uniqueIndex('mcp_categories_name_unique').on(t.nameKey), index('mcp_categories_order_idx').on(t.sortOrder, t.name)])

/**
 * `seq` is the integer key the full-text index (mcp_servers_fts, an FTS5 external-content table
 * kept in sync by triggers, see the catalogue migration) refers to: an INTEGER PRIMARY KEY never
 * changes, where a bare rowid may be renumbered by VACUUM. `id` is the public identifier.
 */
export const mcpServers = sqliteTable('mcp_servers', {
  seq: integer('seq').primaryKey({ autoIncrement: true }),
  id: text('id').notNull().unique('mcp_servers_id_unique'),
  name: text('name').notNull(),
  /** `name` lowercased, the key of the name sort (binary order on both dialects). */
  sortName: text('sort_name').notNull(),
  slug: text('slug').notNull(),
  description: text('description').notNull().default(''),
  longDescription: text('long_description'),
  categoryId: text('category_id').references(() => mcpCategories.id, { onDelete: 'set null' }),
  /** Normalized (lowercase, distinct); mirrored in mcp_server_tags for the tag filter. */
  tags: text('tags', { mode: 'json' }).$type<string[]>().notNull(),
  language: text('language'),
  runtime: text('runtime'),
  /** `language` and `runtime` lowercased by the service (Unicode-aware), for their filters. */
  languageKey: text('language_key'),
  runtimeKey: text('runtime_key'),
  transportType: text('transport_type', { enum: ['stdio', 'http', 'sse'] }).notNull(),
  status: text('status', { enum: ['active', 'deprecated', 'maintenance', 'disabled'] }).notNull(),
  featured: integer('featured', { mode: 'boolean' }).notNull().default(false),
  visibility: text('visibility', { enum: ['global', 'team'] }).notNull(),
  ownerTeamId: text('owner_team_id').references(() => teams.id, { onDelete: 'cascade' }),
  repositoryUrl: text('repository_url'),
  websiteUrl: text('website_url'),
  iconUrl: text('icon_url'),
  authorName: text('author_name'),
  organization: text('organization'),
  license: text('license'),
  packages: text('packages', { mode: 'json' }).$type<ServerPackage[]>().notNull(),
  remotes: text('remotes', { mode: 'json' }).$type<ServerRemote[]>().notNull(),
  latestVersion: text('latest_version'),
  /** The server's name in the MCP Registry (`namespace/name`), for servers imported or synced from one; unique. */
  registryName: text('registry_name'),
  /** `manual` for servers created through this API, `registry` for those imported or synced. */
  source: text('source', { enum: ['manual', 'registry'] }).notNull().default('manual'),
  createdBy: text('created_by').references(() => users.id, { onDelete: 'set null' }),
  createdAt: integer('created_at', { mode: 'timestamp_ms' }).notNull(),
  updatedAt: integer('updated_at', { mode: 'timestamp_ms' }).notNull(),
}, (t) => [
  uniqueIndex('mcp_servers_slug_unique').on(t.slug),
  uniqueIndex('mcp_servers_registry_name_unique').on(t.registryName),
  index('mcp_servers_name_idx').on(t.sortName, t.id),
  index('mcp_servers_created_idx').on(t.createdAt, t.id),
  index('mcp_servers_updated_idx').on(t.updatedAt, t.id),
  index('mcp_servers_category_idx').on(t.categoryId),
  index('mcp_servers_status_idx').on(t.status),
  index('mcp_servers_language_idx').on(t.languageKey),
  index('mcp_servers_runtime_idx').on(t.runtimeKey),
  index('mcp_servers_owner_team_idx').on(t.ownerTeamId),
  index('mcp_servers_visibility_idx').on(t.visibility, t.ownerTeamId),
])

export const mcpServerTags = sqliteTable('mcp_server_tags', {
  serverId: text('server_id').notNull().references(() => mcpServers.id, { onDelete: 'cascade' }),
  tag: text('tag').notNull(),
}, (t) => [primaryKey({ columns: [t.serverId, t.tag] }), index('mcp_server_tags_tag_idx').on(t.tag, t.serverId)])

export const mcpServerVersions = sqliteTable('mcp_server_versions', {
  id: text('id').primaryKey(),
  serverId: text('server_id').notNull().references(() => mcpServers.id, { onDelete: 'cascade' }),
  version: text('version').notNull(),
  /** Sorts as semver precedence in binary order (modules/catalogue/semver-key.ts). */
  precedence: text('precedence').notNull(),
  prerelease: integer('prerelease', { mode: 'boolean' }).notNull(),
  status: text('status', { enum: ['active', 'deprecated', 'yanked'] }).notNull(),
  changelog: text('changelog'),
  releaseDate: integer('release_date', { mode: 'timestamp_ms' }),
  packages: text('packages', { mode: 'json' }).$type<ServerPackage[]>(),
  remotes: text('remotes', { mode: 'json' }).$type<ServerRemote[]>(),
  isLatest: integer('is_latest', { mode: 'boolean' }).notNull().default(false),
  /** The server.json document (2025-12-11 format) this version was imported from; null for versions created by hand. */
  serverJson: text('server_json', { mode: 'json' }).$type<Record<string, unknown>>(),
  createdAt: integer('created_at', { mode: 'timestamp_ms' }).notNull(),
  updatedAt: integer('updated_at', { mode: 'timestamp_ms' }).notNull(),
}, (t) => [
  // Build metadata does not count: 1.0.0 and 1.0.0+build.7 are the same version. The index also
  // serves the newest-first listing (binary order is SQLite's default).
  uniqueIndex('mcp_server_versions_precedence_unique').on(t.serverId, t.precedence),
  uniqueIndex('mcp_server_versions_one_latest').on(t.serverId).where(sql`${t.isLatest} = 1`),
])

/**
 * One row whose `revision` grows with every change to the catalogue tables — bumped by triggers
 * (see the catalogue-revision migration), so that every writer, cascades included, moves it in
 * its own transaction. Cached list pages are keyed by it (modules/catalogue/list-cache.ts).
 */
export const catalogueRevision = sqliteTable('catalogue_revision', {
  id: integer('id').primaryKey(),
  revision: integer('revision').notNull(),
})

/**
 * One row (id 1) for the sync from an upstream registry: the lease that makes one sync run at a
 * time across every instance (taken by a conditional update of `locked_until`), and where the last
 * successful sync stopped (`next_since`, the newest `updatedAt` seen upstream, in `upstream_url`).
 */
export const registrySyncState = sqliteTable('registry_sync_state', {
  id: integer('id').primaryKey(),
  lockToken: text('lock_token'),
  lockedUntil: integer('locked_until', { mode: 'timestamp_ms' }),
  nextSince: text('next_since'),
  /** The upstream registry `next_since` belongs to: a position in another registry's list means nothing. */
  upstreamUrl: text('upstream_url'),
  lastSyncedAt: integer('last_synced_at', { mode: 'timestamp_ms' }),
})
