import type { CredentialVerifiers } from './auth/caller.js'
import { noCredentials } from './auth/caller.js'
import { DEFAULT_LIMITS, type AbuseLimits } from './auth/limits.js'
import { createPasswords, type Passwords } from './auth/passwords.js'
import { SessionService } from './auth/sessions.js'
import type { Config } from './config.js'
import { auditRepository, type AuditRepository } from './db/repositories/audit.js'
import { categoriesRepository } from './db/repositories/categories.js'
import { serverSearch, trigramAvailable } from './db/repositories/server-search.js'
import { serverVersionsRepository } from './db/repositories/server-versions.js'
import { serversRepository } from './db/repositories/servers.js'
import { emailTokensRepository } from './db/repositories/email-tokens.js'
import { providerStatesRepository } from './db/repositories/provider-states.js'
import { oauthRepository } from './db/repositories/oauth.js'
import { resourceTeamsRepository } from './db/repositories/resource-teams.js'
import { registrationTokensRepository } from './db/repositories/registration-tokens.js'
import { satellitesRepository } from './db/repositories/satellites.js'
import { installationsRepository } from './db/repositories/installations.js'
import { sessionsRepository } from './db/repositories/sessions.js'
import { settingsRepository } from './db/repositories/settings.js'
import { pluginItemsRepository, type PluginItemsRepository } from './db/repositories/plugin-items.js'
import { teamsRepository, type TeamsRepository } from './db/repositories/teams.js'
import { usersRepository, type UsersRepository } from './db/repositories/users.js'
import type { Database, Db } from './db/types.js'
import type { Clock } from './lib/clock.js'
import { deriveKey } from './lib/keys.js'
import { OutboundFetch, type OutboundOptions } from './lib/outbound-fetch.js'
import { createSecretBox } from './lib/secret-box.js'
import { createDigester, sameSecret } from './lib/tokens.js'
import { UserAdministration } from './modules/admin/service.js'
import { AuditLog } from './modules/audit/service.js'
import { EmailFlows } from './modules/auth/email-flows.js'
import { AccountService } from './modules/auth/service.js'
import { CategoryService } from './modules/catalogue/categories.js'
import { ServerService } from './modules/catalogue/servers.js'
import { VersionService } from './modules/catalogue/versions.js'
import { ServerJsonExporter } from './modules/registry/exporter.js'
import { CatalogueImporter, type RegistryImporter } from './modules/registry/importer.js'
import { syncStateRepository } from './modules/registry/sync-state.js'
import { RegistrySync, SYNC_MAX_BYTES, SYNC_TIMEOUT_MS, UPSTREAM_URL_SETTING } from './modules/registry/sync.js'
import { connectionStatuses } from './db/repositories/connection-statuses.js'
import { RefreshGrant } from './modules/connections/refresh-grant.js'
import { ConnectionRefresher } from './modules/connections/refresher.js'
import { RegistrySyncSchedule } from './modules/registry/sync-schedule.js'
import { MailService, type MailLogger } from './modules/mail/service.js'
import { Metrics } from './modules/metrics/service.js'
import { RegistrationJwt } from './modules/satellites/registration-jwt.js'
import { RegistrationTokens } from './modules/satellites/registration-tokens.js'
import { SatelliteService } from './modules/satellites/service.js'
import { KeyChange } from './modules/satellites/key-change.js'
import { KeyChangeChallenges } from './modules/satellites/key-change-challenge.js'
import { CatalogueFollower } from './modules/installations/catalogue-follower.js'
import { createInstallationService, type InstallationService } from './modules/installations/service.js'
import { installationValueBox } from './modules/installations/sealed-values.js'
import { Channel } from './modules/channel/service.js'
import { channelRepository } from './db/repositories/channel.js'
import { toolCallsRepository } from './db/repositories/tool-calls.js'
import { ToolUsage } from './modules/usage/service.js'
import { desiredStamps } from './db/repositories/desired-stamps.js'
import { toolApprovalsRepository } from './db/repositories/tool-approvals.js'
import { refreshHeld, ToolGovernance, type GovernanceDeps } from './modules/installations/tools-service.js'
import { CORE_GROUPS, CORE_SETTINGS, type SettingDefinition, type SettingGroup } from './modules/settings/definitions.js'
import { unreadableSecretsWarning } from './modules/settings/secret-rotation.js'
import { SettingsService } from './modules/settings/service.js'
import { TeamService } from './modules/teams/service.js'
import { ProviderClient } from './modules/provider-login/client.js'
import { ProviderLogin } from './modules/provider-login/service.js'
import { ClientIdDocuments } from './oauth2/client-id-documents.js'
import { connectionsRepository, type ConnectionEnding, type ConnectionsRepository } from './db/repositories/connections.js'
import { upstreamClientsRepository } from './db/repositories/upstream-clients.js'
import { UpstreamClients } from './modules/connections/clients.js'
import { Discovery } from './modules/connections/discovery.js'
import { canonicalResource } from './modules/connections/resource.js'
import { ConnectFlow } from './modules/connections/flow.js'
import { Registration } from './modules/connections/registration.js'
import { Revoker } from './modules/connections/revocation.js'
import { ConnectionService } from './modules/connections/service.js'
import { connectionTokensBox, type TokensBox } from './modules/connections/tokens-box.js'
import { FetchBudget } from './oauth2/fetch-budget.js'
import { OAuthServer } from './oauth2/server.js'
import { personalTokensRepository } from './db/repositories/personal-tokens.js'
import { PersonalTokens } from './modules/personal-tokens/service.js'
import { invitationsRepository } from './db/repositories/invitations.js'
import { InvitationService } from './modules/invitations/service.js'
import { AcceptLinks } from './modules/invitations/links.js'
import { twoFactorRepository } from './db/repositories/two-factor.js'
import { createTwoFactor, type TwoFactor } from './modules/two-factor/index.js'
import { oidcStatesRepository } from './db/repositories/oidc-states.js'
import { IssuerClient } from './modules/oidc-login/issuer-client.js'
import { OidcLogin } from './modules/oidc-login/service.js'

