import { sql } from 'drizzle-orm'
import type { InjectOptions, LightMyRequestResponse } from 'fastify'
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest'
import type { SettingChange } from '../../src/modules/settings/service.js'
import { setCookieLines } from '../helpers/accounts.js'
import { createTestContext, type TestApp, type TestContext } from '../helpers/app.js'
import { manualClock, type ManualClock } from '../helpers/clock.js'
import { DIALECTS } from '../helpers/database.js'
import { htmlTags, inputValue, isHtml, unescapeHtml } from '../helpers/oauth.js'
import { smtpSettings, startSmtpSink, type ReceivedMail, type SmtpSink } from '../helpers/smtp-sink.js'
import { rawRows } from '../helpers/sql.js'

/**
 * The links of verification and reset mails when no frontend is configured (`global.page_url`
 * empty): pages the backend serves to a browser, JSON for an API client, at the same URLs.
 */

const PUBLIC_URL = 'http://localhost:3000'
const VERIFY = '/api/auth/email/verify'
const RESET = '/api/auth/email/reset-password'
const PASSWORD = 'first password 1'
const NEW_PASSWORD = 'second password 2'
const HOUR = 60 * 60 * 1000
/** What a browser sends when it follows a link or submits a form. */
const BROWSER = { accept: 'text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8' }
const API = { accept: 'application/json' }
const FORM = { 'content-type': 'application/x-www-form-urlencoded' }

function linkIn(mail: ReceivedMail, base: string): string {
  const pattern = new RegExp(`${base.replace(/[/.?]/g, '\\$&')}\\?token=[A-Za-z0-9_-]+`)
  const link = pattern.exec(mail.text)?.[0]
  expect(link, mail.text).toBeDefined()
  expect(pattern.exec(unescapeHtml(mail.html))?.[0]).toBe(link)
  return link!
}

const pathOf = (link: string) => link.slice(PUBLIC_URL.length)
const tokenOf = (link: string) => new URL(link).searchParams.get('token')!
/** The page's text, tags removed, entities decoded. */
const textOf = (response: LightMyRequestResponse) => unescapeHtml(response.body.replace(/<[^>]+>/g, ' ')).replace(/\s+/g, ' ')

function formCookie(response: LightMyRequestResponse): string {
  const line = setCookieLines(response).find((candidate) => candidate.startsWith('reset_form='))
  expect(line).toBeDefined()
  expect(line).toMatch(/HttpOnly/i)
  expect(line).toMatch(/SameSite=Strict/i)
  return line!.split(';')[0]!
}

function expectPage(response: LightMyRequestResponse, status: number) {
  expect(response.statusCode, response.body).toBe(status)
  expect(isHtml(response)).toBe(true)
  const csp = String(response.headers['content-security-policy'])
  expect(csp).toContain("default-src 'none'")
  expect(csp).toContain("form-action 'self'")
  expect(csp).not.toContain('unsafe-inline')
  expect(response.headers['cache-control']).toBe('no-store')
}

