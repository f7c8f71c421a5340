/**
 * The account pages walked in a real headless Chromium (Debian's `chromium`, driven by
 * playwright-core), the way a person without a frontend goes: landing page → sign in → account →
 * sign out; forgot password → the mail (through a real SMTP server) → its link → a new password →
 * the done page's sign-in link → sign in with it; a used link's page → its forgot-password link;
 * the OAuth sign-in page's forgot-password link. Every step clicks the link or the button a person
 * would. PUBLIC_URL says `localhost` while the browser uses 127.0.0.1, as in
 * reset-page-browser.test.ts, so the forms' Origin is a loopback alias. No page may report a
 * Content-Security-Policy violation.
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
import { authorizeParams, authorizeUrl, LOOPBACK_REDIRECT_URI, pkce } from '../helpers/oauth.js'
import { freePort } from '../helpers/oauth-e2e.js'
import { smtpSettings, startSmtpSink, type SmtpSink } from '../helpers/smtp-sink.js'

const USERNAME = 'walker'
const EMAIL = 'walker@example.test'
const PASSWORD = 'first password 1'
const NEW_PASSWORD = 'second password 2'

describe.skipIf(!chromiumRequired)('the account pages in headless Chromium', () => {
  const chromiumBrowser = useChromium('account-pages-browser.test.ts')

  describe.each(DIALECTS)('on %s', (dialect) => {
    let ctx: TestContext
    let sink: SmtpSink
    let app: FastifyInstance
    let base: string
    let context: BrowserContext
    let page: Page
    /** Every CSP report of every page, from the console and from `securitypolicyviolation` events. */
    const violations: string[] = []

    const { heading, clickLink, clickButton, signIn } = pageSteps(() => page)

    beforeAll(async () => {
      ctx = await createTestContext(dialect)
      sink = await startSmtpSink()
      const port = await freePort()
      base = `http://127.0.0.1:${port}`
      ;({ app } = await ctx.build({ env: { PUBLIC_URL: `http://localhost:${port}`, RATE_LIMIT_ENABLED: 'false' } }))
      await app.listen({ host: '127.0.0.1', port })
      await app.services.settings.update(smtpSettings(sink, { 'global.page_url': '', 'global.require_email_verification': false }))
      const registered = await fetch(`${base}/api/auth/email/register`, {
        method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ username: USERNAME, email: EMAIL, password: PASSWORD }),
      })
      expect(registered.status).toBe(201)

      ;({ context, page } = await openPage(chromiumBrowser(), violations))
    }, 60_000)
    afterAll(async () => {
      await context?.close()
      await ctx?.close()
      await sink?.close()
    })

    it('landing page → sign in → account page → sign out → the sign-in page says so', async () => {
      expect((await page.goto(`${base}/`))?.status()).toBe(200)
      expect(await heading()).toBe('Service backend')
      expect(await clickLink('Sign in')).toBe(200)
      expect(await heading()).toBe('Sign in')

      expect(await signIn(USERNAME, PASSWORD)).toBe(200)
      expect(page.url()).toBe(`${base}/api/auth/account`)
      expect(await heading()).toBe('Your account')
      expect(await page.locator('main').innerText()).toContain(`Signed in as ${USERNAME} (${EMAIL})`)
      // The page itself, opened again, keeps the session.
      expect((await page.goto(`${base}/api/auth/sign-in`))?.status()).toBe(200)
      expect(page.url()).toBe(`${base}/api/auth/account`)

      expect(await clickButton('Sign out')).toBe(200)
      expect(page.url()).toBe(`${base}/api/auth/sign-in?signed_out=1`)
      expect(await page.locator('.success').innerText()).toBe('You are signed out.')
      expect((await context.cookies(base)).map((cookie) => cookie.name)).not.toContain('auth_session')
      expect(violations).toEqual([])
    })

    it('forgot password → the mail → its link → a new password → the done page\'s sign-in link → signed in with it; the used link leads to a new reset mail', async () => {
      sink.clear()
      expect((await page.goto(`${base}/api/auth/sign-in`))?.status()).toBe(200)
      expect(await clickLink('Forgot password?')).toBe(200)
      expect(await heading()).toBe('Forgot your password?')
      await page.getByLabel('Email address').fill(EMAIL)
      expect(await clickButton('Send the reset link')).toBe(200)
      expect(await heading()).toBe('Check your mail')

      const [mail] = await sink.waitFor(1)
      const mailed = new URL(/http:\/\/localhost:\d+\/api\/auth\/email\/reset-password\?token=[A-Za-z0-9_-]+/.exec(mail!.text)![0])
      const link = `${base}${mailed.pathname}${mailed.search}`
      expect((await page.goto(link))?.status()).toBe(200)
      await page.getByLabel('New password').fill(NEW_PASSWORD)
      await page.getByLabel('The same password again').fill(NEW_PASSWORD)
      expect(await clickButton('Set the new password')).toBe(200)
      expect(await heading()).toBe('Password changed')

      expect(await clickLink('Sign in')).toBe(200)
      expect(await signIn(EMAIL, PASSWORD)).toBe(401)
      expect(await page.locator('[role="alert"]').innerText()).toBe('Invalid login or password.')
      expect(await signIn(EMAIL, NEW_PASSWORD)).toBe(200)
      expect(await heading()).toBe('Your account')
      expect(await clickButton('Sign out')).toBe(200)

      expect((await page.goto(link))?.status()).toBe(400)
      expect(await heading()).toBe('This link no longer works')
      expect(await clickLink('Ask for a new reset mail')).toBe(200)
      expect(await heading()).toBe('Forgot your password?')
      expect(violations).toEqual([])
    })

    it('the OAuth sign-in page links to the forgot-password page', async () => {
      const params = authorizeParams(pkce().challenge, { redirect_uri: LOOPBACK_REDIRECT_URI })
      expect((await page.goto(`${base}${authorizeUrl(params)}`))?.status()).toBe(200)
      expect(page.url()).toMatch(/\/api\/oauth2\/consent\?request_id=/)
      expect(await heading()).toMatch(/^Sign in to continue to /)
      expect(await clickLink('Forgot password?')).toBe(200)
      expect(page.url()).toBe(`${base}/api/auth/forgot-password`)
      expect(await heading()).toBe('Forgot your password?')
      expect(violations).toEqual([])
    })
  })
})
