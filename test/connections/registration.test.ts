import type { FastifyInstance } from 'fastify'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createTestContext, type TestContext } from '../helpers/app.js'
import { callback, connect, connectionsOf, listeningApp, remoteServer, startResourceServer, type ResourceServer } from '../helpers/connections.js'
import { DIALECTS } from '../helpers/database.js'
import { install } from '../helpers/installations.js'
import { client, crew as makeCrew, signUp, type Account, type Call, type Crew } from '../helpers/teams.js'
import { authorize, startAuthorizationServer, type AuthorizationServer } from '../helpers/upstream-oauth.js'

const CALLBACK = '/api/oauth/upstream/callback'
const STATIC_SECRET = 'static-secret-entered-by-an-admin-0123456789'

describe.each(DIALECTS)('connections: how this service registers at an authorization server (%s)', (dialect) => {
  let ctx: TestContext
  let app: FastifyInstance
  let base: string
  let call: Call
  let admin: Account
  let crew: Crew
  let seq = 0
  const servers: Array<{ close(): Promise<void> }> = []
  const fresh = () => signUp(app, `reg_${dialect}_${++seq}`)

  beforeAll(async () => {
    ctx = await createTestContext(dialect, { file: true })
  })
  afterAll(async () => {
    await ctx?.close()
    for (const server of servers) await server.close()
  })

  it('registers dynamically, and again (once) when the server forgot the registration', async () => {
    const as = await startAuthorizationServer()
    const rs = await startResourceServer(as.issuer)
    servers.push(as, rs)
    ;({ app, base } = await listeningApp(ctx, { OUTBOUND_ALLOWED_HOSTS: `${as.host},${rs.host}` }))
    call = client(app)
    admin = await fresh()
    crew = await makeCrew(call, fresh, `Registration ${dialect}`)
    const serverId = await remoteServer(call, admin, `Dynamic ${dialect}`, rs.url)
    const id = (await install(call, crew.team.id, crew.teamAdmin, { server_id: serverId, name: 'dynamic' })).id
    expect((await connect(app, crew.team.id, id, crew.teamUser, 'alice')).page.statusCode).toBe(200)
    expect(as.requests.get('/reg')).toBe(1)
    const [kept] = (await call('GET', '/api/oauth/upstream/clients', admin)).json().data.clients
    expect(kept).toMatchObject({ issuer: as.issuer, method: 'dynamic' })

    await as.forgetClients()
    const { page } = await connect(app, crew.team.id, id, crew.teamUser, 'alice')
    expect(page.statusCode, page.body).toBe(200)
    expect(as.requests.get('/reg')).toBe(2)
    const [again] = (await call('GET', '/api/oauth/upstream/clients', admin)).json().data.clients
    expect(again.client_id).not.toBe(kept.client_id)
  })

  it('without metadata documents or registration: 409 naming the issuer, until a global admin enters credentials', async () => {
    const redirect = `${base}${CALLBACK}`
    const as = await startAuthorizationServer({
      registration: false,
      clients: [{ client_id: 'platform-static', client_secret: STATIC_SECRET, redirect_uris: [redirect], grant_types: ['authorization_code', 'refresh_token'], response_types: ['code'] }],
    })
    const rs = await startResourceServer(as.issuer)
    servers.push(as, rs)
    // A second instance of the service on the same database, allowed to reach this server.
    const second = await listeningApp(ctx, { OUTBOUND_ALLOWED_HOSTS: `${as.host},${rs.host}` }, base)
    const serverId = await remoteServer(client(second.app), admin, `Static ${dialect}`, rs.url)
    const id = (await install(client(second.app), crew.team.id, crew.teamAdmin, { server_id: serverId, name: 'static' })).id
    const refused = await second.app.inject({ method: 'POST', url: connectionsOf(crew.team.id, id), headers: { cookie: crew.teamUser.cookie }, payload: {} })
    expect(refused.statusCode, refused.body).toBe(409)
    expect(refused.json()).toMatchObject({ success: false, code: 'UPSTREAM_CLIENT_REQUIRED' })
    expect(refused.json().error).toContain(as.issuer)

    const issuer = encodeURIComponent(as.issuer)
    const put = await second.app.inject({ method: 'PUT', url: `/api/oauth/upstream/clients/${issuer}`, headers: { cookie: admin.cookie }, payload: { client_id: 'platform-static', client_secret: STATIC_SECRET } })
    expect(put.statusCode, put.body).toBe(200)
    expect(put.json().data.client).toMatchObject({ issuer: as.issuer, method: 'manual', client_id: 'platform-static', has_secret: true, token_endpoint_auth_method: 'client_secret_basic' })
    expect(put.body).not.toContain(STATIC_SECRET)
    const { page } = await connect(second.app, crew.team.id, id, crew.teamUser, 'alice')
    expect(page.statusCode, page.body).toBe(200)
    const listed = await second.app.inject({ method: 'GET', url: '/api/oauth/upstream/clients', headers: { cookie: admin.cookie } })
    expect(listed.body).not.toContain(STATIC_SECRET)

    const removed = await second.app.inject({ method: 'DELETE', url: `/api/oauth/upstream/clients/${issuer}`, headers: { cookie: admin.cookie } })
    expect(removed.statusCode).toBe(200)
    const again = await second.app.inject({ method: 'POST', url: connectionsOf(crew.team.id, id), headers: { cookie: crew.teamUser.cookie }, payload: {} })
    expect(again.statusCode).toBe(409)
    const gone = await second.app.inject({ method: 'DELETE', url: `/api/oauth/upstream/clients/${issuer}`, headers: { cookie: admin.cookie } })
    expect(gone.statusCode).toBe(404)
  })

  it('uses its client ID metadata document where the server supports one: no registration at all', async () => {
    // The document's URL must be https: PUBLIC_URL is an https name, which the test maps to the app's loopback address.
    const publicUrl = `https://connections-${dialect}.test`
    let local = ''
    const as = await startAuthorizationServer({ registration: false, clientIdMetadataDocument: { resolve: (url) => url.replace(publicUrl, local) } })
    const rs = await startResourceServer(as.issuer)
    servers.push(as, rs)
    const third = await listeningApp(ctx, { OUTBOUND_ALLOWED_HOSTS: `${as.host},${rs.host}` }, publicUrl)
    local = third.base
    const document = await fetch(`${third.base}/api/oauth/upstream/client.json`)
    expect(await document.json()).toMatchObject({ client_id: `${publicUrl}/api/oauth/upstream/client.json`, redirect_uris: [`${publicUrl}${CALLBACK}`], token_endpoint_auth_method: 'none' })
    const serverId = await remoteServer(client(third.app), admin, `Documented ${dialect}`, rs.url)
    const id = (await install(client(third.app), crew.team.id, crew.teamAdmin, { server_id: serverId, name: 'documented' })).id
    const started = await third.app.inject({ method: 'POST', url: connectionsOf(crew.team.id, id), headers: { cookie: crew.teamUser.cookie }, payload: {} })
    expect(started.statusCode, started.body).toBe(200)
    const url = new URL(started.json().data.authorization_url)
    expect(url.searchParams.get('client_id')).toBe(`${publicUrl}/api/oauth/upstream/client.json`)
    const { callback: back } = await authorize(url.toString(), { account: 'dora' })
    expect(back.startsWith(`${publicUrl}${CALLBACK}?`)).toBe(true)
    const page = await callback(third.app, back, crew.teamUser)
    expect(page.statusCode, page.body).toBe(200)
    expect(as.requests.get('/reg')).toBeUndefined()
  })
})
