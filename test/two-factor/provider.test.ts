import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { DEFAULT_PASSWORD, sessionCookie } from '../helpers/accounts.js'
import { createTestContext, type TestContext } from '../helpers/app.js'
import { browser } from '../helpers/browser.js'
import { DIALECTS } from '../helpers/database.js'
import { providerSignIn, providerUser, startProviderLoginApp, whoAmI, type ProviderLoginApp } from '../helpers/fake-provider.js'
import { signUp, type Account } from '../helpers/teams.js'
import { enrol } from './helpers.js'

/**
 * Sign-in through the identity provider is not asked for a second factor (the provider owns its
 * own): an account with two-factor on gets its session straight from the provider's callback,
 * while its password sign-in still asks for the code. An unverified account that the provider's
 * verified owner claims loses its registrant's second factor with the rest of their credentials.
 */
describe.each(DIALECTS)('two-factor and provider sign-in on %s', (dialect) => {
  let ctx: TestContext
  let harness: ProviderLoginApp
  let admin: Account

  const signInAs = async (address: string) => {
    harness.provider.configure({ user: providerUser({ emails: [{ email: address, primary: true, verified: true, visibility: 'private' }] }) })
    return providerSignIn(browser(), harness)
  }
  const accountFacts = async (cookie: string) => (await harness.app.inject({ method: 'GET', url: '/api/users/me/account', headers: { cookie } })).json().data

  beforeAll(async () => {
    ctx = await createTestContext(dialect)
    harness = await startProviderLoginApp(ctx)
    admin = await signUp(harness.app, `prov_${dialect.slice(0, 2)}_admin`)
  })
  afterAll(async () => {
    await ctx.close()
    await harness.provider.close()
  })

  it('signs a verified account with two-factor in through the provider without a code; the password still asks for one', async () => {
    await enrol(harness.app, admin, Date.now())
    const flow = await signInAs(admin.email)
    expect(flow.callback?.status, flow.callback?.body).toBe(302)
    const { status, user } = await whoAmI(harness.base, flow.session!)
    expect([status, user?.id]).toEqual([200, admin.id])
    expect((await accountFacts(flow.session!)).two_factor_enabled).toBe(true)
    const login = await harness.app.inject({ method: 'POST', url: '/api/auth/email/login', payload: { login: admin.email, password: DEFAULT_PASSWORD } })
    expect(login.json().data, login.body).toEqual({ two_factor_required: true })
    expect(sessionCookie(login)).toBeUndefined()
  })

  it('ends an unverified registrant\'s second factor when the address\'s verified owner claims the account', async () => {
    const squatter = await signUp(harness.app, `prov_${dialect.slice(0, 2)}_squatter`)
    await enrol(harness.app, squatter, Date.now())
    const flow = await signInAs(squatter.email)
    expect(flow.callback?.status, flow.callback?.body).toBe(302)
    expect((await accountFacts(flow.session!)).two_factor_enabled).toBe(false)
  })
})
