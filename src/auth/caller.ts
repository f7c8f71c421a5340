import type { TeamRow } from '../db/repositories/teams.js'
import type { UserRow } from '../db/repositories/users.js'
import type { GlobalRole, TeamRole } from './permissions.js'

/** Who is calling, as established by the onRequest hook from the credential the route admits. */
export interface UserCaller {
  kind: 'user'
  via: 'session' | 'bearer'
  userId: string
  /** Read from the database on every request, never cached in the credential. */
  role: GlobalRole
  /** Granted OAuth scopes; only for bearer callers. */
  scopes?: readonly string[]
  /** Id of the session, access token or personal access token row. */
  credentialId: string
  /** The user's row, when the credential check loaded it anyway (saves a second read). */
  user?: UserRow
  /** The user's default team, when the credential check loaded it (null: none). */
  defaultTeam?: TeamRow | null
  /**
   * Bearer callers: the team the token was bound to at consent (or at a personal token's creation), which is all it reaches
   * (http/team-reach.ts). Null or absent: the user's whole reach (sessions, tokens without a team).
   */
  teamId?: string | null
}

export interface SatelliteCaller {
  kind: 'satellite'
  satelliteId: string
  teamId: string | null
  /** Disabled by an admin: its key is recognised but refused (403). */
  disabled: boolean
}

export interface RegistrationCaller {
  kind: 'registration'
  tokenId: string
  scope: 'global' | 'team'
  teamId: string | null
}

/** The Prometheus scraper, identified by METRICS_TOKEN: no user, no team. */
export interface ScraperCaller {
  kind: 'scraper'
}

export type Caller = UserCaller | SatelliteCaller | RegistrationCaller | ScraperCaller

/**
 * A user acting through a request, as services check and record it: who, whether a global admin
 * (who may act on any team), and the client's address for the audit trail.
 */
export interface UserActor {
  userId: string
  isGlobalAdmin: boolean
  ip: string
}

/**
 * How each kind of credential is checked. Each answers null for an unknown, expired or revoked
 * credential. The capabilities that issue credentials (sessions, OAuth tokens, satellites)
 * provide these; until one exists, its credential is simply never valid.
 */
export interface CredentialVerifiers {
  session(sessionId: string): Promise<UserCaller | null>
  bearer(accessToken: string): Promise<UserCaller | null>
  /** A personal access token (`service_pat_…`), checked with the scope and team rules of an access token. */
  personalToken(token: string): Promise<UserCaller | null>
  satelliteKey(secret: string): Promise<SatelliteCaller | null>
  /** May throw a 401 that says why the token was refused. */
  registrationToken(token: string, scope: 'global' | 'team'): Promise<RegistrationCaller | null>
  /** The caller's role in a team, or null when not a member (or no such team). */
  teamRole(userId: string, teamId: string): Promise<TeamRole | null>
  /** The scraper when the token is METRICS_TOKEN (never when it is unset). */
  metricsToken(token: string): Promise<ScraperCaller | null>
}

export const noCredentials: CredentialVerifiers = {
  session: async () => null,
  bearer: async () => null,
  personalToken: async () => null,
  satelliteKey: async () => null,
  registrationToken: async () => null,
  teamRole: async () => null,
  metricsToken: async () => null,
}
