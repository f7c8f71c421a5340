import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { register } from '../helpers/accounts.js'
import { createTestContext, type TestContext } from '../helpers/app.js'
import { browser } from '../helpers/browser.js'
import { manualClock } from '../helpers/clock.js'
import { DIALECTS } from '../helpers/database.js'
import { providerSettings, startFakeProvider, type FakeProvider } from '../helpers/fake-provider.js'

/** A sign-in must come back within 10 minutes; the server, not only the cookie, says so. */
describe.each(DIALECTS)('provider sign-in state lifetime on %s', (dialect) => {
  let ctx: TestContext
  let provider: FakeProvider
  const clock = manualClock(Date.now())
  let base: string

  beforeAll(async () => {
    ctx = await createTestContext(dialect)
    provider = await startFakeProvider()
    const { app } = await ctx.build({ clock, env: { PROVIDER_OAUTH_URL: provider.url, PROVIDER_API_URL: provider.url, RATE_LIMIT_ENABLED: 'false' } })
    base = await app.listen({ port: 0, host: '127.0.0.1' })
    await app.services.settings.update(providerSettings(base))
    expect((await register(app, { username: 'first_admin', email: 'first.admin@example.com' })).statusCode).toBe(201)
  })
  afterAll(async () => {
    await ctx.close()
    await provider.close()
  })

  /** Login and the provider's authorize step; answers the callback URL the provider sent back. */
  async function startSignIn(b: ReturnType<typeof browser>): Promise<string> {
    const login = await b.get(`${base}/api/auth/provider/login`)
    expect(login.status).toBe(302)
    const authorize = await b.get(login.location!)
    expect(authorize.status).toBe(302)
    return authorize.location!
  }

  it('a callback within 10 minutes signs in', async () => {
    const b = browser()
    const callback = await startSignIn(b)
    clock.advance(9 * 60 * 1000)
    expect((await b.get(callback)).status).toBe(302)
  })

  it('a callback after 10 minutes is refused even with the cookie still presented', async () => {
    const b = browser()
    const callback = await startSignIn(b)
    const cookie = b.cookieHeader(callback)
    clock.advance(10 * 60 * 1000 + 1000)
    const late = await b.get(callback, { cookie })
    expect(late.status).toBe(400)
    expect(JSON.parse(late.body).code).toBe('PROVIDER_STATE_MISMATCH')
  })
})
