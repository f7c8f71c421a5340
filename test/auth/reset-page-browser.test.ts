/**
 * One end-to-end run of the backend's password reset page in a real headless Chromium (Debian's
 * `chromium`, driven by playwright-core), as test/oauth/browser-paths.test.ts does for the
 * consent page. PUBLIC_URL says `localhost` while the server listens on 127.0.0.1, and the browser
 * opens the mailed link at the address the log shows (127.0.0.1): the form's post then carries
 * `Origin: http://127.0.0.1:<port>`, which must count as this service's own. No CSP report may
 * appear in the console.
 *
 * Chromium missing → the test fails under CI and is skipped with a message elsewhere.
 */
import type { FastifyInstance } from 'fastify'
import type { ConsoleMessage } from 'playwright-core'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createTestContext, type TestContext } from '../helpers/app.js'
import { chromiumRequired, useChromium } from '../helpers/chromium.js'
import { DIALECTS } from '../helpers/database.js'
import { freePort } from '../helpers/oauth-e2e.js'
import { smtpSettings, startSmtpSink, type SmtpSink } from '../helpers/smtp-sink.js'

const PASSWORD = 'first password 1'
const NEW_PASSWORD = 'second password 2'

describe.skipIf(!chromiumRequired)('the password reset page in headless Chromium', () => {
  const chromiumBrowser = useChromium('reset-page-browser.test.ts')

  describe.each(DIALECTS)('on %s', (dialect) => {
    let ctx: TestContext
    let sink: SmtpSink
    let app: FastifyInstance
    let port: number

    const api = (method: string, path: string, body: unknown) => fetch(`http://127.0.0.1:${port}${path}`, {
      method, headers: { 'content-type': 'application/json' }, body: JSON.stringify(body),
    })

    beforeAll(async () => {
      ctx = await createTestContext(dialect)
      sink = await startSmtpSink()
      port = await freePort()
      ;({ app } = await ctx.build({ env: { PUBLIC_URL: `http://localhost:${port}`, RATE_LIMIT_ENABLED: 'false' } }))
      await app.listen({ host: '127.0.0.1', port })
      await app.services.settings.update(smtpSettings(sink, { 'global.page_url': '', 'global.require_email_verification': false }))
      expect((await api('POST', '/api/auth/email/register', { username: 'reset_admin', email: 'reset_admin@example.test', password: PASSWORD })).status).toBe(201)
    })
    afterAll(async () => {
      await ctx?.close()
      await sink?.close()
    })

    it('the mailed link opens the form; submitting it sets the password and the page says so; no CSP violation', async () => {
      expect((await api('POST', '/api/auth/email/forgot-password', { email: 'reset_admin@example.test' })).status).toBe(200)
      const [mail] = await sink.waitFor(1)
      const mailed = new URL(/http:\/\/localhost:\d+\/api\/auth\/email\/reset-password\?token=[A-Za-z0-9_-]+/.exec(mail!.text)![0])
      expect(mailed.port).toBe(String(port))
      const atLoggedAddress = `http://127.0.0.1:${port}${mailed.pathname}${mailed.search}`

      const context = await chromiumBrowser().newContext()
      const page = await context.newPage()
      const cspReports: string[] = []
      page.on('console', (message: ConsoleMessage) => {
        if (/Content Security Policy/i.test(message.text())) cspReports.push(message.text())
      })
      try {
        const opened = await page.goto(atLoggedAddress)
        expect(opened?.status()).toBe(200)
        await page.locator('input[name="new_password"]').fill(NEW_PASSWORD)
        await page.locator('input[name="new_password_confirm"]').fill(NEW_PASSWORD)
        const [posted] = await Promise.all([
          page.waitForResponse((response) => response.url().endsWith('/api/auth/email/reset-password') && response.request().method() === 'POST'),
          page.locator('button[type="submit"]').click(),
        ])
        expect(posted.status(), `the form's POST (Origin: ${await posted.request().headerValue('origin')}) answered ${await posted.text().catch(() => '')}`).toBe(200)
        await page.waitForLoadState()
        expect(await page.locator('h1').innerText()).toBe('Password changed')
      } finally {
        await context.close()
      }

      expect((await api('POST', '/api/auth/email/login', { login: 'reset_admin', password: NEW_PASSWORD })).status).toBe(200)
      expect((await api('POST', '/api/auth/email/login', { login: 'reset_admin', password: PASSWORD })).status).toBe(401)
      expect(cspReports, 'Content Security Policy violations in the console').toEqual([])
    })
  })
})
