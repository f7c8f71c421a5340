import { sql } from 'drizzle-orm'
import type { FastifyInstance } from 'fastify'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createTestContext, type TestContext } from '../helpers/app.js'
import { DIALECTS } from '../helpers/database.js'
import { rawRows } from '../helpers/sql.js'
import { client, ROOMY_LIMITS, signUp, type Account, type Call } from '../helpers/teams.js'

/**
 * The identity provider's client id and secret are OAuth client credentials (RFC 6749, Appendix A:
 * visible ASCII and spaces). Anything else is refused on write with 400 naming the key; a value
 * stored past the rule reads as unset, so starting a provider sign-in never answers 500.
 */
const REFUSED: Array<[string, string]> = [
  ['a letter with an accent', 'Iv1.é0123'],
  ['a typographic ellipsis', 'Iv1…'],
  ['a TAB', 'Iv1.\tabc'],
  ['a newline', 'Iv1.abc\n'],
  ['a DEL', 'Iv1.\u007f'],
]

describe.each(DIALECTS)('provider client credentials on %s', (dialect) => {
  let ctx: TestContext
  let app: FastifyInstance
  let call: Call
  let admin: Account

  beforeAll(async () => {
    ctx = await createTestContext(dialect)
    app = (await ctx.build({ limits: ROOMY_LIMITS })).app
    call = client(app)
    admin = await signUp(app, 'provider_admin')
    for (const [key, value] of [['provider.oauth.enabled', true], ['provider.oauth.client_id', 'Iv1.good-id'], ['provider.oauth.client_secret', 'good secret 0123']] as const) {
      expect((await call('PUT', `/api/settings/${key}`, admin, { value })).statusCode).toBe(200)
    }
  })
  afterAll(() => ctx.close())

  for (const key of ['provider.oauth.client_id', 'provider.oauth.client_secret']) {
    it.each(REFUSED)(`${key}: %s is refused with 400 naming the key, and the value stays`, async (_name, value) => {
      const response = await call('PUT', `/api/settings/${key}`, admin, { value })
      expect(response.statusCode).toBe(400)
      expect(response.json()).toMatchObject({ success: false, code: 'VALIDATION_ERROR' })
      expect(response.body).toContain(key)
      const stored = (await call('GET', `/api/settings/${key}`, admin)).json().data.setting
      if (key.endsWith('client_id')) expect(stored.value).toBe('Iv1.good-id')
      else expect(stored).toMatchObject({ value: null, is_set: true, readable: true })
    })
  }

  it('the same values are refused in a bulk change, which writes nothing', async () => {
    const response = await call('PUT', '/api/settings', admin, { settings: [{ key: 'team.member_limit', value: 42 }, { key: 'provider.oauth.client_id', value: 'Iv1.é' }] })
    expect(response.statusCode).toBe(400)
    expect((await call('GET', '/api/settings/team.member_limit', admin)).json().data.setting.value).not.toBe(42)
  })

  it('starting a provider sign-in with a client id stored past the rule is a 4xx, never a 500', async () => {
    expect((await call('GET', '/api/auth/provider/login')).statusCode).toBe(302)
    await rawRows(app.services.database, sql`UPDATE settings SET value = ${JSON.stringify('Iv1.é…')} WHERE key = 'provider.oauth.client_id'`)
    const later = (await ctx.build({ limits: ROOMY_LIMITS })).app
    const response = await later.inject({ method: 'GET', url: '/api/auth/provider/login' })
    expect(response.statusCode).toBeLessThan(500)
    expect(response.json()).toMatchObject({ success: false, code: 'PROVIDER_OAUTH_DISABLED' })
  })
})
