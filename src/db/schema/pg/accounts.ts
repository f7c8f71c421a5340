import { sql } from 'drizzle-orm'
import { boolean, index, integer, jsonb, pgTable, primaryKey, text, timestamp, uniqueIndex } from 'drizzle-orm/pg-core'

export const users = pgTable('users', {
  id: text('id').primaryKey(),
  username: text('username').notNull(),
  /** Stored lowercased. */
  email: text('email').notNull(),
  /** Argon2id; null for accounts that only sign in through the identity provider. */
  passwordHash: text('password_hash'),
  firstName: text('first_name'),
  lastName: text('last_name'),
  roleId: text('role_id', { enum: ['global_admin', 'global_user'] }).notNull().default('global_user'),
  emailVerified: boolean('email_verified').notNull().default(false),
  providerUserId: text('provider_user_id'),
  /** The OpenID Connect issuer and subject this account signs in as (both set, or both null). */
  oidcIssuer: text('oidc_issuer'),
  oidcSubject: text('oidc_subject'),
  failedLogins: integer('failed_logins').notNull().default(0),
  failedLoginsSince: timestamp('failed_logins_since', { withTimezone: true, mode: 'date' }),
  lockedUntil: timestamp('locked_until', { withTimezone: true, mode: 'date' }),
  /** When two-factor authentication was switched on; null while it is off (the secret: two-factor.ts). */
  twoFactorEnabledAt: timestamp('two_factor_enabled_at', { withTimezone: true, mode: 'date' }),
  createdAt: timestamp('created_at', { withTimezone: true, mode: 'date' }).notNull(),
  updatedAt: timestamp('updated_at', { withTimezone: true, mode: 'date' }).notNull(),
}, (t) => [
  uniqueIndex('users_email_unique').on(sql`lower(${t.email})`),
  uniqueIndex('users_username_unique').on(sql`lower(${t.username})`),
  uniqueIndex('users_provider_user_id_unique').on(t.providerUserId),
  uniqueIndex('users_oidc_identity_unique').on(t.oidcIssuer, t.oidcSubject),
  index('users_role_idx').on(t.roleId),
])

export const teams = pgTable('teams', {
  id: text('id').primaryKey(),
  name: text('name').notNull(),
  slug: text('slug').notNull(),
  description: text('description'),
  ownerId: text('owner_id').notNull().references(() => users.id),
  isDefault: boolean('is_default').notNull().default(false),
  createdAt: timestamp('created_at', { withTimezone: true, mode: 'date' }).notNull(),
  updatedAt: timestamp('updated_at', { withTimezone: true, mode: 'date' }).notNull(),
}, (t) => [
  uniqueIndex('teams_slug_unique').on(t.slug),
  uniqueIndex('teams_one_default_per_owner').on(t.ownerId).where(sql`${t.isDefault}`),
  index('teams_owner_idx').on(t.ownerId),
])

export const teamMembers = pgTable('team_members', {
  teamId: text('team_id').notNull().references(() => teams.id, { onDelete: 'cascade' }),
  userId: text('user_id').notNull().references(() => users.id, { onDelete: 'cascade' }),
  role: text('role', { enum: ['team_admin', 'team_user'] }).notNull(),
  joinedAt: timestamp('joined_at', { withTimezone: true, mode: 'date' }).notNull(),
}, (t) => [primaryKey({ columns: [t.teamId, t.userId] }), index('team_members_user_idx').on(t.userId)])

export const sessions = pgTable('sessions', {
  id: text('id').primaryKey(),
  /** HMAC-SHA256 of the cookie value; the value itself is never stored. */
  digest: text('digest').notNull(),
  userId: text('user_id').notNull().references(() => users.id, { onDelete: 'cascade' }),
  expiresAt: timestamp('expires_at', { withTimezone: true, mode: 'date' }).notNull(),
  createdAt: timestamp('created_at', { withTimezone: true, mode: 'date' }).notNull(),
}, (t) => [uniqueIndex('sessions_digest_unique').on(t.digest), index('sessions_user_idx').on(t.userId), index('sessions_expires_idx').on(t.expiresAt)])

/** Single-use email verification and password reset tokens. */
export const emailTokens = pgTable('email_tokens', {
  id: text('id').primaryKey(),
  userId: text('user_id').notNull().references(() => users.id, { onDelete: 'cascade' }),
  purpose: text('purpose', { enum: ['verify_email', 'reset_password'] }).notNull(),
  digest: text('digest').notNull(),
  expiresAt: timestamp('expires_at', { withTimezone: true, mode: 'date' }).notNull(),
  usedAt: timestamp('used_at', { withTimezone: true, mode: 'date' }),
  createdAt: timestamp('created_at', { withTimezone: true, mode: 'date' }).notNull(),
}, (t) => [uniqueIndex('email_tokens_digest_unique').on(t.digest), index('email_tokens_user_idx').on(t.userId, t.purpose)])

export const auditEvents = pgTable('audit_events', {
  id: text('id').primaryKey(),
  type: text('type').notNull(),
  /** No foreign key: the trail outlives deleted users. */
  actorId: text('actor_id'),
  ip: text('ip'),
  target: text('target'),
  details: jsonb('details').$type<Record<string, unknown>>(),
  createdAt: timestamp('created_at', { withTimezone: true, mode: 'date' }).notNull(),
}, (t) => [index('audit_events_created_idx').on(t.createdAt), index('audit_events_type_idx').on(t.type, t.createdAt), index('audit_events_actor_idx').on(t.actorId)])

/** Pending provider sign-ins: the state is single use on the server, not only in the browser. */
export const providerStates = pgTable('provider_states', {
  id: text('id').primaryKey(),
  digest: text('digest').notNull(),
  returnTo: text('return_to'),
  expiresAt: timestamp('expires_at', { withTimezone: true, mode: 'date' }).notNull(),
  createdAt: timestamp('created_at', { withTimezone: true, mode: 'date' }).notNull(),
}, (t) => [uniqueIndex('provider_states_digest_unique').on(t.digest), index('provider_states_expires_idx').on(t.expiresAt)])
