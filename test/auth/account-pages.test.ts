import { sql } from 'drizzle-orm'
import type { FastifyInstance, LightMyRequestResponse } from 'fastify'
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest'
import { safeReturnTo } from '../../src/modules/provider-login/return-to.js'
import type { SettingChange } from '../../src/modules/settings/service.js'
import { setCookieLines } from '../helpers/accounts.js'
import { createTestContext, type TestContext } from '../helpers/app.js'
import { DIALECTS } from '../helpers/database.js'
import { authorizeParams, consentRequestId, htmlTags, inputValue, isHtml, locationOf, pkce, startAuthorization, unescapeHtml } from '../helpers/oauth.js'
import { smtpSettings, startSmtpSink, type SmtpSink } from '../helpers/smtp-sink.js'
import { pageBrowser as injectedPageBrowser } from '../helpers/page-browser.js'
import { rawRows } from '../helpers/sql.js'

/**
 * The account pages the backend serves when no frontend is configured: the landing page, sign-in,
 * the account page and sign-out, forgot password and a new verification mail, and the links that
 * lead there from the pages behind mail links and from the OAuth sign-in page.
 */

const PUBLIC_URL = 'http://localhost:3000'
const PASSWORD = 'first password 1'
const NEW_PASSWORD = 'second password 2'
const SIGN_IN = '/api/auth/sign-in'
const ACCOUNT = '/api/auth/account'
const SIGN_OUT = '/api/auth/sign-out'
const FORGOT = '/api/auth/forgot-password'
const RESEND = '/api/auth/resend-verification'
const RESET = '/api/auth/email/reset-password'
const LOCKOUT = { maxFailures: 3, windowMs: 900_000, lockMs: 900_000 }

/** The page's text, tags removed, entities decoded. */
const textOf = (response: LightMyRequestResponse) => unescapeHtml(response.body.replace(/<[^>]+>/g, ' ')).replace(/\s+/g, ' ')
const hrefsOf = (response: LightMyRequestResponse) => htmlTags(response.body, 'a').map((a) => a.href)

function expectPage(response: LightMyRequestResponse, status: number) {
  expect(response.statusCode, response.body).toBe(status)
  expect(isHtml(response)).toBe(true)
  const csp = String(response.headers['content-security-policy'])
  expect(csp).toContain("default-src 'none'")
  expect(csp).toContain("form-action 'self'")
  expect(csp).not.toContain('script-src')
  expect(response.body).not.toContain('<script')
  expect(response.headers['cache-control']).toBe('no-store')
}

/** The page browser (helpers/page-browser.ts), and a form submitted as the page that shows it would. */
function pageBrowser(app: FastifyInstance, origin = PUBLIC_URL) {
  const browser = injectedPageBrowser(app, origin)
  return {
    ...browser,
    /** Opens `url` and posts its form: the hidden fields the page gave, and `fields`. */
    async submit(url: string, fields: Record<string, string>, headers: Record<string, string> = {}) {
      const page = await browser.get(url)
      expect(inputValue(page.body, 'csrf_token'), page.body).toBeDefined()
      const hidden = htmlTags(page.body, 'input').filter((input) => input.type === 'hidden').map((input) => [input.name!, input.value ?? ''])
      const [form] = htmlTags(page.body, 'form')
      return browser.post(form!.action!, { ...Object.fromEntries(hidden), ...fields }, headers)
    },
  }
}

