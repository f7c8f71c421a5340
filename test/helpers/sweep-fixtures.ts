import { randomBytes } from 'node:crypto'
import type { FastifyInstance } from 'fastify'
import { login, register } from './accounts.js'
import { keyPair } from './hpke.js'
import { weatherDocument } from './installations.js'
import type { DocumentedOperation } from './openapi-document.js'
import { ALL_SCOPES, bearer, CLI_CLIENT_ID, issueTokens, REDIRECT_URI, s256 } from './oauth.js'
import type { Credential } from './sweep.js'
import { toolDefinitionHash } from '../../src/formats/tool-definitions.js'
import { channelRepository } from '../../src/db/repositories/channel.js'

const SWEEP_VERIFIER = 'sweep-code-verifier-0123456789-abcdefghijklmnopq'

/** The tool the sweep's instance reports and the approve route approves. */
const SWEEP_TOOL = { name: 'search', input_schema: { type: 'object' } }

/**
 * Values the service knows, by parameter or field name: the command-line client, its redirect
 * URI and a well-formed PKCE pair, so that the OAuth endpoints' other parameters are judged by
 * the steps after the client lookup.
 */
const OAUTH_VALUES: Record<string, string> = {
  client_id: CLI_CLIENT_ID,
  redirect_uri: REDIRECT_URI,
  response_type: 'code',
  scope: 'user:read',
  state: 'sweep-state',
  code_challenge: s256(SWEEP_VERIFIER),
  code_challenge_method: 'S256',
  code_verifier: SWEEP_VERIFIER,
  grant_type: 'authorization_code',
}

/**
 * The accounts a sweep acts as: the global admin (the first user), a global user who is a member
 * of the admin's sweep team, and a victim user that the admin's user operations act on (so that
 * deleting or demoting never hits the admin or the user); and the satellite credentials: the key
 * of a satellite paired for the sweep (the agent, which only its own heartbeat route uses) and a
 * global registration token (replaced by a fresh one once a registration spent it). Credentials
 * are checked before each operation and renewed when they stopped working (see `headersFor`).
 * The sweep team has two installations of a registry server, each with a secret team value and
 * the member's own secret value: one the sweep may change or delete, one kept for the valid reads.
 * The kept one is placed on the agent, which registered a public key, so the member's own instance
 * of it is in the agent's desired-state document: the channel routes (every route the agent's key
 * acts on takes the agent's id) report about that instance for real.
 */

export interface SweepMember {
  id: string
  username: string
  email: string
  password: string
  cookie: string
}

export interface SweepAccounts {
  admin: SweepMember
  user: SweepMember
  victim: SweepMember
  teamId: string
  /** The admin's current access token (every scope). */
  accessToken: string
  /** Real ids for the sweep: the sweep team, the member, the victim, a harmless setting, the satellites and a revocable token. */
  pathValue(operation: DocumentedOperation, name: string): string | undefined
  /** Values the service knows for query parameters and body fields (the OAuth client, a user to add). */
  knownValue(operation: DocumentedOperation, name: string): unknown
  /** Real ids for valid reads: the admin's own user, the sweep team, a real setting and group, a kept satellite. */
  validPathValue(operation: DocumentedOperation, name: string): string | undefined
  headersFor(credential: Credential): Promise<Record<string, string>>
  /** Every password, cookie value and token these accounts used (satellite keys, registration tokens and installation secret values too), for the log test. */
  secrets(): string[]
  /** The secret values of the sweep team's installations (the team's and the member's own): write-only, never in an answer. */
  readonly installationSecrets: readonly string[]
  /** The agent satellite the `satellite` credential is the key of, and the instance of its document the channel routes report about. */
  readonly agent: { id: string; instanceId: string }
  /** How many credential checks and renewals were made. */
  readonly checks: number
}

/** The routes a satellite's key acts on, on its own id (heartbeat, the control channel): the agent's id goes there. */
const actsAsSatellite = ({ operation }: DocumentedOperation): boolean => (operation.security ?? []).some((requirement) => 'satelliteKey' in requirement)

async function member(app: FastifyInstance, username: string, password: string): Promise<SweepMember> {
  const email = `${username}@example.com`
  const registered = await register(app, { username, email, password })
  if (registered.statusCode !== 201) throw new Error(`registration of ${username} failed: ${registered.statusCode} ${registered.body}`)
  const { response, cookie } = await login(app, email, password)
  if (response.statusCode !== 200 || cookie === undefined) throw new Error(`login of ${username} failed: ${response.statusCode} ${response.body}`)
  return { id: registered.json().data.user.id, username, email, password, cookie }
}

