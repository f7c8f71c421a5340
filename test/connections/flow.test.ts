import { sql } from 'drizzle-orm'
import type { FastifyInstance } from 'fastify'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createTestContext, type TestContext } from '../helpers/app.js'
import { callback, connect, connectionsOf, listeningApp, remoteServer, startConnect, startResourceServer, type ResourceServer } from '../helpers/connections.js'
import { DIALECTS } from '../helpers/database.js'
import { install } from '../helpers/installations.js'
import { rawRows } from '../helpers/sql.js'
import { client, crew as makeCrew, signUp, type Account, type Call, type Crew } from '../helpers/teams.js'
import { authorize, startAuthorizationServer, type AuthorizationServer } from '../helpers/upstream-oauth.js'

describe.each(DIALECTS)('connections: discovery and the connect flow (%s)', (dialect) => {
  let ctx: TestContext
  let as: AuthorizationServer
  let rs: ResourceServer
  let app: FastifyInstance
  let call: Call
  let admin: Account
  let crew: Crew
  let installationId: string
  let seq = 0
  const fresh = () => signUp(app, `conn_${dialect}_${++seq}`)

  const rows = async () => (await rawRows(app.services.database, sql`select user_id, owner, input_key, status, sealed from oauth_connections order by connected_at`)) as Array<[string | null, string, string, string, string]>

  beforeAll(async () => {
    ctx = await createTestContext(dialect)
    as = await startAuthorizationServer()
    rs = await startResourceServer(as.issuer)
    app = (await listeningApp(ctx, { OUTBOUND_ALLOWED_HOSTS: `${as.host},${rs.host}` })).app
    call = client(app)
    admin = await fresh()
    crew = await makeCrew(call, fresh, `Connections ${dialect}`)
    const serverId = await remoteServer(call, admin, `Protected ${dialect}`, rs.url)
    installationId = (await install(call, crew.team.id, crew.teamAdmin, { server_id: serverId, name: 'protected' })).id
  })
  afterAll(async () => {
    await ctx?.close()
    await as?.close()
    await rs?.close()
  })

  it('learns from the probe\'s 401 that the remote server wants OAuth: an oauth input, user-scoped by default', async () => {
    const response = await call('GET', `/api/teams/${crew.team.id}/mcp/installations/${installationId}`, crew.teamUser)
    const oauthInput = (response.json().data.installation.inputs as Array<Record<string, unknown>>).find((input) => input.kind === 'oauth')
    expect(oauthInput).toMatchObject({ key: `oauth:${rs.url}`, scope: 'user', required: true, secret: true })
  })

  it('adds the input without a probe for auth: "oauth", and none for a server that asks for nothing', async () => {
    const open = await remoteServer(call, admin, `Open ${dialect}`, rs.openUrl)
    const plain = await install(call, crew.team.id, crew.teamAdmin, { server_id: open, name: 'open-plain' })
    expect(plain.inputs.filter((input) => input.kind === 'oauth')).toEqual([])
    const declared = await install(call, crew.team.id, crew.teamAdmin, { server_id: open, name: 'open-declared', auth: 'oauth', team_connections: [`oauth:${rs.openUrl}`] })
    expect(declared.inputs.filter((input) => input.kind === 'oauth')).toMatchObject([{ key: `oauth:${rs.openUrl}`, scope: 'team' }])
  })

  it('connects a member: sign-in and consent at the authorization server, a page saying what was connected, tokens sealed', async () => {
    const { page } = await connect(app, crew.team.id, installationId, crew.teamUser, 'alice')
    expect(page.statusCode, page.body).toBe(200)
    expect(page.headers['content-type']).toContain('text/html')
    expect(page.body).toContain(`Protected ${dialect}`)
    expect(page.body).toContain('alice')
    const views = await call('GET', connectionsOf(crew.team.id, installationId), crew.teamUser)
    expect(views.json().data.connections).toMatchObject([{ key: `oauth:${rs.url}`, scope: 'user', status: 'connected', account: 'alice' }])
    expect(views.json().data.connections[0].scopes).toContain('mcp:tools')
    expect(views.json().data.connections[0].expires_at).toEqual(expect.any(String))
    // The row holds no token in clear; it opens only with the box, bound to its place.
    const [row] = await rows()
    const tokens = app.services.connectionTokens.openTokens({ installationId, userId: crew.teamUser.id, inputKey: `oauth:${rs.url}` }, row![4])
    expect(tokens.refresh_token).toEqual(expect.any(String))
    expect(row![4]).not.toContain(tokens.access_token)
    expect(row![4]).not.toContain(tokens.refresh_token)
    expect(() => app.services.connectionTokens.openTokens({ installationId, userId: crew.teamAdmin.id, inputKey: `oauth:${rs.url}` }, row![4])).toThrow()
    expect(JSON.stringify(views.json())).not.toContain(tokens.access_token)
    expect(as.requests.get('/reg')).toBe(1)
  })

  it('registers once per issuer: a second member\'s connection reuses the registration', async () => {
    const { page } = await connect(app, crew.team.id, installationId, crew.teamAdmin, 'bob')
    expect(page.statusCode, page.body).toBe(200)
    expect(as.requests.get('/reg')).toBe(1)
    const mine = await call('GET', connectionsOf(crew.team.id, installationId), crew.teamAdmin)
    expect(mine.json().data.connections).toMatchObject([{ status: 'connected', account: 'bob' }])
  })

  it('refuses an unknown state, a used one, another session\'s and an expired one: 400 page, nothing stored', async () => {
    const before = (await rows()).length
    const unknown = await callback(app, `http://x/api/oauth/upstream/callback?code=abc&state=nothing-like-it&iss=${encodeURIComponent(as.issuer)}`, crew.teamUser)
    expect(unknown.statusCode).toBe(400)
    expect(unknown.headers['content-type']).toContain('text/html')

    const { authorization } = await connect(app, crew.team.id, installationId, crew.teamUser, 'alice')
    const reused = await callback(app, authorization.callback, crew.teamUser)
    expect(reused.statusCode).toBe(400)

    const foreign = await authorize(await startConnect(app, crew.team.id, installationId, crew.teamUser), { account: 'alice' })
    const other = await callback(app, foreign.callback, crew.teamAdmin)
    expect(other.statusCode).toBe(400)
    expect(other.body).toContain('another session')

    const late = await authorize(await startConnect(app, crew.team.id, installationId, crew.teamUser), { account: 'alice' })
    await rawRows(app.services.database, dialect === 'sqlite'
      ? sql`update oauth_connection_flows set expires_at = 0`
      : sql`update oauth_connection_flows set expires_at = now() - interval '1 minute'`)
    const expired = await callback(app, late.callback, crew.teamUser)
    expect(expired.statusCode).toBe(400)
    expect(expired.body).toContain('ten minutes')
    expect((await rows()).length).toBe(before)
  })

  it('refuses an answer whose iss is another issuer, and a declined sign-in: 400 page, nothing stored', async () => {
    await call('DELETE', `${connectionsOf(crew.team.id, installationId)}/${encodeURIComponent(`oauth:${rs.url}`)}`, crew.teamUser)
    const forged = await authorize(await startConnect(app, crew.team.id, installationId, crew.teamUser), { account: 'alice' })
    const url = new URL(forged.callback)
    url.searchParams.set('iss', 'https://evil.example')
    const mismatch = await callback(app, url.toString(), crew.teamUser)
    expect(mismatch.statusCode).toBe(400)
    expect(mismatch.body).toContain('issuer does not match')

    const declined = await authorize(await startConnect(app, crew.team.id, installationId, crew.teamUser), { deny: true })
    const page = await callback(app, declined.callback, crew.teamUser)
    expect(page.statusCode).toBe(400)
    expect(page.body).toContain('declined')
    const views = await call('GET', connectionsOf(crew.team.id, installationId), crew.teamUser)
    expect(views.json().data.connections).toMatchObject([{ status: 'missing', account: null }])
  })

  it('of two concurrent callbacks with one state, exactly one connects', async () => {
    const { callback: url } = await authorize(await startConnect(app, crew.team.id, installationId, crew.teamUser), { account: 'alice' })
    const answers = await Promise.all([callback(app, url, crew.teamUser), callback(app, url, crew.teamUser)])
    expect(answers.map((answer) => answer.statusCode).sort()).toEqual([200, 400])
    expect((await rows()).filter((row) => row[0] === crew.teamUser.id)).toHaveLength(1)
  })

  it('deletes a connection and revokes its refresh token at the authorization server', async () => {
    const [row] = (await rows()).filter((r) => r[0] === crew.teamUser.id)
    const tokens = app.services.connectionTokens.openTokens({ installationId, userId: crew.teamUser.id, inputKey: `oauth:${rs.url}` }, row![4])
    expect(await as.introspect(tokens.refresh_token!)).toMatchObject({ active: true })
    const deleted = await call('DELETE', `${connectionsOf(crew.team.id, installationId)}/${encodeURIComponent(`oauth:${rs.url}`)}`, crew.teamUser)
    expect(deleted.statusCode, deleted.body).toBe(204)
    expect((await rows()).filter((r) => r[0] === crew.teamUser.id)).toHaveLength(0)
    expect(await as.introspect(tokens.refresh_token!)).toMatchObject({ active: false })
    const again = await call('DELETE', `${connectionsOf(crew.team.id, installationId)}/${encodeURIComponent(`oauth:${rs.url}`)}`, crew.teamUser)
    expect(again.statusCode).toBe(404)
  })

  it('a member removed from the team loses their connection, revoked upstream', async () => {
    const member = await fresh()
    await call('POST', `/api/teams/${crew.team.id}/members`, crew.owner, { login: member.username, role: 'team_user' })
    const { page } = await connect(app, crew.team.id, installationId, member, 'carol')
    expect(page.statusCode, page.body).toBe(200)
    const [row] = (await rows()).filter((r) => r[0] === member.id)
    const tokens = app.services.connectionTokens.openTokens({ installationId, userId: member.id, inputKey: `oauth:${rs.url}` }, row![4])
    const removed = await call('DELETE', `/api/teams/${crew.team.id}/members/${member.id}`, crew.owner)
    expect(removed.statusCode, removed.body).toBeLessThan(300)
    expect((await rows()).filter((r) => r[0] === member.id)).toHaveLength(0)
    expect(await as.introspect(tokens.refresh_token!)).toMatchObject({ active: false })
  })

  it('a deleted user\'s connections are forgotten and revoked', async () => {
    const member = await fresh()
    await call('POST', `/api/teams/${crew.team.id}/members`, crew.owner, { login: member.username, role: 'team_user' })
    expect((await connect(app, crew.team.id, installationId, member, 'dave')).page.statusCode).toBe(200)
    const [row] = (await rows()).filter((r) => r[0] === member.id)
    const tokens = app.services.connectionTokens.openTokens({ installationId, userId: member.id, inputKey: `oauth:${rs.url}` }, row![4])
    const deleted = await call('DELETE', `/api/admin/users/${member.id}`, admin)
    expect(deleted.statusCode, deleted.body).toBe(200)
    expect((await rows()).filter((r) => r[0] === member.id)).toHaveLength(0)
    expect(await as.introspect(tokens.refresh_token!)).toMatchObject({ active: false })
  })

  it('PATCH auth: "oauth" adds the input to an installation made without it', async () => {
    const open = await remoteServer(call, admin, `Later ${dialect}`, rs.openUrl)
    const plain = await install(call, crew.team.id, crew.teamAdmin, { server_id: open, name: 'later' })
    expect(plain.inputs.some((input) => input.kind === 'oauth')).toBe(false)
    const patched = await call('PATCH', `/api/teams/${crew.team.id}/mcp/installations/${plain.id}`, crew.teamAdmin, { auth: 'oauth' })
    expect(patched.statusCode, patched.body).toBe(200)
    expect(patched.json().data.installation.inputs.filter((input: { kind: string }) => input.kind === 'oauth')).toMatchObject([{ key: `oauth:${rs.openUrl}`, scope: 'user' }])
  })

  it('a team connection is made by a team admin and read by every member; /users/me lists one\'s own', async () => {
    const patched = await call('PATCH', `/api/teams/${crew.team.id}/mcp/installations/${installationId}`, crew.teamAdmin, { team_connections: [`oauth:${rs.url}`] })
    expect(patched.statusCode, patched.body).toBe(200)
    // The members' own connections of that key ended with the change of scope.
    expect((await rows()).filter((r) => r[2] === `oauth:${rs.url}`)).toHaveLength(0)
    const refused = await app.inject({ method: 'POST', url: connectionsOf(crew.team.id, installationId), headers: { cookie: crew.teamUser.cookie }, payload: {} })
    expect(refused.statusCode).toBe(403)
    const { page } = await connect(app, crew.team.id, installationId, crew.teamAdmin, 'team-robot')
    expect(page.statusCode, page.body).toBe(200)
    expect(page.body).toContain('whole team')
    const seen = await call('GET', connectionsOf(crew.team.id, installationId), crew.teamUser)
    expect(seen.json().data.connections).toMatchObject([{ scope: 'team', status: 'connected', account: 'team-robot' }])
    const mine = await call('GET', '/api/users/me/connections', crew.teamUser)
    expect(mine.json().data.connections).toEqual([])
    const [row] = await rows()
    expect(row!.slice(0, 2)).toEqual([null, 'team'])
  })

  it('an installation\'s deletion forgets its connections and revokes them', async () => {
    const [row] = await rows()
    const tokens = app.services.connectionTokens.openTokens({ installationId, userId: null, inputKey: `oauth:${rs.url}` }, row![4])
    const deleted = await call('DELETE', `/api/teams/${crew.team.id}/mcp/installations/${installationId}`, crew.teamAdmin)
    expect(deleted.statusCode, deleted.body).toBe(200)
    expect(await rows()).toHaveLength(0)
    expect(await as.introspect(tokens.refresh_token!)).toMatchObject({ active: false })
  })
})
