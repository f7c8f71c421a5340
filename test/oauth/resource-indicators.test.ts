import type { FastifyInstance, LightMyRequestResponse } from 'fastify'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createTestContext, type TestContext } from '../helpers/app.js'
import { DIALECTS } from '../helpers/database.js'
import {
  authorizeAndApprove, authorizeParams, authorizeUrl, bearer, exchangeCode, ISSUER, pkce, refresh, REDIRECT_URI, tokenRequest, type TokenSet,
} from '../helpers/oauth.js'
import { signUp, type Account } from '../helpers/teams.js'

/** A satellite's MCP endpoint: another resource than this service's API. */
const MCP_RESOURCE = 'https://satellite-1.example.com/mcp'

describe.each(DIALECTS)('RFC 8707 resource indicators on %s', (dialect) => {
  let ctx: TestContext
  let app: FastifyInstance
  let admin: Account
  let user: Account

  /** Authorization, consent and exchange with `resource` on /auth (and `exchangeResource` on /token, if given). */
  async function tokensFor(resource: string | undefined, exchangeResource?: string): Promise<LightMyRequestResponse> {
    const authorized = await authorizeAndApprove(app, user.cookie, { scope: 'user:read offline_access', resource })
    return tokenRequest(app, {
      grant_type: 'authorization_code', code: authorized.code, redirect_uri: REDIRECT_URI, client_id: 'service-gateway-cli',
      code_verifier: authorized.verifier, resource: exchangeResource,
    })
  }
  const issued = async (resource: string | undefined): Promise<TokenSet> => {
    const response = await tokensFor(resource)
    expect(response.statusCode, response.body).toBe(200)
    return response.json()
  }
  const introspect = async (token: string) => {
    const response = await app.inject({ method: 'POST', url: '/api/oauth2/introspect', headers: { cookie: admin.cookie }, payload: { token } })
    expect(response.statusCode, response.body).toBe(200)
    return response.json()
  }
  const me = (token: string) => app.inject({ method: 'GET', url: '/api/users/me', headers: bearer(token) })
  function expectOAuthError(response: LightMyRequestResponse, error: string): void {
    expect(response.statusCode, response.body).toBe(400)
    expect(response.json()).toMatchObject({ success: false, error })
  }

  beforeAll(async () => {
    ctx = await createTestContext(dialect)
    app = (await ctx.build({ env: { RATE_LIMIT_ENABLED: 'false' } })).app
    admin = await signUp(app, 'resource_admin')
    user = await signUp(app, 'resource_user')
  })
  afterAll(() => ctx.close())

  it.each([
    ['not a URI', 'mcp-server'],
    ['a relative reference', '/mcp'],
    ['a fragment', `${MCP_RESOURCE}#part`],
  ])('/auth with %s as resource → 302 invalid_target to the client', async (_, resource) => {
    const response = await app.inject({ method: 'GET', url: authorizeUrl(authorizeParams(pkce().challenge, { resource, state: 'rs' })) })
    expect(response.statusCode, response.body).toBe(302)
    const location = new URL(String(response.headers.location))
    expect(`${location.origin}${location.pathname}`).toBe(REDIRECT_URI)
    expect(location.searchParams.get('error')).toBe('invalid_target')
    expect(location.searchParams.get('state')).toBe('rs')
    expect(location.searchParams.get('iss')).toBe(ISSUER)
  })

  it("a token for a satellite's MCP server: its audience is that resource, and this service's API refuses it (no passthrough)", async () => {
    const tokens = await issued(MCP_RESOURCE)
    expect(await introspect(tokens.access_token)).toMatchObject({ active: true, aud: MCP_RESOURCE, scope: 'user:read offline_access' })
    const refused = await me(tokens.access_token)
    expect(refused.statusCode, refused.body).toBe(401)
    expect(refused.headers['www-authenticate']).toMatch(/^Bearer error="invalid_token"/)
  })

  it.each([
    ['none', undefined],
    ['PUBLIC_URL', ISSUER],
    ['PUBLIC_URL/api', `${ISSUER}/api`],
    ['PUBLIC_URL/ (trailing slash)', `${ISSUER}/`],
  ])('resource %s: a token for this service, accepted on its routes', async (_, resource) => {
    const tokens = await issued(resource)
    expect((await me(tokens.access_token)).statusCode).toBe(200)
    expect((await introspect(tokens.access_token)).aud).toBe(resource ?? ISSUER)
  })

  it('the token endpoint: the same resource is fine, another one is invalid_target and spends nothing', async () => {
    const authorized = await authorizeAndApprove(app, user.cookie, { scope: 'user:read', resource: MCP_RESOURCE })
    const exchange = (resource: string) => tokenRequest(app, {
      grant_type: 'authorization_code', code: authorized.code, redirect_uri: REDIRECT_URI, client_id: 'service-gateway-cli', code_verifier: authorized.verifier, resource,
    })
    expectOAuthError(await exchange('https://other.example.com/mcp'), 'invalid_target')
    expectOAuthError(await exchange(ISSUER), 'invalid_target')
    expectOAuthError(await exchange('not a uri'), 'invalid_target')
    const ok = await exchange(`${MCP_RESOURCE}/`)
    expect(ok.statusCode, ok.body).toBe(200)
  })

  it('a grant without resource cannot be turned into a token for another resource', async () => {
    expectOAuthError(await tokensFor(undefined, MCP_RESOURCE), 'invalid_target')
    const kept = await tokensFor(undefined, ISSUER)
    expect(kept.statusCode, kept.body).toBe(200)
  })

  it('refresh keeps the resource: the new token has the same audience; another resource is invalid_target', async () => {
    const tokens = await issued(MCP_RESOURCE)
    expectOAuthError(await tokenRequest(app, {
      grant_type: 'refresh_token', refresh_token: tokens.refresh_token, client_id: 'service-gateway-cli', resource: ISSUER,
    }), 'invalid_target')
    const same = await tokenRequest(app, { grant_type: 'refresh_token', refresh_token: tokens.refresh_token, client_id: 'service-gateway-cli', resource: MCP_RESOURCE })
    expect(same.statusCode, same.body).toBe(200)
    expect((await introspect(same.json().access_token)).aud).toBe(MCP_RESOURCE)
    const implicit = await refresh(app, same.json().refresh_token)
    expect(implicit.statusCode, implicit.body).toBe(200)
    expect((await introspect(implicit.json().access_token)).aud).toBe(MCP_RESOURCE)
    expect((await me(implicit.json().access_token)).statusCode).toBe(401)
  })

  it('the code exchange without resource keeps the one of the authorization', async () => {
    const authorized = await authorizeAndApprove(app, user.cookie, { scope: 'user:read', resource: MCP_RESOURCE })
    const response = await exchangeCode(app, { code: authorized.code, verifier: authorized.verifier })
    expect(response.statusCode, response.body).toBe(200)
    expect((await introspect(response.json().access_token)).aud).toBe(MCP_RESOURCE)
  })
})
