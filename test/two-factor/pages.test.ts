import type { FastifyInstance, LightMyRequestResponse } from 'fastify'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { DEFAULT_PASSWORD } from '../helpers/accounts.js'
import { createTestContext, type TestContext } from '../helpers/app.js'
import { manualClock, type ManualClock } from '../helpers/clock.js'
import { DIALECTS } from '../helpers/database.js'
import { authorizeParams, consentDetails, consentRequestId, isHtml, locationOf, pkce, startAuthorization } from '../helpers/oauth.js'
import { signUp, type Account } from '../helpers/teams.js'
import { codeAt, enrol, hiddenValue, pageBrowser, STEP_MS, wrongCodeAt } from './helpers.js'

/**
 * The two-factor pages over app.inject, as a browser uses them: the sign-in form leads to the
 * second step's page, which leads to the account page (or back to an OAuth consent page); the
 * account's two-factor page sets it up (QR code, secret, confirm, recovery codes) and switches it off.
 */
function expectPage(response: LightMyRequestResponse, status: number) {
  expect(response.statusCode, response.body.slice(0, 500)).toBe(status)
  expect(isHtml(response)).toBe(true)
  const csp = String(response.headers['content-security-policy'])
  expect(csp).toContain("default-src 'none'")
  expect(csp).toContain('img-src \'self\' data:')
  expect(csp).not.toContain('script-src')
  expect(response.body).not.toContain('<script')
}

