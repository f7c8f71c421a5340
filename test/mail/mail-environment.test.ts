import { afterAll, beforeAll, beforeEach, describe, expect, it, onTestFinished } from 'vitest'
import { DEFAULT_PASSWORD, login, register } from '../helpers/accounts.js'
import { createTestContext, type TestContext } from '../helpers/app.js'
import { DIALECTS, type TestDialect } from '../helpers/database.js'
import { captureLogs } from '../helpers/log-capture.js'
import { startSmtpSink, type SmtpSink } from '../helpers/smtp-sink.js'

/**
 * SMTP_URL and SMTP_FROM configure mail without a click: together they turn it on; SMTP_URL alone
 * leaves it off and says why. A mail that fails is logged with which mail and which request.
 */

const REJECT = '550 5.1.1 mailbox unavailable'

async function freshContext(dialect: TestDialect, options: { file?: boolean } = {}): Promise<TestContext> {
  const ctx = await createTestContext(dialect, options)
  onTestFinished(() => ctx.close())
  return ctx
}

/** Log lines as objects, once one matching `match` was written (a mail sent without being awaited). */
async function logged(lines: readonly string[], match: (entry: Record<string, unknown>) => boolean, timeoutMs = 5000) {
  const deadline = Date.now() + timeoutMs
  for (;;) {
    const entries = lines.map((line) => JSON.parse(line) as Record<string, unknown>)
    const found = entries.filter(match)
    if (found.length > 0 || Date.now() > deadline) return found
    await new Promise((resolve) => setTimeout(resolve, 20))
  }
}