describe.each(DIALECTS)('the backend pages behind mail links on %s', (dialect) => {
  let ctx: TestContext
  let subject: TestApp
  let sink: SmtpSink
  let clock: ManualClock
  let counter = 0

  const inject = (options: InjectOptions) => subject.app.inject(options)
  const settings = (changes: SettingChange[]) => subject.app.services.settings.update(changes)
  const fresh = () => `pager${++counter}`
  const login = (name: string, password: string) =>
    inject({ method: 'POST', url: '/api/auth/email/login', payload: { login: name, password } })

  async function verifiedUser(): Promise<string> {
    await settings([{ key: 'global.require_email_verification', value: false }])
    const name = fresh()
    expect((await inject({ method: 'POST', url: '/api/auth/email/register', payload: { username: name, email: `${name}@example.test`, password: PASSWORD } })).statusCode).toBe(201)
    sink.clear()
    return name
  }

  async function resetLink(name: string): Promise<string> {
    const before = sink.messages.length
    expect((await inject({ method: 'POST', url: '/api/auth/email/forgot-password', payload: { email: `${name}@example.test` } })).statusCode).toBe(200)
    return linkIn((await sink.waitFor(before + 1))[before]!, `${PUBLIC_URL}${RESET}`)
  }

  /** Opens the reset link as a browser: the page, its form's fields and the cookie it set. */
  async function openResetPage(link: string) {
    const page = await inject({ method: 'GET', url: pathOf(link), headers: BROWSER })
    expectPage(page, 200)
    return { page, cookie: formCookie(page), csrf: inputValue(page.body, 'csrf_token')!, token: inputValue(page.body, 'token')! }
  }

  const submitReset = (fields: Record<string, string>, headers: Record<string, string>) =>
    inject({ method: 'POST', url: RESET, headers: { ...FORM, ...BROWSER, ...headers }, payload: new URLSearchParams(fields).toString() })

  beforeAll(async () => {
    ctx = await createTestContext(dialect)
    sink = await startSmtpSink()
    clock = manualClock(Date.now())
    const generous = { max: 10_000, windowMs: 60_000 }
    subject = await ctx.build({ clock, limits: { forgotPassword: generous, loginOrRegister: generous } })
    await inject({ method: 'POST', url: '/api/auth/email/register', payload: { username: 'admin', email: 'admin@example.test', password: PASSWORD } })
  })
  beforeEach(async () => {
    await settings(smtpSettings(sink, { 'global.require_email_verification': true, 'global.page_url': '' }))
    sink.clear()
  })
  afterAll(async () => {
    await ctx?.close()
    await sink?.close()
  })

  it('with global.page_url empty, the mails link to the backend pages; with it set, to the frontend', async () => {
    const name = fresh()
    await inject({ method: 'POST', url: '/api/auth/email/register', payload: { username: name, email: `${name}@example.test`, password: PASSWORD } })
    linkIn((await sink.waitFor(1))[0]!, `${PUBLIC_URL}${VERIFY}`)
    sink.clear()
    await resetLink(name)

    await settings([{ key: 'global.page_url', value: 'https://app.example.test' }])
    sink.clear()
    linkIn((await (async () => {
      await inject({ method: 'POST', url: '/api/auth/email/forgot-password', payload: { email: `${name}@example.test` } })
      return sink.waitFor(1)
    })())[0]!, 'https://app.example.test/reset-password')
  })

  describe('verification', () => {
    async function unverified(): Promise<{ name: string; link: string }> {
      const name = fresh()
      await inject({ method: 'POST', url: '/api/auth/email/register', payload: { username: name, email: `${name}@example.test`, password: PASSWORD } })
      return { name, link: linkIn((await sink.waitFor(1))[0]!, `${PUBLIC_URL}${VERIFY}`) }
    }

    const verifiedInDatabase = async (name: string) =>
      [true, 1].includes((await rawRows(subject.app.services.database, sql`select email_verified from users where username = ${name}`))[0]![0] as never)

    it('a browser opening the link verifies the address and is told so; opening it again says it is already verified', async () => {
      const { name, link } = await unverified()
      expect(await verifiedInDatabase(name)).toBe(false)

      const opened = await inject({ method: 'GET', url: pathOf(link), headers: BROWSER })
      expectPage(opened, 200)
      expect(textOf(opened)).toContain(`${name}@example.test is verified`)
      expect(await verifiedInDatabase(name)).toBe(true)
      expect((await login(name, PASSWORD)).statusCode).toBe(200)

      const again = await inject({ method: 'GET', url: pathOf(link), headers: BROWSER })
      expectPage(again, 400)
      expect(textOf(again)).toContain('already used: the email address is verified')
    })

    it('an API client gets JSON at the same URL, the replay included', async () => {
      const { name, link } = await unverified()
      const verified = await inject({ method: 'GET', url: pathOf(link), headers: API })
      expect(verified.statusCode).toBe(200)
      expect(verified.json()).toMatchObject({ success: true, data: { user: { username: name, email_verified: true } } })
      const again = await inject({ method: 'GET', url: pathOf(link) })
      expect(again.statusCode).toBe(400)
      expect(again.json()).toMatchObject({ success: false, code: 'INVALID_TOKEN' })
    })

    it('an expired link: a page that says so for a browser (400), INVALID_TOKEN for an API client; nothing verified', async () => {
      const { name, link } = await unverified()
      clock.advance(24 * HOUR + 1000)
      const page = await inject({ method: 'GET', url: pathOf(link), headers: BROWSER })
      expectPage(page, 400)
      expect(textOf(page)).toContain('expired')
      expect((await inject({ method: 'GET', url: pathOf(link), headers: API })).json().code).toBe('INVALID_TOKEN')
      expect(await verifiedInDatabase(name)).toBe(false)
    })

    it('a link without its token: a page for a browser, VALIDATION_ERROR for an API client', async () => {
      const page = await inject({ method: 'GET', url: VERIFY, headers: BROWSER })
      expectPage(page, 400)
      expect(textOf(page)).toContain('missing or not valid')
      expect((await inject({ method: 'GET', url: VERIFY })).json().code).toBe('VALIDATION_ERROR')
    })
  })

  describe('password reset', () => {
    it('opening the page shows the form and does not use the link up; an API client gets until when it works', async () => {
      const name = await verifiedUser()
      const link = await resetLink(name)
      const { page, token, csrf } = await openResetPage(link)
      expect(token).toBe(tokenOf(link))
      expect(csrf).toMatch(/^[A-Za-z0-9_-]{20,}$/)
      expect(htmlTags(page.body, 'form')).toContainEqual(expect.objectContaining({ method: 'post', action: RESET }))
      expect(htmlTags(page.body, 'input').map((input) => input.name)).toEqual(expect.arrayContaining(['new_password', 'new_password_confirm']))
      expect(textOf(page)).toContain(name)

      // Opened again (a second tab, a mail scanner): still usable.
      await openResetPage(link)
      const state = await inject({ method: 'GET', url: pathOf(link), headers: API })
      expect(state.statusCode).toBe(200)
      expect(Math.abs(Date.parse(state.json().data.expires_at) - (clock.now() + HOUR))).toBeLessThan(1000)
      expect(setCookieLines(state)).toEqual([])
      const reset = await inject({ method: 'POST', url: RESET, payload: { token: tokenOf(link), new_password: NEW_PASSWORD } })
      expect(reset.statusCode, reset.body).toBe(200)
    })

    it('submitting the form sets the password and says so; the new password logs in; the link is then used up', async () => {
      const name = await verifiedUser()
      const link = await resetLink(name)
      const { cookie, csrf, token } = await openResetPage(link)

      const done = await submitReset({ token, csrf_token: csrf, new_password: NEW_PASSWORD, new_password_confirm: NEW_PASSWORD }, { cookie, origin: PUBLIC_URL })
      expectPage(done, 200)
      expect(textOf(done)).toContain('Password changed')
      expect((await login(name, NEW_PASSWORD)).statusCode).toBe(200)
      expect((await login(name, PASSWORD)).json().code).toBe('INVALID_CREDENTIALS')

      const reopened = await inject({ method: 'GET', url: pathOf(link), headers: BROWSER })
      expectPage(reopened, 400)
      expect(textOf(reopened)).toContain('already used')
      expect(htmlTags(reopened.body, 'form')).toEqual([])
      const resent = await submitReset({ token, csrf_token: csrf, new_password: 'third password 3', new_password_confirm: 'third password 3' }, { cookie })
      expectPage(resent, 400)
      expect((await inject({ method: 'GET', url: pathOf(link), headers: API })).json().code).toBe('INVALID_TOKEN')
      expect((await login(name, NEW_PASSWORD)).statusCode).toBe(200)
    })

    it('passwords that differ: the form again with the problem (400); an API client gets VALIDATION_ERROR; nothing changes', async () => {
      const name = await verifiedUser()
      const link = await resetLink(name)
      const { cookie, csrf, token } = await openResetPage(link)
      const again = await submitReset({ token, csrf_token: csrf, new_password: NEW_PASSWORD, new_password_confirm: 'something else' }, { cookie })
      expectPage(again, 400)
      expect(textOf(again)).toContain('The two passwords differ')
      expect(inputValue(again.body, 'token')).toBe(token)
      expect(inputValue(again.body, 'csrf_token')).toBe(csrf)

      const json = await inject({ method: 'POST', url: RESET, payload: { token, new_password: NEW_PASSWORD, new_password_confirm: 'something else' } })
      expect(json.statusCode).toBe(400)
      expect(json.json()).toMatchObject({ code: 'VALIDATION_ERROR', details: [{ field: 'new_password_confirm' }] })
      expect((await login(name, PASSWORD)).statusCode).toBe(200)
    })

    it.each([
      ['without the page\'s cookie', (page: { cookie: string; csrf: string }) => ({ cookie: '', csrf: page.csrf })],
      ['with a csrf_token of another browser', (page: { cookie: string; csrf: string }) => ({ cookie: 'reset_form=AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA', csrf: page.csrf })],
      ['without a csrf_token', (page: { cookie: string; csrf: string }) => ({ cookie: page.cookie, csrf: '' })],
    ])('a form %s: 403 INVALID_CSRF_TOKEN, as a page for a browser; the password stays', async (_label, tamper) => {
      const name = await verifiedUser()
      const link = await resetLink(name)
      const opened = await openResetPage(link)
      const { cookie, csrf } = tamper(opened)
      const fields = { token: opened.token, new_password: NEW_PASSWORD, ...(csrf === '' ? {} : { csrf_token: csrf }) }
      const refused = await submitReset(fields, cookie === '' ? {} : { cookie })
      expectPage(refused, 403)
      expect(textOf(refused)).toContain('open the link from the mail again')
      const json = await submitReset(fields, { ...(cookie === '' ? {} : { cookie }), accept: 'application/json' })
      expect(json.statusCode).toBe(403)
      expect(json.json().code).toBe('INVALID_CSRF_TOKEN')
      expect((await login(name, PASSWORD)).statusCode).toBe(200)
    })

    it('an expired link: 400 RESET_LINK_EXPIRED, as a page for a browser and JSON for an API client', async () => {
      const name = await verifiedUser()
      const link = await resetLink(name)
      const { cookie, csrf, token } = await openResetPage(link)
      clock.advance(HOUR + 1000)
      const page = await inject({ method: 'GET', url: pathOf(link), headers: BROWSER })
      expectPage(page, 400)
      expect(textOf(page)).toContain('This link has expired')
      const posted = await submitReset({ token, csrf_token: csrf, new_password: NEW_PASSWORD, new_password_confirm: NEW_PASSWORD }, { cookie })
      expectPage(posted, 400)
      const json = await inject({ method: 'GET', url: pathOf(link), headers: API })
      expect(json.statusCode).toBe(400)
      expect(json.json().code).toBe('RESET_LINK_EXPIRED')
      expect((await login(name, PASSWORD)).statusCode).toBe(200)
    })

    it('an unknown link: the same answer as a used one, page or JSON', async () => {
      const page = await inject({ method: 'GET', url: `${RESET}?token=unknown-token`, headers: BROWSER })
      expectPage(page, 400)
      expect(textOf(page)).toContain('This link no longer works')
      expect((await inject({ method: 'GET', url: `${RESET}?token=unknown-token` })).json().code).toBe('INVALID_TOKEN')
    })
  })
})
