/**
 * Two-factor authentication walked in a real headless Chromium (Debian's `chromium`, driven by
 * playwright-core), the way a person without a frontend goes: sign in → account → the two-factor
 * page → set up → "scan" (the secret is read from the page, as an authenticator app would from the
 * QR code) → confirm a code → the recovery codes → sign out → sign in again as the returning user →
 * the second step's page → a code → the account page. The app runs on a manual clock, so each code
 * belongs to the step the test chooses. No page may report a Content-Security-Policy violation,
 * and the QR code image must load under the policy.
 *
 * Chromium missing → the test fails under CI and is skipped with a message elsewhere.
 */
import type { FastifyInstance } from 'fastify'
import type { BrowserContext, Page } from 'playwright-core'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createTestContext, type TestContext } from '../helpers/app.js'
import { chromiumRequired, useChromium } from '../helpers/chromium.js'
import { openPage, pageSteps } from '../helpers/page-walk.js'
import { manualClock, type ManualClock } from '../helpers/clock.js'
import { DIALECTS } from '../helpers/database.js'
import { freePort } from '../helpers/oauth-e2e.js'
import { codeAt, STEP_MS } from './helpers.js'

const USERNAME = 'otp_walker'
const EMAIL = 'otp_walker@example.test'
const PASSWORD = 'first password 1'

describe.skipIf(!chromiumRequired)('two-factor pages in headless Chromium', () => {
  const chromiumBrowser = useChromium('pages-browser.test.ts')

  describe.each(DIALECTS)('on %s', (dialect) => {
    let ctx: TestContext
    let app: FastifyInstance
    let clock: ManualClock
    let base: string
    let context: BrowserContext
    let page: Page
    const violations: string[] = []

    const steps = pageSteps(() => page)
    const { heading, clickLink, clickButton } = steps
    const signIn = () => steps.signIn(EMAIL, PASSWORD)

    beforeAll(async () => {
      ctx = await createTestContext(dialect)
      clock = manualClock()
      const port = await freePort()
      base = `http://127.0.0.1:${port}`
      ;({ app } = await ctx.build({ clock, env: { PUBLIC_URL: `http://localhost:${port}`, RATE_LIMIT_ENABLED: 'false' } }))
      await app.listen({ host: '127.0.0.1', port })
      const registered = await fetch(`${base}/api/auth/email/register`, {
        method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ username: USERNAME, email: EMAIL, password: PASSWORD }),
      })
      expect(registered.status).toBe(201)
      ;({ context, page } = await openPage(chromiumBrowser(), violations))
    }, 60_000)
    afterAll(async () => {
      await context?.close()
      await ctx?.close()
    })

    it('sign in → account → set up two-factor → recovery codes → sign out → sign in with a code', async () => {
      expect((await page.goto(`${base}/api/auth/sign-in`))?.status()).toBe(200)
      expect(await signIn()).toBe(200)
      expect(page.url()).toBe(`${base}/api/auth/account`)
      expect(await clickLink('Two-factor authentication')).toBe(200)
      expect(await heading()).toBe('Two-factor authentication')
      expect(await clickButton('Set up two-factor authentication')).toBe(200)
      expect(await heading()).toBe('Set up two-factor authentication')

      // The QR code is an image the page's policy lets load.
      const qr = page.getByRole('img', { name: 'QR code of the two-factor secret' })
      expect(await qr.evaluate((img) => (img as unknown as { complete: boolean; naturalWidth: number }).complete && (img as unknown as { naturalWidth: number }).naturalWidth > 0)).toBe(true)
      // "Scanning": the key as the page shows it, spaces removed, as a person types it into the app.
      const secret = (await page.locator('#secret').innerText()).replace(/\s/g, '')
      expect(secret).toMatch(/^[A-Z2-7]{32}$/)
      await page.getByLabel('The code the app shows now').fill(codeAt(secret, clock.now()))
      expect(await clickButton('Confirm and switch on')).toBe(200)
      expect(await heading()).toBe('Two-factor authentication is on')
      const codes = await page.locator('#recovery-codes li').allInnerTexts()
      expect(codes).toHaveLength(10)

      expect(await clickLink('Back to your account')).toBe(200)
      expect(await clickButton('Sign out')).toBe(200)
      expect(page.url()).toBe(`${base}/api/auth/sign-in?signed_out=1`)

      // The returning user: the password, then the second step.
      expect(await signIn()).toBe(200)
      expect(page.url()).toBe(`${base}/api/auth/sign-in/two-factor`)
      expect(await heading()).toBe('Two-factor authentication')
      expect((await context.cookies(base)).map((cookie) => cookie.name)).not.toContain('auth_session')
      clock.advance(STEP_MS)
      await page.getByLabel('Code or recovery code').fill(codeAt(secret, clock.now()))
      expect(await clickButton('Continue')).toBe(200)
      expect(page.url()).toBe(`${base}/api/auth/account`)
      expect(await page.locator('main').innerText()).toContain(`Signed in as ${USERNAME} (${EMAIL})`)
      expect(await clickLink('Two-factor authentication')).toBe(200)
      expect(await page.locator('main').innerText()).toContain('Recovery codes left: 10.')
      expect(violations).toEqual([])
    })
  })
})
