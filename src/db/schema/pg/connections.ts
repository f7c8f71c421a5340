import { index, integer, pgTable, text, timestamp, uniqueIndex } from 'drizzle-orm/pg-core'
import { teams, users } from './accounts.js'
import { mcpInstallations } from './installations.js'

/**
 * This backend's registration as an OAuth client at one remote authorization server (an issuer):
 * made by dynamic client registration (RFC 7591) or entered by a global admin. A client ID
 * metadata document needs no row: its client_id is this backend's own document URL.
 */
export const upstreamOauthClients = pgTable('upstream_oauth_clients', {
  issuer: text('issuer').primaryKey(),
  method: text('method', { enum: ['dynamic', 'manual'] }).notNull(),
  clientId: text('client_id').notNull(),
  /** Sealed under the connections key, bound to the issuer; null for a public client. */
  clientSecretSealed: text('client_secret_sealed'),
  tokenEndpointAuthMethod: text('token_endpoint_auth_method').notNull(),
  registeredAt: timestamp('registered_at', { withTimezone: true, mode: 'date' }).notNull(),
  updatedAt: timestamp('updated_at', { withTimezone: true, mode: 'date' }).notNull(),
})

/**
 * The tokens of one connection: one oauth input of an installation, owned by a member (user scope)
 * or by the team (`user_id` null, owner 'team'). The tokens are only in `sealed`, bound to
 * installation, user and key.
 */
export const oauthConnections = pgTable('oauth_connections', {
  id: text('id').primaryKey(),
  installationId: text('installation_id').notNull().references(() => mcpInstallations.id, { onDelete: 'cascade' }),
  teamId: text('team_id').notNull().references(() => teams.id, { onDelete: 'cascade' }),
  userId: text('user_id').references(() => users.id, { onDelete: 'cascade' }),
  /** The user id, or 'team'. */
  owner: text('owner').notNull(),
  inputKey: text('input_key').notNull(),
  issuer: text('issuer').notNull(),
  /** Which registration issued the tokens (refresh and revocation use the same). */
  clientId: text('client_id').notNull(),
  status: text('status', { enum: ['connected', 'expired'] }).notNull(),
  sealed: text('sealed').notNull(),
  /** When the refresher should act; null: never (no refresh token, or no expiry). */
  refreshAt: timestamp('refresh_at', { withTimezone: true, mode: 'date' }),
  /** Grows with every new access token. */
  tokenRevision: integer('token_revision').notNull().default(0),
  failures: integer('failures').notNull().default(0),
  leaseOwner: text('lease_owner'),
  leaseUntil: timestamp('lease_until', { withTimezone: true, mode: 'date' }),
  connectedAt: timestamp('connected_at', { withTimezone: true, mode: 'date' }).notNull(),
  updatedAt: timestamp('updated_at', { withTimezone: true, mode: 'date' }).notNull(),
}, (t) => [
  uniqueIndex('oauth_connections_owner_unique').on(t.installationId, t.inputKey, t.owner),
  index('oauth_connections_refresh_idx').on(t.refreshAt),
  index('oauth_connections_user_idx').on(t.userId),
  index('oauth_connections_team_idx').on(t.teamId),
])

/** A pending authorization: single use, ten minutes, bound to the session that started it. */
export const oauthConnectionFlows = pgTable('oauth_connection_flows', {
  id: text('id').primaryKey(),
  stateDigest: text('state_digest').notNull(),
  /** The caller's session row id: the callback must come with the same session. */
  sessionId: text('session_id').notNull(),
  userId: text('user_id').notNull().references(() => users.id, { onDelete: 'cascade' }),
  teamId: text('team_id').notNull().references(() => teams.id, { onDelete: 'cascade' }),
  installationId: text('installation_id').notNull().references(() => mcpInstallations.id, { onDelete: 'cascade' }),
  inputKey: text('input_key').notNull(),
  owner: text('owner').notNull(),
  issuer: text('issuer').notNull(),
  clientId: text('client_id').notNull(),
  redirectUri: text('redirect_uri').notNull(),
  codeVerifierSealed: text('code_verifier_sealed').notNull(),
  resource: text('resource').notNull(),
  /** Space-separated. */
  scopes: text('scopes').notNull(),
  returnTo: text('return_to'),
  expiresAt: timestamp('expires_at', { withTimezone: true, mode: 'date' }).notNull(),
  createdAt: timestamp('created_at', { withTimezone: true, mode: 'date' }).notNull(),
}, (t) => [
  uniqueIndex('oauth_connection_flows_state_unique').on(t.stateDigest),
  index('oauth_connection_flows_expires_idx').on(t.expiresAt),
])
