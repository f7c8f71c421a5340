import type { FastifyInstance } from 'fastify'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createTestContext, type TestContext } from '../helpers/app.js'
import { DIALECTS } from '../helpers/database.js'
import { getWithBearer, introspect, issueTokens } from '../helpers/oauth.js'
import { createToken, pair } from '../helpers/satellites.js'
import { client, signUp, type Account } from '../helpers/teams.js'

const SATELLITE_URL = 'https://off-sat.example.com'

/**
 * With `global.enable_login` off, a non-admin's bearer token is refused on the API, so
 * introspection must not vouch for it to satellites either: `{active: false}`. A global admin's
 * token stays active, as the admin's credentials keep working everywhere else.
 */
describe.each(DIALECTS)('introspection with login switched off on %s', (dialect) => {
  let ctx: TestContext
  let app: FastifyInstance
  let admin: Account
  let user: Account
  let satelliteKey: Record<string, string>

  const setLogin = (value: boolean) => app.services.settings.update([{ key: 'global.enable_login', value }])
  const inspect = async (token: string) => {
    const response = await introspect(app, token, satelliteKey)
    expect(response.statusCode, response.body).toBe(200)
    return response.json()
  }

  beforeAll(async () => {
    ctx = await createTestContext(dialect)
    app = (await ctx.build({ env: { RATE_LIMIT_ENABLED: 'false' } })).app
    admin = await signUp(app, `off_admin_${dialect.slice(0, 2)}`)
    user = await signUp(app, `off_user_${dialect.slice(0, 2)}`)
    const paired = await pair(app, (await createToken(client(app), admin)).token, `off-sat-${dialect}`, { satellite_url: SATELLITE_URL })
    satelliteKey = { authorization: `Bearer ${paired.apiKey}` }
  })
  afterAll(async () => {
    await setLogin(true)
    await ctx.close()
  })

  it('a non-admin token is inactive while login is off and active again once it is back on; an admin token stays active', async () => {
    // Tokens for the satellite's own resource: the only ones its introspection answers active.
    const resource = `${SATELLITE_URL}/mcp`
    const userTokens = await issueTokens(app, user.cookie, 'mcp:read offline_access', { resource })
    const adminTokens = await issueTokens(app, admin.cookie, 'mcp:read offline_access', { resource })
    const apiToken = (await issueTokens(app, user.cookie, 'user:read')).access_token
    expect(await inspect(userTokens.access_token)).toMatchObject({ active: true, sub: user.id })

    await setLogin(false)
    try {
      // The API refuses the user's bearer token; introspection agrees.
      expect((await getWithBearer(app, '/api/users/me', apiToken)).statusCode).toBe(403)
      expect(await inspect(userTokens.access_token)).toEqual({ success: true, active: false })
      expect(await inspect(userTokens.refresh_token!)).toEqual({ success: true, active: false })
      expect(await inspect(adminTokens.access_token)).toMatchObject({ active: true, sub: admin.id })
    } finally {
      await setLogin(true)
    }
    expect(await inspect(userTokens.access_token)).toMatchObject({ active: true, sub: user.id })
  })
})
