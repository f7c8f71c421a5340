/**
 * Every way out of the OAuth sign-in and consent pages, walked in a real headless Chromium (Debian's
 * `chromium`, driven by playwright-core, which never downloads a browser of its own). Each walk ends
 * where the client sees it: a loopback HTTP listener stands in for the CLI's redirect receiver and
 * must get `code` (or `error`) with `state` and `iss` (RFC 9207), and every code is exchanged at the
 * token endpoint with its PKCE verifier, by oauth4webapi as a real client would.
 *
 * Browsers check the CSP form-action directive on every redirect that follows a form post, so the
 * sign-in form of a returning user (303 to the consent page, then 302 to the client) and the consent
 * form (302 to the client) must both allow the redirect URI's origin. A blocked redirect leaves the
 * browser on the page with nothing shown: any console error or warning (a CSP report is one) and any
 * script error fails the walk.
 *
 * One browser for the file, one app per dialect. Chromium missing → the file fails under CI
 * (.ci/run installs it) and is skipped with a message elsewhere.
 */
import { createServer } from 'node:http'
import type { AddressInfo } from 'node:net'
import type { FastifyInstance } from 'fastify'
import * as oauth from 'oauth4webapi'
import type { BrowserContext, Page, Request } from 'playwright-core'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createTestContext, type TestContext } from '../helpers/app.js'
import { chromiumRequired, useChromium } from '../helpers/chromium.js'
import { DIALECTS } from '../helpers/database.js'
import { expectedEmail, providerSettings, providerUser, startFakeProvider, type FakeProvider } from '../helpers/fake-provider.js'
import { authorizeAndApprove } from '../helpers/oauth.js'
import { ALL_SCOPES, CLI_CLIENT_ID, apiJson, cliClient, discover, freePort, insecure, registerOverHttp, type Registered } from '../helpers/oauth-e2e.js'
import { smtpSettings, startSmtpSink, type SmtpSink } from '../helpers/smtp-sink.js'

const NEW_PASSWORD = 'a brand new password'
/** How long a walk may take to reach the receiver once the last click is done. */
const ARRIVAL_MS = 15_000

/** A loopback listener standing in for the CLI's redirect receiver: it records each callback. */
interface Receiver {
  /** `http://127.0.0.1:<port>/oauth/callback` (or `[::1]`): the redirect URI the client sends. */
  callback: string
  hits: URL[]
  close(): Promise<void>
}

async function startReceiver(host: '127.0.0.1' | '::1'): Promise<Receiver> {
  const hits: URL[] = []
  const server = createServer((request, response) => {
    const url = new URL(request.url ?? '/', 'http://receiver.invalid')
    // Only the callback counts (the browser may also ask for /favicon.ico).
    if (url.pathname !== '/oauth/callback') return void response.writeHead(204).end()
    hits.push(url)
    response.writeHead(200, { 'content-type': 'text/plain; charset=utf-8' }).end('Signed in. You can close this window.')
  })
  await new Promise<void>((resolve) => server.listen(0, host, resolve))
  const { port } = server.address() as AddressInfo
  return {
    callback: `http://${host.includes(':') ? `[${host}]` : host}:${port}/oauth/callback`,
    hits,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  }
}

/** A browser context of its own (no cookies unless given) with one page, watched for trouble. */
interface Tab {
  context: BrowserContext
  page: Page
  /** Console errors and warnings (CSP reports among them) and script errors, on any page of this tab. */
  problems: string[]
}

/** What the client sends and keeps for one authorization. */
interface Authorization {
  url: string
  state: string
  verifier: string
  client: oauth.Client
  receiver: Receiver
}

interface Arrival {
  /** The callback as the receiver got it. */
  landed: URL
  /** The navigation's hops, from the first request to the receiver (`GET receiver`). */
  chain: string[]
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))

