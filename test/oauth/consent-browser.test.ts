/**
 * Issue 6, point 7: one end-to-end run of the consent page in a real headless Chromium
 * (Debian's `chromium`, driven by playwright-core, which never downloads a browser of its own):
 * sign-in form, consent page, Approve, the browser lands on the CLI's loopback callback with code,
 * state and iss; the code is exchanged. The page must work under its strict CSP — in particular
 * form-action must let the form's redirect reach the callback — so any CSP report in the console fails.
 *
 * Nothing listens on port 8976: the test records the browser's navigation request to the callback
 * (the redirect of the consent form's POST) and stops there. page.route cannot stand in for the
 * CLI's listener: Playwright lets requests that come from a redirect through without calling route
 * handlers, so the browser's attempt simply ends in a refused connection, which does not matter here.
 *
 * Chromium missing → the test fails under CI (.ci/run installs it) and is skipped with a message
 * elsewhere. Both dialects run (about 1 s each once the browser is up).
 */
import { existsSync } from 'node:fs'
import * as oauth from 'oauth4webapi'
import { chromium, type Browser as Chromium, type ConsoleMessage } from 'playwright-core'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createTestContext, type TestContext } from '../helpers/app.js'
import { DIALECTS } from '../helpers/database.js'
import {
  ALL_SCOPES, CALLBACK, CLI_CLIENT_ID, apiJson, authorizationUrl, cliClient, discover, exchangeCode, registerOverHttp,
  startOAuthServer, type OAuthServer,
} from '../helpers/oauth-e2e.js'

const CHROMIUM = '/usr/bin/chromium'
const available = existsSync(CHROMIUM)
const mustRun = available || process.env.CI !== undefined
if (!mustRun) console.warn(`consent-browser.test.ts skipped: no Debian chromium at ${CHROMIUM} (apt-get install chromium; .ci/run does)`)

// The machine note's flags: headless as root, and no background connections to a closed network.
const CHROMIUM_ARGS = [
  '--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
  '--disable-background-networking', '--disable-component-update', '--disable-sync',
]

