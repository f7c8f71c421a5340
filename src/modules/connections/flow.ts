import * as oauth from 'oauth4webapi'
import type { UserActor } from '../../auth/caller.js'
import type { ConnectionsRepository } from '../../db/repositories/connections.js'
import type { DesiredStamps } from '../../db/repositories/desired-stamps.js'
import type { InstallationsRepository } from '../../db/repositories/installations.js'
import type { TeamsRepository } from '../../db/repositories/teams.js'
import { newId } from '../../db/ids.js'
import type { Database } from '../../db/types.js'
import type { InstallationInput } from '../../formats/installation-inputs.js'
import { AppError, errors } from '../../http/errors.js'
import type { Clock } from '../../lib/clock.js'
import { randomToken, type Digester } from '../../lib/tokens.js'
import type { AuditLog } from '../audit/service.js'
import { upstreamError, type Discovery } from './discovery.js'
import type { Registration, UpstreamClient } from './registration.js'
import { accountLabel, tokensFrom } from './token-response.js'
import type { TokensBox } from './tokens-box.js'

/** A pending authorization must come back within ten minutes. */
export const FLOW_LIFETIME_MS = 10 * 60_000

/** Who starts or finishes a connection: a signed-in member, by their session. */
export interface ConnectActor extends UserActor {
  sessionId: string
}

/** What the callback page says. */
export interface Connected {
  serverName: string
  installationName: string
  account: string | null
  scope: 'team' | 'user'
  returnTo: string | null
  teamId: string
  installationId: string
}

const stateInvalid = (message: string) => new AppError(400, 'CONNECTION_STATE_INVALID', message)
const connectionFailed = (message: string) => new AppError(400, 'CONNECTION_FAILED', message)

export interface FlowDeps {
  database: Database
  connections: ConnectionsRepository
  installations: InstallationsRepository
  teams: TeamsRepository
  stamps: DesiredStamps
  discovery: Discovery
  registration: Registration
  box: TokensBox
  digest: Digester
  audit: AuditLog
  clock: Clock
}

/** The oauth input a request names (or the only one), and whether the caller may connect it. */
export async function connectableInput(deps: Pick<FlowDeps, 'teams'>, inputs: readonly InstallationInput[], key: string | undefined, teamId: string, actor: Pick<ConnectActor, 'userId' | 'isGlobalAdmin'>): Promise<InstallationInput & { oauth: NonNullable<InstallationInput['oauth']> }> {
  const oauthInputs = inputs.filter((input): input is InstallationInput & { oauth: NonNullable<InstallationInput['oauth']> } => input.kind === 'oauth' && input.oauth !== undefined)
  if (oauthInputs.length === 0) throw errors.validation([{ field: 'key', message: 'this installation has no oauth input: its server asks for no sign-in', in: 'body' }])
  if (key === undefined && oauthInputs.length > 1) throw errors.validation([{ field: 'key', message: `the installation has ${oauthInputs.length} oauth inputs: name one (${oauthInputs.map((i) => i.key).join(', ')})`, in: 'body' }])
  const input = key === undefined ? oauthInputs[0]! : oauthInputs.find((candidate) => candidate.key === key)
  if (input === undefined) throw errors.validation([{ field: 'key', message: `"${key}" is not an oauth input of this installation`, in: 'body' }])
  const role = await deps.teams.roleOf(actor.userId, teamId)
  if (input.scope === 'team' && role !== 'team_admin' && !actor.isGlobalAdmin) {
    throw errors.forbidden({ required_permission: 'team.installations.manage' }, 'Forbidden: a team connection is made by a team admin.')
  }
  if (input.scope === 'user' && role === null) throw errors.forbidden({ required_role: 'team member' }, 'Forbidden: only members of the team connect their own account.')
  return input
}

/**
 * The connect flow: authorization code with PKCE (S256), a `state` bound to the caller's session,
 * `resource` (RFC 8707) naming the remote server, pushed to the server first (RFC 9126) where it
 * offers that; then the callback: the state consumed once, the session and `iss` (RFC 9207)
 * checked, the code exchanged, the tokens sealed and stored.
 */
