import type { FastifyInstance } from 'fastify'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createTestContext, type TestContext } from '../helpers/app.js'
import { DIALECTS } from '../helpers/database.js'
import { startDocumentServer, type DocumentServer } from '../helpers/document-server.js'
import {
  authorizeParams, consentDetails, consentRequestId, exchangeCode, introspect, locationOf, pkce, postConsent, refresh, registerClient, startAuthorization,
} from '../helpers/oauth.js'
import { defaultTeamOf } from '../helpers/placement.js'
import { client, signUp, type Account } from '../helpers/teams.js'

const CALLBACK = 'http://127.0.0.1:7788/callback'
const RESOURCE = 'https://edge.example.com/mcp'

/**
 * MCP clients get refresh tokens: `offline_access` is advertised by this service's protected
 * resources, and a client that may use the refresh_token grant — the default of a registration
 * or a metadata document that names no grant_types — gets one when it asks for
 * `mcp:read offline_access`, even if its registered scope predates offline_access. A client that
 * registered no refresh_token grant is never given a refresh token it could not use.
 */
describe.each(DIALECTS)('offline_access for MCP clients on %s', (dialect) => {
  let ctx: TestContext
  let documents: DocumentServer
  let app: FastifyInstance
  let admin: Account
  let user: Account

  beforeAll(async () => {
    documents = await startDocumentServer()
    ctx = await createTestContext(dialect)
    app = (await ctx.build({
      outbound: { ca: [documents.ca] },
      env: { RATE_LIMIT_ENABLED: 'false', OUTBOUND_ALLOWED_HOSTS: `127.0.0.1:${documents.port}` },
    })).app
    admin = await signUp(app, 'offline_admin')
    user = await signUp(app, 'offline_user')
  })
  afterAll(async () => {
    await ctx.close()
    await documents.close()
  })

  /** /auth for `scope` and the MCP resource, the consent approved as it comes; answers what the consent page listed and the code exchange. */
  async function authorizeFor(clientId: string, scope: string) {
    const pair = pkce()
    const started = await startAuthorization(app, authorizeParams(pair.challenge, { client_id: clientId, redirect_uri: CALLBACK, scope, resource: RESOURCE }), user.cookie)
    const requestId = consentRequestId(locationOf(started))
    expect(requestId, `${started.statusCode} ${locationOf(started)}`).toEqual(expect.any(String))
    const details = (await consentDetails(app, requestId!, user.cookie)).json().data
    const decided = await postConsent(app, { request_id: requestId, decision: 'approve', csrf_token: details.csrf_token }, user.cookie)
    expect(decided.statusCode, decided.body).toBe(200)
    const code = new URL(decided.json().data.redirect_url).searchParams.get('code')!
    const tokens = await exchangeCode(app, { code, verifier: pair.verifier, redirectUri: CALLBACK, clientId })
    expect(tokens.statusCode, tokens.body).toBe(200)
    return { listed: (details.scopes as Array<{ name: string }>).map((entry) => entry.name), tokens: tokens.json() }
  }

  it.each(['/.well-known/oauth-protected-resource', '/.well-known/oauth-protected-resource/api', '/.well-known/oauth-authorization-server'])(
    '%s lists offline_access in scopes_supported', async (path) => {
      const response = await app.inject({ method: 'GET', url: path })
      expect(response.statusCode).toBe(200)
      expect(response.json().scopes_supported).toContain('offline_access')
    },
  )

  it.each([
    ['registered with no grant_types and no scope', {}],
    ['registered with no grant_types and scope mcp:read alone', { scope: 'mcp:read' }],
  ])('a client %s: mcp:read offline_access → a refresh token bound to the chosen team, which refreshes', async (_, extra) => {
    const clientId = await registerClient(app, { client_name: 'Plain MCP client', redirect_uris: [CALLBACK], ...extra })
    const { listed, tokens } = await authorizeFor(clientId, 'mcp:read offline_access')
    expect(listed).toEqual(['mcp:read', 'offline_access'])
    expect(tokens).toMatchObject({ scope: 'mcp:read offline_access', refresh_token: expect.any(String) })
    const refreshed = await refresh(app, tokens.refresh_token, { clientId })
    expect(refreshed.statusCode, refreshed.body).toBe(200)
    expect(refreshed.json().refresh_token).toEqual(expect.any(String))
    const answer = await introspect(app, refreshed.json().access_token, { cookie: admin.cookie })
    expect(answer.json()).toMatchObject({ active: true, aud: RESOURCE, team_id: await defaultTeamOf(client(app), user) })
  })

  it('a client with a metadata document that names no grant_types: a refresh token too', async () => {
    const clientId = documents.document('/clients/no-grant-types.json', { client_name: 'Document MCP client', redirect_uris: [CALLBACK], scope: 'mcp:read' })
    const { listed, tokens } = await authorizeFor(clientId, 'mcp:read offline_access')
    expect(listed).toEqual(['mcp:read', 'offline_access'])
    expect(tokens.refresh_token).toEqual(expect.any(String))
    expect((await refresh(app, tokens.refresh_token, { clientId })).statusCode).toBe(200)
  })

  it('a client that registered the code grant alone: offline_access is left out of the page and the tokens; asked alone → invalid_scope', async () => {
    const clientId = await registerClient(app, { client_name: 'Code-only client', redirect_uris: [CALLBACK], grant_types: ['authorization_code'], scope: 'mcp:read offline_access' })
    const { listed, tokens } = await authorizeFor(clientId, 'mcp:read offline_access')
    expect(listed).toEqual(['mcp:read'])
    expect(tokens.scope).toBe('mcp:read')
    expect(tokens.refresh_token).toBeUndefined()

    const alone = await startAuthorization(app, authorizeParams(pkce().challenge, { client_id: clientId, redirect_uri: CALLBACK, scope: 'offline_access' }), user.cookie)
    expect(alone.statusCode).toBe(302)
    expect(new URL(locationOf(alone)!).searchParams.get('error')).toBe('invalid_scope')
  })
})