describe.skipIf(!mustRun)('the consent page in headless Chromium', () => {
  let chromiumBrowser: Chromium | undefined

  beforeAll(async () => {
    if (!available) throw new Error(`Debian chromium is required at ${CHROMIUM} under CI (.ci/run installs it with apt-get)`)
    // Playwright gives the browser a new, empty --user-data-dir of its own and removes it on close.
    chromiumBrowser = await chromium.launch({ executablePath: CHROMIUM, args: CHROMIUM_ARGS, headless: true })
  }, 60_000)
  afterAll(() => chromiumBrowser?.close())

  describe.each(DIALECTS)('on %s', (dialect) => {
    let ctx: TestContext
    let server: OAuthServer

    beforeAll(async () => {
      ctx = await createTestContext(dialect)
      server = await startOAuthServer(ctx)
      await registerOverHttp(server.base, 'browser_admin') // the first user is the global admin
    })
    afterAll(() => ctx?.close())

    it('sign in, consent, Approve → the callback gets code, state and iss; the code buys an access token; no CSP violation', async () => {
      const { base } = server
      const user = await registerOverHttp(base, 'browser_user')
      const defaultTeam = (await apiJson(base, 'GET', '/api/teams/me/default', { cookie: user.cookie })).json.data.team as { id: string; name: string }
      const as = await discover(base)
      const auth = await authorizationUrl(as)

      // A context of its own (no cookies, its own connections): closing it lets the app close at once.
      const context = await chromiumBrowser!.newContext()
      const page = await context.newPage()
      const cspReports: string[] = []
      const pageErrors: string[] = []
      page.on('console', (message: ConsoleMessage) => {
        if (/Content Security Policy/i.test(message.text())) cspReports.push(message.text())
      })
      page.on('pageerror', (error) => pageErrors.push(String(error)))
      try {
        // The CLI opens the authorization URL; the server sends the browser to the sign-in form.
        const opened = await page.goto(auth.url.toString())
        expect(opened?.status()).toBe(200)
        const consentUrl = new URL(page.url())
        expect(consentUrl.origin + consentUrl.pathname).toBe(`${base}/api/oauth2/consent`)
        const requestId = consentUrl.searchParams.get('request_id')!
        const signIn = page.locator('form[action$="/api/oauth2/consent/login"]')
        await expect(signIn.count()).resolves.toBe(1)
        await signIn.locator('input[name="login"]').fill(user.email)
        await signIn.locator('input[name="password"]').fill(user.password)
        const [signedIn] = await Promise.all([
          page.waitForResponse((response) => response.url() === `${base}/api/oauth2/consent/login` && response.request().method() === 'POST'),
          signIn.locator('button, input[type="submit"]').first().click(),
        ])
        expect(signedIn.status(), `POST /api/oauth2/consent/login sent with Origin: ${await signedIn.request().headerValue('origin')} ` +
          `answered ${signedIn.status()} ${await signedIn.text().catch(() => '')}`).toBe(303)
        // The session cookie is in the browser now, and the redirect brings the consent page.
        await page.locator('button[name="decision"][value="approve"]').waitFor({ timeout: 15_000 })
        expect(page.url()).toBe(`${base}/api/oauth2/consent?request_id=${encodeURIComponent(requestId)}`)
        await expect(page.locator('form[action$="/api/oauth2/consent/login"]').count()).resolves.toBe(0)

        // What the page must show, from the JSON variant of the same request (no session: nothing bound).
        const details = (await apiJson(base, 'GET', `/api/oauth2/consent?request_id=${encodeURIComponent(requestId)}`)).json?.data as
          { client_id: string; client_name: string; scopes: Array<{ name: string; description: string }> } | undefined
        expect(details?.client_id).toBe(CLI_CLIENT_ID)
        const shown = await page.locator('body').innerText()
        expect(shown).toContain(details!.client_name)
        expect(details!.scopes.map((scope) => scope.name).sort()).toEqual(ALL_SCOPES.split(' ').sort())
        for (const scope of details!.scopes) expect(shown).toContain(scope.description)

        const teamSelect = page.locator('select[name="team_id"]')
        await expect(teamSelect.count()).resolves.toBe(1)
        const options = await teamSelect.locator('option').evaluateAll((nodes) => nodes.map((node) => (node as unknown as { value: string }).value))
        expect(options[0], 'the default team comes first').toBe(defaultTeam.id)
        await teamSelect.selectOption(defaultTeam.id)

        // The browser follows the 302 to the loopback callback: that navigation is what the CLI receives.
        // A CSP report instead (form-action not allowing the redirect) ends the wait at once.
        const toCallback = page.waitForEvent('request', { predicate: (request) => request.url().startsWith(`${CALLBACK}?`), timeout: 15_000 })
          .catch(() => 'no request for the callback within 15 s' as const)
        const blocked = page.waitForEvent('console', { predicate: (message) => /Content Security Policy/i.test(message.text()), timeout: 15_000 })
          .then((message) => `blocked by the page's CSP: ${message.text()}`, () => new Promise<never>(() => {}))
        await page.locator('button[name="decision"][value="approve"]').click()
        const callbackRequest = await Promise.race([toCallback, blocked])
        if (typeof callbackRequest === 'string') throw new Error(`Approve did not bring the browser to ${CALLBACK}: ${callbackRequest} (page: ${page.url()})`)
        expect(callbackRequest.isNavigationRequest()).toBe(true)
        expect(callbackRequest.method()).toBe('GET')
        const from = callbackRequest.redirectedFrom()
        expect(from?.method()).toBe('POST')
        expect(from?.url()).toBe(`${base}/api/oauth2/consent`)
        expect((await from?.response())?.status()).toBe(302)
        const landed = new URL(callbackRequest.url())
        expect(landed.searchParams.get('code')).toMatch(/\S/)
        expect(landed.searchParams.get('state')).toBe(auth.state)
        expect(landed.searchParams.get('iss')).toBe(base)

        const tokens = await exchangeCode(as, oauth.validateAuthResponse(as, cliClient, landed, auth.state), auth.codeVerifier)
        expect(tokens).toMatchObject({ token_type: 'bearer', expires_in: 3600, access_token: expect.any(String), refresh_token: expect.any(String) })
        const me = await fetch(`${base}/api/users/me`, { headers: { authorization: `Bearer ${tokens.access_token}` } })
        expect(me.status).toBe(200)
        expect(((await me.json()) as { data: { id: string } }).data.id).toBe(user.id)

        expect(cspReports, 'Content Security Policy violations in the console').toEqual([])
        expect(pageErrors, 'script errors on the pages').toEqual([])
      } finally {
        await context.close()
      }
    }, 60_000)
  })
})