describe.each(DIALECTS)('the account pages on %s', (dialect) => {
  let ctx: TestContext
  let app: FastifyInstance
  let sink: SmtpSink
  let counter = 0

  const settings = (changes: SettingChange[]) => app.services.settings.update(changes)
  const json = (method: 'GET' | 'POST', url: string, payload?: object, cookie?: string): Promise<LightMyRequestResponse> =>
    app.inject({ method, url, ...(payload === undefined ? {} : { payload }), headers: { accept: 'application/json', ...(cookie === undefined ? {} : { cookie }) } })

  async function newUser(): Promise<{ name: string; email: string }> {
    const name = `pages${++counter}`
    const email = `${name}@example.test`
    const registered = await json('POST', '/api/auth/email/register', { username: name, email, password: PASSWORD })
    expect(registered.statusCode, registered.body).toBe(201)
    return { name, email }
  }

  /** The user's sessions besides the one registration started. */
  const liveSessions = async (name: string) => (await sessionRows(name)) - 1
  const sessionRows = async (name: string) =>
    Number((await rawRows(app.services.database, sql`select count(*) from sessions s join users u on u.id = s.user_id where u.username = ${name}`))[0]![0])

  beforeAll(async () => {
    ctx = await createTestContext(dialect)
    sink = await startSmtpSink()
    const generous = { max: 10_000, windowMs: 60_000 }
    ;({ app } = await ctx.build({ limits: { loginOrRegister: generous, forgotPassword: generous, lockout: LOCKOUT } }))
    await newUser() // the first user, the admin
  })
  beforeEach(async () => {
    await settings([
      ...smtpSettings(sink, { 'global.page_url': '', 'global.require_email_verification': false }),
      { key: 'global.enable_login', value: true },
      { key: 'global.enable_swagger_docs', value: true },
      { key: 'provider.oauth.enabled', value: false },
    ])
    sink.clear()
  })
  afterAll(async () => {
    await ctx?.close()
    await sink?.close()
  })

  describe('GET /', () => {
    it('a browser gets the landing page: the service name, sign in, API documentation, health; no script', async () => {
      const page = await pageBrowser(app).get('/')
      expectPage(page, 200)
      expect(htmlTags(page.body, 'h1')).toHaveLength(1)
      expect(textOf(page)).toContain('Service backend')
      expect(hrefsOf(page)).toEqual([SIGN_IN, '/documentation', '/api/health'])
    })

    it('an API client gets a JSON index of the same links; with the documentation off, neither side links to it', async () => {
      for (const accept of [undefined, '*/*', 'application/json']) {
        const index = await app.inject({ method: 'GET', url: '/', headers: accept === undefined ? {} : { accept } })
        expect(index.statusCode).toBe(200)
        expect(index.json()).toMatchObject({
          success: true,
          data: { name: 'Service backend', api_version: expect.any(String), links: { sign_in: SIGN_IN, documentation: '/documentation', openapi: '/documentation/json', health: '/api/health' } },
        })
      }
      await settings([{ key: 'global.enable_swagger_docs', value: false }])
      expect((await app.inject({ method: 'GET', url: '/' })).json().data.links).toMatchObject({ documentation: null, openapi: null })
      expect(hrefsOf(await pageBrowser(app).get('/'))).toEqual([SIGN_IN, '/api/health'])
    })
  })

  describe('sign-in, account, sign-out', () => {
    it('the form sets its CSRF cookie (HttpOnly, SameSite=Strict, /api/auth); a right password signs in, 303 to the account page', async () => {
      const { name, email } = await newUser()
      const browser = pageBrowser(app)
      const page = await browser.get(SIGN_IN)
      expectPage(page, 200)
      const formCookie = setCookieLines(page).find((line) => line.startsWith('account_form='))
      expect(formCookie).toMatch(/HttpOnly/i)
      expect(formCookie).toMatch(/SameSite=Strict/i)
      expect(formCookie).toMatch(/Path=\/api\/auth(;|$)/)
      expect(htmlTags(page.body, 'form')).toEqual([expect.objectContaining({ method: 'post', action: SIGN_IN })])

      const signedIn = await browser.submit(SIGN_IN, { login: email, password: PASSWORD })
      expect(signedIn.statusCode, signedIn.body).toBe(303)
      expect(signedIn.headers.location).toBe(ACCOUNT)
      expect(browser.jar.get('auth_session')).toBeDefined()
      const account = await browser.get(ACCOUNT)
      expectPage(account, 200)
      expect(textOf(account)).toContain(`Signed in as ${name} (${email})`)
      expect(htmlTags(account.body, 'form')).toEqual([expect.objectContaining({ method: 'post', action: SIGN_OUT })])
      // The session is a real one: the JSON API knows it.
      expect((await json('GET', '/api/users/me', undefined, `auth_session=${browser.jar.get('auth_session')}`)).json().data.username).toBe(name)
      // A signed-in visitor of the sign-in page goes on to the account page.
      const again = await browser.get(SIGN_IN)
      expect(again.statusCode).toBe(303)
      expect(again.headers.location).toBe(ACCOUNT)
    })

    it('the account page without a session sends the browser to the sign-in page', async () => {
      const page = await pageBrowser(app).get(ACCOUNT)
      expect(page.statusCode).toBe(303)
      expect(page.headers.location).toBe(SIGN_IN)
    })

    it('sign-out ends the session and clears the cookie, then the sign-in page says so', async () => {
      const { name } = await newUser()
      const browser = pageBrowser(app)
      expect((await browser.submit(SIGN_IN, { login: name, password: PASSWORD })).statusCode).toBe(303)
      const session = browser.jar.get('auth_session')!
      expect(await liveSessions(name)).toBe(1)

      const out = await browser.submit(ACCOUNT, {})
      expect(out.statusCode, out.body).toBe(303)
      expect(out.headers.location).toBe(`${SIGN_IN}?signed_out=1`)
      expect(setCookieLines(out).find((line) => line.startsWith('auth_session='))).toMatch(/^auth_session=;.*Max-Age=0/i)
      expect(await liveSessions(name)).toBe(0)
      expect((await json('GET', '/api/users/me', undefined, `auth_session=${session}`)).statusCode).toBe(401)
      const landing = await browser.get(out.headers.location as string)
      expectPage(landing, 200)
      expect(textOf(landing)).toContain('You are signed out.')
    })

    it('sign-out without the page\'s token (another session\'s, none, no cookie) is refused: 403, the session stays', async () => {
      const { name } = await newUser()
      const browser = pageBrowser(app)
      expect((await browser.submit(SIGN_IN, { login: name, password: PASSWORD })).statusCode).toBe(303)
      const other = pageBrowser(app)
      expect((await other.submit(SIGN_IN, { login: name, password: PASSWORD })).statusCode).toBe(303)
      const otherToken = inputValue((await other.get(ACCOUNT)).body, 'csrf_token')!

      for (const fields of [{ csrf_token: otherToken }, {}] as Array<Record<string, string>>) {
        const refused = await browser.post(SIGN_OUT, fields)
        expectPage(refused, 403)
        expect(textOf(refused)).toContain('This form had expired')
        expect(inputValue(refused.body, 'csrf_token')).toMatch(/^[A-Za-z0-9_-]{43}$/)
      }
      // The right token of this browser's page, but not the cookie it belongs with.
      const ownToken = inputValue((await browser.get(ACCOUNT)).body, 'csrf_token')!
      const noCookie = await app.inject({
        method: 'POST', url: SIGN_OUT, payload: `csrf_token=${ownToken}`,
        headers: { 'content-type': 'application/x-www-form-urlencoded', accept: 'application/json', cookie: `auth_session=${browser.jar.get('auth_session')}` },
      })
      expect(noCookie.statusCode).toBe(403)
      expect(noCookie.json().code).toBe('INVALID_CSRF_TOKEN')
      expect(await liveSessions(name)).toBe(2)
    })

    it('a cross-site sign-in or sign-out form is refused (login CSRF), whatever it carries; the loopback spellings count as this service', async () => {
      const { name } = await newUser()
      const evil = pageBrowser(app, 'https://evil.example')
      const refused = await evil.submit(SIGN_IN, { login: name, password: PASSWORD })
      expectPage(refused, 403)
      expect(textOf(refused)).toContain('Cross-site')
      expect(evil.jar.get('auth_session')).toBeUndefined()

      const loopback = pageBrowser(app, 'http://127.0.0.1:3000')
      expect((await loopback.submit(SIGN_IN, { login: name, password: PASSWORD })).statusCode).toBe(303)
      const token = inputValue((await loopback.get(ACCOUNT)).body, 'csrf_token')!
      const crossSiteOut = await loopback.post(SIGN_OUT, { csrf_token: token }, { origin: 'https://evil.example' })
      expectPage(crossSiteOut, 403)
      expect(await liveSessions(name)).toBe(1)
    })

    it('a sign-in form without its token, or with another form\'s token, is shown again (403) and signs nobody in', async () => {
      const { name } = await newUser()
      const browser = pageBrowser(app)
      const forgotToken = inputValue((await browser.get(FORGOT)).body, 'csrf_token')!
      for (const fields of [{}, { csrf_token: forgotToken }] as Array<Record<string, string>>) {
        const refused = await browser.post(SIGN_IN, { login: name, password: PASSWORD, ...fields })
        expectPage(refused, 403)
        expect(inputValue(refused.body, 'login')).toBe(name)
        expect(browser.jar.get('auth_session')).toBeUndefined()
      }
      const api = await app.inject({
        method: 'POST', url: SIGN_IN, payload: new URLSearchParams({ login: name, password: PASSWORD }).toString(),
        headers: { 'content-type': 'application/x-www-form-urlencoded', accept: 'application/json' },
      })
      expect(api.statusCode).toBe(403)
      expect(api.json()).toMatchObject({ success: false, code: 'INVALID_CSRF_TOKEN' })
      expect(await liveSessions(name)).toBe(0)
    })

    it('a wrong password: the form again with the reason (401), the login kept; the lockout applies (429 with Retry-After), even to the right password', async () => {
      const { name } = await newUser()
      const browser = pageBrowser(app)
      const wrong = await browser.submit(SIGN_IN, { login: name, password: 'wrong password' })
      expectPage(wrong, 401)
      expect(textOf(wrong)).toContain('Invalid login or password.')
      expect(inputValue(wrong.body, 'login')).toBe(name)
      for (let attempt = 1; attempt < LOCKOUT.maxFailures; attempt++) await browser.submit(SIGN_IN, { login: name, password: 'wrong password' })
      const locked = await browser.submit(SIGN_IN, { login: name, password: PASSWORD })
      expectPage(locked, 429)
      expect(locked.headers['retry-after']).toMatch(/^[1-9][0-9]*$/)
      expect(textOf(locked)).toContain('locked')
      expect(browser.jar.get('auth_session')).toBeUndefined()
    })

    it('login switched off: 403 LOGIN_DISABLED on the form; a user\'s session shows the account page with a notice', async () => {
      const { name } = await newUser()
      const browser = pageBrowser(app)
      expect((await browser.submit(SIGN_IN, { login: name, password: PASSWORD })).statusCode).toBe(303)
      await settings([{ key: 'global.enable_login', value: false }])
      const refused = await pageBrowser(app).submit(SIGN_IN, { login: name, password: PASSWORD })
      expectPage(refused, 403)
      expect(textOf(refused)).toContain('Login is disabled')
      const account = await browser.get(ACCOUNT)
      expectPage(account, 200)
      expect(textOf(account)).toContain('Sign-in is switched off')
    })

    it('verification required and pending: 403 with a link to ask for a new verification mail', async () => {
      await settings([{ key: 'global.require_email_verification', value: true }])
      const { name } = await newUser()
      const refused = await pageBrowser(app).submit(SIGN_IN, { login: name, password: PASSWORD })
      expectPage(refused, 403)
      expect(textOf(refused)).toContain('Verify your email address')
      expect(hrefsOf(refused)).toContain(RESEND)
    })

    it('links: "Forgot password?" only while mail goes out; provider sign-in (back to the account page) only while it is on', async () => {
      const page = await pageBrowser(app).get(SIGN_IN)
      expect(hrefsOf(page)).toEqual([FORGOT])
      await settings([
        { key: 'global.send_mail', value: false },
        { key: 'provider.oauth.enabled', value: true },
        { key: 'provider.oauth.client_id', value: 'client' },
        { key: 'provider.oauth.client_secret', value: 'secret' },
      ])
      const hrefs = hrefsOf(await pageBrowser(app).get(SIGN_IN))
      expect(hrefs).toEqual([`/api/auth/provider/login?return_to=${encodeURIComponent(ACCOUNT)}`])
      const returnTo = new URL(hrefs[0]!, PUBLIC_URL).searchParams.get('return_to')!
      expect(safeReturnTo(returnTo, { publicUrl: PUBLIC_URL, pageUrl: '' })).toBe(ACCOUNT)
    })
  })

  describe('forgot password', () => {
    it('the same page, status and body for an account and for no account; only the account gets a mail, whose link works', async () => {
      const { name, email } = await newUser()
      const known = await pageBrowser(app).submit(FORGOT, { email })
      const unknown = await pageBrowser(app).submit(FORGOT, { email: 'nobody@example.test' })
      expectPage(known, 200)
      expect(unknown.statusCode).toBe(known.statusCode)
      expect(unknown.body).toBe(known.body)
      expect(textOf(known)).toContain('If an account with this address exists')
      expect(hrefsOf(known)).toEqual([SIGN_IN])

      const [mail] = await sink.waitFor(1)
      expect(mail!.to).toEqual([email])
      await new Promise((resolve) => setTimeout(resolve, 100))
      expect(sink.messages).toHaveLength(1)
      const link = new RegExp(`${PUBLIC_URL}${RESET}\\?token=[A-Za-z0-9_-]+`).exec(mail!.text)![0]
      const browser = pageBrowser(app)
      const done = await browser.submit(link.slice(PUBLIC_URL.length), { new_password: NEW_PASSWORD, new_password_confirm: NEW_PASSWORD })
      expectPage(done, 200)
      expect(hrefsOf(done)).toEqual([SIGN_IN])
      expect((await browser.submit(SIGN_IN, { login: name, password: NEW_PASSWORD })).headers.location).toBe(ACCOUNT)

      // The used link's page points to a new reset mail and to the sign-in page.
      const used = await pageBrowser(app).get(link.slice(PUBLIC_URL.length))
      expectPage(used, 400)
      expect(textOf(used)).toContain('already used')
      expect(hrefsOf(used)).toEqual([FORGOT, SIGN_IN])
    })

    it('a malformed address gets the form again (400) and sends nothing; without its token, 403; from another site, 403', async () => {
      const { email } = await newUser()
      const malformed = await pageBrowser(app).submit(FORGOT, { email: 'not an address' })
      expectPage(malformed, 400)
      expect(inputValue(malformed.body, 'email')).toBe('not an address')
      expect(textOf(malformed)).toContain('Enter the email address of your account')

      const browser = pageBrowser(app)
      await browser.get(FORGOT)
      expectPage(await browser.post(FORGOT, { email }), 403)
      expectPage(await pageBrowser(app, 'https://evil.example').submit(FORGOT, { email }), 403)
      await new Promise((resolve) => setTimeout(resolve, 100))
      expect(sink.messages).toEqual([])
    })

    it('while mail does not go out: 503 EMAIL_DISABLED, a page for a browser', async () => {
      await settings([{ key: 'global.send_mail', value: false }])
      const page = await pageBrowser(app).get(FORGOT)
      expectPage(page, 503)
      expect(textOf(page)).toContain('Mail is switched off')
      expect((await json('GET', FORGOT)).json().code).toBe('EMAIL_DISABLED')
    })

    it('shares the per-IP limit of forgot-password requests (429 with Retry-After)', async () => {
      const limited = (await ctx.build({ limits: { forgotPassword: { max: 2, windowMs: 60_000 } } })).app
      // In-memory SQLite gives each app a database of its own.
      await limited.services.settings.update(smtpSettings(sink, { 'global.page_url': '' }))
      const browser = pageBrowser(limited)
      expect((await browser.submit(FORGOT, { email: 'a@example.test' })).statusCode).toBe(200)
      expect((await limited.inject({ method: 'POST', url: '/api/auth/email/forgot-password', payload: { email: 'b@example.test' } })).statusCode).toBe(200)
      const refused = await browser.submit(FORGOT, { email: 'c@example.test' })
      expectPage(refused, 429)
      expect(refused.headers['retry-after']).toMatch(/^[1-9][0-9]*$/)
    })
  })

  describe('new verification mail and the verification pages', () => {
    it('asks for a new link with the same answer for any address; the mail goes only to an unverified account; the verified page links to sign-in', async () => {
      await settings([{ key: 'global.require_email_verification', value: true }])
      const { email } = await newUser()
      const [registration] = await sink.waitFor(1)
      sink.clear()
      const verifyPath = /\/api\/auth\/email\/verify\?token=[A-Za-z0-9_-]+/.exec(registration!.text)![0]

      const known = await pageBrowser(app).submit(RESEND, { email })
      const unknown = await pageBrowser(app).submit(RESEND, { email: 'nobody@example.test' })
      expectPage(known, 200)
      expect(unknown.body).toBe(known.body)
      const [resent] = await sink.waitFor(1)
      expect(resent!.to).toEqual([email])

      const verified = await pageBrowser(app).get(verifyPath)
      expectPage(verified, 200)
      expect(hrefsOf(verified)).toEqual([SIGN_IN])
      const again = await pageBrowser(app).get(verifyPath)
      expectPage(again, 400)
      expect(hrefsOf(again)).toEqual([SIGN_IN, RESEND])
    })
  })

  describe('the OAuth sign-in page', () => {
    it('links to the forgot-password page while mail goes out, and not otherwise', async () => {
      const signInPage = async () => {
        const started = await startAuthorization(app, authorizeParams(pkce().challenge))
        const requestId = consentRequestId(locationOf(started))
        expect(requestId, started.body).toBeDefined()
        const page = await pageBrowser(app).get(`/api/oauth2/consent?request_id=${requestId}`)
        expectPage(page, 200)
        expect(htmlTags(page.body, 'form')[0]?.action).toBe('/api/oauth2/consent/login')
        return page
      }
      expect(hrefsOf(await signInPage())).toContain(FORGOT)
      await settings([{ key: 'global.send_mail', value: false }])
      expect(hrefsOf(await signInPage())).not.toContain(FORGOT)
    })
  })

  it('every page route is in the OpenAPI document with a description', async () => {
    const document = (await app.inject({ method: 'GET', url: '/documentation/json' })).json()
    const routes = [['get', '/'], ['get', SIGN_IN], ['post', SIGN_IN], ['get', ACCOUNT], ['post', SIGN_OUT], ['get', FORGOT], ['post', FORGOT], ['get', RESEND], ['post', RESEND]]
    for (const [method, path] of routes) {
      const operation = document.paths[path!]?.[method!]
      expect(operation?.description, `${method} ${path}`).toMatch(/.{40,}/)
    }
    expect(Object.keys(document.paths[SIGN_IN].get.responses['200'].content)).toEqual(['text/html'])
    expect(document.paths['/'].get.operationId).toBe('getLanding')
  })
})

describe.each(DIALECTS)('the landing page before the database is set up, on %s', (dialect) => {
  let ctx: TestContext

  beforeAll(async () => {
    ctx = await createTestContext(dialect, { file: true })
  })
  afterAll(() => ctx?.close())

  it('answers without the sign-in link, and says why; the sign-in page answers 503 as a page', async () => {
    const { app } = await ctx.build({ env: { DATABASE_AUTO_SETUP: 'false' } })
    const index = await app.inject({ method: 'GET', url: '/' })
    expect(index.statusCode, index.body).toBe(200)
    expect(index.json().data.links).toEqual({ sign_in: null, documentation: '/documentation', openapi: '/documentation/json', health: '/api/health' })
    const page = await pageBrowser(app).get('/')
    expectPage(page, 200)
    expect(hrefsOf(page)).toEqual(['/documentation', '/api/health'])
    expect(textOf(page)).toContain('The database is not set up yet')
    const signIn = await pageBrowser(app).get(SIGN_IN)
    expectPage(signIn, 503)
  })
})