export class ConnectFlow {
  constructor(private readonly deps: FlowDeps) {}

  async start(teamId: string, installationId: string, body: { key?: string; return_to?: string }, returnTo: string | null, actor: ConnectActor): Promise<string> {
    const detail = await this.deps.installations.find(teamId, installationId)
    if (detail === undefined) throw errors.notFound('Installation')
    const input = await connectableInput(this.deps, detail.installation.inputs, body.key, teamId, actor)
    const { as, scopes } = await this.deps.discovery.discover(input.oauth)
    const requested = [...new Set([...scopes, ...(as.scopes_supported?.includes('openid') === true ? ['openid'] : [])])]
    const state = randomToken()
    const verifier = oauth.generateRandomCodeVerifier()
    const parameters = {
      redirect_uri: this.deps.registration.redirectUri, response_type: 'code', state, resource: input.oauth.resource,
      code_challenge: await oauth.calculatePKCECodeChallenge(verifier), code_challenge_method: 'S256',
      ...(requested.length > 0 ? { scope: requested.join(' ') } : {}),
    }
    let client = await this.deps.registration.clientFor(as)
    let url: URL
    try {
      url = await this.authorizationUrl(as, client, parameters)
    } catch (error) {
      // A dynamic registration the server forgot: register again, once.
      if (!(error instanceof oauth.ResponseBodyError && error.error === 'invalid_client' && client.method === 'dynamic')) throw upstreamError(`authorization request at ${as.issuer}`, error)
      await this.deps.registration.invalidated(as.issuer, client.client.client_id)
      client = await this.deps.registration.clientFor(as)
      url = await this.authorizationUrl(as, client, parameters).catch((again: unknown) => { throw upstreamError(`authorization request at ${as.issuer}`, again) })
    }
    const id = newId()
    const now = this.deps.clock.now()
    await this.deps.connections.insertFlow({
      id, stateDigest: this.deps.digest(state), sessionId: actor.sessionId, userId: actor.userId, teamId, installationId,
      inputKey: input.key, owner: input.scope === 'team' ? 'team' : actor.userId, issuer: as.issuer, clientId: client.client.client_id,
      redirectUri: this.deps.registration.redirectUri, codeVerifierSealed: this.deps.box.sealVerifier(id, verifier), resource: input.oauth.resource,
      scopes: requested.join(' '), returnTo, expiresAt: new Date(now + FLOW_LIFETIME_MS), createdAt: new Date(now),
    })
    return url.toString()
  }