describe.each(DIALECTS)('mail from the environment on %s', (dialect) => {
  let sink: SmtpSink
  let rejecting: SmtpSink
  const smtpUrl = (target: SmtpSink) => `smtp://127.0.0.1:${target.port}`

  beforeAll(async () => {
    ;[sink, rejecting] = await Promise.all([startSmtpSink(), startSmtpSink({ reject: REJECT })])
  })
  afterAll(async () => {
    await Promise.all([sink?.close(), rejecting?.close()])
  })
  beforeEach(() => {
    sink.clear()
    rejecting.clear()
  })

  it('SMTP_URL with SMTP_FROM turns mail on: the verification mail arrives from that sender', async () => {
    const ctx = await freshContext(dialect)
    const { app } = await ctx.build({ env: { SMTP_URL: smtpUrl(sink), SMTP_FROM: 'MCP Platform <noreply@platform.test>' } })
    expect(await app.services.mail.status()).toEqual({
      enabled: true,
      sender: 'MCP Platform <noreply@platform.test>',
      server: `127.0.0.1:${sink.port}`,
    })

    expect((await register(app, { username: 'admin', email: 'admin@example.test' })).statusCode).toBe(201)
    const bob = await register(app, { username: 'bob', email: 'bob@example.test' })
    expect(bob.statusCode).toBe(201)
    expect(bob.json().message).toMatch(/verify/i)

    const [mail] = await sink.waitFor(1)
    expect(mail!.from).toEqual({ name: 'MCP Platform', address: 'noreply@platform.test' })
    expect(mail!.envelope.from).toBe('noreply@platform.test')
    expect(mail!.to).toEqual(['bob@example.test'])
    expect(mail!.text).toMatch(/\/api\/auth\/email\/verify\?token=[A-Za-z0-9_-]+/)
    // Verification is required now that mail goes out.
    expect((await login(app, 'bob@example.test', DEFAULT_PASSWORD)).response.json().code).toBe('EMAIL_NOT_VERIFIED')
  })

  it('a bare SMTP_FROM address keeps the default sender name', async () => {
    const ctx = await freshContext(dialect)
    const { app } = await ctx.build({ env: { SMTP_URL: smtpUrl(sink), SMTP_FROM: 'noreply@platform.test' } })
    expect(await app.services.settings.get('smtp.from_email')).toBe('noreply@platform.test')
    expect(await app.services.settings.get('smtp.from_name')).toBe('Service')
    expect(await app.services.mail.status()).toMatchObject({ enabled: true, sender: 'Service <noreply@platform.test>' })
  })

  it('SMTP_URL alone leaves mail off, and the status says SMTP_FROM is missing', async () => {
    const ctx = await freshContext(dialect)
    const { app } = await ctx.build({ env: { SMTP_URL: smtpUrl(sink) } })
    expect(await app.services.mail.status()).toEqual({ enabled: false, reasons: ['smtp.from_email is not set (set SMTP_FROM)'] })
    const forgot = await app.inject({ method: 'POST', url: '/api/auth/email/forgot-password', payload: { email: 'x@example.test' } })
    expect(forgot.statusCode).toBe(503)
    expect(forgot.json().code).toBe('EMAIL_DISABLED')
  })

  it('without any mail variable, the status names every missing piece', async () => {
    const ctx = await freshContext(dialect)
    const { app } = await ctx.build()
    const status = await app.services.mail.status()
    expect(status).toEqual({ enabled: false, reasons: [expect.stringContaining('global.send_mail'), expect.stringContaining('SMTP_URL'), expect.stringContaining('SMTP_FROM')] })
  })

  it('SMTP_FROM fills a sender nobody has set, also on a later start, but never replaces one chosen through the API', async () => {
    const ctx = await freshContext(dialect, { file: true })
    const first = await ctx.build({ env: { SMTP_URL: smtpUrl(sink) } })
    expect(await first.app.services.mail.enabled()).toBe(false)
    await first.app.close()

    // SMTP_FROM added to a deployment that started with SMTP_URL alone: mail is on at the next start.
    const second = await ctx.build({ env: { SMTP_URL: smtpUrl(sink), SMTP_FROM: 'Ops <ops@platform.test>' } })
    expect(await second.app.services.mail.status()).toMatchObject({ enabled: true, sender: 'Ops <ops@platform.test>' })
    await second.app.services.settings.update([{ key: 'smtp.from_email', value: 'chosen@platform.test' }])
    await second.app.close()

    const third = await ctx.build({ env: { SMTP_URL: smtpUrl(sink), SMTP_FROM: 'Other <other@platform.test>' } })
    expect(await third.app.services.settings.get('smtp.from_email')).toBe('chosen@platform.test')
    // A seeded value counts as set too: a changed SMTP_FROM does not rewrite it at the next start.
    expect(await third.app.services.settings.get('smtp.from_name')).toBe('Ops')
  })

  it('a failed mail is logged with which mail it was and the request that caused it, without the address', async () => {
    const ctx = await freshContext(dialect)
    const logs = captureLogs('info')
    const { app } = await ctx.build({
      env: { SMTP_URL: smtpUrl(rejecting), SMTP_FROM: 'noreply@platform.test', RATE_LIMIT_ENABLED: 'false' },
      logger: logs.logger,
    })
    expect((await register(app, { username: 'admin', email: 'admin@example.test' })).statusCode).toBe(201)

    const bob = await app.inject({
      method: 'POST',
      url: '/api/auth/email/register',
      headers: { 'x-request-id': 'register-bob-1' },
      payload: { username: 'bob', email: 'bob@example.test', password: DEFAULT_PASSWORD },
    })
    // The mail failed; the registration stands.
    expect(bob.statusCode).toBe(201)
    const [verification] = await logged(logs.lines, (entry) => entry.mail === 'verification')
    expect(verification).toMatchObject({
      level: 40,
      msg: 'verification mail not sent',
      reqId: 'register-bob-1',
      code: 'SMTP_ERROR',
      recipient_domain: 'example.test',
      reason: expect.stringContaining('550 5.1.1 mailbox unavailable'),
    })

    const forgot = await app.inject({
      method: 'POST',
      url: '/api/auth/email/forgot-password',
      headers: { 'x-request-id': 'forgot-admin-2' },
      payload: { email: 'admin@example.test' },
    })
    expect(forgot.statusCode).toBe(200)
    const [reset] = await logged(logs.lines, (entry) => entry.mail === 'password_reset')
    expect(reset).toMatchObject({ level: 40, msg: 'password reset mail not sent', reqId: 'forgot-admin-2', code: 'SMTP_ERROR' })

    const text = logs.text()
    expect(text).not.toContain('bob@')
    expect(text).not.toContain('admin@')
  })
})
