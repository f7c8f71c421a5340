import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest'
import { register } from '../helpers/accounts.js'
import { createTestContext, type TestContext } from '../helpers/app.js'
import { browser } from '../helpers/browser.js'
import { DIALECTS } from '../helpers/database.js'
import {
  providerSignIn, providerUser, startProviderLoginApp, userRows, whoAmI, type ProviderEmail, type ProviderLoginApp, type SignIn,
} from '../helpers/fake-provider.js'

const email = (address: string, primary: boolean, verified: boolean): ProviderEmail => ({ email: address, primary, verified, visibility: primary ? 'private' : null })

describe.each(DIALECTS)('provider login: which email on %s', (dialect) => {
  let ctx: TestContext
  let harness: ProviderLoginApp
  let seq = 0
  const unique = (name: string) => `${name}.${(seq += 1)}.${dialect}@example.test`

  beforeAll(async () => {
    ctx = await createTestContext(dialect)
    harness = await startProviderLoginApp(ctx)
    expect((await register(harness.app, { username: 'first_admin', email: 'first.admin@example.com' })).statusCode).toBe(201)
  })
  afterAll(async () => {
    await ctx.close()
    await harness.provider.close()
  })
  beforeEach(() => harness.provider.configure({ grantedScope: 'user:email', emailsStatus: 200 }))

  async function signInWith(emails: ProviderEmail[], publicEmail: string | null = null): Promise<SignIn> {
    harness.provider.configure({ user: providerUser({ emails, email: publicEmail }) })
    return providerSignIn(browser(), harness)
  }

  async function expectSignedInAs(flow: SignIn, address: string): Promise<void> {
    expect(flow.callback?.status, flow.callback?.body).toBe(302)
    expect(flow.session).toBeDefined()
    const { status, user } = await whoAmI(harness.base, flow.session!)
    expect(status).toBe(200)
    expect(user).toMatchObject({ email: address, email_verified: true })
  }

  async function expectNoEmail(flow: SignIn, usersBefore: number): Promise<void> {
    expect(flow.callback?.status, flow.callback?.body).toBe(400)
    expect(JSON.parse(flow.callback!.body)).toMatchObject({ success: false, code: 'PROVIDER_EMAIL_NOT_AVAILABLE', error: expect.any(String) })
    expect(flow.session).toBeUndefined()
    expect((await userRows(harness.app)).length).toBe(usersBefore)
  }

  it('picks the primary verified email, not an earlier verified one nor the public one', async () => {
    const primary = unique('primary')
    const flow = await signInWith([email(unique('other'), false, true), email(primary, true, true), email(unique('third'), false, true)], unique('public'))
    await expectSignedInAs(flow, primary)
  })

  it('stores the chosen email lowercased', async () => {
    const primary = unique('Mixed.Case').toUpperCase()
    await expectSignedInAs(await signInWith([email(primary, true, true)]), primary.toLowerCase())
  })

  it('falls back to a verified email when the primary one is not verified', async () => {
    const verified = unique('verified')
    const flow = await signInWith([email(unique('primary-unverified'), true, false), email(unique('unverified'), false, false), email(verified, false, true)])
    await expectSignedInAs(flow, verified)
  })

  it('400 PROVIDER_EMAIL_NOT_AVAILABLE when no email is verified, though /user shows a public one', async () => {
    const before = (await userRows(harness.app)).length
    await expectNoEmail(await signInWith([email(unique('a'), true, false), email(unique('b'), false, false)], unique('public')), before)
  })

  it('400 PROVIDER_EMAIL_NOT_AVAILABLE when the provider lists no email at all', async () => {
    const before = (await userRows(harness.app)).length
    await expectNoEmail(await signInWith([], unique('public')), before)
  })

  it.each(['read:user', '', 'user:follow,read:user'])('400 PROVIDER_EMAIL_NOT_AVAILABLE when the granted scope %j lacks user:email, though /user/emails answers', async (grantedScope) => {
    harness.provider.configure({ grantedScope })
    const before = (await userRows(harness.app)).length
    await expectNoEmail(await signInWith([email(unique('fine'), true, true)]), before)
  })

  it('accepts user:email among other granted scopes, comma-separated as GitHub reports them', async () => {
    harness.provider.configure({ grantedScope: 'read:user,user:email' })
    const address = unique('comma')
    await expectSignedInAs(await signInWith([email(address, true, true)]), address)
  })

  it.each([404, 403] as const)('400 PROVIDER_EMAIL_NOT_AVAILABLE when /user/emails answers %i', async (status) => {
    harness.provider.configure({ emailsStatus: status })
    const before = (await userRows(harness.app)).length
    await expectNoEmail(await signInWith([email(unique('hidden'), true, true)]), before)
  })
})