  /** The browser came back: exactly one callback per state stores a connection. */
  async callback(query: Record<string, string | undefined>, actor: ConnectActor): Promise<Connected> {
    const state = query.state
    if (state === undefined || state === '') throw stateInvalid('The answer of the authorization server carries no state; start connecting again.')
    const flow = await this.deps.connections.consumeFlow(this.deps.digest(state))
    if (flow === undefined) throw stateInvalid('This sign-in is unknown or was already used; start connecting again from the installation.')
    if (flow.sessionId !== actor.sessionId) throw stateInvalid('This sign-in was started in another session; start connecting again from this browser.')
    if (flow.expiresAt.getTime() <= this.deps.clock.now()) throw stateInvalid('This sign-in took longer than ten minutes; start connecting again.')
    const as = await this.deps.discovery.authorizationServer(flow.issuer)
    const client = await this.deps.registration.clientById(flow.issuer, flow.clientId)
    if (client === null) throw connectionFailed('This service\'s registration at the authorization server changed meanwhile; start connecting again.')
    const parameters = new URLSearchParams(Object.entries(query).filter((entry): entry is [string, string] => entry[1] !== undefined))
    let callback: URLSearchParams
    try {
      callback = oauth.validateAuthResponse(as, client.client, parameters, state)
    } catch (error) {
      if (error instanceof oauth.AuthorizationResponseError) {
        throw connectionFailed(error.error === 'access_denied' ? 'The sign-in was declined at the authorization server; nothing was connected.' : `The authorization server refused: ${error.error}.`)
      }
      throw connectionFailed('The answer did not come from the authorization server this sign-in was started with (its issuer does not match); nothing was connected.')
    }
    const tokens = await this.exchange(as, client, callback, flow.redirectUri, this.deps.box.openVerifier(flow.id, flow.codeVerifierSealed), flow.resource)
    const account = await accountLabel(as, client, tokens, this.deps.discovery)
    const userId = flow.owner === 'team' ? null : flow.userId
    const now = new Date(this.deps.clock.now())
    const { sealedTokens, refreshAt } = tokensFrom(tokens, flow.scopes, account, now, (value) => this.deps.box.sealTokens({ installationId: flow.installationId, userId, inputKey: flow.inputKey }, value))
    const detail = await this.deps.database.transaction(async (tx) => {
      const found = await this.deps.installations.with(tx).find(flow.teamId, flow.installationId)
      // The installation went, or the member left the team, while they were signing in.
      if (found === undefined) throw connectionFailed('The installation no longer exists; nothing was connected.')
      if (userId !== null && (await this.deps.teams.with(tx).roleOf(userId, flow.teamId)) === null) throw connectionFailed('You are no longer a member of this team; nothing was connected.')
      const row = await this.deps.connections.with(tx).upsert({
        id: newId(), installationId: flow.installationId, teamId: flow.teamId, userId, owner: flow.owner, inputKey: flow.inputKey,
        issuer: flow.issuer, clientId: flow.clientId, status: 'connected', sealed: sealedTokens, refreshAt, connectedAt: now, updatedAt: now,
      })
      await this.deps.stamps.with(tx).satellites([found.installation.satelliteId])
      await this.deps.audit.record('connection.created', {
        actorId: actor.userId, ip: actor.ip, target: row.id,
        details: { team_id: flow.teamId, installation_id: flow.installationId, key: flow.inputKey, issuer: flow.issuer, scope: flow.owner === 'team' ? 'team' : 'user' },
      }, tx)
      return found
    })
    return {
      serverName: detail.server.name, installationName: detail.installation.name, account, scope: flow.owner === 'team' ? 'team' : 'user',
      returnTo: flow.returnTo, teamId: flow.teamId, installationId: flow.installationId,
    }
  }

  private async authorizationUrl(as: oauth.AuthorizationServer, client: UpstreamClient, parameters: Record<string, string>): Promise<URL> {
    const url = new URL(as.authorization_endpoint!)
    if (as.pushed_authorization_request_endpoint !== undefined) {
      const response = await oauth.pushedAuthorizationRequest(as, client.client, client.auth, parameters, this.deps.discovery.options(as.pushed_authorization_request_endpoint))
      const pushed = await oauth.processPushedAuthorizationResponse(as, client.client, response)
      url.searchParams.set('client_id', client.client.client_id)
      url.searchParams.set('request_uri', pushed.request_uri)
      return url
    }
    url.searchParams.set('client_id', client.client.client_id)
    for (const [name, value] of Object.entries(parameters)) url.searchParams.set(name, value)
    return url
  }

  private async exchange(as: oauth.AuthorizationServer, client: UpstreamClient, callback: URLSearchParams, redirectUri: string, verifier: string, resource: string): Promise<oauth.TokenEndpointResponse> {
    try {
      const response = await oauth.authorizationCodeGrantRequest(as, client.client, client.auth, callback, redirectUri, verifier, {
        ...this.deps.discovery.options(as.token_endpoint!), additionalParameters: { resource },
      })
      return await oauth.processAuthorizationCodeResponse(as, client.client, response)
    } catch (error) {
      if (error instanceof oauth.ResponseBodyError) {
        if (error.error === 'invalid_client' && client.method === 'dynamic') await this.deps.registration.invalidated(as.issuer, client.client.client_id)
        throw connectionFailed(`The authorization server refused the code: ${error.error}; start connecting again.`)
      }
      throw upstreamError(`token endpoint of ${as.issuer}`, error)
    }
  }
}
