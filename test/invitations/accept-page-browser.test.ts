/**
 * The invitation's accept page in a real headless Chromium (Debian's `chromium`, driven by
 * playwright-core), as test/auth/reset-page-browser.test.ts does for the reset page. The invited
 * user signs in on the sign-in page, opens the mailed link (at the address the log shows,
 * 127.0.0.1, while PUBLIC_URL says localhost), presses the accept button and joins; a returning
 * visit of the link says it was used. No CSP report may appear in the console.
 *
 * Chromium missing → the test fails under CI and is skipped with a message elsewhere.
 */
import type { FastifyInstance } from 'fastify'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createTestContext, type TestContext } from '../helpers/app.js'
import { chromiumRequired, useChromium } from '../helpers/chromium.js'
import { openPage } from '../helpers/page-walk.js'
import { DIALECTS } from '../helpers/database.js'
import { freePort } from '../helpers/oauth-e2e.js'
import { smtpSettings, startSmtpSink, type SmtpSink } from '../helpers/smtp-sink.js'

const PASSWORD = 'invited password 1'

describe.skipIf(!chromiumRequired)('the invitation accept page in headless Chromium', () => {
  const chromiumBrowser = useChromium('accept-page-browser.test.ts')

  describe.each(DIALECTS)('on %s', (dialect) => {
    let ctx: TestContext
    let sink: SmtpSink
    let app: FastifyInstance
    let port: number
    let ownerCookie: string

    const api = (method: string, path: string, body?: unknown, cookie?: string) => fetch(`http://127.0.0.1:${port}${path}`, {
      method,
      headers: { ...(body === undefined ? {} : { 'content-type': 'application/json' }), ...(cookie === undefined ? {} : { cookie }) },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    })

    beforeAll(async () => {
      ctx = await createTestContext(dialect)
      sink = await startSmtpSink()
      port = await freePort()
      ;({ app } = await ctx.build({ env: { PUBLIC_URL: `http://localhost:${port}`, RATE_LIMIT_ENABLED: 'false' } }))
      await app.listen({ host: '127.0.0.1', port })
      await app.services.settings.update(smtpSettings(sink, { 'global.page_url': '', 'global.require_email_verification': false }))
      const owner = await api('POST', '/api/auth/email/register', { username: 'browser_owner', email: 'browser_owner@example.test', password: PASSWORD })
      expect(owner.status).toBe(201)
      ownerCookie = owner.headers.getSetCookie().find((line) => line.startsWith('auth_session='))!.split(';')[0]!
    })
    afterAll(async () => {
      await ctx?.close()
      await sink?.close()
    })

    it('a signed-in invited user opens the mailed link and accepts; a returning visit shows it was used; no CSP violation', async () => {
      const team = await (await api('POST', '/api/teams', { name: 'Browser team' }, ownerCookie)).json() as { data: { team: { id: string } } }
      const teamId = team.data.team.id
      // The invitee's account exists already: a registration with an earlier invitation verified its address.
      const first = await (await api('POST', `/api/teams/${teamId}/invitations`, { email: 'browser_invitee@example.test', role: 'team_user' }, ownerCookie)).json() as { data: { accept_url: string; invitation: { id: string } } }
      const firstToken = first.data.accept_url.split('/').pop()!
      expect((await api('POST', '/api/auth/email/register', { username: 'browser_invitee', email: 'browser_invitee@example.test', password: PASSWORD, invitation_token: firstToken })).status).toBe(201)
      expect((await api('DELETE', `/api/teams/${teamId}/invitations/${first.data.invitation.id}`, undefined, ownerCookie)).status).toBe(200)
      const before = sink.messages.length
      expect((await api('POST', `/api/teams/${teamId}/invitations`, { email: 'browser_invitee@example.test', role: 'team_admin' }, ownerCookie)).status).toBe(201)
      const [mail] = (await sink.waitFor(before + 1)).slice(before)
      const mailed = new URL(/http:\/\/localhost:\d+\/api\/auth\/invitations\/[A-Za-z0-9_-]{43}/.exec(mail!.text)![0])
      const atLoggedAddress = `http://127.0.0.1:${port}${mailed.pathname}`

      const cspReports: string[] = []
      const { context, page } = await openPage(chromiumBrowser(), cspReports)
      try {
        // Signed out, the page says to sign in; the sign-in page lands on the account page.
        expect((await page.goto(atLoggedAddress))?.status()).toBe(200)
        expect(await page.locator('main').innerText()).toContain('To accept, sign in with the account of browser_invitee@example.test')
        await page.locator('a', { hasText: 'Sign in' }).click()
        await page.locator('input[name="login"]').fill('browser_invitee')
        await page.locator('input[name="password"]').fill(PASSWORD)
        await Promise.all([page.waitForURL(/\/api\/auth\/account$/), page.locator('button[type="submit"]').click()])
        expect(await page.locator('a', { hasText: 'Team invitations' }).count()).toBe(1)

        expect((await page.goto(atLoggedAddress))?.status()).toBe(200)
        expect(await page.locator('h1').innerText()).toBe('Join Browser team')
        expect(await page.locator('main').innerText()).toContain('browser_owner invited browser_invitee@example.test to the team Browser team as team admin')
        const [posted] = await Promise.all([
          page.waitForResponse((response) => response.url() === atLoggedAddress && response.request().method() === 'POST'),
          page.locator('button', { hasText: 'Accept and join the team' }).click(),
        ])
        expect(posted.status(), `the form's POST (Origin: ${await posted.request().headerValue('origin')}) answered ${await posted.text().catch(() => '')}`).toBe(200)
        await page.waitForLoadState()
        expect(await page.locator('h1').innerText()).toBe('Invitation accepted')
        expect(await page.locator('main').innerText()).toContain('You are now a member of Browser team.')

        // The returning visit: the link is used up, and the page says so.
        expect((await page.goto(atLoggedAddress))?.status()).toBe(400)
        expect(await page.locator('main').innerText()).toContain('This invitation was accepted already.')
      } finally {
        await context.close()
      }

      const members = await (await api('GET', `/api/teams/${teamId}/members`, undefined, ownerCookie)).json() as { data: { members: Array<{ username: string; role: string }> } }
      expect(members.data.members.map(({ username, role }) => [username, role]).sort()).toEqual([['browser_invitee', 'team_admin'], ['browser_owner', 'team_admin']])
      expect(cspReports, 'Content Security Policy violations in the console').toEqual([])
    })
  })
})
