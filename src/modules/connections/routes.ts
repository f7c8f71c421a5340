import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import type { FastifyRequest } from 'fastify'
import { Type } from 'typebox'
import { policy } from '../../auth/policies.js'
import { requestActor, userCaller } from '../../http/current-user.js'
import { teamWithinReach } from '../../http/team-reach.js'
import { OkMessage } from '../../http/envelope.js'
import { sendPage } from '../../http/pages.js'
import { ACCOUNT_PAGES } from '../auth/page-links.js'
import { connectedPage } from './pages.js'
import { CALLBACK_PATH, CLIENT_DOCUMENT_PATH } from './registration.js'
import {
  CallbackQuery, ClientBody, ClientDocument, ConnectAnswer, ConnectBody, ConnectionParams, ConnectionsAnswer, InstallationParams, IssuerParams,
  MyConnectionsAnswer, Page, UpstreamClientAnswer, UpstreamClientsAnswer,
} from './schemas.js'

const tags = ['Connections']
const NO_TOKENS = 'No answer, log line or audit event ever holds a token.'
/** Any member of the team reads; who may connect or remove depends on the input's scope (checked by the service). */
const member = policy.session({ teamPermission: 'team.installations.view' })
const memberRead = policy.dual('mcp:read', { teamPermission: 'team.installations.view' })
/** The registrations at remote authorization servers: global admins. */
const admin = policy.session({ permission: 'settings.edit' })
const CALLBACK_HINT = 'Go back to the installation and connect again.'

/** The actor of a request, with the session a connect flow is bound to. */
const actorOf = (request: FastifyRequest) => {
  const caller = userCaller(request)
  return { ...requestActor(request, caller), sessionId: caller.credentialId }
}

