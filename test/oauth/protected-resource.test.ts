import type { FastifyInstance, LightMyRequestResponse } from 'fastify'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createTestContext, type TestContext } from '../helpers/app.js'
import { DIALECTS } from '../helpers/database.js'
import { ALL_SCOPES, bearer, introspect, ISSUER, issueTokens } from '../helpers/oauth.js'
import { METRICS, SYSTEM_INFO } from '../helpers/satellites.js'
import { signUp, type Account } from '../helpers/teams.js'

const PRM_PATH = '/.well-known/oauth-protected-resource'
const RESOURCE_METADATA = `resource_metadata="${ISSUER}${PRM_PATH}"`
const MISSING = `Bearer ${RESOURCE_METADATA}`
const INVALID_TOKEN = `Bearer error="invalid_token", ${RESOURCE_METADATA}`

/** The exact RFC 9728 document of `resource` under the authorization server `base`. */
const document = (base: string, resource: string) => ({
  success: true,
  resource,
  authorization_servers: [base],
  scopes_supported: [...ALL_SCOPES],
  bearer_methods_supported: ['header'],
  resource_documentation: `${base}/documentation`,
})

/** The IANA "OAuth Token Endpoint Authentication Methods" registry (RFC 7591, RFC 8705, OpenID Connect). */
const REGISTERED_AUTH_METHODS = new Set([
  'none', 'client_secret_post', 'client_secret_basic', 'client_secret_jwt', 'private_key_jwt', 'tls_client_auth', 'self_signed_tls_client_auth',
])