/** Registration tokens stay listable (as used, revoked or expired) this long after they expire. */
const REGISTRATION_TOKEN_RETENTION_MS = 7 * 24 * 3600_000

/** Everything the routes use, built once when the database is ready and passed in. */
export interface Services {
  database: Database
  settings: SettingsService
  mail: MailService
  users: UsersRepository
  teams: TeamsRepository
  auditEvents: AuditRepository
  audit: AuditLog
  passwords: Passwords
  sessions: SessionService
  accounts: AccountService
  emailFlows: EmailFlows
  administration: UserAdministration
  teamService: TeamService
  providerLogin: ProviderLogin
  /** Sign-in with an OpenID Connect issuer. */
  oidcLogin: OidcLogin
  oauth: OAuthServer
  categoryService: CategoryService
  serverService: ServerService
  versionService: VersionService
  /** Imports MCP Registry server.json documents (the import route, the sync). */
  registryImporter: RegistryImporter
  /** The sync from the upstream registry (POST /api/mcp/registry/sync). */
  registrySync: RegistrySync
  /** Runs the sync every `catalogue.registry_sync_interval_minutes`; started and stopped by the database lifecycle. */
  registrySyncSchedule: RegistrySyncSchedule
  /** Refreshes OAuth connections' tokens before they expire; started and stopped by the lifecycle. */
  connectionRefresher: ConnectionRefresher
  /** A server as an MCP Registry server.json document. */
  serverJsonExporter: ServerJsonExporter
  registrationTokens: RegistrationTokens
  satellites: SatelliteService
  /** A satellite's public key: its first one, and replacing it with proof. */
  keyChange: KeyChange
  /** Teams' installations of catalogue servers, their values and placement. */
  installations: InstallationService
  /** The satellite control channel: desired-state documents, long-polls and reports. */
  channel: Channel
  /** Tool calls reported by satellites, and the usage read from them. */
  toolUsage: ToolUsage
  /** Installations' tool policies, approvals (pinning) and tool states. */
  toolGovernance: ToolGovernance
  /** Connections to OAuth-protected remote servers: views and endings. */
  connections: ConnectionService
  /** The connect flow (start, callback). */
  connectFlow: ConnectFlow
  /** Metadata of remote servers and their authorization servers, read through the outbound guard. */
  discovery: Discovery
  /** This service as a client of remote authorization servers. */
  upstreamRegistration: Registration
  /** Global admins' view of those registrations. */
  upstreamClients: UpstreamClients
  /** The rows of connections (the refresher and the desired-state documents read them). */
  connectionRows: ConnectionsRepository
  /** Seals and opens connection tokens. */
  connectionTokens: TokensBox
  /** The items of extension plugins' collections. */
  pluginItems: PluginItemsRepository
  /** Invitations to teams by email. */
  invitations: InvitationService
  /** Two-factor authentication: the account's own settings and the second step of a sign-in. */
  twoFactor: TwoFactor
  limits: AbuseLimits
  /** Personal access tokens: users' bearer credentials for scripts and CI. */
  personalTokens: PersonalTokens
  credentials: CredentialVerifiers
  /** Deletes expired sessions, email tokens, OAuth requests, codes and tokens, invitations and tool calls past their retention; run periodically by the lifecycle. */
  purgeExpired(): Promise<void>
}

