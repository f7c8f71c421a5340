import type { FastifyInstance } from 'fastify'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createTestContext, type TestContext } from '../helpers/app.js'
import { connectionsOf, remoteServer, startResourceServer, type ResourceServer } from '../helpers/connections.js'
import { DIALECTS } from '../helpers/database.js'
import { install, installationOf, installationsOf } from '../helpers/installations.js'
import { bearer, issueTokens } from '../helpers/oauth.js'
import { addVersion } from '../helpers/catalogue.js'
import { client, crew as makeCrew, signUp, type Account, type Call, type Crew } from '../helpers/teams.js'
import { startAuthorizationServer, type AuthorizationServer } from '../helpers/upstream-oauth.js'

type Method = 'GET' | 'POST' | 'PUT' | 'DELETE' | 'PATCH'

describe.each(DIALECTS)('connections: the outbound guard, bad input and permissions (%s)', (dialect) => {
  let ctx: TestContext
  let as: AuthorizationServer
  let rs: ResourceServer
  let privateAs: ResourceServer
  let app: FastifyInstance
  let call: Call
  let admin: Account
  let crew: Crew
  let id: string
  let readToken: string
  let seq = 0
  const fresh = () => signUp(app, `rules_${dialect}_${++seq}`)
  const headersOf = (who: Account | string | undefined) =>
    who === undefined ? {} : typeof who === 'string' ? bearer(who) : { cookie: who.cookie }
  const send = (method: Method, url: string, who: Account | string | undefined, payload?: unknown) =>
    app.inject({ method, url, headers: headersOf(who), ...(payload === undefined ? {} : { payload: payload as object }) })

  beforeAll(async () => {
    ctx = await createTestContext(dialect)
    as = await startAuthorizationServer()
    rs = await startResourceServer(as.issuer)
    // A resource whose metadata names an authorization server at a private address over http.
    privateAs = await startResourceServer('http://192.168.7.7')
    app = (await ctx.build({ env: { OUTBOUND_ALLOWED_HOSTS: `${as.host},${rs.host},${privateAs.host}`, RATE_LIMIT_ENABLED: 'false' } })).app
    call = client(app)
    admin = await fresh()
    crew = await makeCrew(call, fresh, `Rules ${dialect}`)
    id = (await install(call, crew.team.id, crew.teamAdmin, { server_id: await remoteServer(call, admin, `Ruled ${dialect}`, rs.url), name: 'ruled' })).id
    readToken = (await issueTokens(app, crew.teamUser.cookie, 'mcp:read', { teamId: crew.team.id })).access_token
  })
  afterAll(async () => {
    await ctx?.close()
    await as?.close()
    await rs?.close()
    await privateAs?.close()
  })

  it.each([
    ['a private address over https', 'https://10.20.30.40/mcp', 'non-public address'],
    ['a host not allowed, over plain http', 'http://mcp.example.test/mcp', 'http'],
  ])('refuses to fetch metadata from %s: 400 UPSTREAM_URL_REFUSED, and the probe adds nothing', async (_label, url, words) => {
    const serverId = await remoteServer(call, admin, `Guarded ${dialect} ${++seq}`, url)
    const probed = await install(call, crew.team.id, crew.teamAdmin, { server_id: serverId, name: `probed-${seq}` })
    expect(probed.inputs.filter((input) => input.kind === 'oauth')).toEqual([])
    const declared = await install(call, crew.team.id, crew.teamAdmin, { server_id: serverId, name: `declared-${seq}`, auth: 'oauth' })
    const response = await send('POST', connectionsOf(crew.team.id, declared.id), crew.teamUser, {})
    expect(response.statusCode, response.body).toBe(400)
    expect(response.json()).toMatchObject({ success: false, code: 'UPSTREAM_URL_REFUSED' })
    expect(response.json().error).toContain(words)
  })

  it('refuses an authorization server the metadata names at a private http address', async () => {
    const serverId = await remoteServer(call, admin, `Private AS ${dialect}`, privateAs.url)
    const installed = await install(call, crew.team.id, crew.teamAdmin, { server_id: serverId, name: 'private-as' })
    const response = await send('POST', connectionsOf(crew.team.id, installed.id), crew.teamUser, {})
    expect(response.statusCode, response.body).toBe(400)
    expect(response.json()).toMatchObject({ success: false, code: 'UPSTREAM_URL_REFUSED' })
  })

  const key = () => encodeURIComponent(`oauth:${rs.url}`)
  const badInput: Array<[string, Method, () => string, unknown]> = [
    ['a key of the wrong type', 'POST', () => connectionsOf(crew.team.id, id), { key: 5 }],
    ['an unknown field', 'POST', () => connectionsOf(crew.team.id, id), { extra: true }],
    ['a key that is no oauth key', 'POST', () => connectionsOf(crew.team.id, id), { key: 'env:TOKEN' }],
    ['an oauth key the installation lacks', 'POST', () => connectionsOf(crew.team.id, id), { key: 'oauth:https://other.example/mcp' }],
    ['an empty return_to', 'POST', () => connectionsOf(crew.team.id, id), { return_to: '' }],
    ['a huge return_to', 'POST', () => connectionsOf(crew.team.id, id), { return_to: `/${'a'.repeat(5000)}` }],
    ['null bytes', 'POST', () => connectionsOf(crew.team.id, id), { key: 'oauth:\u0000' }],
    ['a state too long', 'GET', () => `/api/oauth/upstream/callback?state=${'s'.repeat(600)}&code=x`, undefined],
    ['no state', 'GET', () => '/api/oauth/upstream/callback?code=x', undefined],
    ['a key that is not one, to delete', 'DELETE', () => `${connectionsOf(crew.team.id, id)}/nonsense`, undefined],
    ['an issuer that is no URL', 'PUT', () => '/api/oauth/upstream/clients/not-a-url', { client_id: 'x' }],
    ['an issuer with a query', 'PUT', () => `/api/oauth/upstream/clients/${encodeURIComponent('https://as.example/?x=1')}`, { client_id: 'x' }],
    ['an empty client_id', 'PUT', () => `/api/oauth/upstream/clients/${encodeURIComponent('https://as.example')}`, { client_id: '' }],
    ['an unknown auth method', 'PUT', () => `/api/oauth/upstream/clients/${encodeURIComponent('https://as.example')}`, { client_id: 'x', token_endpoint_auth_method: 'private_key_jwt' }],
    ['a secret method without a secret', 'PUT', () => `/api/oauth/upstream/clients/${encodeURIComponent('https://as.example')}`, { client_id: 'x', token_endpoint_auth_method: 'client_secret_post' }],
    ['an unknown field on a client', 'PUT', () => `/api/oauth/upstream/clients/${encodeURIComponent('https://as.example')}`, { client_id: 'x', admin: true }],
    ['an issuer that is no URL, to delete', 'DELETE', () => '/api/oauth/upstream/clients/nope', undefined],
    ['auth other than oauth', 'POST', () => installationsOf(crew.team.id), { server_id: 'x', auth: 'basic' }],
    ['a team connection that is no oauth input', 'PATCH', () => installationOf(crew.team.id, id), () => ({ team_connections: [`oauth:${rs.url}/other`] })],
    ['a team connection that is not an oauth key', 'PATCH', () => installationOf(crew.team.id, id), { team_connections: ['env:X'] }],
    ['a value for an oauth input', 'PUT', () => `${installationOf(crew.team.id, id)}/values`, () => ({ values: { [`oauth:${rs.url}`]: 'token' } })],
    ['an own value for an oauth input', 'PUT', () => `${installationOf(crew.team.id, id)}/my-values`, () => ({ values: { [`oauth:${rs.url}`]: 'token' } })],
  ]
  it.each(badInput)('bad input: %s → 400 in the envelope', async (_label, method, url, payload) => {
    const who = url().startsWith('/api/oauth/upstream/clients') ? admin : url().includes('/values') || method === 'PATCH' || url().endsWith('/installations') ? crew.teamAdmin : crew.teamUser
    const response = await send(method, url(), who, typeof payload === 'function' ? (payload as () => unknown)() : payload)
    expect(response.statusCode, response.body).toBe(400)
    expect(response.json()).toMatchObject({ success: false, code: expect.any(String) })
  })

  it('refuses malformed JSON and other content types, never 5xx', async () => {
    const malformed = await app.inject({ method: 'POST', url: connectionsOf(crew.team.id, id), headers: { cookie: crew.teamUser.cookie, 'content-type': 'application/json' }, payload: '{"key":' })
    expect(malformed.statusCode).toBe(400)
    const form = await app.inject({ method: 'POST', url: connectionsOf(crew.team.id, id), headers: { cookie: crew.teamUser.cookie, 'content-type': 'application/x-www-form-urlencoded' }, payload: 'key=x' })
    expect(form.statusCode).toBe(415)
  })

  // Who may call what: a status for each caller (bearer: a token with mcp:read of the team_user).
  const routes: Array<[string, Method, () => string, unknown, Record<'teamAdmin' | 'teamUser' | 'outsider' | 'globalAdmin' | 'bearer' | 'nobody', number>]> = [
    ['connect (user scope)', 'POST', () => connectionsOf(crew.team.id, id), {}, { teamAdmin: 200, teamUser: 200, outsider: 404, globalAdmin: 403, bearer: 401, nobody: 401 }],
    ['read an installation\'s connections', 'GET', () => connectionsOf(crew.team.id, id), undefined, { teamAdmin: 200, teamUser: 200, outsider: 404, globalAdmin: 200, bearer: 200, nobody: 401 }],
    ['delete a connection never made', 'DELETE', () => `${connectionsOf(crew.team.id, id)}/${key()}`, undefined, { teamAdmin: 404, teamUser: 404, outsider: 404, globalAdmin: 404, bearer: 401, nobody: 401 }],
    ['read one\'s own connections', 'GET', () => '/api/users/me/connections', undefined, { teamAdmin: 200, teamUser: 200, outsider: 200, globalAdmin: 200, bearer: 200, nobody: 401 }],
    ['list upstream clients', 'GET', () => '/api/oauth/upstream/clients', undefined, { teamAdmin: 403, teamUser: 403, outsider: 403, globalAdmin: 200, bearer: 401, nobody: 401 }],
    ['enter upstream credentials', 'PUT', () => `/api/oauth/upstream/clients/${encodeURIComponent('https://manual.example')}`, { client_id: 'manual' }, { teamAdmin: 403, teamUser: 403, outsider: 403, globalAdmin: 200, bearer: 401, nobody: 401 }],
    ['the client metadata document', 'GET', () => '/api/oauth/upstream/client.json', undefined, { teamAdmin: 200, teamUser: 200, outsider: 200, globalAdmin: 200, bearer: 200, nobody: 200 }],
  ]
  it.each(routes)('permissions: %s', async (_label, method, url, payload, outcomes) => {
    const callers: Record<keyof typeof outcomes, Account | string | undefined> = {
      teamAdmin: crew.teamAdmin, teamUser: crew.teamUser, outsider: crew.outsider, globalAdmin: admin, bearer: readToken, nobody: undefined,
    }
    const seen: Record<string, number> = {}
    for (const who of Object.keys(outcomes) as Array<keyof typeof outcomes>) seen[who] = (await send(method, url(), callers[who], payload)).statusCode
    expect(seen).toEqual(outcomes)
  })

  it('a catalogue remote that says auth: "oauth" gets the input without asking the server', async () => {
    const serverId = await remoteServer(call, admin, `Declared ${dialect}`, `${rs.url.replace('/mcp', '/open')}`, 'oauth')
    const read = await send('GET', `/api/mcp/servers/${serverId}`, admin)
    expect(read.json().data.server.remotes[0]).toMatchObject({ auth: 'oauth' })
    const installed = await install(call, crew.team.id, crew.teamAdmin, { server_id: serverId, name: 'catalogue-declared' })
    expect(installed.inputs.filter((input) => input.kind === 'oauth')).toMatchObject([{ key: `oauth:${rs.url.replace('/mcp', '/open')}`, scope: 'user' }])
  })

  it('keeps the oauth input when the installation follows a new version of its server', async () => {
    const serverId = await remoteServer(call, admin, `Followed ${dialect}`, rs.url)
    const installed = await install(call, crew.team.id, crew.teamAdmin, { server_id: serverId, name: 'followed' })
    expect(installed.inputs.filter((input) => input.kind === 'oauth')).toHaveLength(1)
    await addVersion(call, admin, serverId, { version: '1.1.0' })
    const after = (await send('GET', installationOf(crew.team.id, installed.id), crew.teamAdmin)).json().data.installation
    expect(after.version).toBe('1.1.0')
    expect(after.inputs.filter((input: { kind: string }) => input.kind === 'oauth')).toMatchObject([{ key: `oauth:${rs.url}`, scope: 'user' }])
  })

  it('never answers a token: the views carry status, account, scopes and expiry only', async () => {
    const response = await send('GET', connectionsOf(crew.team.id, id), crew.teamUser)
    expect(Object.keys(response.json().data.connections[0]).sort()).toEqual(['account', 'connected_at', 'expires_at', 'key', 'scope', 'scopes', 'status'])
  })
})
