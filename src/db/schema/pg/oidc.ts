import { index, pgTable, text, timestamp, uniqueIndex } from 'drizzle-orm/pg-core'

/**
 * Pending OpenID Connect sign-ins, kept in the database so that the callback may land on any
 * instance. Found by a digest of the state (never the state itself), used once, ten minutes long.
 */
export const oidcStates = pgTable('oidc_states', {
  id: text('id').primaryKey(),
  digest: text('digest').notNull(),
  /** The issuer the sign-in started at: a callback after the issuer setting changed is refused. */
  issuer: text('issuer').notNull(),
  nonce: text('nonce').notNull(),
  /** The PKCE code verifier, sealed (AES-256-GCM, bound to this row's digest). */
  codeVerifier: text('code_verifier').notNull(),
  returnTo: text('return_to'),
  expiresAt: timestamp('expires_at', { withTimezone: true, mode: 'date' }).notNull(),
  createdAt: timestamp('created_at', { withTimezone: true, mode: 'date' }).notNull(),
}, (t) => [uniqueIndex('oidc_states_digest_unique').on(t.digest), index('oidc_states_expires_idx').on(t.expiresAt)])