/** RFC 9728 protected-resource metadata and the `resource_metadata` of bearer challenges (RFC 9728 §5.1). */
describe.each(DIALECTS)('OAuth protected resource on %s', (dialect) => {
  let ctx: TestContext
  let app: FastifyInstance
  let user: Account

  const get = (url: string, headers: Record<string, string> = {}) => app.inject({ method: 'GET', url, headers })

  function expectChallenge(response: LightMyRequestResponse, status: number, challenge: string) {
    expect(response.statusCode, response.body).toBe(status)
    expect(response.json()).toMatchObject({ success: false, code: status === 401 ? 'UNAUTHORIZED' : 'FORBIDDEN' })
    expect(response.headers['www-authenticate']).toBe(challenge)
  }

  beforeAll(async () => {
    ctx = await createTestContext(dialect)
    app = (await ctx.build({ env: { RATE_LIMIT_ENABLED: 'false' } })).app
    user = await signUp(app, 'prm_user')
  })
  afterAll(() => ctx.close())

  describe('metadata documents', () => {
    it(`GET ${PRM_PATH}: the service as resource, this service as its authorization server`, async () => {
      const response = await get(PRM_PATH)
      expect(response.statusCode).toBe(200)
      expect(response.headers['content-type']).toBe('application/json; charset=utf-8')
      expect(response.json()).toEqual(document(ISSUER, ISSUER))
    })

    it(`GET ${PRM_PATH}/api: the API as resource (the well-known path before the resource's path)`, async () => {
      const response = await get(`${PRM_PATH}/api`)
      expect(response.statusCode).toBe(200)
      expect(response.headers['content-type']).toBe('application/json; charset=utf-8')
      expect(response.json()).toEqual(document(ISSUER, `${ISSUER}/api`))
    })

    it('needs no credential and ignores an invalid one', async () => {
      for (const headers of [bearer('not-a-token'), { cookie: 'auth_session=forged' }]) {
        const response = await get(PRM_PATH, headers)
        expect(response.statusCode).toBe(200)
        expect(response.json()).toEqual(document(ISSUER, ISSUER))
      }
    })

    it('the authorization server it names publishes RFC 8414 metadata with the same issuer and scopes', async () => {
      const [issuer] = (await get(PRM_PATH)).json().authorization_servers
      const metadata = (await get(`${new URL(issuer).pathname.replace(/\/$/, '')}/.well-known/oauth-authorization-server`)).json()
      expect(metadata.issuer).toBe(issuer)
      expect([...metadata.scopes_supported].sort()).toEqual([...ALL_SCOPES].sort())
    })

    it('the authorization server metadata advertises registered client authentication methods only', async () => {
      const response = await get('/.well-known/oauth-authorization-server')
      expect(response.statusCode).toBe(200)
      const metadata = response.json()
      expect(metadata).not.toHaveProperty('introspection_endpoint_auth_methods_supported')
      const methods = Object.entries(metadata).filter(([name]) => name.endsWith('_auth_methods_supported'))
      expect(methods.map(([name]) => name).sort()).toEqual(['revocation_endpoint_auth_methods_supported', 'token_endpoint_auth_methods_supported'])
      for (const [name, values] of methods) {
        for (const value of values as string[]) expect(REGISTERED_AUTH_METHODS.has(value), `${name}: ${value}`).toBe(true)
      }
    })

    it('no OpenID Connect discovery document, and no metadata for other paths: 404 in the envelope', async () => {
      for (const url of ['/.well-known/openid-configuration', `${PRM_PATH}/api/users`, `${PRM_PATH}/other`, '/api/.well-known/oauth-protected-resource']) {
        const response = await get(url)
        expect(response.statusCode, url).toBe(404)
        expect(response.json(), url).toMatchObject({ success: false, code: 'NOT_FOUND' })
      }
    })
  })

  describe('WWW-Authenticate of the OAuth routes names the metadata', () => {
    it('a dual route without any credential: 401 Bearer resource_metadata', async () => {
      expectChallenge(await get('/api/users/me'), 401, MISSING)
    })

    it('a dual route with an unknown token, a malformed Authorization header or a satellite key: 401 invalid_token', async () => {
      expectChallenge(await get('/api/users/me', bearer('unknown-token')), 401, INVALID_TOKEN)
      expectChallenge(await get('/api/users/me', { ...bearer('unknown-token'), cookie: user.cookie }), 401, INVALID_TOKEN)
      expectChallenge(await get('/api/users/me', { authorization: 'Basic dXNlcjpwYXNz' }), 401, INVALID_TOKEN)
      expectChallenge(await get('/api/users/me', bearer('service_satkey_unknown')), 401, INVALID_TOKEN)
    })

    it('a dual route with a valid token lacking its scope: 403 insufficient_scope naming the scope and the metadata', async () => {
      const { access_token: token } = await issueTokens(app, user.cookie, 'teams:read')
      expectChallenge(await get('/api/users/me', bearer(token)), 403, `Bearer error="insufficient_scope", scope="user:read", ${RESOURCE_METADATA}`)
      expect((await get('/api/users/me/teams', bearer(token))).statusCode).toBe(200)
    })

    it('the bearer-only userinfo: no credential or only a session cookie → 401 Bearer resource_metadata; an unknown token → invalid_token', async () => {
      expectChallenge(await get('/api/oauth2/userinfo'), 401, MISSING)
      expectChallenge(await get('/api/oauth2/userinfo', { cookie: user.cookie }), 401, MISSING)
      expectChallenge(await get('/api/oauth2/userinfo', bearer('unknown-token')), 401, INVALID_TOKEN)
    })

    it('a session-only route sends no challenge', async () => {
      const response = await get('/api/satellites')
      expect(response.statusCode).toBe(401)
      expect(response.headers['www-authenticate']).toBeUndefined()
    })

    it('the URL in resource_metadata serves the service\'s document', async () => {
      const challenge = String((await get('/api/users/me')).headers['www-authenticate'])
      const url = new URL(/resource_metadata="([^"]+)"/.exec(challenge)![1]!)
      expect(url.origin).toBe(ISSUER)
      expect((await get(url.pathname)).json()).toEqual(document(ISSUER, ISSUER))
    })
  })

  describe('the satellite routes are not OAuth resources: their challenges stay plain', () => {
    const heartbeatUrl = '/api/satellites/sat-unknown/heartbeat'
    const beat = (headers: Record<string, string> = {}) =>
      app.inject({ method: 'POST', url: heartbeatUrl, headers, payload: { status: 'active', system_metrics: METRICS } })
    const register = (headers: Record<string, string> = {}) =>
      app.inject({ method: 'POST', url: '/api/satellites/register', headers, payload: { name: 'edge-prm', system_info: SYSTEM_INFO } })

    it('POST /api/satellites/:id/heartbeat: none → Bearer; an unknown key or an OAuth access token → Bearer error="invalid_token"', async () => {
      expectChallenge(await beat(), 401, 'Bearer')
      expectChallenge(await beat(bearer('service_satkey_unknown')), 401, 'Bearer error="invalid_token"')
      const { access_token: token } = await issueTokens(app, user.cookie)
      expectChallenge(await beat(bearer(token)), 401, 'Bearer error="invalid_token"')
    })

    it('POST /api/satellites/register: none or an OAuth access token → Bearer', async () => {
      expectChallenge(await register(), 401, 'Bearer')
      expectChallenge(await register(bearer('unknown-token')), 401, 'Bearer')
    })

    it('POST /api/oauth2/introspect (a satellite key or an admin session): none → Bearer; an unknown key → Bearer error="invalid_token"', async () => {
      expectChallenge(await introspect(app, 'some-token'), 401, 'Bearer')
      expectChallenge(await introspect(app, 'some-token', bearer('service_satkey_unknown')), 401, 'Bearer error="invalid_token"')
    })
  })

  describe('another PUBLIC_URL', () => {
    it('both documents and the challenge follow it', async () => {
      const base = 'https://gateway.example.com'
      const other = (await ctx.build({ env: { PUBLIC_URL: `${base}/`, RATE_LIMIT_ENABLED: 'false' } })).app
      expect((await other.inject({ method: 'GET', url: PRM_PATH })).json()).toEqual(document(base, base))
      expect((await other.inject({ method: 'GET', url: `${PRM_PATH}/api` })).json()).toEqual(document(base, `${base}/api`))
      const refused = await other.inject({ method: 'GET', url: '/api/users/me' })
      expect(refused.statusCode).toBe(401)
      expect(refused.headers['www-authenticate']).toBe(`Bearer resource_metadata="${base}${PRM_PATH}"`)
    })

    it('a non-ASCII host: the challenge carries it as an ASCII URL (a header holds no other)', async () => {
      const other = (await ctx.build({ env: { PUBLIC_URL: 'https://bücher.example', RATE_LIMIT_ENABLED: 'false' } })).app
      const refused = await other.inject({ method: 'GET', url: '/api/users/me' })
      expect(refused.statusCode).toBe(401)
      expect(refused.headers['www-authenticate']).toBe(`Bearer resource_metadata="https://xn--bcher-kva.example${PRM_PATH}"`)
    })
  })
})
