import type { FastifyInstance } from 'fastify'
import { login, register } from './accounts.js'
import type { DocumentedOperation } from './openapi-document.js'
import { ALL_SCOPES, bearer, CLI_CLIENT_ID, issueTokens, REDIRECT_URI, s256 } from './oauth.js'
import type { Credential } from './sweep.js'

const SWEEP_VERIFIER = 'sweep-code-verifier-0123456789-abcdefghijklmnopq'

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
 * deleting or demoting never hits the admin or the user). Credentials are checked before each
 * operation and renewed when they stopped working (see `headersFor`).
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
  /** Real ids for the sweep: the sweep team, the member, the victim, a harmless setting. */
  pathValue(operation: DocumentedOperation, name: string): string | undefined
  /** Values the service knows for query parameters and body fields (the OAuth client, a user to add). */
  knownValue(operation: DocumentedOperation, name: string): unknown
  /** Real ids for valid reads: the admin's own user, the sweep team, a real setting and group. */
  validPathValue(operation: DocumentedOperation, name: string): string | undefined
  headersFor(credential: Credential): Promise<Record<string, string>>
  /** Every password, cookie value and token these accounts used, for the log test. */
  secrets(): string[]
  /** How many credential checks and renewals were made. */
  readonly checks: number
}

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

  const accounts: SweepAccounts = {
    admin, user, victim, teamId,
    get accessToken() { return accessToken },
    get checks() { return checks },
    pathValue({ path }, name) {
      if (name === 'userId') return user.id
      if (name === 'id' && path.startsWith('/api/admin/users/')) return victim.id
      if (name === 'id' && path.startsWith('/api/teams/')) return teamId
      if (name === 'id' && path.startsWith('/api/mcp/categories/')) return categoryId
      if (name === 'id' && path.startsWith('/api/mcp/servers/')) return targetServerId
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
      return undefined
    },
    validPathValue({ path }, name) {
      if (name === 'userId') return user.id
      if (name === 'id' && path.startsWith('/api/admin/users/')) return admin.id
      if (name === 'id' && path.startsWith('/api/teams/')) return teamId
      if (name === 'id' && path.startsWith('/api/mcp/servers/')) return keptServerId
      if (name === 'key') return 'global.enable_login'
      if (name === 'groupId') return 'global'
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
      }
    },
    secrets: () => [...secrets],
  }
  return accounts
}