/** Registers the three accounts (the admin first: the database must have no user yet), a team and a token. */
export async function sweepAccounts(app: FastifyInstance, passwords: (username: string) => string = () => 'sweep password 1'): Promise<SweepAccounts> {
  const secrets = new Set<string>()
  const keep = (member: SweepMember) => {
    secrets.add(member.password)
    secrets.add(member.cookie.slice('auth_session='.length))
    return member
  }
  const admin = keep(await member(app, 'sweepadmin', passwords('sweepadmin')))
  const me = await app.inject({ method: 'GET', url: '/api/users/me', headers: { cookie: admin.cookie } })
  if (me.json().data?.role_id !== 'global_admin') throw new Error(`sweepadmin is not the global admin: ${me.body}`)
  const user = keep(await member(app, 'sweepuser', passwords('sweepuser')))
  const victim = keep(await member(app, 'sweepvictim', passwords('sweepvictim')))

  const created = await app.inject({ method: 'POST', url: '/api/teams', headers: { cookie: admin.cookie }, payload: { name: 'Sweep team' } })
  if (created.statusCode !== 201) throw new Error(`team creation failed: ${created.statusCode} ${created.body}`)
  const teamId: string = created.json().data.team.id
  const added = await app.inject({ method: 'POST', url: `/api/teams/${teamId}/members`, headers: { cookie: admin.cookie }, payload: { login: user.username, role: 'team_user' } })
  if (added.statusCode !== 201) throw new Error(`adding the member failed: ${added.statusCode} ${added.body}`)

  // Catalogue entries: one that the sweep may change or delete, one kept for the valid reads.
  const catalogue = async (url: string, payload: object) => {
    const response = await app.inject({ method: 'POST', url, headers: { cookie: admin.cookie }, payload })
    if (response.statusCode !== 201) throw new Error(`catalogue fixture ${url} failed: ${response.statusCode} ${response.body}`)
    return response.json().data
  }
  const categoryId: string = (await catalogue('/api/mcp/categories', { name: 'Sweep category' })).category.id
  const targetServerId: string = (await catalogue('/api/mcp/servers/global', { name: 'Sweep target', category_id: categoryId })).server.id
  const keptServerId: string = (await catalogue('/api/mcp/servers/global', { name: 'Sweep kept' })).server.id
  const versionId: string = (await catalogue(`/api/mcp/servers/${targetServerId}/versions`, { version: '1.0.0' })).version.id
  await catalogue(`/api/mcp/servers/${keptServerId}/versions`, { version: '1.0.0' })
  // A server of the sweep team, with a version, for the team's catalogue routes.
  const teamServerId: string = (await catalogue(`/api/teams/${teamId}/mcp/servers`, { name: 'Sweep team server' })).server.id
  const teamVersionId: string = (await catalogue(`/api/teams/${teamId}/mcp/servers/${teamServerId}/versions`, { version: '1.0.0' })).version.id
  // Installations of a registry server in the sweep team: per member (PERSONAL_TOKEN is each
  // member's own), with a secret team value and the member's own secret set.
  const imported = await app.inject({
    method: 'POST', url: '/api/mcp/servers/import', headers: { cookie: admin.cookie }, payload: [weatherDocument('io.github.sweep/weather')],
  })
  const weatherServerId = (imported.json().data?.results?.[0] as { server_id?: string } | undefined)?.server_id
  if (imported.statusCode !== 200 || weatherServerId === undefined) throw new Error(`importing the sweep server failed: ${imported.statusCode} ${imported.body}`)
  const installationSecrets: string[] = []
  const installation = async (name: string): Promise<string> => {
    const teamSecret = `sweep-team-secret-${randomBytes(12).toString('hex')}`
    const memberSecret = `sweep-member-secret-${randomBytes(12).toString('hex')}`
    installationSecrets.push(teamSecret, memberSecret)
    const url = `/api/teams/${teamId}/mcp/installations`
    const created = await app.inject({
      method: 'POST', url, headers: { cookie: admin.cookie },
      payload: { server_id: weatherServerId, name, user_scoped: ['env:PERSONAL_TOKEN'], values: { 'env:WEATHER_API_KEY': teamSecret, 'arg:data_dir': '/var/cache/sweep' } },
    })
    if (created.statusCode !== 201) throw new Error(`installing ${name} failed: ${created.statusCode} ${created.body}`)
    const id: string = created.json().data.installation.id
    const own = await app.inject({ method: 'PUT', url: `${url}/${id}/my-values`, headers: { cookie: user.cookie }, payload: { values: { 'env:PERSONAL_TOKEN': memberSecret } } })
    if (own.statusCode !== 200) throw new Error(`the member's own value on ${name} failed: ${own.statusCode} ${own.body}`)
    return id
  }
  const targetInstallationId = await installation('sweep-target')
  const keptInstallationId = await installation('sweep-kept')
  for (const secret of installationSecrets) secrets.add(secret)

  // An item of the example plugin's collection (plugins/notes), for its valid reads.
  const noteId: string = (await catalogue('/api/plugin/notes/notes', { title: 'Sweep note' })).item.id

  // Satellites: the agent presents its key on its heartbeat route; the target is what the
  // management routes (disable, enable, delete) act on; the kept one answers the valid reads. The
  // revocable token is what DELETE …/registration-tokens/{id} revokes. Names the register sweep
  // (which registers its example name, `sweep`) never takes.
  const registrationToken = async (): Promise<{ id: string; token: string }> => {
    const response = await app.inject({ method: 'POST', url: '/api/satellites/global/registration-tokens', headers: { cookie: admin.cookie }, payload: {} })
    if (response.statusCode !== 201) throw new Error(`registration token creation failed: ${response.statusCode} ${response.body}`)
    const { id, token } = response.json().data as { id: string; token: string }
    secrets.add(token)
    secrets.add(token.replace(/^service_satellite_global_/, ''))
    return { id, token }
  }
  const pairSatellite = async (name: string, publicKey?: string): Promise<{ id: string; apiKey: string }> => {
    const { token } = await registrationToken()
    const response = await app.inject({
      method: 'POST', url: '/api/satellites/register', headers: { authorization: `Bearer ${token}` },
      payload: {
        name, capabilities: ['sweep'], system_info: { os: 'linux', arch: 'x64', node_version: 'v20.11.0', memory_mb: 1024 },
        ...(publicKey === undefined ? {} : { public_key: publicKey }),
      },
    })
    if (response.statusCode !== 201) throw new Error(`pairing ${name} failed: ${response.statusCode} ${response.body}`)
    const { satellite, api_key: apiKey } = response.json().data as { satellite: { id: string }; api_key: string }
    secrets.add(apiKey)
    secrets.add(apiKey.replace(/^service_satkey_/, ''))
    return { id: satellite.id, apiKey }
  }
  // The agent has a public key: instances with secrets (all of the sweep team's) are sealed to it.
  const agentKey = (await keyPair()).publicKey
  const agent = await pairSatellite('sweep-agent', agentKey)
  const targetSatelliteId = (await pairSatellite('sweep-target')).id
  const keptSatelliteId = (await pairSatellite('sweep-kept')).id
  const placed = await app.inject({
    method: 'PATCH', url: `/api/teams/${teamId}/mcp/installations/${keptInstallationId}`, headers: { cookie: admin.cookie }, payload: { satellite_id: agent.id },
  })
  if (placed.statusCode !== 200) throw new Error(`placing the kept installation on the agent failed: ${placed.statusCode} ${placed.body}`)
  // The member's own instance of the kept installation (the installation's id, then the member's).
  const agentInstanceId = `${keptInstallationId}.${user.id}`
  const document = await app.inject({ method: 'GET', url: `/api/satellites/${agent.id}/desired-state`, headers: { authorization: `Bearer ${agent.apiKey}` } })
  const instances = (document.json().data?.instances ?? []) as Array<{ instance_id: string }>
  if (!instances.some((instance) => instance.instance_id === agentInstanceId)) throw new Error(`the agent's document lacks ${agentInstanceId}: ${document.statusCode} ${document.body}`)
  // A reported tool, so that a valid approval (of its hash) gets through.
  const reported = await app.inject({
    method: 'PUT', url: `/api/satellites/${agent.id}/instances/${agentInstanceId}/tools`, headers: { authorization: `Bearer ${agent.apiKey}` },
    payload: { tools: [SWEEP_TOOL] },
  })
  if (reported.statusCode !== 200) throw new Error(`reporting the kept instance's tools failed: ${reported.statusCode} ${reported.body}`)
  // The installation the sweep's writes act on is not placed on the agent: its tool is recorded as a report would be.
  await channelRepository(app.services.database).putTools({
    instanceId: `${targetInstallationId}.${user.id}`, installationId: targetInstallationId, userId: user.id, satelliteId: targetSatelliteId,
    specRevision: 1, specHash: 'sweep', tools: [SWEEP_TOOL], reportedAt: new Date(),
  })
  const revocableTokenId = (await registrationToken()).id
  // Invitations to the sweep team, for addresses no account has: one the sweep may revoke, one whose link the reads use.
  const invitation = async (email: string): Promise<{ id: string; token: string }> => {
    const response = await app.inject({ method: 'POST', url: `/api/teams/${teamId}/invitations`, headers: { cookie: admin.cookie }, payload: { email, role: 'team_user' } })
    if (response.statusCode !== 201) throw new Error(`invitation fixture failed: ${response.statusCode} ${response.body}`)
    const { invitation: { id }, accept_url: acceptUrl } = response.json().data as { invitation: { id: string }; accept_url: string }
    const token = acceptUrl.slice(acceptUrl.lastIndexOf('/') + 1)
    secrets.add(token)
    return { id, token }
  }
  const revocableInvitation = await invitation('sweep-revocable-invitee@example.net')
  const keptInvitation = await invitation('sweep-kept-invitee@example.net')
  let registration = await registrationToken()

  const issue = async () => {
    const tokens = await issueTokens(app, admin.cookie, ALL_SCOPES.join(' '))
    secrets.add(tokens.access_token)
    if (tokens.refresh_token !== undefined) secrets.add(tokens.refresh_token)
    return tokens.access_token
  }
  let accessToken = await issue()
  let checks = 0

  const works = async (headers: Record<string, string>) => {
    checks++
    return (await app.inject({ method: 'GET', url: '/api/users/me', headers })).statusCode === 200
  }
  /** A session that a sweep request ended (logout, a password or role change) is replaced by a new login. */
  const liveCookie = async (account: SweepMember) => {
    if (await works({ cookie: account.cookie })) return account.cookie
    const { response, cookie } = await login(app, account.email, account.password)
    if (response.statusCode !== 200 || cookie === undefined) throw new Error(`re-login of ${account.username} failed: ${response.statusCode} ${response.body}`)
    account.cookie = cookie
    keep(account)
    return cookie
  }

  /** A heartbeat with the agent's key: the check of the satellite credential (a 200 records nothing the sweep reads). */
  const beat = async () => {
    checks++
    return app.inject({
      method: 'POST', url: `/api/satellites/${agent.id}/heartbeat`, headers: { authorization: `Bearer ${agent.apiKey}` },
      payload: { status: 'active', system_metrics: { cpu_usage_percent: 1, memory_usage_mb: 64 } },
    })
  }
  /** The agent's key, working: enabled again if something disabled it, paired again if it was replaced or deleted. */
  const liveSatelliteKey = async () => {
    const answer = await beat()
    if (answer.statusCode === 200) return agent.apiKey
    if (answer.statusCode === 403 && answer.json().code === 'SATELLITE_DISABLED') {
      const enabled = await app.inject({ method: 'PUT', url: `/api/satellites/${agent.id}`, headers: { cookie: await liveCookie(admin) }, payload: { status: 'active' } })
      if (enabled.statusCode !== 200) throw new Error(`enabling the sweep agent failed: ${enabled.statusCode} ${enabled.body}`)
    } else {
      // Its id is in the cases already made: a new pairing must keep it (a re-registration does).
      await liveCookie(admin)
      const paired = await pairSatellite('sweep-agent', agentKey)
      if (paired.id !== agent.id) throw new Error(`the sweep agent was deleted (was ${agent.id}, paired again as ${paired.id}): ${answer.statusCode} ${answer.body}`)
      agent.apiKey = paired.apiKey
    }
    const again = await beat()
    if (again.statusCode !== 200) throw new Error(`the sweep agent's key does not work: ${again.statusCode} ${again.body}`)
    return agent.apiKey
  }
  /** The registration token, unspent: a new one once a registration used it (or anything revoked it). */
  const liveRegistrationToken = async () => {
    checks++
    const usable = await app.services.registrationTokens.verify(registration.token.replace(/^service_satellite_global_/, ''), 'global').then(() => true, () => false)
    if (!usable) {
      await liveCookie(admin)
      registration = await registrationToken()
    }
    return registration.token
  }

  const accounts: SweepAccounts = {
    admin, user, victim, teamId,
    get accessToken() { return accessToken },
    get checks() { return checks },
    pathValue(operation, name) {
      const { path } = operation
      if (name === 'userId') return user.id
      if (name === 'teamId') return teamId
      if (name === 'id' && actsAsSatellite(operation)) return agent.id
      if (name === 'instanceId') return agentInstanceId
      if (name === 'id' && path.startsWith('/api/satellites/registration-tokens/')) return revocableTokenId
      if (name === 'id' && path.startsWith('/api/teams/{teamId}/invitations/')) return revocableInvitation.id
      if (name === 'token') return keptInvitation.token
      if (name === 'id' && path.startsWith('/api/satellites/')) return targetSatelliteId
      if (name === 'id' && path.startsWith('/api/admin/users/')) return victim.id
      if (name === 'id' && path.startsWith('/api/teams/{teamId}/mcp/servers/')) return teamServerId
      if (name === 'id' && path.startsWith('/api/teams/{teamId}/mcp/installations/')) return targetInstallationId
      if (name === 'id' && path.startsWith('/api/teams/')) return teamId
      if (name === 'id' && path.startsWith('/api/mcp/categories/')) return categoryId
      if (name === 'id' && path.startsWith('/api/mcp/servers/')) return targetServerId
      if (name === 'versionId' && path.startsWith('/api/teams/')) return teamVersionId
      if (name === 'versionId') return versionId
      // A string setting nothing else depends on (the provider sign-in stays off).
      if (name === 'key') return 'provider.oauth.client_id'
      if (name === 'groupId') return 'provider-oauth'
      return undefined
    },
    knownValue({ method, path }, name) {
      if (path.startsWith('/api/oauth2/')) return OAUTH_VALUES[name]
      // An existing user who is not yet a member: the first valid request adds them, later ones reach the member checks.
      if (method === 'POST' && path === '/api/teams/{id}/members' && name === 'login') return victim.username
      // A server the team may install, so that a valid-looking body reaches the checks of versions, targets and values.
      if (method === 'POST' && path === '/api/teams/{teamId}/mcp/installations' && name === 'server_id') return weatherServerId
      // The member's installations and client configuration, narrowed to the sweep team.
      if (path.startsWith('/api/users/me/mcp/') && name === 'team_id') return teamId
      // The agent's own key again: a valid body replaces it with itself, and the agent's document keeps its secret instances.
      if (method === 'PUT' && path === '/api/satellites/{id}/public-key' && name === 'public_key') return agentKey
      // One tool reported, and its very definition hash to approve: a valid approval gets through.
      if (method === 'PUT' && path === '/api/satellites/{id}/instances/{instanceId}/tools' && name === 'tools') return [SWEEP_TOOL]
      if (method === 'POST' && path === '/api/teams/{teamId}/mcp/installations/{id}/tools/approve' && name === 'tools') return [{ name: SWEEP_TOOL.name, hash: toolDefinitionHash(SWEEP_TOOL) }]
      return undefined
    },
    validPathValue(operation, name) {
      const { path } = operation
      if (name === 'userId') return user.id
      if (name === 'teamId') return teamId
      if (name === 'id' && actsAsSatellite(operation)) return agent.id
      if (name === 'instanceId') return agentInstanceId
      if (name === 'id' && path.startsWith('/api/satellites/registration-tokens/')) return revocableTokenId
      if (name === 'token') return keptInvitation.token
      if (name === 'id' && path.startsWith('/api/satellites/')) return keptSatelliteId
      if (name === 'id' && path.startsWith('/api/admin/users/')) return admin.id
      if (name === 'id' && path.startsWith('/api/teams/{teamId}/mcp/installations/')) return keptInstallationId
      if (name === 'id' && path.startsWith('/api/teams/')) return teamId
      if (name === 'id' && path.startsWith('/api/mcp/servers/')) return keptServerId
      if (name === 'key') return 'global.enable_login'
      if (name === 'groupId') return 'global'
      if (name === 'itemId') return noteId
      return undefined
    },
    async headersFor(credential): Promise<Record<string, string>> {
      switch (credential) {
        case 'anonymous':
          return {}
        case 'user':
          return { cookie: await liveCookie(user) }
        case 'admin':
          return { cookie: await liveCookie(admin) }
        case 'bearer':
          if (!(await works(bearer(accessToken)))) {
            await liveCookie(admin)
            accessToken = await issue()
          }
          return bearer(accessToken)
        case 'satellite':
          return { authorization: `Bearer ${await liveSatelliteKey()}` }
        case 'registration':
          return { authorization: `Bearer ${await liveRegistrationToken()}` }
      }
    },
    secrets: () => [...secrets],
    installationSecrets,
    agent: { id: agent.id, instanceId: agentInstanceId },
  }
  return accounts
}
