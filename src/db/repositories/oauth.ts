import { and, eq, gt, isNull, lt, notExists, or, sql } from 'drizzle-orm'
import { rowReader } from '../readers/row-reader.js'
import { families, topics, userCredentialTopics } from '../feed/topics.js'
import type { Database, Db } from '../types.js'
import { defaultTeamOfUser, type TeamRow } from './teams.js'
import type { UserRow } from './users.js'

export type OAuthClientRow = Database['t']['oauthClients']['$inferSelect']
export type OAuthRequestRow = Database['t']['oauthRequests']['$inferSelect']
export type OAuthConsentRow = Database['t']['oauthConsents']['$inferSelect']
export type OAuthGrantRow = Database['t']['oauthGrants']['$inferSelect']
export type OAuthTokenRow = Database['t']['oauthTokens']['$inferSelect']

export type OAuthRepository = ReturnType<typeof oauthRepository>

/** The authorization server's storage: clients, pending requests, consents, grants (codes) and tokens. */
export function oauthRepository(database: Database, executor: Db = database.db) {
  const { t } = database
  const db = executor
  // Every bearer-authenticated request runs this lookup: built once (on first use), run on the
  // driver directly, and answered again from memory while nothing it read has changed: on SQLite
  // while nothing in the database has, on PostgreSQL until a notification names the token, its
  // user or the default team (row-reader.ts, kept-answers.ts). The expiry is checked in
  // findLiveAccess, so that the answer depends on the digest alone.
  const prepareAccess = () => rowReader(database, 'oauth_access_by_digest', { token: t.oauthTokens, user: t.users, defaultTeam: t.teams }, (selection) => database.db
    .select(selection)
    .from(t.oauthTokens)
    .innerJoin(t.users, eq(t.users.id, t.oauthTokens.userId))
    .leftJoin(t.teams, defaultTeamOfUser(database))
    .where(and(
      eq(t.oauthTokens.digest, sql.placeholder('digest')),
      eq(t.oauthTokens.kind, 'access'),
      eq(t.oauthTokens.revoked, false),
    )), {
    optional: ['defaultTeam'],
    reuse: true,
    topics: {
      families: [families.token, families.user, families.team],
      of: ({ token, user, defaultTeam }) => userCredentialTopics(topics.token(token.id), user.id, defaultTeam?.id),
    },
  })
  let accessByDigest: ReturnType<typeof prepareAccess> | undefined
  const told = (topic: string) => database.changes.tell(db, topic)

  return {
    with: (tx: Db) => oauthRepository(database, tx),

    async insertClient(client: OAuthClientRow): Promise<void> {
      await db.insert(t.oauthClients).values(client)
    },

    async findClient(id: string): Promise<OAuthClientRow | undefined> {
      const [row] = await db.select().from(t.oauthClients).where(eq(t.oauthClients.id, id))
      return row
    },

    async insertRequest(request: OAuthRequestRow): Promise<void> {
      await db.insert(t.oauthRequests).values(request)
    },

    async findRequest(id: string, now: Date): Promise<OAuthRequestRow | undefined> {
      const [row] = await db.select().from(t.oauthRequests).where(and(eq(t.oauthRequests.id, id), gt(t.oauthRequests.expiresAt, now)))
      return row
    },

    /**
     * Binds a request to a session unless another live session holds it (a signed-out or expired
     * one no longer does); true when `sessionId` holds it now.
     */
    async bindRequest(id: string, sessionId: string, now: Date): Promise<boolean> {
      const heldByLiveSession = db
        .select({ one: sql`1` })
        .from(t.sessions)
        .where(and(eq(t.sessions.id, t.oauthRequests.sessionId), gt(t.sessions.expiresAt, now)))
      const rows = await db
        .update(t.oauthRequests)
        .set({ sessionId })
        .where(and(
          eq(t.oauthRequests.id, id),
          or(isNull(t.oauthRequests.sessionId), eq(t.oauthRequests.sessionId, sessionId), notExists(heldByLiveSession)),
        ))
        .returning({ id: t.oauthRequests.id })
      return rows.length === 1
    },

    /** A sign-in on the consent page: the request passes to the session just created. */
    async rebindRequest(id: string, sessionId: string, now: Date): Promise<boolean> {
      const rows = await db
        .update(t.oauthRequests)
        .set({ sessionId })
        .where(and(eq(t.oauthRequests.id, id), gt(t.oauthRequests.expiresAt, now)))
        .returning({ id: t.oauthRequests.id })
      return rows.length === 1
    },

    /** Single use by one conditional delete: of two decisions on one request, one gets the row. */
    async consumeRequest(id: string, sessionId: string, now: Date): Promise<OAuthRequestRow | undefined> {
      const [row] = await db
        .delete(t.oauthRequests)
        .where(and(eq(t.oauthRequests.id, id), eq(t.oauthRequests.sessionId, sessionId), gt(t.oauthRequests.expiresAt, now)))
        .returning()
      return row
    },

    async findConsent(userId: string, clientId: string): Promise<OAuthConsentRow | undefined> {
      const [row] = await db.select().from(t.oauthConsents).where(and(eq(t.oauthConsents.userId, userId), eq(t.oauthConsents.clientId, clientId)))
      return row
    },

    /** Whether anyone ever approved this client (an index on client_id keeps this one lookup). */
    async anyConsent(clientId: string): Promise<boolean> {
      const rows = await db.select({ one: sql`1` }).from(t.oauthConsents).where(eq(t.oauthConsents.clientId, clientId)).limit(1)
      return rows.length === 1
    },

    async rememberConsent(consent: OAuthConsentRow): Promise<void> {
      await db
        .insert(t.oauthConsents)
        .values(consent)
        .onConflictDoUpdate({
          target: [t.oauthConsents.userId, t.oauthConsents.clientId],
          set: { scope: consent.scope, teamId: consent.teamId, redirectUris: consent.redirectUris, updatedAt: consent.updatedAt },
        })
    },

    async insertGrant(grant: OAuthGrantRow): Promise<void> {
      await db.insert(t.oauthGrants).values(grant)
    },

    async findGrantByCode(codeDigest: string): Promise<OAuthGrantRow | undefined> {
      const [row] = await db.select().from(t.oauthGrants).where(eq(t.oauthGrants.codeDigest, codeDigest))
      return row
    },

    async findGrant(id: string): Promise<OAuthGrantRow | undefined> {
      const [row] = await db.select().from(t.oauthGrants).where(eq(t.oauthGrants.id, id))
      return row
    },

    /** Spends a code by one conditional update: of two concurrent exchanges, one gets `true`. */
    async consumeCode(grantId: string, now: Date): Promise<boolean> {
      const rows = await db
        .update(t.oauthGrants)
        .set({ codeUsedAt: now })
        .where(and(eq(t.oauthGrants.id, grantId), isNull(t.oauthGrants.codeUsedAt), isNull(t.oauthGrants.revokedAt), gt(t.oauthGrants.codeExpiresAt, now)))
        .returning({ id: t.oauthGrants.id })
      return rows.length === 1
    },

    /** Ends a grant: it and every token descending from it. */
    async revokeGrant(grantId: string, now: Date): Promise<void> {
      await db.update(t.oauthGrants).set({ revokedAt: now }).where(and(eq(t.oauthGrants.id, grantId), isNull(t.oauthGrants.revokedAt)))
      const ended = await db.update(t.oauthTokens).set({ revoked: true }).where(eq(t.oauthTokens.grantId, grantId)).returning({ id: t.oauthTokens.id })
      for (const { id } of ended) told(topics.token(id))
    },

    /**
     * Ends every grant of a user, the way a reused refresh token ends one (revoked grant, revoked
     * tokens), and forgets their remembered consents, so the next authorization asks again.
     * Answers how many grants were still live.
     */
    async revokeAllForUser(userId: string, now: Date): Promise<number> {
      const ended = await db
        .update(t.oauthGrants)
        .set({ revokedAt: now })
        .where(and(eq(t.oauthGrants.userId, userId), isNull(t.oauthGrants.revokedAt)))
        .returning({ id: t.oauthGrants.id })
      await db.update(t.oauthTokens).set({ revoked: true }).where(and(eq(t.oauthTokens.userId, userId), eq(t.oauthTokens.revoked, false)))
      told(topics.user(userId))
      await db.delete(t.oauthConsents).where(eq(t.oauthConsents.userId, userId))
      return ended.length
    },

    async insertTokens(tokens: OAuthTokenRow[]): Promise<void> {
      await db.insert(t.oauthTokens).values(tokens)
    },

    /** One indexed lookup: the live access token with this digest, its user and the user's default team. */
    async findLiveAccess(digest: string, now: Date): Promise<{ token: OAuthTokenRow; user: UserRow; defaultTeam: TeamRow | null } | undefined> {
      accessByDigest ??= prepareAccess()
      const found = await accessByDigest({ digest })
      return found !== undefined && found.token.expiresAt.getTime() > now.getTime() ? found : undefined
    },

    /** Any token with this digest, live or not, with its user (introspection, revocation, reuse). */
    async findToken(digest: string): Promise<{ token: OAuthTokenRow; user: UserRow } | undefined> {
      const [row] = await db
        .select({ token: t.oauthTokens, user: t.users })
        .from(t.oauthTokens)
        .innerJoin(t.users, eq(t.users.id, t.oauthTokens.userId))
        .where(eq(t.oauthTokens.digest, digest))
      return row
    },

    /**
     * Rotation: spends a live refresh token by one conditional update, so of two concurrent
     * refreshes with one token exactly one gets the row.
     */
    async spendRefresh(digest: string, now: Date): Promise<OAuthTokenRow | undefined> {
      const [row] = await db
        .update(t.oauthTokens)
        .set({ usedAt: now })
        .where(and(
          eq(t.oauthTokens.digest, digest),
          eq(t.oauthTokens.kind, 'refresh'),
          isNull(t.oauthTokens.usedAt),
          eq(t.oauthTokens.revoked, false),
          gt(t.oauthTokens.expiresAt, now),
        ))
        .returning()
      return row
    },

    async revokeToken(id: string): Promise<void> {
      await db.update(t.oauthTokens).set({ revoked: true }).where(eq(t.oauthTokens.id, id))
      told(topics.token(id))
    },

    async purgeExpired(now: Date): Promise<void> {
      await db.delete(t.oauthRequests).where(lt(t.oauthRequests.expiresAt, now))
      await db.delete(t.oauthTokens).where(lt(t.oauthTokens.expiresAt, now))
      // A grant goes once its code can no longer be exchanged and no token of it is left.
      await db.delete(t.oauthGrants).where(and(
        lt(t.oauthGrants.codeExpiresAt, now),
        notExists(db.select({ one: sql`1` }).from(t.oauthTokens).where(eq(t.oauthTokens.grantId, t.oauthGrants.id))),
      ))
    },
  }
}