export interface ServiceOptions {
  config: Config
  clock: Clock
  log: MailLogger
  limits?: Partial<AbuseLimits>
  /** Replaces credential checks (tests of the policy mechanism). */
  credentials?: Partial<CredentialVerifiers>
  outbound?: OutboundOverrides
  /** Settings the loaded extension plugins declare (`plugin.<id>.*`). */
  pluginSettings?: { definitions: Readonly<Record<string, SettingDefinition>>; groups: readonly SettingGroup[] }
  /** The app's counters (GET /api/metrics); a command-line tool, which serves none, may leave them out. */
  metrics?: Metrics
  /** How often the scheduled registry sync looks whether a run is due (default every minute); tests look more often. */
  registrySyncCheckMs?: number
  /** How often the connection refresher looks for tokens due (default every 15 s); tests look more often. */
  connectionRefreshMs?: number
}

/** Requests to addresses third parties choose (client metadata documents); tests trust their own CA and shorten the timeout. */
export interface OutboundOverrides {
  /** PEM certificates trusted on top of Node's CA store. */
  ca?: readonly string[]
  /** For client metadata documents; the registry sync keeps its own 10 s. */
  timeoutMs?: number
  /** Answers for host names no DNS server knows (tests). */
  resolveHost?: OutboundOptions['resolveHost']
}