/** Connections: the platform signed in, for a member or the team, at a remote MCP server's authorization server. */
export const connectionRoutes: FastifyPluginAsyncTypebox = async (app) => {
  const services = () => app.services

  app.post('/api/teams/:teamId/mcp/installations/:id/connections', {
    config: { auth: member },
    schema: {
      tags, summary: 'Start connecting an account to an OAuth-protected remote server',
      description: [
        'Answers the authorization server\'s URL to open in the browser: authorization code with PKCE (S256), a `state` bound to the caller\'s session,',
        '`resource` (RFC 8707) naming the remote server, and the scopes its metadata or challenge names. The sign-in comes back to',
        `\`${CALLBACK_PATH}\`, which stores the tokens encrypted and shows what was connected. A user-scoped input is connected by each member for`,
        'themselves; a team one (`team_connections`) by a team admin (403 otherwise). Session only: a bearer token → 403.',
        'This service registers at the authorization server first when it must (its client ID metadata document, else dynamic registration);',
        'a server offering neither, without credentials entered by a global admin → 409 `UPSTREAM_CLIENT_REQUIRED`. A metadata URL that is not https or',
        'resolves to a private address (unless in OUTBOUND_ALLOWED_HOSTS) → 400 `UPSTREAM_URL_REFUSED`; an authorization server that cannot be read → 502 `UPSTREAM_ERROR`.',
      ].join(' '),
      params: InstallationParams, body: ConnectBody, response: { 200: ConnectAnswer },
    },
  }, async (request) => {
    const returnTo = request.body.return_to === undefined ? null : await services().providerLogin.safeReturnTo(request.body.return_to)
    const url = await services().connectFlow.start(request.params.teamId, request.params.id, request.body, returnTo, actorOf(request))
    return { success: true as const, data: { authorization_url: url } }
  })

  app.get(CALLBACK_PATH, {
    config: { auth: policy.session(), unknownParameters: 'ignore', htmlRefusals: { hint: CALLBACK_HINT, links: [{ href: ACCOUNT_PAGES.account, label: 'Your account' }] } },
    schema: {
      tags, summary: 'Where the authorization server sends the browser back (HTML)',
      description: [
        'Checks the `state` (single use, ten minutes, the session that started it) and `iss` (RFC 9207), exchanges the code and stores the tokens,',
        'then answers a page saying which server and account were connected, with a link back (`return_to`, else the account page).',
        'Refusals (an unknown, used, expired or foreign state, a mismatched issuer, a declined sign-in) → 400 page, nothing stored.',
        NO_TOKENS,
      ].join(' '),
      querystring: CallbackQuery, response: { 200: Page },
    },
  }, async (request, reply) => {
    const connected = await services().connectFlow.callback(request.query as Record<string, string | undefined>, actorOf(request))
    const back = connected.returnTo === null ? null : await services().providerLogin.safeReturnTo(connected.returnTo)
    return sendPage(reply, 200, connectedPage(connected, back ?? ACCOUNT_PAGES.account))
  })

  app.get(CLIENT_DOCUMENT_PATH, {
    config: { auth: policy.public() },
    schema: {
      tags, summary: 'This service\'s client ID metadata document',
      description: 'Authorization servers that support client ID metadata documents fetch it: this URL is the service\'s `client_id` there. Public; not enveloped.',
      response: { 200: ClientDocument },
    },
  }, async (_request, reply) => {
    return reply.header('cache-control', 'public, max-age=3600').send(services().upstreamRegistration.document())
  })

  app.get('/api/teams/:teamId/mcp/installations/:id/connections', {
    config: { auth: memberRead },
    schema: {
      tags, summary: 'The connections of an installation',
      description: `For each oauth input: the caller's own connection (user scope) or the team's (team scope), with its status, account, scopes and expiry. ${NO_TOKENS}`,
      params: InstallationParams, response: { 200: ConnectionsAnswer },
    },
  }, async (request) => {
    const connections = await services().connections.forInstallation(request.params.teamId, request.params.id, actorOf(request))
    return { success: true as const, data: { connections } }
  })

  app.delete('/api/teams/:teamId/mcp/installations/:id/connections/:key', {
    config: { auth: member },
    schema: {
      tags, summary: 'Forget a connection',
      description: 'The caller\'s own (user scope), or the team\'s (team scope, a team admin). The tokens are deleted, then revoked at the authorization server where it offers revocation (RFC 7009, best effort). The key is percent-encoded in the path.',
      params: ConnectionParams, response: { 204: Type.Null({ description: 'Forgotten.' }) },
    },
  }, async (request, reply) => {
    await services().connections.delete(request.params.teamId, request.params.id, request.params.key, actorOf(request))
    return reply.code(204).send(null)
  })

  app.get('/api/users/me/connections', {
    config: { auth: policy.dual('mcp:read') },
    schema: {
      tags, summary: 'Your own connections, every team',
      description: `The caller's user-scoped connections (team connections are read on each installation); a bearer token bound to a team lists that team's only. ${NO_TOKENS}`,
      response: { 200: MyConnectionsAnswer },
    },
  }, async (request) => {
    const caller = userCaller(request)
    // A bearer token bound to a team at consent answers for that team alone.
    return { success: true as const, data: { connections: await services().connections.mine(caller.userId, teamWithinReach(caller, undefined)) } }
  })

  app.get('/api/oauth/upstream/clients', {
    config: { auth: admin },
    schema: {
      tags, summary: 'This service\'s registrations at remote authorization servers',
      description: 'Dynamic registrations this service made and credentials global admins entered, one per issuer; secrets only as `has_secret`.',
      response: { 200: UpstreamClientsAnswer },
    },
  }, async () => ({ success: true as const, data: { clients: await services().upstreamClients.list() } }))

  app.put('/api/oauth/upstream/clients/:issuer', {
    config: { auth: admin },
    schema: {
      tags, summary: 'Enter this service\'s client credentials for an authorization server',
      description: 'For servers that offer neither client ID metadata documents nor dynamic registration: register this service there by hand ' +
        `(redirect URI \`{PUBLIC_URL}${CALLBACK_PATH}\`) and enter what it gave. Replaces any earlier registration for that issuer. The secret is write-only.`,
      params: IssuerParams, body: ClientBody, response: { 200: UpstreamClientAnswer },
    },
  }, async (request) => {
    const caller = userCaller(request)
    const client = await services().upstreamClients.put(request.params.issuer, request.body, { userId: caller.userId, ip: request.ip })
    return { success: true as const, data: { client } }
  })

  app.delete('/api/oauth/upstream/clients/:issuer', {
    config: { auth: admin },
    schema: {
      tags, summary: 'Forget this service\'s registration at an authorization server',
      description: 'The next connection to it registers again (or needs credentials again). Existing connections keep their tokens until they must be refreshed.',
      params: IssuerParams, response: { 200: OkMessage },
    },
  }, async (request) => {
    const caller = userCaller(request)
    await services().upstreamClients.remove(request.params.issuer, { userId: caller.userId, ip: request.ip })
    return { success: true as const, message: 'Registration forgotten.' }
  })
}
