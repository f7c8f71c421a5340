import { boolean, index, jsonb, pgTable, primaryKey, text, timestamp, uniqueIndex } from 'drizzle-orm/pg-core'
import type { ClientMetadata } from '../../../formats/client-metadata.js'
import { users } from './accounts.js'

/**
 * OAuth 2.0 authorization server. Codes, access and refresh tokens are stored only as
 * HMAC digests under unique indexes; lists (redirect URIs, grant types, scopes) are
 * space-separated, as in the protocol itself.
 */

/** Dynamically registered public clients (RFC 7591); the static CLI client lives in code. */
export const oauthClients = pgTable('oauth_clients', {
  id: text('id').primaryKey(),
  name: text('name').notNull(),
  redirectUris: text('redirect_uris').notNull(),
  grantTypes: text('grant_types').notNull(),
  scope: text('scope').notNull(),
  /** RFC 7591 §2 optional metadata (client_uri, logo_uri, contacts…), as registered. */
  metadata: jsonb('metadata').$type<ClientMetadata>(),
  createdAt: timestamp('created_at', { withTimezone: true, mode: 'date' }).notNull(),
})

/** Authorization requests waiting for sign-in and consent; single use, 10 minutes. */
export const oauthRequests = pgTable('oauth_requests', {
  id: text('id').primaryKey(),
  clientId: text('client_id').notNull(),
  redirectUri: text('redirect_uri').notNull(),
  scope: text('scope').notNull(),
  /** Empty when the client sent none (PKCE protects the request then; RFC 9700 §2.1.1). */
  state: text('state').notNull(),
  codeChallenge: text('code_challenge').notNull(),
  /** `login` until the browser signed in again on the consent page; `consent` to ask even if remembered. */
  prompt: text('prompt', { enum: ['login', 'consent'] }),
  /** RFC 8707 resource indicator: the audience of the tokens; null = this service's own API. */
  resource: text('resource'),
  /** The session (row id) the request belongs to, once a signed-in browser has seen it. */
  sessionId: text('session_id'),
  expiresAt: timestamp('expires_at', { withTimezone: true, mode: 'date' }).notNull(),
  createdAt: timestamp('created_at', { withTimezone: true, mode: 'date' }).notNull(),
}, (t) => [index('oauth_requests_expires_idx').on(t.expiresAt)])

/**
 * Remembered consent per (user, client): a repeat authorization within these scopes, to one of the
 * redirect URIs approved, skips the page.
 */
export const oauthConsents = pgTable('oauth_consents', {
  userId: text('user_id').notNull().references(() => users.id, { onDelete: 'cascade' }),
  clientId: text('client_id').notNull(),
  scope: text('scope').notNull(),
  teamId: text('team_id'),
  /**
   * The exact redirect URIs (port included) the user approved, space-separated, most recent first;
   * null for consents remembered before this was recorded, which ask again (RFC 8252 §8.6).
   */
  redirectUris: text('redirect_uris'),
  updatedAt: timestamp('updated_at', { withTimezone: true, mode: 'date' }).notNull(),
}, (t) => [primaryKey({ columns: [t.userId, t.clientId] }), index('oauth_consents_client_idx').on(t.clientId)])

/** One approved authorization: its code, and the lineage every token issued from it belongs to. */
export const oauthGrants = pgTable('oauth_grants', {
  id: text('id').primaryKey(),
  clientId: text('client_id').notNull(),
  userId: text('user_id').notNull().references(() => users.id, { onDelete: 'cascade' }),
  teamId: text('team_id'),
  scope: text('scope').notNull(),
  redirectUri: text('redirect_uri').notNull(),
  /** RFC 8707 resource indicator: the audience of the tokens; null = this service's own API. */
  resource: text('resource'),
  codeDigest: text('code_digest').notNull(),
  codeChallenge: text('code_challenge').notNull(),
  codeExpiresAt: timestamp('code_expires_at', { withTimezone: true, mode: 'date' }).notNull(),
  codeUsedAt: timestamp('code_used_at', { withTimezone: true, mode: 'date' }),
  revokedAt: timestamp('revoked_at', { withTimezone: true, mode: 'date' }),
  createdAt: timestamp('created_at', { withTimezone: true, mode: 'date' }).notNull(),
}, (t) => [uniqueIndex('oauth_grants_code_digest_unique').on(t.codeDigest), index('oauth_grants_user_idx').on(t.userId)])

export const oauthTokens = pgTable('oauth_tokens', {
  id: text('id').primaryKey(),
  digest: text('digest').notNull(),
  kind: text('kind', { enum: ['access', 'refresh'] }).notNull(),
  grantId: text('grant_id').notNull().references(() => oauthGrants.id, { onDelete: 'cascade' }),
  userId: text('user_id').notNull().references(() => users.id, { onDelete: 'cascade' }),
  clientId: text('client_id').notNull(),
  teamId: text('team_id'),
  scope: text('scope').notNull(),
  /** RFC 8707 resource indicator: the audience of the tokens; null = this service's own API. */
  resource: text('resource'),
  expiresAt: timestamp('expires_at', { withTimezone: true, mode: 'date' }).notNull(),
  /** Refresh tokens: set when rotated; presenting it again is reuse. */
  usedAt: timestamp('used_at', { withTimezone: true, mode: 'date' }),
  revoked: boolean('revoked').notNull().default(false),
  createdAt: timestamp('created_at', { withTimezone: true, mode: 'date' }).notNull(),
}, (t) => [
  uniqueIndex('oauth_tokens_digest_unique').on(t.digest),
  index('oauth_tokens_grant_idx').on(t.grantId),
  index('oauth_tokens_expires_idx').on(t.expiresAt),
  index('oauth_tokens_user_idx').on(t.userId),
])