describe.skipIf(!chromiumRequired)('every way out of the OAuth pages, in headless Chromium', () => {
  const chromiumBrowser = useChromium('browser-paths.test.ts')

  describe.each(DIALECTS)('on %s', (dialect) => {
    let ctx: TestContext
    let app: FastifyInstance
    let base: string
    let as: oauth.AuthorizationServer
    let provider: FakeProvider
    let sink: SmtpSink
    let receiver: Receiver
    const tabs: Tab[] = []

    beforeAll(async () => {
      ctx = await createTestContext(dialect)
      provider = await startFakeProvider()
      sink = await startSmtpSink()
      receiver = await startReceiver('127.0.0.1')
      const port = await freePort()
      base = `http://127.0.0.1:${port}`
      // PUBLIC_URL is where the browser and the client reach the app: it is the issuer, `iss` in every redirect.
      ;({ app } = await ctx.build({ env: { PUBLIC_URL: base, RATE_LIMIT_ENABLED: 'false', PROVIDER_OAUTH_URL: provider.url, PROVIDER_API_URL: provider.url } }))
      await app.listen({ host: '127.0.0.1', port })
      await app.services.settings.update([
        ...providerSettings(base).filter((change) => change.key !== 'global.page_url'),
        // No separate frontend: the reset mail links to this service's own page. Sign-in needs no verified address.
        ...smtpSettings(sink, { 'global.page_url': '', 'global.require_email_verification': false }),
      ])
      await registerOverHttp(base, 'paths_admin') // the first user is the global admin
      as = await discover(base)
    }, 60_000)
    afterAll(async () => {
      await Promise.all(tabs.map((tab) => tab.context.close().catch(() => undefined)))
      await ctx?.close()
      await provider?.close()
      await sink?.close()
      await receiver?.close()
    })

    async function openTab(session?: string): Promise<Tab> {
      const context = await chromiumBrowser().newContext()
      if (session !== undefined) {
        const [name, value] = [session.slice(0, session.indexOf('=')), session.slice(session.indexOf('=') + 1)]
        await context.addCookies([{ name, value, url: base }])
      }
      const page = await context.newPage()
      const problems: string[] = []
      page.on('console', (message) => {
        if (message.type() !== 'error' && message.type() !== 'warning') return
        const source = message.location().url
        // The browser's own request for a favicon, which this service does not have: not the page's doing.
        if (source.endsWith('/favicon.ico')) return
        problems.push(`${message.type()} on ${page.url()} (${source}): ${message.text()}`)
      })
      page.on('pageerror', (error) => problems.push(`script error on ${page.url()}: ${String(error)}`))
      const tab = { context, page, problems }
      tabs.push(tab)
      return tab
    }

    async function authorization({ prompt, client = cliClient, scope = ALL_SCOPES, to = receiver }: {
      prompt?: 'login' | 'consent' | 'none'; client?: oauth.Client; scope?: string; to?: Receiver
    } = {}): Promise<Authorization> {
      const verifier = oauth.generateRandomCodeVerifier()
      const state = oauth.generateRandomState()
      const url = new URL(as.authorization_endpoint!)
      url.search = new URLSearchParams({
        response_type: 'code', client_id: client.client_id, redirect_uri: to.callback, scope, state,
        code_challenge: await oauth.calculatePKCECodeChallenge(verifier), code_challenge_method: 'S256',
        ...(prompt === undefined ? {} : { prompt }),
      }).toString()
      return { url: url.toString(), state, verifier, client, receiver: to }
    }

    /** Where a URL is, in a chain: a path on the app, the provider, or the receiver. */
    function place(url: string, auth: Authorization): string {
      const parsed = new URL(url)
      if (url.startsWith(`${auth.receiver.callback}?`)) return 'receiver'
      if (parsed.origin === base) return parsed.pathname
      if (parsed.origin === provider.url) return `provider ${parsed.pathname}`
      return url
    }

    function chainOf(request: Request, auth: Authorization): string[] {
      const hops: string[] = []
      for (let hop: Request | null = request; hop !== null; hop = hop.redirectedFrom()) hops.unshift(`${hop.method()} ${place(hop.url(), auth)}`)
      return hops
    }

    /**
     * Runs `act` (a click, a navigation) and waits until the receiver has the callback of `auth`.
     * A CSP report in the console ends the wait at once: that is how a blocked redirect shows.
     */
    async function arriveAtReceiver(tab: Tab, auth: Authorization, act: () => Promise<unknown>): Promise<Arrival> {
      const toReceiver = tab.page.waitForRequest((request) => request.url().startsWith(`${auth.receiver.callback}?`), { timeout: ARRIVAL_MS })
      toReceiver.catch(() => undefined)
      await act()
      const deadline = Date.now() + ARRIVAL_MS
      for (;;) {
        const landed = auth.receiver.hits.find((hit) => hit.searchParams.get('state') === auth.state)
        if (landed !== undefined) {
          await tab.page.waitForURL((url) => url.href.startsWith(`${auth.receiver.callback}?`))
          return { landed, chain: chainOf(await toReceiver, auth) }
        }
        const blocked = tab.problems.find((problem) => /Content Security Policy/i.test(problem))
        if (blocked !== undefined || Date.now() > deadline) {
          throw new Error(`the receiver ${auth.receiver.callback} got nothing; the browser stays at ${tab.page.url()}${blocked === undefined ? '' : `: ${blocked}`}`)
        }
        await sleep(25)
      }
    }

    /** The callback as the client checks it (state, iss), its code exchanged with the PKCE verifier; answers whose token it is. */
    async function redeem(auth: Authorization, landed: URL): Promise<{ id: string; email: string }> {
      return (await redeemTokens(auth, landed)).user
    }

    async function redeemTokens(auth: Authorization, landed: URL): Promise<{ user: { id: string; email: string }; tokens: oauth.TokenEndpointResponse }> {
      expect(landed.searchParams.get('iss')).toBe(base)
      const params = oauth.validateAuthResponse(as, auth.client, landed, auth.state)
      const response = await oauth.authorizationCodeGrantRequest(as, auth.client, oauth.None(), params, auth.receiver.callback, auth.verifier, insecure)
      const tokens = await oauth.processAuthorizationCodeResponse(as, auth.client, response)
      expect(tokens).toMatchObject({ token_type: 'bearer', access_token: expect.any(String) })
      const me = await fetch(`${base}/api/users/me`, { headers: { authorization: `Bearer ${tokens.access_token}` } })
      expect(me.status).toBe(200)
      return { user: ((await me.json()) as { data: { id: string; email: string } }).data, tokens }
    }

    /** An error callback: the client hears `error`, with its state and this issuer, and no code. */
    function expectRefusal(auth: Authorization, landed: URL, error: string): void {
      expect(landed.searchParams.get('state')).toBe(auth.state)
      expect(landed.searchParams.get('iss')).toBe(base)
      expect(landed.searchParams.get('code')).toBeNull()
      let refusal: unknown
      try {
        oauth.validateAuthResponse(as, auth.client, landed, auth.state)
      } catch (caught) {
        refusal = caught
      }
      expect(refusal).toBeInstanceOf(oauth.AuthorizationResponseError)
      expect((refusal as oauth.AuthorizationResponseError).error).toBe(error)
    }

    const signInForm = (tab: Tab) => tab.page.locator('form[action$="/api/oauth2/consent/login"]')
    const approveButton = (tab: Tab) => tab.page.locator('button[name="decision"][value="approve"]')

    /** The sign-in form: at the consent page's address, or at the form's own after a refused attempt. */
    async function expectSignInPage(tab: Tab, at = '/api/oauth2/consent'): Promise<void> {
      await signInForm(tab).waitFor({ timeout: ARRIVAL_MS })
      expect(new URL(tab.page.url()).pathname).toBe(at)
    }

    async function expectConsentPage(tab: Tab): Promise<void> {
      await approveButton(tab).waitFor({ timeout: ARRIVAL_MS })
      expect(new URL(tab.page.url()).pathname).toBe('/api/oauth2/consent')
      await expect(signInForm(tab).count()).resolves.toBe(0)
    }

    /** Fills the sign-in form and submits it (does not wait for where it leads). */
    async function submitSignIn(tab: Tab, login: string, password: string): Promise<void> {
      await signInForm(tab).locator('input[name="login"]').fill(login)
      await signInForm(tab).locator('input[name="password"]').fill(password)
      await signInForm(tab).locator('button[type="submit"]').click()
    }

    /** A user whose approval of the CLI, for the receiver's exact redirect URI, is remembered. */
    async function returningUser(username: string): Promise<Registered> {
      const user = await registerOverHttp(base, username)
      const first = await authorizeAndApprove(app, user.cookie, { redirectUri: receiver.callback, scope: ALL_SCOPES })
      expect(first.skipped).toBe(false)
      return user
    }

    const FROM_SIGN_IN = ['POST /api/oauth2/consent/login', 'GET /api/oauth2/consent', 'GET receiver']
    const FROM_CONSENT = ['POST /api/oauth2/consent', 'GET receiver']

    it('first sign-in: sign-in page → consent page → Approve → the receiver gets a code, which buys tokens', async () => {
      const user = await registerOverHttp(base, 'first_login')
      const defaultTeam = (await apiJson(base, 'GET', '/api/teams/me/default', { cookie: user.cookie })).json.data.team as { id: string }
      const tab = await openTab()
      const auth = await authorization()

      expect((await tab.page.goto(auth.url))?.status()).toBe(200)
      await expectSignInPage(tab)
      const requestId = new URL(tab.page.url()).searchParams.get('request_id')!
      const [signedIn] = await Promise.all([
        tab.page.waitForResponse((response) => response.url() === `${base}/api/oauth2/consent/login`),
        submitSignIn(tab, user.email, user.password),
      ])
      expect(signedIn.status()).toBe(303)
      await expectConsentPage(tab)
      expect(tab.page.url()).toBe(`${base}/api/oauth2/consent?request_id=${encodeURIComponent(requestId)}`)

      // The page shows what the JSON variant of the same request describes, to the same session.
      const session = (await tab.context.cookies(base)).find((cookie) => cookie.name === 'auth_session')!
      const details = (await apiJson(base, 'GET', `/api/oauth2/consent?request_id=${encodeURIComponent(requestId)}`, { cookie: `auth_session=${session.value}` })).json.data as
        { client_id: string; client_name: string; scopes: Array<{ name: string; description: string }> }
      expect(details.client_id).toBe(CLI_CLIENT_ID)
      expect(details.scopes.map((scope) => scope.name).sort()).toEqual(ALL_SCOPES.split(' ').sort())
      const shown = await tab.page.locator('body').innerText()
      expect(shown).toContain(details.client_name)
      for (const scope of details.scopes) expect(shown).toContain(scope.description)
      const teams = tab.page.locator('select[name="team_id"] option')
      expect(await teams.first().getAttribute('value'), 'the default team comes first').toBe(defaultTeam.id)

      const { landed, chain } = await arriveAtReceiver(tab, auth, () => approveButton(tab).click())
      expect(chain).toEqual(FROM_CONSENT)
      const { user: owner, tokens } = await redeemTokens(auth, landed)
      expect(owner.id).toBe(user.id)
      expect(tokens).toMatchObject({ expires_in: 3600, refresh_token: expect.any(String) })
      expect(tab.problems).toEqual([])
    }, 60_000)

    it('returning user in a fresh browser: sign-in page (a wrong password first), then straight to the receiver with a code', async () => {
      const user = await returningUser('returning_user')
      const tab = await openTab()
      const auth = await authorization()

      await tab.page.goto(auth.url)
      await expectSignInPage(tab)
      const [refused] = await Promise.all([
        tab.page.waitForResponse((response) => response.url() === `${base}/api/oauth2/consent/login`),
        submitSignIn(tab, user.email, 'not the password'),
      ])
      expect(refused.status()).toBe(401)
      await expectSignInPage(tab, '/api/oauth2/consent/login')
      await expect(tab.page.locator('[role="alert"]').innerText()).resolves.toMatch(/\S/)

      // The sign-in page sent again after the failure must let the form's redirects through as well.
      const { landed, chain } = await arriveAtReceiver(tab, auth, () => submitSignIn(tab, user.email, user.password))
      expect(chain).toEqual(FROM_SIGN_IN)
      expect((await redeem(auth, landed)).id).toBe(user.id)
      // The refused attempt's own 401 is the one line the console may have.
      expect(tab.problems.filter((problem) => !problem.includes(`(${base}/api/oauth2/consent/login): Failed to load resource: the server responded with a status of 401`))).toEqual([])
    }, 60_000)

    it('returning user after logout: sign-in page, then straight to the receiver (the approval outlives the session)', async () => {
      const user = await returningUser('logged_out_user')
      const tab = await openTab(user.cookie)
      const loggedOut = await tab.context.request.post(`${base}/api/auth/logout`, { headers: { origin: base } })
      expect(loggedOut.status()).toBe(200)
      expect((await tab.context.request.get(`${base}/api/users/me`)).status()).toBe(401)
      const auth = await authorization()

      await tab.page.goto(auth.url)
      await expectSignInPage(tab)
      const { landed, chain } = await arriveAtReceiver(tab, auth, () => submitSignIn(tab, user.email, user.password))
      expect(chain).toEqual(FROM_SIGN_IN)
      expect((await redeem(auth, landed)).id).toBe(user.id)
      expect(tab.problems).toEqual([])
    }, 60_000)

    it('returning user after a password reset: the session ended and the approval was forgotten, so sign-in leads to the consent page, then the receiver', async () => {
      const user = await returningUser('reset_user')
      const tab = await openTab(user.cookie)
      expect((await apiJson(base, 'POST', '/api/auth/email/forgot-password', { body: { email: user.email } })).status).toBe(200)
      const link = await resetLink(sink, user.email)
      expect(new URL(link).origin).toBe(base)

      await tab.page.goto(link)
      await tab.page.locator('input[name="new_password"]').fill(NEW_PASSWORD)
      await tab.page.locator('input[name="new_password_confirm"]').fill(NEW_PASSWORD)
      await Promise.all([tab.page.waitForURL(`${base}/api/auth/email/reset-password`), tab.page.locator('button[type="submit"]').click()])
      await expect(tab.page.locator('h1').innerText()).resolves.toBe('Password changed')

      const auth = await authorization()
      await tab.page.goto(auth.url)
      await expectSignInPage(tab)
      await submitSignIn(tab, user.email, NEW_PASSWORD)
      await expectConsentPage(tab)
      const { landed, chain } = await arriveAtReceiver(tab, auth, () => approveButton(tab).click())
      expect(chain).toEqual(FROM_CONSENT)
      expect((await redeem(auth, landed)).id).toBe(user.id)
      expect(tab.problems).toEqual([])
    }, 60_000)

    it('prompt=login with a live session: the sign-in page even so, then the consent page, then the receiver', async () => {
      const user = await returningUser('prompt_login_user')
      const tab = await openTab(user.cookie)
      const auth = await authorization({ prompt: 'login' })

      await tab.page.goto(auth.url)
      await expectSignInPage(tab)
      await submitSignIn(tab, user.email, user.password)
      // prompt=login also asks on the consent page, whatever was approved before.
      await expectConsentPage(tab)
      const { landed, chain } = await arriveAtReceiver(tab, auth, () => approveButton(tab).click())
      expect(chain).toEqual(FROM_CONSENT)
      expect((await redeem(auth, landed)).id).toBe(user.id)
      expect(tab.problems).toEqual([])
    }, 60_000)

    it('prompt=consent: the consent page despite the remembered approval, then the receiver', async () => {
      const user = await returningUser('prompt_consent_user')
      const tab = await openTab(user.cookie)
      const auth = await authorization({ prompt: 'consent' })

      await tab.page.goto(auth.url)
      await expectConsentPage(tab)
      const { landed, chain } = await arriveAtReceiver(tab, auth, () => approveButton(tab).click())
      expect(chain).toEqual(FROM_CONSENT)
      expect((await redeem(auth, landed)).id).toBe(user.id)
      expect(tab.problems).toEqual([])
    }, 60_000)

    it('prompt=none: a code at once with a session and a remembered approval; error=login_required without a session', async () => {
      const user = await returningUser('prompt_none_user')
      const signedIn = await openTab(user.cookie)
      const silent = await authorization({ prompt: 'none' })
      const withSession = await arriveAtReceiver(signedIn, silent, () => signedIn.page.goto(silent.url))
      expect(withSession.chain).toEqual(['GET /api/oauth2/auth', 'GET receiver'])
      expect((await redeem(silent, withSession.landed)).id).toBe(user.id)

      const anonymous = await openTab()
      const refused = await authorization({ prompt: 'none' })
      const withoutSession = await arriveAtReceiver(anonymous, refused, () => anonymous.page.goto(refused.url))
      expect(withoutSession.chain).toEqual(['GET /api/oauth2/auth', 'GET receiver'])
      expectRefusal(refused, withoutSession.landed, 'login_required')
      expect([...signedIn.problems, ...anonymous.problems]).toEqual([])
    }, 60_000)

    it('a returning user sees the team chosen last time preselected; Approve without touching the selector binds that team', async () => {
      const user = await registerOverHttp(base, 'team_returning_user')
      const created = await apiJson(base, 'POST', '/api/teams', { cookie: user.cookie, body: { name: 'Chosen Crew' } })
      expect(created.status, created.text).toBe(201)
      const crew = created.json.data.team as { id: string }
      // The first approval chose Chosen Crew, not the default team.
      const first = await authorizeAndApprove(app, user.cookie, { redirectUri: receiver.callback, scope: ALL_SCOPES, teamId: crew.id })
      expect(first.skipped).toBe(false)

      const tab = await openTab(user.cookie)
      // prompt=consent: the page even though the approval is remembered.
      const auth = await authorization({ prompt: 'consent' })
      await tab.page.goto(auth.url)
      await expectConsentPage(tab)
      const selector = tab.page.locator('select[name="team_id"]')
      await expect(selector.inputValue()).resolves.toBe(crew.id)
      await expect(selector.locator('option:checked').innerText()).resolves.toBe('Chosen Crew')

      const { landed, chain } = await arriveAtReceiver(tab, auth, () => approveButton(tab).click())
      expect(chain).toEqual(FROM_CONSENT)
      const { user: owner, tokens } = await redeemTokens(auth, landed)
      expect(owner.id).toBe(user.id)
      // The token is bound to Chosen Crew: it lists that team alone.
      const teams = await fetch(`${base}/api/teams/me`, { headers: { authorization: `Bearer ${tokens.access_token}` } })
      expect(teams.status).toBe(200)
      expect(((await teams.json()) as { data: { teams: Array<{ id: string }> } }).data.teams.map((team) => team.id)).toEqual([crew.id])
      expect(tab.problems).toEqual([])
    }, 60_000)

    it('Deny: the receiver gets error=access_denied with state and iss, and no code', async () => {
      const user = await registerOverHttp(base, 'denying_user')
      const tab = await openTab(user.cookie)
      const auth = await authorization()

      await tab.page.goto(auth.url)
      await expectConsentPage(tab)
      const { landed, chain } = await arriveAtReceiver(tab, auth, () => tab.page.locator('button[name="decision"][value="deny"]').click())
      expect(chain).toEqual(FROM_CONSENT)
      expectRefusal(auth, landed, 'access_denied')
      expect(tab.problems).toEqual([])
    }, 60_000)

    it('provider sign-in from the sign-in page: the consent page, then the receiver; the next time straight to the receiver', async () => {
      const someone = providerUser({ login: `octo-walker-${dialect}` })
      provider.configure({ user: someone })
      const providerLink = (tab: Tab) => tab.page.locator('a[href^="/api/auth/provider/login"]')

      const first = await openTab()
      const auth = await authorization()
      await first.page.goto(auth.url)
      await expectSignInPage(first)
      await providerLink(first).click()
      await expectConsentPage(first)
      const approved = await arriveAtReceiver(first, auth, () => approveButton(first).click())
      expect(approved.chain).toEqual(FROM_CONSENT)
      const user = await redeem(auth, approved.landed)
      expect(user.email).toBe(expectedEmail(someone))

      // A link, not a form: form-action has no say over this chain, which ends at the client all the same.
      const again = await openTab()
      const next = await authorization()
      await again.page.goto(next.url)
      await expectSignInPage(again)
      const straight = await arriveAtReceiver(again, next, () => providerLink(again).click())
      expect(straight.chain).toEqual([
        'GET /api/auth/provider/login', 'GET provider /login/oauth/authorize', 'GET /api/auth/provider/callback', 'GET /api/oauth2/consent', 'GET receiver',
      ])
      expect((await redeem(next, straight.landed)).id).toBe(user.id)
      expect([...first.problems, ...again.problems]).toEqual([])
    }, 60_000)

    it('a registered client on the IPv6 loopback ([::1]): the consent form, then the sign-in form of a returning user, reach its receiver', async () => {
      const receiver6 = await startReceiver('::1')
      try {
        const registered = await apiJson(base, 'POST', '/api/oauth2/register', {
          body: { client_name: 'IPv6 loopback tool', redirect_uris: ['http://[::1]/oauth/callback'], token_endpoint_auth_method: 'none' },
        })
        expect(registered.status, registered.text).toBe(201)
        const client: oauth.Client = { client_id: registered.json.client_id as string, token_endpoint_auth_method: 'none' }
        const user = await registerOverHttp(base, 'ipv6_user')

        const first = await openTab()
        const auth = await authorization({ client, scope: 'user:read', to: receiver6 })
        await first.page.goto(auth.url)
        await expectSignInPage(first)
        await submitSignIn(first, user.email, user.password)
        await expectConsentPage(first)
        const approved = await arriveAtReceiver(first, auth, () => approveButton(first).click())
        expect(approved.chain).toEqual(FROM_CONSENT)
        expect((await redeem(auth, approved.landed)).id).toBe(user.id)

        const again = await openTab()
        const next = await authorization({ client, scope: 'user:read', to: receiver6 })
        await again.page.goto(next.url)
        await expectSignInPage(again)
        const straight = await arriveAtReceiver(again, next, () => submitSignIn(again, user.email, user.password))
        expect(straight.chain).toEqual(FROM_SIGN_IN)
        expect((await redeem(next, straight.landed)).id).toBe(user.id)
        expect([...first.problems, ...again.problems]).toEqual([])
      } finally {
        await receiver6.close()
      }
    }, 60_000)
  })
})

/** The reset link mailed to `email` (mails arrive asynchronously; other mails may come first). */
async function resetLink(sink: SmtpSink, email: string): Promise<string> {
  const deadline = Date.now() + 10_000
  for (;;) {
    const mail = sink.messages.find((message) => message.to.includes(email) && /reset-password\?token=/.test(message.text))
    if (mail !== undefined) return /https?:\/\/\S+\/api\/auth\/email\/reset-password\?token=[A-Za-z0-9_-]+/.exec(mail.text)![0]
    if (Date.now() > deadline) throw new Error(`no reset mail for ${email}; mails: ${sink.messages.map((message) => `${message.to.join(',')}: ${message.subject}`).join(' | ')}`)
    await sleep(50)
  }
}
