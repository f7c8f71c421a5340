import type { InjectOptions } from 'fastify'
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest'
import type { SettingChange } from '../../src/modules/settings/service.js'
import { createTestContext, type TestApp, type TestContext } from '../helpers/app.js'
import { manualClock, type ManualClock } from '../helpers/clock.js'
import { DIALECTS } from '../helpers/database.js'
import { smtpSettings, startSmtpSink, type ReceivedMail, type SmtpSink } from '../helpers/smtp-sink.js'

const PASSWORD = 'first password 1'
const HOUR = 60 * 60 * 1000

function tokenIn(mail: ReceivedMail, path: string): string {
  const pattern = new RegExp(`${path.replace(/[/.?]/g, '\\$&')}\\?token=([A-Za-z0-9_-]+)`)
  const fromText = pattern.exec(mail.text)?.[1]
  const fromHtml = pattern.exec(mail.html)?.[1]
  expect(fromText).toBeDefined()
  expect(fromHtml).toBe(fromText)
  return fromText!
}

const cookieOf = (response: { headers: Record<string, unknown> }) => String(response.headers['set-cookie'] ?? '').split(';')[0]!

describe.each(DIALECTS)('verification and password reset on %s', (dialect) => {
  let ctx: TestContext
  let subject: TestApp
  let sink: SmtpSink
  let clock: ManualClock
  let counter = 0

  const inject = (options: InjectOptions) => subject.app.inject(options)
  const register = (name: string, email = `${name}@example.test`) =>
    inject({ method: 'POST', url: '/api/auth/email/register', payload: { username: name, email, password: PASSWORD } })
  const login = (loginName: string, password = PASSWORD) =>
    inject({ method: 'POST', url: '/api/auth/email/login', payload: { login: loginName, password } })
  const settings = (changes: SettingChange[]) => subject.app.services.settings.update(changes)
  const fresh = () => `user${++counter}`

  beforeAll(async () => {
    ctx = await createTestContext(dialect)
    sink = await startSmtpSink()
    clock = manualClock(Date.now())
    // Per-IP limits are tested elsewhere; this file sends more than they allow from one IP.
    const generous = { max: 10_000, windowMs: 60_000 }
    subject = await ctx.build({ clock, limits: { forgotPassword: generous, loginOrRegister: generous } })
    expect((await register('admin')).statusCode).toBe(201)
  })
  beforeEach(async () => {
    await settings(smtpSettings(sink, { 'global.require_email_verification': true, 'global.page_url': '' }))
    sink.clear()
  })
  afterEach(() => sink.clear())
  afterAll(async () => {
    await ctx.close()
    await sink.close()
  })

  describe('email verification', () => {
    it('registration sends the mail and starts no session; login waits for the link; the link works once', async () => {
      const name = fresh()
      const registered = await register(name)
      expect(registered.statusCode).toBe(201)
      expect(registered.headers['set-cookie']).toBeUndefined()
      expect(registered.json().data.user.email_verified).toBe(false)

      const [mail] = await sink.waitFor(1)
      expect(mail!.envelope.to).toEqual([`${name}@example.test`])
      const token = tokenIn(mail!, 'http://localhost:3000/api/auth/email/verify')

      expect((await login(name)).json().code).toBe('EMAIL_NOT_VERIFIED')
      expect((await login(name, 'a wrong password')).json().code).toBe('INVALID_CREDENTIALS')

      const verified = await inject({ method: 'GET', url: `/api/auth/email/verify?token=${token}` })
      expect(verified.statusCode).toBe(200)
      expect(verified.json().data.user.email_verified).toBe(true)
      expect((await login(name)).statusCode).toBe(200)

      const again = await inject({ method: 'GET', url: `/api/auth/email/verify?token=${token}` })
      expect(again.statusCode).toBe(400)
      expect(again.json().code).toBe('INVALID_TOKEN')
    })

    it('links to the frontend page when global.page_url is set', async () => {
      await settings([{ key: 'global.page_url', value: 'https://app.example.test/' }])
      await register(fresh())
      const [mail] = await sink.waitFor(1)
      tokenIn(mail!, 'https://app.example.test/verify-email')
    })

    it('a verification link dies after 24 hours', async () => {
      await register(fresh())
      const token = tokenIn((await sink.waitFor(1))[0]!, '/api/auth/email/verify')
      clock.advance(24 * HOUR + 1000)
      const response = await inject({ method: 'GET', url: `/api/auth/email/verify?token=${token}` })
      expect(response.json().code).toBe('INVALID_TOKEN')
    })

    it.each([
      ['verification is not required', 'global.require_email_verification'],
      ['mail sending is off', 'global.send_mail'],
    ])('when %s, registration starts a session and sends nothing', async (_label, key) => {
      await settings([{ key, value: false }])
      const name = fresh()
      const registered = await register(name)
      expect(cookieOf(registered)).toMatch(/^auth_session=.+/)
      expect((await login(name)).statusCode).toBe(200)
      expect(sink.messages).toHaveLength(0)
    })

    it('resend-verification answers 503 EMAIL_DISABLED while mail sending is off, as forgot-password does', async () => {
      await settings([{ key: 'global.send_mail', value: false }])
      try {
        const response = await inject({ method: 'POST', url: '/api/auth/email/resend-verification', payload: { email: 'nobody@example.test' } })
        expect(response.statusCode).toBe(503)
        expect(response.json()).toMatchObject({ success: false, code: 'EMAIL_DISABLED' })
      } finally {
        await settings([{ key: 'global.send_mail', value: true }])
      }
    })

    it('resend-verification answers the same whether or not the account exists, and mails only a real unverified one', async () => {
      const name = fresh()
      await register(name)
      await sink.waitFor(1)
      sink.clear()
      const known = await inject({ method: 'POST', url: '/api/auth/email/resend-verification', payload: { email: `${name.toUpperCase()}@example.test` } })
      const unknown = await inject({ method: 'POST', url: '/api/auth/email/resend-verification', payload: { email: 'nobody@example.test' } })
      expect(known.statusCode).toBe(200)
      expect(unknown.body).toBe(known.body)
      const mails = await sink.waitFor(1)
      expect(mails).toHaveLength(1)
      expect(mails[0]!.envelope.to).toEqual([`${name}@example.test`])
    })
  })

  describe('password reset', () => {
    async function verifiedUser(): Promise<{ name: string; cookie: string }> {
      await settings([{ key: 'global.require_email_verification', value: false }])
      const name = fresh()
      const cookie = cookieOf(await register(name))
      sink.clear()
      return { name, cookie }
    }

    async function requestReset(email: string): Promise<string> {
      const before = sink.messages.length
      const response = await inject({ method: 'POST', url: '/api/auth/email/forgot-password', payload: { email } })
      expect(response.statusCode).toBe(200)
      const mails = await sink.waitFor(before + 1)
      return tokenIn(mails[before]!, 'http://localhost:3000/api/auth/email/reset-password')
    }

    const reset = (token: string, newPassword = 'second password 2') =>
      inject({ method: 'POST', url: '/api/auth/email/reset-password', payload: { token, new_password: newPassword } })

    it('503 EMAIL_DISABLED while mail sending is off', async () => {
      await settings([{ key: 'global.send_mail', value: false }])
      const response = await inject({ method: 'POST', url: '/api/auth/email/forgot-password', payload: { email: 'admin@example.test' } })
      expect(response.statusCode).toBe(503)
      expect(response.json().code).toBe('EMAIL_DISABLED')
    })

    it('answers the same for unknown addresses and mails nobody', async () => {
      const { name } = await verifiedUser()
      const known = await inject({ method: 'POST', url: '/api/auth/email/forgot-password', payload: { email: `${name}@example.test` } })
      const unknown = await inject({ method: 'POST', url: '/api/auth/email/forgot-password', payload: { email: 'ghost@example.test' } })
      expect(unknown.statusCode).toBe(200)
      expect(unknown.body).toBe(known.body)
      const mails = await sink.waitFor(1)
      await new Promise((resolve) => setTimeout(resolve, 100))
      expect(mails.map((mail) => mail.envelope.to[0])).toEqual([`${name}@example.test`])
    })

    it('resets once: every session ends, the old password stops working, a "password changed" mail follows', async () => {
      const { name, cookie } = await verifiedUser()
      const token = await requestReset(`${name}@example.test`)
      const response = await reset(token)
      expect(response.statusCode).toBe(200)
      expect((await inject({ method: 'GET', url: '/api/users/me', headers: { cookie } })).statusCode).toBe(401)
      expect((await login(name)).statusCode).toBe(401)
      expect((await login(name, 'second password 2')).statusCode).toBe(200)
      const mails = await sink.waitFor(2)
      expect(mails[1]!.envelope.to).toEqual([`${name}@example.test`])
      expect(mails[1]!.subject.toLowerCase()).toContain('password')
      const reused = await reset(token, 'third password 3')
      expect(reused.statusCode).toBe(400)
      expect(reused.json().code).toBe('INVALID_TOKEN')
    })

    it('every reset token of the user dies with the one used', async () => {
      const { name } = await verifiedUser()
      const first = await requestReset(`${name}@example.test`)
      const second = await requestReset(`${name}@example.test`)
      expect((await reset(second)).statusCode).toBe(200)
      expect((await reset(first)).json().code).toBe('INVALID_TOKEN')
    })

    it('RESET_LINK_EXPIRED after an hour, INVALID_TOKEN for an unknown token', async () => {
      const { name } = await verifiedUser()
      const token = await requestReset(`${name}@example.test`)
      clock.advance(HOUR + 1000)
      const expired = await reset(token)
      expect(expired.statusCode).toBe(400)
      expect(expired.json().code).toBe('RESET_LINK_EXPIRED')
      expect((await reset('not-a-token')).json().code).toBe('INVALID_TOKEN')
      expect((await login(name)).statusCode).toBe(200)
    })

    it('two concurrent resets with one token: exactly one succeeds', async () => {
      const { name } = await verifiedUser()
      const token = await requestReset(`${name}@example.test`)
      const results = await Promise.all([reset(token, 'parallel one 111'), reset(token, 'parallel two 222')])
      expect(results.map((result) => result.statusCode).sort()).toEqual([200, 400])
      const winner = results[0]!.statusCode === 200 ? 'parallel one 111' : 'parallel two 222'
      expect((await login(name, winner)).statusCode).toBe(200)
    })
  })

  describe('a failing mail server', () => {
    it('never loses the registration or the reset request that triggered the mail', async () => {
      const failing = await startSmtpSink({ reject: '550 5.1.1 mailbox unavailable' })
      try {
        await settings(smtpSettings(failing, { 'global.require_email_verification': true }))
        const name = fresh()
        const registered = await register(name)
        expect(registered.statusCode).toBe(201)
        const [row] = await subject.app.services.users.list({ q: name, limit: 1, offset: 0 }).then((result) => result.rows)
        expect(row?.username).toBe(name)
        const forgot = await inject({ method: 'POST', url: '/api/auth/email/forgot-password', payload: { email: `${name}@example.test` } })
        expect(forgot.statusCode).toBe(200)
      } finally {
        await failing.close()
      }
    })
  })
})
