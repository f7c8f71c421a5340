import type { Config } from '../config.js'
import type { OAuthRepository } from '../db/repositories/oauth.js'
import type { ResourceTeamsRepository } from '../db/repositories/resource-teams.js'
import type { TeamsRepository } from '../db/repositories/teams.js'
import type { Database } from '../db/types.js'
import type { Clock } from '../lib/clock.js'
import type { Digester } from '../lib/tokens.js'
import type { AuditLog } from '../modules/audit/service.js'
import type { TokenMetrics } from '../modules/metrics/service.js'
import type { SettingsService } from '../modules/settings/service.js'
import type { ClientIdDocuments } from './client-id-documents.js'

/** What every part of the authorization server is built on (once, at boot). */
export interface OAuthDeps {
  database: Database
  repository: OAuthRepository
  teams: TeamsRepository
  /** Satellites and installations, as far as the consent step needs them to choose a team. */
  resourceTeams: ResourceTeamsRepository
  settings: SettingsService
  audit: AuditLog
  /** HMAC digests of codes and tokens. */
  digest: Digester
  /** Keys the consent form's CSRF token. */
  csrfKey: Buffer
  /** Clients whose client_id is the URL of their metadata document, fetched and cached. */
  clientDocuments: ClientIdDocuments
  clock: Clock
  config: Config
  /** Counts issued and revoked tokens. */
  metrics: TokenMetrics
}

/** The address of a request, for the audit trail. */
export interface CallContext {
  ip: string
}

export const issuerOf = (config: Config): string => config.publicUrl.replace(/\/+$/, '')

export const nowOf = (deps: Pick<OAuthDeps, 'clock'>): Date => new Date(deps.clock.now())

export const loginEnabled = (deps: Pick<OAuthDeps, 'settings'>): Promise<boolean> => deps.settings.get('global.enable_login')

/** `redirect_uri` with the answer's parameters and `iss` (RFC 9207); an empty value (no `state`) is left out. */
export function clientRedirect(issuer: string, redirectUri: string, params: Record<string, string | undefined>): string {
  const url = new URL(redirectUri)
  for (const [name, value] of Object.entries(params)) if (value !== undefined && value !== '') url.searchParams.set(name, value)
  url.searchParams.set('iss', issuer)
  return url.toString()
}
