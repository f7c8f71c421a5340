/**
 * The API explorer at /documentation, used in a real headless Chromium (Debian's `chromium`,
 * driven by playwright-core) the way its front page tells a reader to: run the login route with
 * "Try it out" and the same browser is signed in for every later call; or paste an OAuth access
 * token under "Authorize" → bearerAuth. A session value typed under cookieAuth is not sent (a page
 * cannot set the Cookie header), which is why the front page says to sign in through the route.
 * The browser uses 127.0.0.1 while PUBLIC_URL says localhost, so the explorer's calls go to the
 * loopback spelling it was opened at.
 *
 * Chromium missing → the test fails under CI and is skipped with a message elsewhere.
 */
import type { FastifyInstance } from 'fastify'
import type { Page } from 'playwright-core'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { DEFAULT_PASSWORD, registerAndLogin } from '../helpers/accounts.js'
import { createTestContext, type TestContext } from '../helpers/app.js'
import { chromiumRequired, useChromium } from '../helpers/chromium.js'
import { DIALECTS } from '../helpers/database.js'
import { issueTokens } from '../helpers/oauth.js'
import { freePort } from '../helpers/oauth-e2e.js'

const USERNAME = 'explorer'
/**
 * Swagger UI draws the whole document in a tall window: seconds on an idle machine, several times
 * that on a loaded one (CI runs the suite three files at a time on two cores), so each test and
 * the hook that closes the server get more than the suite's default.
 */
const BROWSER_MS = 90_000

interface Operation {
  /** The explorer's element id: `operations-<tag>-<operationId>`. */
  element: string
  method: string
  path: string
}
const GET_ME: Operation = { element: 'operations-Users-getUsersMe', method: 'GET', path: '/api/users/me' }
const LOGIN: Operation = { element: 'operations-Authentication-postAuthEmailLogin', method: 'POST', path: '/api/auth/email/login' }
const CREATE_TEAM: Operation = { element: 'operations-Teams-postTeams', method: 'POST', path: '/api/teams' }

describe.skipIf(!chromiumRequired)('the API explorer in headless Chromium', () => {
  const chromiumBrowser = useChromium('explorer-browser.test.ts')

  describe.each(DIALECTS)('on %s', (dialect) => {
    let ctx: TestContext
    let app: FastifyInstance
    let base: string
    /** The session cookie's value, from a login outside the browser. */
    let sessionValue: string

    /** A fresh browser (no cookies) on the explorer's page, once Swagger UI has drawn the operations. */
    async function openExplorer(): Promise<Page> {
      // Swagger UI draws the operations of the sections in view and more as the page scrolls: a
      // tall window shows every operation these tests use without scrolling to each.
      const page = await (await chromiumBrowser().newContext({ viewport: { width: 1280, height: 16000 } })).newPage()
      expect((await page.goto(`${base}/documentation`))?.status()).toBe(200)
      await page.locator(`#${GET_ME.element}`).waitFor({ timeout: BROWSER_MS / 2 })
      return page
    }

    /** "Try it out" → Execute, as a reader does; answers what the server answered the explorer. */
    async function execute(page: Page, operation: Operation, body?: string): Promise<{ status: number; json: any }> {
      const block = page.locator(`#${operation.element}`)
      const executeButton = block.locator('button.execute')
      if (!(await executeButton.isVisible())) {
        if (!(await block.locator('button.try-out__btn').isVisible())) await block.locator('.opblock-summary').first().click()
        await block.locator('button.try-out__btn').click()
      }
      if (body !== undefined) await block.locator('textarea.body-param__text').fill(body)
      const [response] = await Promise.all([
        page.waitForResponse((answer) => answer.url() === `${base}${operation.path}` && answer.request().method() === operation.method),
        executeButton.click(),
      ])
      return { status: response.status(), json: await response.json() }
    }

    /** Types `value` under the named scheme in the "Authorize" dialog and applies it. */
    async function authorize(page: Page, scheme: string, value: string): Promise<void> {
      await page.locator('button.authorize').first().click()
      const form = page.locator('.dialog-ux .auth-container', { hasText: scheme })
      await form.locator('input').fill(value)
      await form.locator('button.authorize').click()
      await page.locator('.dialog-ux button.close-modal').click()
    }

    beforeAll(async () => {
      ctx = await createTestContext(dialect)
      const port = await freePort()
      base = `http://127.0.0.1:${port}`
      ;({ app } = await ctx.build({ env: { PUBLIC_URL: `http://localhost:${port}`, RATE_LIMIT_ENABLED: 'false' } }))
      await app.listen({ host: '127.0.0.1', port })
      const { cookie } = await registerAndLogin(app, { username: USERNAME, email: 'explorer@example.test' })
      sessionValue = cookie.slice('auth_session='.length)
    }, 60_000)
    afterAll(() => ctx?.close(), BROWSER_MS)

    it('a login run with "Try it out" signs this browser in: later calls from the page carry the session, writes included', async () => {
      const page = await openExplorer()
      expect((await execute(page, GET_ME)).status).toBe(401)

      const login = await execute(page, LOGIN, JSON.stringify({ login: USERNAME, password: DEFAULT_PASSWORD }))
      expect(login.status).toBe(200)
      expect((await page.context().cookies(base)).map((cookie) => cookie.name)).toContain('auth_session')

      const me = await execute(page, GET_ME)
      expect(me.status).toBe(200)
      expect(me.json.data.username).toBe(USERNAME)
      // An unsafe method passes the Origin check: the page is this service's own origin.
      const created = await execute(page, CREATE_TEAM, JSON.stringify({ name: 'Made in the explorer' }))
      expect(created.status, JSON.stringify(created.json)).toBe(201)
      expect(created.json.data.team.slug).toBe('made-in-the-explorer')
      await page.context().close()
    }, BROWSER_MS)

    it('an access token pasted under "Authorize" → bearerAuth is sent as a bearer token', async () => {
      const tokens = await issueTokens(app, `auth_session=${sessionValue}`, 'user:read')
      const page = await openExplorer()
      await authorize(page, 'bearerAuth', tokens.access_token)
      const me = await execute(page, GET_ME)
      expect(me.status).toBe(200)
      expect(me.json.data.username).toBe(USERNAME)
      await page.context().close()
    }, BROWSER_MS)

    it('a session value typed under "Authorize" → cookieAuth is not sent, as the front page warns', async () => {
      const page = await openExplorer()
      await authorize(page, 'cookieAuth', sessionValue)
      expect((await execute(page, GET_ME)).status).toBe(401)
      await page.context().close()
    }, BROWSER_MS)
  })
})
