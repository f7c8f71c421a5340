import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { DEFAULT_PASSWORD, login, register } from '../helpers/accounts.js'
import { createTestContext, type TestContext } from '../helpers/app.js'
import { browser, type Browser } from '../helpers/browser.js'
import { DIALECTS } from '../helpers/database.js'
import {
  describeFlow, providerSignIn, providerUser, startFakeProvider, startProviderLoginApp, userRows, whoAmI,
  type FakeProvider, type ProviderLoginApp, type ProviderUser, type SignIn,
} from '../helpers/fake-provider.js'

const USERNAME = /^[a-zA-Z0-9_-]{3,50}$/

describe.each(DIALECTS)('provider login: who signs in on %s', (dialect) => {
  let provider: FakeProvider
  beforeAll(async () => {
    provider = await startFakeProvider()
  })
  afterAll(() => provider.close())

  describe('before any user exists', () => {
    let ctx: TestContext
    let harness: ProviderLoginApp
    beforeAll(async () => {
      ctx = await createTestContext(dialect)
      harness = await startProviderLoginApp(ctx, provider)
    })
    afterAll(() => ctx.close())

    it('403 FIRST_USER_REQUIRES_EMAIL, no user, no session; once someone registered by email, the same person gets in', async () => {
      provider.configure({ user: providerUser({ login: 'early-bird' }) })
      const refused = await providerSignIn(browser(), harness)
      expect(refused.callback?.status, refused.callback?.body).toBe(403)
      expect(JSON.parse(refused.callback!.body)).toMatchObject({ success: false, code: 'FIRST_USER_REQUIRES_EMAIL', error: expect.any(String) })
      expect(refused.session).toBeUndefined()
      expect(await userRows(harness.app)).toEqual([])

      expect((await register(harness.app, { username: 'first_admin', email: 'first.admin@example.com' })).statusCode).toBe(201)
      const admitted = await providerSignIn(browser(), harness)
      expect(admitted.callback?.status).toBe(302)
      expect((await whoAmI(harness.base, admitted.session!)).user).toMatchObject({ role_id: 'global_user', auth_methods: ['provider'] })
    })
  })

  describe('once users exist', () => {
    let ctx: TestContext
    let harness: ProviderLoginApp
    let seq = 0
    const unique = (name: string) => `${name}${(seq += 1)}`

    beforeAll(async () => {
      ctx = await createTestContext(dialect)
      harness = await startProviderLoginApp(ctx, provider)
      expect((await register(harness.app, { username: 'first_admin', email: 'first.admin@example.com' })).statusCode).toBe(201)
    })
    afterAll(() => ctx.close())

    async function signInAs(user: ProviderUser, b: Browser = browser()): Promise<SignIn> {
      provider.configure({ user })
      const flow = await providerSignIn(b, harness)
      expect(flow.callback?.status, flow.callback?.body).toBe(302)
      expect(flow.session).toBeDefined()
      return flow
    }

    async function me(flow: SignIn) {
      const { status, user } = await whoAmI(harness.base, flow.session!)
      expect(status).toBe(200)
      return user!
    }

    describe('an existing email account with the same email', () => {
      it('is linked when its address was verified, in any case, without a duplicate; afterwards password and provider both sign in', async () => {
        const name = unique('linda')
        const registered = await register(harness.app, { username: name, email: `${name}.Link@Example.com` })
        expect(registered.statusCode).toBe(201)
        const id = registered.json().data.user.id
        // Only a verified address links (an unverified one is taken over: test/security/provider-link-pre-hijack.test.ts).
        const admin = await login(harness.app, 'first_admin', DEFAULT_PASSWORD)
        const verified = await harness.app.inject({ method: 'PUT', url: `/api/admin/users/${id}`, headers: { cookie: admin.cookie! }, payload: { email_verified: true } })
        expect(verified.statusCode).toBe(200)
        const before = (await userRows(harness.app)).length

        const person = providerUser({ login: `gh-${name}`, emails: [{ email: `${name.toUpperCase()}.link@EXAMPLE.com`, primary: true, verified: true, visibility: 'private' }] })
        const linked = await me(await signInAs(person))
        expect(linked).toMatchObject({ id, username: name, email: `${name}.link@example.com`, auth_methods: ['email', 'provider'] })
        expect((await userRows(harness.app)).length).toBe(before)

        const byPassword = await login(harness.app, `${name}.link@example.com`, DEFAULT_PASSWORD)
        expect(byPassword.response.statusCode).toBe(200)
        expect(byPassword.response.json().data.user).toMatchObject({ id, auth_methods: ['email', 'provider'] })
        expect((await me(await signInAs(person))).id).toBe(id)
        expect((await userRows(harness.app)).length).toBe(before)
      })
    })

    describe('a new provider account', () => {
      it('becomes a global_user with a verified email, a username from the login, a default team, no password', async () => {
        const person = providerUser({ login: unique('New-Octo') })
        const flow = await signInAs(person)
        const user = await me(flow)
        expect(user).toMatchObject({
          username: person.login,
          email: person.emails[0]!.email,
          role_id: 'global_user',
          email_verified: true,
          auth_methods: ['provider'],
        })
        const row = (await userRows(harness.app)).find((candidate) => candidate.id === user.id)!
        expect(row.passwordHash).toBeNull()

        const team = await fetch(`${harness.base}/api/teams/me/default`, { headers: { cookie: flow.session! } })
        expect(team.status).toBe(200)
        expect(((await team.json()) as { data: { team: Record<string, unknown> } }).data.team).toMatchObject({ owner_id: user.id, is_default: true, name: user.username })

        // No password was set, so no password opens the account.
        expect((await login(harness.app, person.emails[0]!.email, DEFAULT_PASSWORD)).response.statusCode).toBe(401)
      })

      it('gets a suffixed username when the login is taken, whatever its case', async () => {
        const taken = unique('takenname')
        expect((await register(harness.app, { username: taken, email: `${taken}@example.com` })).statusCode).toBe(201)
        const usernames = [taken]
        for (const login of [taken, taken.toUpperCase(), taken]) {
          const user = await me(await signInAs(providerUser({ login })))
          expect(user.username).toMatch(USERNAME)
          expect(user.username.toLowerCase().startsWith(taken)).toBe(true)
          expect(usernames.map((name) => name.toLowerCase())).not.toContain(user.username.toLowerCase())
          usernames.push(user.username)
        }
      })

      it.each(['a', 'Bad.Name!', 'ab', '-x-', 'dots.and.more.dots', 'ünïcödé', 'x'.repeat(60)])('turns the login %j into a valid, unique username', async (login) => {
        const first = await me(await signInAs(providerUser({ login })))
        const second = await me(await signInAs(providerUser({ login })))
        for (const user of [first, second]) expect(user.username).toMatch(USERNAME)
        expect(first.username.toLowerCase()).not.toBe(second.username.toLowerCase())
        expect(first.id).not.toBe(second.id)
      })
    })

    describe('a returning provider account', () => {
      it('signs into the same user after changing its email at the provider', async () => {
        const person = providerUser({ login: unique('mover') })
        const first = await me(await signInAs(person))
        const before = (await userRows(harness.app)).length
        const moved = { ...person, emails: [{ email: `${unique('moved')}@elsewhere.test`, primary: true, verified: true, visibility: null }] }
        const again = await me(await signInAs(moved))
        expect(again.id).toBe(first.id)
        expect((await userRows(harness.app)).length).toBe(before)
      })

      it('another provider account with the email of an already-linked account is refused (409), not re-linked', async () => {
        const person = providerUser({ login: unique('owner') })
        const first = await me(await signInAs(person))
        const impostor = providerUser({ login: unique('impostor'), emails: person.emails })
        provider.configure({ user: impostor })
        const refused = await providerSignIn(browser(), harness)
        expect(refused.callback?.status).toBe(409)
        expect(JSON.parse(refused.callback!.body).code).toBe('PROVIDER_ALREADY_LINKED')
        expect(refused.session).toBeUndefined()
        expect((await me(await signInAs(person))).id).toBe(first.id)
      })

      it('signs into the same user after changing its login at the provider', async () => {
        const person = providerUser({ login: unique('renamer') })
        const first = await me(await signInAs(person))
        expect((await me(await signInAs({ ...person, login: unique('renamed') }))).id).toBe(first.id)
      })
    })

    describe('concurrency', () => {
      it('5 concurrent first callbacks of one new provider account create exactly one user, and all five get a session', async () => {
        const person = providerUser({ login: unique('racer') })
        provider.configure({ user: person })
        const browsers = Array.from({ length: 5 }, () => browser())
        // Each browser starts its own sign-in (its own state, cookie and code)…
        const callbacks: string[] = []
        for (const b of browsers) {
          const start = await b.get(`${harness.base}/api/auth/provider/login`)
          callbacks.push((await b.get(start.location!)).location!)
        }
        // …and all five come back at once.
        const hops = await Promise.all(browsers.map((b, i) => b.get(callbacks[i]!)))
        const flows = hops.map((hop) => describeFlow([hop], harness.base, provider))
        for (const flow of flows) {
          expect(flow.callback?.status, flow.callback?.body).toBe(302)
          expect(flow.session).toBeDefined()
        }
        const rows = (await userRows(harness.app)).filter((row) => row.email === person.emails[0]!.email)
        expect(rows).toHaveLength(1)
        const ids = await Promise.all(flows.map(async (flow) => (await me(flow)).id))
        expect(new Set(ids)).toEqual(new Set([rows[0]!.id]))
      })
    })
  })
})
