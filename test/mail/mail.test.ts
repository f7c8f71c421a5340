import type { AddressInfo } from 'node:net'
import { createServer, type Socket } from 'node:net'
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest'
import { AppError } from '../../src/http/errors.js'
import { MailService, type MailLogger } from '../../src/modules/mail/service.js'
import { PRODUCT_NAME, passwordResetMail, testMail, verificationMail } from '../../src/modules/mail/templates.js'
import { createTestContext, type TestApp, type TestContext } from '../helpers/app.js'
import { DIALECTS } from '../helpers/database.js'
import { smtpSettings, startSmtpSink, type SettingOverrides, type SmtpSink } from '../helpers/smtp-sink.js'
import { tableCredentials } from '../helpers/test-routes.js'

const LINK = 'http://localhost:3000/api/auth/email/verify?token=verification-token-123'
const REJECT = '550 5.1.1 mailbox unavailable'

/** A TCP server that accepts connections and never says a word. */
async function silentServer() {
  const sockets = new Set<Socket>()
  const server = createServer((socket) => {
    sockets.add(socket)
    socket.on('close', () => sockets.delete(socket))
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  return {
    port: (server.address() as AddressInfo).port,
    close: () => {
      for (const socket of sockets) socket.destroy()
      return new Promise((resolve) => server.close(resolve))
    },
  }
}

/** A port nothing listens on: bound, then released. */
async function closedPort(): Promise<number> {
  const server = createServer()
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const { port } = server.address() as AddressInfo
  await new Promise((resolve) => server.close(resolve))
  return port
}

function recordingLogger() {
  const lines: Array<{ level: string; object: object; message: string }> = []
  const record = (level: string) => (object: object, message: string) => void lines.push({ level, object, message })
  const log: MailLogger = { info: record('info'), warn: record('warn'), error: record('error') }
  return { lines, log }
}

describe.each(DIALECTS)('mail on %s', (dialect) => {
  let ctx: TestContext
  let subject: TestApp
  let sink: SmtpSink
  let second: SmtpSink
  let rejecting: SmtpSink
  let authenticated: SmtpSink
  let tls: SmtpSink

  const configure = (target: Pick<SmtpSink, 'port'>, overrides: SettingOverrides = {}) =>
    subject.app.services.settings.update(smtpSettings(target, overrides))
  const mail = () => subject.app.services.mail
  const smtpFailure = async (promise: Promise<unknown>): Promise<AppError> => {
    const error = await promise.then(() => null, (caught: unknown) => caught)
    expect(error).toBeInstanceOf(AppError)
    expect(error).toMatchObject({ statusCode: 502, code: 'SMTP_ERROR' })
    return error as AppError
  }

  beforeAll(async () => {
    ctx = await createTestContext(dialect)
    subject = await ctx.build({ credentials: tableCredentials })
    ;[sink, second, rejecting, authenticated, tls] = await Promise.all([
      startSmtpSink(),
      startSmtpSink(),
      startSmtpSink({ reject: REJECT }),
      startSmtpSink({ auth: { user: 'mailer', pass: 'right-password' } }),
      startSmtpSink({ starttls: true }),
    ])
  })
  afterAll(async () => {
    await Promise.all([sink, second, rejecting, authenticated, tls].map((each) => each?.close()))
    await ctx.close()
  })
  beforeEach(async () => {
    for (const each of [sink, second, rejecting, authenticated, tls]) each.clear()
    await configure(sink)
  })

  describe('MailService.send', () => {
    it('delivers both parts from the configured sender, the link in each, user values escaped in HTML', async () => {
      await configure(sink, { 'smtp.from_name': 'Platform Ops' })
      const username = '<script>alert(1)</script>'
      const sent = await mail().send({ to: 'alice@example.test', ...verificationMail({ username, link: LINK }) })
      expect(sent.accepted).toEqual(['alice@example.test'])

      const [received] = await sink.waitFor(1)
      expect(received!.envelope).toEqual({ from: 'noreply@service.test', to: ['alice@example.test'] })
      expect(received!.from).toEqual({ name: 'Platform Ops', address: 'noreply@service.test' })
      expect(received!.to).toEqual(['alice@example.test'])
      expect(received!.subject).toContain(PRODUCT_NAME)
      expect(received!.headers.get('message-id')).toBe(sent.messageId)
      expect(received!.text).toContain(LINK)
      expect(received!.html).toContain(`href="${LINK}"`)
      expect(received!.html).toContain('Hello &lt;script&gt;alert(1)&lt;/script&gt;,')
      expect(received!.html).not.toContain('<script>')
      expect(received!.text).toContain(`Hello ${username},`)
    })

    it('authenticates with smtp.username and smtp.password', async () => {
      await configure(authenticated, { 'smtp.username': 'mailer', 'smtp.password': 'right-password' })
      await mail().send({ to: 'bob@example.test', ...testMail() })
      expect((await authenticated.waitFor(1))[0]!.to).toEqual(['bob@example.test'])
    })

    it('a wrong password is a 502 SMTP_ERROR carrying the server reply', async () => {
      await configure(authenticated, { 'smtp.username': 'mailer', 'smtp.password': 'wrong-password' })
      const error = await smtpFailure(mail().send({ to: 'bob@example.test', ...testMail() }))
      expect(error.message).toContain('535 5.7.8 Authentication credentials invalid')
      expect(authenticated.messages).toHaveLength(0)
    })

    it('a refused recipient is a 502 SMTP_ERROR with the server reason', async () => {
      await configure(rejecting)
      const error = await smtpFailure(mail().send({ to: 'gone@example.test', ...testMail() }))
      expect(error.message).toContain('550 5.1.1 mailbox unavailable')
    })

    it('an unreachable server is a 502 SMTP_ERROR, not a database outage', async () => {
      await configure({ port: await closedPort() })
      const error = await smtpFailure(mail().send({ to: 'alice@example.test', ...testMail() }))
      expect(error.message).toContain('ECONNREFUSED')
    })

    it('smtp.require_tls refuses a server that offers no STARTTLS', async () => {
      await configure(sink, { 'smtp.require_tls': true })
      await smtpFailure(mail().send({ to: 'alice@example.test', ...testMail() }))
      expect(sink.messages).toHaveLength(0)
    })

    it('smtp.secure speaks TLS from the start, which a plain server cannot answer', async () => {
      await configure(sink, { 'smtp.secure': true })
      await smtpFailure(mail().send({ to: 'alice@example.test', ...testMail() }))
      expect(sink.messages).toHaveLength(0)
    })

    it('upgrades with STARTTLS when offered and verifies the certificate', async () => {
      await configure(tls)
      const error = await smtpFailure(mail().send({ to: 'alice@example.test', ...testMail() }))
      expect(error.message).toMatch(/certificate/i)
      expect(tls.messages).toHaveLength(0)
    })

    it('gives up on a server that never sends its greeting', async () => {
      const silent = await silentServer()
      const service = new MailService({ settings: subject.app.services.settings, log: recordingLogger().log, timeouts: { connectMs: 200, socketMs: 15_000 } })
      try {
        await configure(silent)
        const error = await smtpFailure(service.send({ to: 'alice@example.test', ...testMail() }))
        expect(error.message).toMatch(/greeting/i)
      } finally {
        service.close()
        await silent.close()
      }
    })

    it('400 SMTP_NOT_CONFIGURED without a host or a sender address', async () => {
      for (const overrides of [{ 'smtp.host': '' }, { 'smtp.from_email': '' }] as SettingOverrides[]) {
        await configure(sink, overrides)
        await expect(mail().send({ to: 'alice@example.test', ...testMail() })).rejects.toMatchObject({ statusCode: 400, code: 'SMTP_NOT_CONFIGURED' })
      }
    })

    it('follows a change of the SMTP settings on the next mail', async () => {
      await mail().send({ to: 'alice@example.test', ...testMail() })
      await configure(second)
      await mail().send({ to: 'bob@example.test', ...testMail() })
      expect((await second.waitFor(1)).map((each) => each.to)).toEqual([['bob@example.test']])
      expect(sink.messages.map((each) => each.to)).toEqual([['alice@example.test']])
      await configure(sink)
      await mail().send({ to: 'carol@example.test', ...testMail() })
      expect(sink.messages.map((each) => each.to)).toEqual([['alice@example.test'], ['carol@example.test']])
    })
  })

  describe('enabled and sendBestEffort', () => {
    const reset = () => passwordResetMail({ username: 'alice', link: 'http://app.test/reset-password?token=secret-reset-token', expiresInMinutes: 60 })

    it('enabled() needs global.send_mail, a host and a sender address', async () => {
      expect(await mail().enabled()).toBe(true)
      for (const overrides of [{ 'global.send_mail': false }, { 'smtp.host': '' }, { 'smtp.host': '   ' }, { 'smtp.from_email': '' }] as SettingOverrides[]) {
        await configure(sink, overrides)
        expect(await mail().enabled(), JSON.stringify(overrides)).toBe(false)
      }
    })

    it('sends and answers true when enabled', async () => {
      expect(await mail().sendBestEffort({ to: 'alice@example.test', ...reset() }, { mail: 'password_reset' })).toBe(true)
      expect((await sink.waitFor(1))[0]!.text).toContain('token=secret-reset-token')
    })

    it('sends nothing while disabled', async () => {
      for (const overrides of [{ 'global.send_mail': false }, { 'smtp.host': '' }, { 'smtp.from_email': '' }] as SettingOverrides[]) {
        await configure(sink, overrides)
        expect(await mail().sendBestEffort({ to: 'alice@example.test', ...reset() }, { mail: 'password_reset' })).toBe(false)
      }
      // A mail sent afterwards arrives alone: nothing from the disabled attempts was on its way.
      await configure(sink)
      await mail().send({ to: 'marker@example.test', ...testMail() })
      expect((await sink.waitFor(1)).map((each) => each.to)).toEqual([['marker@example.test']])
    })

    describe('on a failure', () => {
      let service: MailService
      let logged: ReturnType<typeof recordingLogger>
      beforeEach(() => {
        logged = recordingLogger()
        service = new MailService({ settings: subject.app.services.settings, log: logged.log })
      })
      afterEach(() => service.close())

      it('answers false instead of throwing and logs the reason with the recipient domain only', async () => {
        await configure(rejecting)
        expect(await service.sendBestEffort({ to: 'alice@example.test', ...reset() }, { mail: 'password_reset' })).toBe(false)
        expect(logged.lines).toHaveLength(1)
        const [line] = logged.lines
        expect(line).toMatchObject({ level: 'warn', object: { mail: 'password_reset', recipient_domain: 'example.test', code: 'SMTP_ERROR' }, message: 'password reset mail not sent' })
        const serialized = JSON.stringify(line)
        expect(serialized).toContain('550 5.1.1 mailbox unavailable')
        expect(serialized).not.toContain('alice@')
        expect(serialized).not.toContain('secret-reset-token')
      })

      it('keeps the recipient address out of the log when the server reply quotes it', async () => {
        const quoting = await startSmtpSink({ reject: '550 5.1.1 <alice@example.test>: mailbox unavailable' })
        try {
          await configure(quoting)
          expect(await service.sendBestEffort({ to: 'alice@example.test', ...reset() }, { mail: 'password_reset' })).toBe(false)
          const serialized = JSON.stringify(logged.lines)
          expect(serialized).toContain('example.test>: mailbox unavailable')
          expect(serialized).not.toContain('alice@')
        } finally {
          await quoting.close()
        }
      })

      it('answers false when the server cannot be reached', async () => {
        await configure({ port: await closedPort() })
        expect(await service.sendBestEffort({ to: 'alice@example.test', ...reset() }, { mail: 'password_reset' })).toBe(false)
        expect(logged.lines).toHaveLength(1)
      })
    })
  })

  describe('POST /api/admin/email/test', () => {
    const post = (payload: unknown, session?: string) =>
      subject.app.inject({
        method: 'POST',
        url: '/api/admin/email/test',
        headers: { 'content-type': 'application/json', ...(session ? { cookie: `auth_session=${session}` } : {}) },
        payload: JSON.stringify(payload),
      })

    it('sends the test mail now, also while global.send_mail is off', async () => {
      await configure(sink, { 'global.send_mail': false })
      const response = await post({ email: 'ops@example.test' }, 'admin-session')
      expect(response.statusCode).toBe(200)
      const body = response.json()
      expect(body).toMatchObject({ success: true, message: 'Test email sent.', data: { accepted: ['ops@example.test'] } })
      const [received] = await sink.waitFor(1)
      expect(received!.to).toEqual(['ops@example.test'])
      expect(received!.subject).toBe(testMail().subject)
      expect(received!.headers.get('message-id')).toBe(body.data.message_id)
    })

    it('403 for a global_user and 401 for an anonymous caller; nothing is sent', async () => {
      const forbidden = await post({ email: 'ops@example.test' }, 'user-session')
      expect(forbidden.statusCode).toBe(403)
      expect(forbidden.json()).toMatchObject({ code: 'FORBIDDEN', details: { required_permission: 'email.test' } })
      const anonymous = await post({ email: 'ops@example.test' })
      expect(anonymous.statusCode).toBe(401)
      expect(anonymous.json().code).toBe('UNAUTHORIZED')
      expect(sink.messages).toHaveLength(0)
    })

    it('400 SMTP_NOT_CONFIGURED while smtp.host is empty', async () => {
      await configure(sink, { 'smtp.host': '' })
      const response = await post({ email: 'ops@example.test' }, 'admin-session')
      expect(response.statusCode).toBe(400)
      expect(response.json()).toMatchObject({ success: false, code: 'SMTP_NOT_CONFIGURED' })
    })

    it("502 SMTP_ERROR with the server's reason when the server refuses the mail", async () => {
      await configure(rejecting)
      const response = await post({ email: 'ops@example.test' }, 'admin-session')
      expect(response.statusCode).toBe(502)
      expect(response.json()).toMatchObject({ success: false, code: 'SMTP_ERROR' })
      expect(response.json().error).toContain('mailbox unavailable')
    })

    it('502 SMTP_ERROR when the server cannot be reached', async () => {
      await configure({ port: await closedPort() })
      const response = await post({ email: 'ops@example.test' }, 'admin-session')
      expect(response.statusCode).toBe(502)
      expect(response.json().code).toBe('SMTP_ERROR')
    })

    it.each([
      ['not an address', { email: 'not-an-email' }],
      ['too long', { email: `${'a'.repeat(250)}@example.test` }],
      ['missing', {}],
      ['an unknown property', { email: 'ops@example.test', cc: 'x@example.test' }],
    ])('400 VALIDATION_ERROR for an email %s', async (_label, payload) => {
      const response = await post(payload, 'admin-session')
      expect(response.statusCode).toBe(400)
      expect(response.json().code).toBe('VALIDATION_ERROR')
      expect(sink.messages).toHaveLength(0)
    })
  })
})