describe.each(DIALECTS)('the two-factor pages on %s', (dialect) => {
  let ctx: TestContext
  let app: FastifyInstance
  let clock: ManualClock
  let n = 0
  const fresh = () => signUp(app, `pg_${dialect.slice(0, 2)}_${++n}`)

  /** The sign-in form, up to the answer of its post. */
  async function signIn(browser: ReturnType<typeof pageBrowser>, account: Account): Promise<LightMyRequestResponse> {
    const page = await browser.get('/api/auth/sign-in')
    return browser.post('/api/auth/sign-in', { csrf_token: hiddenValue(page.body, 'csrf_token')!, login: account.email, password: DEFAULT_PASSWORD })
  }

  beforeAll(async () => {
    ctx = await createTestContext(dialect)
    clock = manualClock()
    ;({ app } = await ctx.build({ clock, env: { RATE_LIMIT_ENABLED: 'false' } }))
    await signUp(app, `pg_${dialect.slice(0, 2)}_admin`)
  })
  afterAll(() => ctx.close())

  it('sets two-factor up from its page: QR code, secret, a wrong then a right code, the recovery codes once; then switches it off', async () => {
    const account = await fresh()
    const browser = pageBrowser(app)
    browser.jar.set('auth_session', account.cookie.split('=')[1]!)
    const accountPage = await browser.get('/api/auth/account')
    expectPage(accountPage, 200)
    expect(accountPage.body).toContain('href="/api/auth/account/two-factor"')
    const off = await browser.get('/api/auth/account/two-factor')
    expectPage(off, 200)
    expect(off.body).toContain('<strong>off</strong>')

    const setup = await browser.post('/api/auth/account/two-factor/setup', { csrf_token: hiddenValue(off.body, 'csrf_token')! })
    expectPage(setup, 200)
    expect(setup.body).toMatch(/<img src="data:image\/svg\+xml;base64,[A-Za-z0-9+/=]+" alt="QR code/)
    const secret = /data-secret="([A-Z2-7]+)"/.exec(setup.body)![1]!
    const svg = Buffer.from(/base64,([A-Za-z0-9+/=]+)/.exec(setup.body)![1]!, 'base64').toString()
    expect(svg).toMatch(/^<svg/)

    const wrong = await browser.post('/api/auth/account/two-factor/enable', { csrf_token: hiddenValue(setup.body, 'csrf_token')!, code: wrongCodeAt(secret, clock.now()) })
    expectPage(wrong, 400)
    expect(wrong.body).toContain(`data-secret="${secret}"`)
    expect(wrong.body).toContain('The code is wrong')
    const on = await browser.post('/api/auth/account/two-factor/enable', { csrf_token: hiddenValue(wrong.body, 'csrf_token')!, code: codeAt(secret, clock.now()) })
    expectPage(on, 200)
    const codes = [...on.body.matchAll(/<li><code>([0-9a-z-]+)<\/code><\/li>/g)].map((match) => match[1])
    expect(codes).toHaveLength(10)
    const status = await browser.get('/api/auth/account/two-factor')
    expect(status.body).toContain('<strong>on</strong>')
    expect(status.body).toContain('Recovery codes left: 10.')
    expect(status.body).not.toContain(codes[0]!)

    // A stale form is shown again (403); a wrong password is refused (400); then off.
    const stale = await browser.post('/api/auth/account/two-factor/disable', { csrf_token: 'stale', password: DEFAULT_PASSWORD, code: codes[0]! })
    expectPage(stale, 403)
    const badPassword = await browser.post('/api/auth/account/two-factor/disable', { csrf_token: hiddenValue(stale.body, 'csrf_token')!, password: 'wrong one', code: codes[0]! })
    expectPage(badPassword, 400)
    expect(badPassword.body).toContain('The password is wrong.')
    clock.advance(STEP_MS)
    const disabled = await browser.post('/api/auth/account/two-factor/disable', { csrf_token: hiddenValue(badPassword.body, 'csrf_token')!, password: DEFAULT_PASSWORD, code: codeAt(secret, clock.now()) })
    expectPage(disabled, 200)
    expect(disabled.body).toContain('Two-factor authentication is off.')
    expect(disabled.body).toContain('<strong>off</strong>')
  })

  it('the sign-in form leads to the second step\'s page, and a right code to the account page', async () => {
    const account = await fresh()
    const { secret } = await enrol(app, account, clock.now())
    const browser = pageBrowser(app)
    const signedIn = await signIn(browser, account)
    expect(signedIn.statusCode, signedIn.body).toBe(303)
    expect(signedIn.headers.location).toBe('/api/auth/sign-in/two-factor')
    expect(browser.jar.has('auth_session')).toBe(false)
    expect(browser.jar.has('two_factor_challenge')).toBe(true)

    const step = await browser.get('/api/auth/sign-in/two-factor')
    expectPage(step, 200)
    const wrong = await browser.post('/api/auth/sign-in/two-factor', { csrf_token: hiddenValue(step.body, 'csrf_token')!, code: wrongCodeAt(secret, clock.now()) })
    expectPage(wrong, 401)
    expect(wrong.body).toContain('The code is wrong')
    clock.advance(STEP_MS)
    const done = await browser.post('/api/auth/sign-in/two-factor', { csrf_token: hiddenValue(wrong.body, 'csrf_token')!, code: codeAt(secret, clock.now()).replace(/^(...)/, '$1 ') })
    expect(done.statusCode, done.body).toBe(303)
    expect(done.headers.location).toBe('/api/auth/account')
    expect(browser.jar.has('auth_session')).toBe(true)
    expect(browser.jar.has('two_factor_challenge')).toBe(false)
    expectPage(await browser.get('/api/auth/account'), 200)
    // The step's page without a challenge leads back to sign-in (which, signed in, goes on to the account).
    const again = await browser.get('/api/auth/sign-in/two-factor')
    expect([again.statusCode, again.headers.location]).toEqual([303, '/api/auth/sign-in'])
  })

  it('a recovery code works in the same field; a used challenge leads back to the sign-in page', async () => {
    const account = await fresh()
    const { recoveryCodes } = await enrol(app, account, clock.now())
    const browser = pageBrowser(app)
    await signIn(browser, account)
    const step = await browser.get('/api/auth/sign-in/two-factor')
    const challenge = browser.jar.get('two_factor_challenge')!
    const done = await browser.post('/api/auth/sign-in/two-factor', { csrf_token: hiddenValue(step.body, 'csrf_token')!, code: recoveryCodes[1]! })
    expect([done.statusCode, done.headers.location]).toEqual([303, '/api/auth/account'])
    // The same challenge again, from a browser that kept it.
    const replay = pageBrowser(app)
    replay.jar.set('two_factor_challenge', challenge)
    replay.jar.set('account_form', browser.jar.get('account_form')!)
    const replayed = await replay.post('/api/auth/sign-in/two-factor', { csrf_token: hiddenValue(step.body, 'csrf_token')!, code: recoveryCodes[2]! })
    expect([replayed.statusCode, replayed.headers.location]).toEqual([303, '/api/auth/sign-in'])
    expect(replay.jar.has('auth_session')).toBe(false)
  })

  it('a sign-in on the OAuth consent page goes through the second step and back to the consent page', async () => {
    const account = await fresh()
    const { secret } = await enrol(app, account, clock.now())
    const started = await startAuthorization(app, authorizeParams(pkce().challenge, { scope: 'user:read' }))
    const requestId = consentRequestId(locationOf(started))!
    const browser = pageBrowser(app)
    const login = await browser.post('/api/oauth2/consent/login', { request_id: requestId, login: account.email, password: DEFAULT_PASSWORD })
    expect(login.statusCode, login.body).toBe(303)
    expect(login.headers.location).toBe(`/api/auth/sign-in/two-factor?request_id=${encodeURIComponent(requestId)}`)
    expect(browser.jar.has('auth_session')).toBe(false)
    const step = await browser.get(login.headers.location as string)
    expectPage(step, 200)
    expect(hiddenValue(step.body, 'request_id')).toBe(requestId)
    clock.advance(STEP_MS)
    const done = await browser.post('/api/auth/sign-in/two-factor', { csrf_token: hiddenValue(step.body, 'csrf_token')!, request_id: requestId, code: codeAt(secret, clock.now()) })
    expect(done.statusCode, done.body).toBe(303)
    expect(done.headers.location).toBe(`/api/oauth2/consent?request_id=${encodeURIComponent(requestId)}`)
    const details = await consentDetails(app, requestId, `auth_session=${browser.jar.get('auth_session')}`)
    expect(details.statusCode, details.body).toBe(200)
  })
})
