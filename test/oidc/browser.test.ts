/**
 * OpenID Connect sign-in walked in a real headless Chromium (Debian's `chromium`, driven by
 * playwright-core) against a real issuer (oidc-provider on loopback): the sign-in page's "Sign in
 * with <display name>" link → the issuer's login form → back on the account page, signed in as
 * the new account; sign out; the same link again → back signed in to the same account (the
 * issuer remembers the person, so no form this time). No page of the service may report a
 * Content-Security-Policy violation.
 *
 * Chromium missing → the test fails under CI and is skipped with a message elsewhere.
 */
import type { BrowserContext, Page } from 'playwright-core'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { chromiumRequired, useChromium } from '../helpers/chromium.js'
import { openPage } from '../helpers/page-walk.js'
import { DIALECTS } from '../helpers/database.js'
import { registerFirstAdmin, startOidcHarness, type OidcHarness } from './harness.js'

describe.skipIf(!chromiumRequired)('OpenID Connect sign-in in headless Chromium', () => {
  const chromiumBrowser = useChromium('oidc/browser.test.ts')

  describe.each(DIALECTS)('on %s', (dialect) => {
    let h: OidcHarness
    let context: BrowserContext
    let page: Page
    const violations: string[] = []

    /** Clicks and waits until the browser has come back to the service's account page, through whatever the issuer shows. */
    async function signInWithButton(account: string): Promise<{ sawLoginForm: boolean }> {
      let sawLoginForm = false
      await Promise.all([page.waitForURL((url) => url.origin === h.issuer.issuer || url.pathname === '/api/auth/account'), page.getByRole('link', { name: 'Sign in with Acme SSO', exact: true }).click()])
      for (let step = 0; step < 5 && new URL(page.url()).origin === h.issuer.issuer; step++) {
        await page.waitForLoadState()
        if (await page.locator('input[name="login"]').count() > 0) {
          sawLoginForm = true
          await page.locator('input[name="login"]').fill(account)
          await page.locator('input[name="password"]').fill('any password')
        }
        const before = page.url()
        await Promise.all([page.waitForURL((url) => url.toString() !== before), page.locator('button[type="submit"]').first().click()])
      }
      await page.waitForURL((url) => url.origin === h.base && url.pathname === '/api/auth/account')
      return { sawLoginForm }
    }

    beforeAll(async () => {
      h = await startOidcHarness(dialect)
      await registerFirstAdmin(h.app)
      await h.app.services.settings.update([{ key: 'oidc.display_name', value: 'Acme SSO' }])
      h.issuer.accounts.set('sub-chromium-0001', { email: 'browser.person@example.test', email_verified: true, preferred_username: 'browser.person' })
      // Only our own pages' CSP reports: the issuer's pages are not ours to judge.
      ;({ context, page } = await openPage(chromiumBrowser(), violations, h.base))
      // The issuer's development pages import a web font; the tests reach loopback only.
      await context.route((url) => url.hostname !== '127.0.0.1', (route) => route.abort())
    }, 60_000)
    afterAll(async () => {
      await context?.close()
      await h?.close()
    })

    it('sign-in page → the issuer\'s form → the account page; sign out; the button again signs in to the same account', async () => {
      expect((await page.goto(`${h.base}/api/auth/sign-in`))?.status()).toBe(200)
      const first = await signInWithButton('sub-chromium-0001')
      expect(first.sawLoginForm).toBe(true)
      expect(await page.locator('h1').innerText()).toBe('Your account')
      expect(await page.locator('main').innerText()).toContain('Signed in as browser-person (browser.person@example.test)')
      const cookies = await context.cookies(h.base)
      expect(cookies.find((cookie) => cookie.name === 'oidc_state')).toBeUndefined()
      const session = cookies.find((cookie) => cookie.name === 'auth_session')
      expect(session?.httpOnly).toBe(true)
      const me = (await (await fetch(`${h.base}/api/users/me`, { headers: { cookie: `auth_session=${session!.value}` } })).json()) as { data: { id: string; auth_methods: string[] } }
      expect(me.data.auth_methods).toEqual(['oidc'])

      await Promise.all([page.waitForURL((url) => url.pathname === '/api/auth/sign-in'), page.getByRole('button', { name: 'Sign out', exact: true }).click()])
      expect(await page.locator('main').innerText()).toContain('You are signed out.')
      expect((await fetch(`${h.base}/api/users/me`, { headers: { cookie: `auth_session=${session!.value}` } })).status).toBe(401)

      const again = await signInWithButton('sub-chromium-0001')
      expect(again.sawLoginForm).toBe(false)
      expect(await page.locator('main').innerText()).toContain('Signed in as browser-person')
      const renewed = (await context.cookies(h.base)).find((cookie) => cookie.name === 'auth_session')
      expect(renewed?.value).not.toBe(session!.value)
      const meAgain = (await (await fetch(`${h.base}/api/users/me`, { headers: { cookie: `auth_session=${renewed!.value}` } })).json()) as { data: { id: string } }
      expect(meAgain.data.id).toBe(me.data.id)
      expect(violations).toEqual([])
    })
  })
})
