import type { FastifyInstance } from 'fastify'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createTestContext, type TestContext } from '../helpers/app.js'
import { DIALECTS } from '../helpers/database.js'
import { CLI_CLIENT_ID, introspect, ISSUER, issueTokens, type TokenSet } from '../helpers/oauth.js'
import { createToken, pair, type Paired } from '../helpers/satellites.js'
import { client, signUp, type Account, type Call } from '../helpers/teams.js'

const OWN_URL = 'https://sat-own.example.com'
const OTHER_URL = 'https://sat-other.example.com'

/**
 * A satellite learns by introspection only of the tokens it may admit: live access tokens for
 * its own resource. Every other token — another satellite's, the API's, a refresh token — is
 * `{active: false}` to it, with no word about whose it is; a global admin's session still sees
 * what each token is.
 */
describe.each(DIALECTS)('introspection by satellites on %s', (dialect) => {
  let ctx: TestContext
  let app: FastifyInstance
  let call: Call
  let admin: Account
  let user: Account
  let own: Paired
  let other: Paired
  let urlless: Paired
  let forOwn: TokenSet
  let forOther: TokenSet
  let forApi: TokenSet

  const key = (satellite: Paired) => ({ authorization: `Bearer ${satellite.apiKey}` })
  const asSatellite = async (satellite: Paired, token: string) => {
    const response = await introspect(app, token, key(satellite))
    expect(response.statusCode, response.body).toBe(200)
    return response.json()
  }
  const asAdmin = async (token: string) => {
    const response = await introspect(app, token, { cookie: admin.cookie })
    expect(response.statusCode, response.body).toBe(200)
    return response.json()
  }
  const INACTIVE = { success: true, active: false }

  beforeAll(async () => {
    ctx = await createTestContext(dialect)
    app = (await ctx.build({ env: { RATE_LIMIT_ENABLED: 'false' } })).app
    call = client(app)
    admin = await signUp(app, `isat_admin_${dialect.slice(0, 2)}`)
    user = await signUp(app, `isat_user_${dialect.slice(0, 2)}`)
    own = await pair(app, (await createToken(call, admin)).token, `isat-own-${dialect}`, { satellite_url: OWN_URL })
    other = await pair(app, (await createToken(call, admin)).token, `isat-other-${dialect}`, { satellite_url: `${OTHER_URL}/` })
    urlless = await pair(app, (await createToken(call, admin)).token, `isat-nourl-${dialect}`)
    forOwn = await issueTokens(app, user.cookie, 'mcp:read offline_access', { resource: `${OWN_URL}/mcp` })
    forOther = await issueTokens(app, user.cookie, 'mcp:read offline_access', { resource: `${OTHER_URL}/mcp` })
    forApi = await issueTokens(app, user.cookie, 'mcp:read user:read offline_access')
  })
  afterAll(() => ctx.close())

  it('an access token for its own resource: active, with the claims it checks and token_type Bearer', async () => {
    const body = await asSatellite(own, forOwn.access_token)
    expect(body).toMatchObject({
      success: true, active: true, token_type: 'Bearer', aud: `${OWN_URL}/mcp`, scope: 'mcp:read offline_access',
      sub: user.id, username: user.username, client_id: CLI_CLIENT_ID, team_id: expect.any(String),
    })
    expect(body.exp - body.iat).toBe(3600)
    // The other satellite hears nothing of it; a trailing slash on its URL makes no difference.
    expect(await asSatellite(other, forOwn.access_token)).toEqual(INACTIVE)
    expect(await asSatellite(other, forOther.access_token)).toMatchObject({ active: true, aud: `${OTHER_URL}/mcp` })
  })

  it("an access token for another satellite's resource: {active: false} and nothing else", async () => {
    expect(await asSatellite(own, forOther.access_token)).toEqual(INACTIVE)
  })

  it('a refresh token, even one of a grant for its own resource: {active: false}', async () => {
    expect(await asSatellite(own, forOwn.refresh_token!)).toEqual(INACTIVE)
    expect(await asSatellite(own, forApi.refresh_token!)).toEqual(INACTIVE)
  })

  it("an access token for the backend's API (no resource): inactive", async () => {
    expect(await asSatellite(own, forApi.access_token)).toEqual(INACTIVE)
    const explicit = await issueTokens(app, user.cookie, 'user:read', { resource: `${ISSUER}/api` })
    expect(await asSatellite(own, explicit.access_token)).toEqual(INACTIVE)
  })

  it('a satellite that registered no URL learns of no token at all', async () => {
    for (const token of [forOwn.access_token, forOther.access_token, forApi.access_token, forOwn.refresh_token!]) {
      expect(await asSatellite(urlless, token)).toEqual(INACTIVE)
    }
  })

  it("a global admin's session still sees every token as it is", async () => {
    expect(await asAdmin(forOther.access_token)).toMatchObject({ active: true, token_type: 'Bearer', aud: `${OTHER_URL}/mcp`, sub: user.id })
    expect(await asAdmin(forOwn.refresh_token!)).toMatchObject({ active: true, token_type: 'refresh_token', sub: user.id, client_id: CLI_CLIENT_ID })
    expect(await asAdmin(forApi.access_token)).toMatchObject({ active: true, token_type: 'Bearer', aud: ISSUER, sub: user.id })
  })
})
