import type { FastifyInstance } from 'fastify'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createTestContext, type TestContext } from '../helpers/app.js'
import { DIALECTS } from '../helpers/database.js'
import { getWithBearer, introspect, issueTokens } from '../helpers/oauth.js'
import { signUp, type Account } from '../helpers/teams.js'

const SATELLITE_KEY = { authorization: 'Bearer service_satkey_k' }

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

  const setLogin = (value: boolean) => app.services.settings.update([{ key: 'global.enable_login', value }])
  const inspect = async (token: string) => {
    const response = await introspect(app, token, SATELLITE_KEY)
    expect(response.statusCode, response.body).toBe(200)
    return response.json()
  }

  beforeAll(async () => {
    ctx = await createTestContext(dialect)
    app = (await ctx.build({
      env: { RATE_LIMIT_ENABLED: 'false' },
      credentials: { satelliteKey: async (secret) => (secret === 'k' ? { kind: 'satellite', satelliteId: 's1', teamId: null, disabled: false } : null) },
    })).app
    admin = await signUp(app, `off_admin_${dialect.slice(0, 2)}`)
    user = await signUp(app, `off_user_${dialect.slice(0, 2)}`)
  })
  afterAll(async () => {
    await setLogin(true)
    await ctx.close()
  })

  it('a non-admin token is inactive while login is off and active again once it is back on; an admin token stays active', async () => {
    const userTokens = await issueTokens(app, user.cookie, 'user:read offline_access')
    const adminTokens = await issueTokens(app, admin.cookie, 'user:read offline_access')
    expect(await inspect(userTokens.access_token)).toMatchObject({ active: true, sub: user.id })

    await setLogin(false)
    try {
      // The API refuses the user's bearer token; introspection agrees.
      expect((await getWithBearer(app, '/api/users/me', userTokens.access_token)).statusCode).toBe(403)
      expect(await inspect(userTokens.access_token)).toEqual({ success: true, active: false })
      expect(await inspect(userTokens.refresh_token!)).toEqual({ success: true, active: false })
      expect(await inspect(adminTokens.access_token)).toMatchObject({ active: true, sub: admin.id })
    } finally {
      await setLogin(true)
    }
    expect(await inspect(userTokens.access_token)).toMatchObject({ active: true, sub: user.id })
  })
})
