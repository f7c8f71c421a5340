/**
 * The personal access tokens page in a real headless Chromium (Debian's `chromium`, driven by
 * playwright-core): sign in on the sign-in page, follow the account page's link, create a token
 * with the form, read it off the page (shown once), use it from the test with fetch, delete it
 * with its button, and come back: the value is on no later page. PUBLIC_URL says `localhost` while
 * the browser uses 127.0.0.1, so the forms' Origin is a loopback alias, as in the other browser
 * tests. No page may report a Content-Security-Policy violation.
 *
 * Chromium missing → the test fails under CI and is skipped with a message elsewhere.
 */
import type { FastifyInstance } from 'fastify'
import type { BrowserContext, Page } from 'playwright-core'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createTestContext, type TestContext } from '../helpers/app.js'
import { chromiumRequired, useChromium } from '../helpers/chromium.js'
import { openPage, pageSteps } from '../helpers/page-walk.js'
import { DIALECTS } from '../helpers/database.js'
import { freePort } from '../helpers/oauth-e2e.js'
import { TOKEN_SHAPE } from './helpers.js'

const USERNAME = 'tokens_walker'
const PASSWORD = 'walker password 1'

describe.skipIf(!chromiumRequired)('the personal access tokens page in headless Chromium', () => {
  const chromiumBrowser = useChromium('personal-tokens/page-browser.test.ts')

  describe.each(DIALECTS)('on %s', (dialect) => {
    let ctx: TestContext
    let app: FastifyInstance
    let base: string
    let context: BrowserContext
    let page: Page
    const violations: string[] = []

    const { follow, signIn, heading } = pageSteps(() => page)
    const api = (path: string, token: string) => fetch(`${base}${path}`, { headers: { authorization: `Bearer ${token}` } })

    beforeAll(async () => {
      ctx = await createTestContext(dialect)
      const port = await freePort()
      base = `http://127.0.0.1:${port}`
      ;({ app } = await ctx.build({ env: { PUBLIC_URL: `http://localhost:${port}`, RATE_LIMIT_ENABLED: 'false' } }))
      await app.listen({ host: '127.0.0.1', port })
      const registered = await fetch(`${base}/api/auth/email/register`, {
        method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ username: USERNAME, email: `${USERNAME}@example.test`, password: PASSWORD }),
      })
      expect(registered.status).toBe(201)
      ;({ context, page } = await openPage(chromiumBrowser(), violations))
    }, 60_000)
    afterAll(async () => {
      await context?.close()
      await ctx?.close()
    })

    it('sign in, create a token (shown once), use it, delete it on the page; a later visit never shows it', async () => {
      expect((await page.goto(`${base}/api/auth/sign-in`))?.status()).toBe(200)
      expect(await signIn(USERNAME, PASSWORD)).toBe(200)
      expect(await heading()).toBe('Your account')

      expect(await follow(() => page.getByRole('link', { name: 'Personal access tokens', exact: true }).click())).toBe(200)
      expect(await page.locator('h1').innerText()).toBe('Personal access tokens')
      expect(await page.getByText('You have no personal access tokens.').count()).toBe(1)

      await page.getByLabel('Name', { exact: true }).fill('nightly build')
      await page.getByLabel(/^user:read/).check()
      await page.getByLabel(/^teams:read/).check()
      await page.getByLabel('Team', { exact: true }).selectOption({ label: USERNAME })
      await page.getByLabel(/^Expires in/).fill('7')
      expect(await follow(() => page.getByRole('button', { name: 'Create token', exact: true }).click())).toBe(201)
      const token = (await page.locator('#new-token').innerText()).trim()
      expect(token).toMatch(TOKEN_SHAPE)
      expect(await page.locator('li', { hasText: 'nightly build' }).innerText()).toContain('user:read, teams:read')

      const me = await api('/api/users/me', token)
      expect(me.status).toBe(200)
      expect(((await me.json()) as { data: { username: string } }).data.username).toBe(USERNAME)
      // Bound to the default team, with the scopes checked: no account:read.
      expect((await api('/api/users/me/account', token)).status).toBe(403)

      // A returning visit lists the token, without its value.
      expect((await page.goto(`${base}/api/auth/account/tokens`))?.status()).toBe(200)
      expect(await page.locator('li', { hasText: 'nightly build' }).count()).toBe(1)
      expect(await page.content()).not.toContain(token)
      expect(await page.locator('#new-token').count()).toBe(0)

      expect(await follow(() => page.getByRole('button', { name: 'Delete nightly build', exact: true }).click())).toBe(200)
      expect(await page.getByText('The token is deleted: it no longer works.').count()).toBe(1)
      expect(await page.getByText('You have no personal access tokens.').count()).toBe(1)
      expect((await api('/api/users/me', token)).status).toBe(401)

      expect((await page.goto(`${base}/api/auth/account/tokens`))?.status()).toBe(200)
      expect(await page.content()).not.toContain(token)
      expect(violations).toEqual([])
    })
  })
})