export async function createServices(database: Database, { config, clock, log, limits: limitOverrides, credentials, outbound, pluginSettings, metrics = new Metrics(), registrySyncCheckMs, connectionRefreshMs }: ServiceOptions): Promise<Services> {
  const settings = new SettingsService({
    repository: settingsRepository(database),
    box: createSecretBox(deriveKey(config.encryptionSecret, 'settings-encryption')),
    clock,
    config,
    feed: database.changes,
    definitions: { ...CORE_SETTINGS, ...pluginSettings?.definitions },
    groups: [...CORE_GROUPS, ...(pluginSettings?.groups ?? [])],
  })
  await settings.init()
  const unreadable = settings.unreadable()
  if (unreadable.length > 0) log.warn({ keys: unreadable }, unreadableSecretsWarning(unreadable))
  const limits = { ...DEFAULT_LIMITS, ...limitOverrides }
  const digest = createDigester(deriveKey(config.encryptionSecret, 'token-digest'))
  const users = usersRepository(database)
  const teams = teamsRepository(database)
  const sessionRows = sessionsRepository(database)
  const emailTokens = emailTokensRepository(database)
  const providerStates = providerStatesRepository(database)
  const oauthRows = oauthRepository(database)
  const auditEvents = auditRepository(database)
  const audit = new AuditLog(auditEvents, clock)
  const passwords = createPasswords()
  const sessions = new SessionService(sessionRows, digest, clock, config)
  const mail = new MailService({ settings, log, clock })
  const emailFlows = new EmailFlows({
    database, users, tokens: emailTokens, sessionsRepository: sessionRows, oauth: oauthRows,
    passwords, settings, mail, audit, digest, clock, config,
  })
  // Built further down with the connections; the team and user endings call it through this.
  let endConnections: ConnectionEnding = async () => async () => {}
  const endingsLater: ConnectionEnding = (filter, reason, tx) => endConnections(filter, reason, tx)
  const invitations = new InvitationService({
    database, invitations: invitationsRepository(database), teams, users, settings, mail, audit, digest, clock, links: new AcceptLinks(settings, config.publicUrl),
  })
  const teamService = new TeamService({ database, teams, users, settings, audit, clock, endConnections: endingsLater, pendingSeats: (teamId, tx) => invitations.pendingSeats(teamId, tx) })
  const twoFactorRows = twoFactorRepository(database)
  const twoFactor = createTwoFactor({
    database, users, repository: twoFactorRows, sessionRows, sessions, passwords, settings, audit, limits, clock, digest, config, metrics: metrics.logins,
  })
  const accounts = new AccountService({
    database, users, teams, sessionsRepository: sessionRows, oauth: oauthRows, sessions, passwords, settings, audit, emailFlows, limits, clock, metrics: metrics.logins,
    invitedAddress: (token) => invitations.pendingAddress(token),
    secondFactor: (user) => twoFactor.signIn.challenge(user),
  })
  const oauth = new OAuthServer({
    database, repository: oauthRows, teams, resourceTeams: resourceTeamsRepository(database), settings, audit, digest,
    csrfKey: deriveKey(config.encryptionSecret, 'oauth-csrf'), clock, config, metrics: metrics.tokens,
    clientDocuments: new ClientIdDocuments(new OutboundFetch({ allowedHosts: config.outboundAllowedHosts, ...outbound }), clock, new FetchBudget(
      config.rateLimitEnabled ? { perIp: limits.clientDocumentFetch, global: limits.clientDocumentFetchGlobal } : null, clock,
    )),
  })
  const categories = categoriesRepository(database)
  const servers = serversRepository(database)
  const trigram = await trigramAvailable(database)
  if (database.dialect === 'postgresql' && !trigram) {
    log.warn({ extension: 'pg_trgm' }, 'pg_trgm is not installed in this database: catalogue search matches words and word prefixes but not typos (CREATE EXTENSION pg_trgm, then restart, to enable)')
  }
  const search = serverSearch(database, { trigram })
  const valueBox = installationValueBox(config.encryptionSecret)
  const stamps = desiredStamps(database)
  // Connections: every request to a remote server or its authorization server goes through the guard.
  const connectionTokens = connectionTokensBox(config.encryptionSecret)
  const connectionRows = connectionsRepository(database)
  const discovery = new Discovery({
    outbound: new OutboundFetch({ allowedHosts: config.outboundAllowedHosts, ca: outbound?.ca, resolveHost: outbound?.resolveHost, timeoutMs: outbound?.timeoutMs ?? 10_000, maxBytes: 256 * 1024 }),
    probe: new OutboundFetch({ allowedHosts: config.outboundAllowedHosts, ca: outbound?.ca, resolveHost: outbound?.resolveHost, timeoutMs: 3_000 }),
  })
  const upstreamRows = upstreamClientsRepository(database)
  const upstreamRegistration = new Registration({ clients: upstreamRows, discovery, box: connectionTokens, audit, clock, publicUrl: config.publicUrl })
  const connections = new ConnectionService({
    database, connections: connectionRows, installations: installationsRepository(database), teams, stamps, box: connectionTokens, audit,
    revoker: new Revoker({ discovery, registration: upstreamRegistration, box: connectionTokens, log }),
  })
  endConnections = (filter, reason, tx) => connections.end(filter, reason, tx).then((ended) => ended.after)
  const governanceDeps: GovernanceDeps = {
    database, installations: installationsRepository(database), teams, channel: channelRepository(database), approvals: toolApprovalsRepository(database), stamps, audit, clock,
  }
  const installations = createInstallationService({
    database, installations: installationsRepository(database), servers, versions: serverVersionsRepository(database),
    satellites: satellitesRepository(database), teams, stamps, channel: channelRepository(database), box: valueBox, audit, clock,
    oauth: { probe: (url) => discovery.probe(url), canonical: canonicalResource }, endConnections: endingsLater,
    connectionStatuses: connectionStatuses(database),
    refreshHeld: (tx, installation) => refreshHeld(governanceDeps, tx, installation),
    placementRules: async () => ({
      teamServersOnGlobal: await settings.get('global.team_servers_on_global_satellites'),
      quotaPerGlobalSatellite: await settings.get('global.team_quota_per_global_satellite'),
    }),
  })
  // What may run on global satellites follows the settings at once (a write by the command-line
  // tool, which has no installations service, is caught up at each global satellite's next heartbeat).
  settings.onWrite('global.team_servers_on_global_satellites', (value, tx) => installations.moves.teamServersSettingWritten(value === true, tx))
  settings.onWrite('global.team_quota_per_global_satellite', async () => () => installations.moves.placeAllWaiting())
  const toolGovernance = new ToolGovernance(governanceDeps)
  const channel = new Channel({
    onTools: (tx, installationId, store) => toolGovernance.reported(tx, installationId, store),
    database, channel: channelRepository(database), satellites: satellitesRepository(database), stamps, box: valueBox,
    specKey: deriveKey(config.encryptionSecret, 'spec-hash'), audit, clock, log,
    connections: { connections: connectionRows, tokens: connectionTokens },
  })
  const follower = new CatalogueFollower({ installations: installationsRepository(database), servers, versions: serverVersionsRepository(database), stamps, box: valueBox, audit, clock })
  const serverService = new ServerService({
    database, servers, categories, teams, search, audit, clock,
    beforeDelete: (serverId, tx) => follower.assertServerUnused(serverId, tx),
    afterEntryEdit: (before, after, tx) => follower.followEntryEdit(before, after, tx),
  })
  const registrationTokenRows = registrationTokensRepository(database)
  const registrationJwt = new RegistrationJwt(deriveKey(config.encryptionSecret, 'registration-jwt'), config.publicUrl, clock)
  const registrationTokens = new RegistrationTokens({ database, tokens: registrationTokenRows, teams, audit, clock, jwt: registrationJwt })
  const satellites = new SatelliteService({ database, satellites: satellitesRepository(database), tokens: registrationTokenRows, teams, digest, audit, clock })
  const keyChange = new KeyChange({
    database, satellites: satellitesRepository(database), tokens: registrationTokenRows, stamps, audit, clock, jwt: registrationJwt,
    challenges: new KeyChangeChallenges(deriveKey(config.encryptionSecret, 'satellite-key-change'), config.publicUrl, clock),
  })
  const followLatest = (serverId: string, tx: Db) => follower.followLatest(serverId, tx)
  const registryImporter = new CatalogueImporter({ database, servers, versions: serverVersionsRepository(database), audit, clock, afterLatestChange: followLatest })
  // The sync's own limits; OUTBOUND_ALLOWED_HOSTS may reach the operator's network, over http too.
  const upstream = new OutboundFetch({ allowedHosts: config.outboundAllowedHosts, ca: outbound?.ca, resolveHost: outbound?.resolveHost, timeoutMs: SYNC_TIMEOUT_MS, maxBytes: SYNC_MAX_BYTES })
  const syncState = syncStateRepository(database)
  const registrySync = new RegistrySync({ settings, state: syncState, importer: registryImporter, fetcher: upstream, audit, clock })
  settings.addCheck(UPSTREAM_URL_SETTING, registrySync.checkUrl)
  const connectFlow = new ConnectFlow({
    database, connections: connectionRows, installations: installationsRepository(database), teams, stamps, discovery,
    registration: upstreamRegistration, box: connectionTokens, digest, audit, clock,
  })
  const toolUsage = new ToolUsage({
    calls: toolCallsRepository(database), documents: channel.documents, clock, metrics: metrics.toolCalls, retentionDays: config.usageRetentionDays,
  })
  const personalTokenRows = personalTokensRepository(database)
  const personalTokens = new PersonalTokens({ database, repository: personalTokenRows, teams, audit, digest, clock, log })
  const providerLogin = new ProviderLogin({
    database, client: new ProviderClient(config.providerOauthUrl, config.providerApiUrl), users, teams,
    states: providerStates, digest,
    sessions, sessionRows, oauth: oauthRows, emailTokens, personalTokens: personalTokenRows, settings, audit, clock, config,
  })
  // OpenID Connect: every request to the issuer goes through the outbound guard (256 KiB covers large JWKS).
  const oidcStates = oidcStatesRepository(database)
  const issuerClient = new IssuerClient(new OutboundFetch({ allowedHosts: config.outboundAllowedHosts, ca: outbound?.ca, resolveHost: outbound?.resolveHost, timeoutMs: outbound?.timeoutMs ?? 10_000, maxBytes: 256 * 1024 }))
  settings.addCheck('oidc.issuer', (value) => issuerClient.refusal(String(value)))
  const oidcLogin = new OidcLogin({
    database, client: issuerClient, states: oidcStates, digest, box: createSecretBox(deriveKey(config.encryptionSecret, 'oidc-state')),
    users, teams, sessions, held: { sessionRows, oauth: oauthRows, emailTokens, personalTokens: personalTokenRows }, settings, audit, clock, config, returnTo: providerLogin,
  })
  return {
    personalTokens,
    toolUsage,
    connections,
    connectFlow,
    discovery,
    upstreamRegistration,
    upstreamClients: new UpstreamClients({ clients: upstreamRows, box: connectionTokens, audit, clock, isAllowedHost: (url) => discovery.isAllowedHost(url) }),
    connectionRows,
    connectionTokens,
    registrationTokens,
    satellites,
    keyChange,
    pluginItems: pluginItemsRepository(database),
    invitations,
    twoFactor,
    oauth,
    categoryService: new CategoryService({ database, categories, audit, clock }),
    serverService,
    versionService: new VersionService({ database, servers, versions: serverVersionsRepository(database), serverService, audit, clock, afterLatestChange: followLatest }),
    installations,
    channel,
    toolGovernance,
    registryImporter,
    registrySync,
    registrySyncSchedule: new RegistrySyncSchedule({ sync: registrySync, settings, state: syncState, clock, log, everyMs: registrySyncCheckMs }),
    connectionRefresher: new ConnectionRefresher({
      database, connections: connectionRows, stamps, tokens: connectionTokens, audit, clock, log, everyMs: connectionRefreshMs,
      grant: new RefreshGrant({ discovery, registration: upstreamRegistration }),
    }),
    serverJsonExporter: new ServerJsonExporter({ serverService, versions: serverVersionsRepository(database), publicUrl: config.publicUrl }),
    database, settings, mail, users, teams, auditEvents, audit, passwords, sessions, accounts, emailFlows, limits,
    administration: new UserAdministration({ database, users, teamService, audit, clock, endConnections: endingsLater }),
    teamService,
    providerLogin,
    oidcLogin,
    async purgeExpired() {
      const now = new Date(clock.now())
      await sessionRows.purgeExpired(now)
      await emailTokens.purgeExpired(now)
      await providerStates.purgeExpired(now)
      await oidcStates.purgeExpired(now)
      await oauthRows.purgeExpired(now)
      await connectionRows.purgeExpiredFlows(now)
      await registrationTokenRows.purgeExpired(new Date(now.getTime() - REGISTRATION_TOKEN_RETENTION_MS))
      await toolUsage.purge()
      await personalTokens.purgeExpired()
      await invitations.purge()
      await twoFactorRows.purgeExpired(now)
    },
    credentials: {
      ...noCredentials,
      session: (id) => sessions.verify(id),
      bearer: (token) => oauth.tokens.verifyAccess(token),
      personalToken: (token) => personalTokens.verify(token),
      teamRole: (userId, teamId) => teams.roleOf(userId, teamId),
      satelliteKey: (secret) => satellites.verifyKey(secret),
      registrationToken: (token, scope) => registrationTokens.verify(token, scope),
      metricsToken: async (token) => (config.metricsToken !== null && sameSecret(token, config.metricsToken) ? { kind: 'scraper' } : null),
      ...credentials,
    },
  }
}
