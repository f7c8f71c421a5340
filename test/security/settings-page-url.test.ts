import { sql } from 'drizzle-orm'
import type { FastifyInstance } from 'fastify'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createTestContext, type TestContext } from '../helpers/app.js'
import { DIALECTS } from '../helpers/database.js'
import { smtpSettings, startSmtpSink, type SmtpSink } from '../helpers/smtp-sink.js'
import { rawRows } from '../helpers/sql.js'
import { client, ROOMY_LIMITS, signUp, type Account, type Call } from '../helpers/teams.js'

/**
 * `global.page_url` is the base of links in mails and of redirects after provider sign-in: it
 * must be empty or an absolute http(s) URL without credentials, control characters or
 * whitespace — never `javascript:` or `data:`. Refused values change nothing (400
 * VALIDATION_ERROR), one at a time or in a bulk change; a bad value already stored is not used.
 */
const KEY = 'global.page_url'
const PUBLIC_URL = 'http://localhost:3000'

const REFUSED: Array<[string, string]> = [
  ['javascript:', 'javascript:alert(document.cookie)'],
  ['javascript: in capitals', 'JavaScript:alert(1)'],
  ['data:', 'data:text/html,<script>alert(1)</script>'],
  ['another scheme', 'ftp://files.example.com'],
  ['a relative path', '/app'],
  ['a scheme-relative URL', '//evil.example'],
  ['http without slashes', 'https:evil.example'],
  ['a bare host', 'app.example.com'],
  ['credentials', 'https://user:secret@app.example.com'],
  ['a user name', 'https://user@app.example.com'],
  ['a TAB', 'https://app.example.com/\tx'],
  ['a leading space', ' https://app.example.com'],
  ['a newline', 'https://app.example.com\n'],
  ['a C0 control', 'https://app.example.com/\u0001'],
  ['a C1 control', 'https://app.example.com/\u0085'],
  ['a DEL', 'https://app.example.com/\u007f'],
  ['a no-break space', 'https://app.example.com/\u00a0'],
  ['a backslash', 'https://app.example.com\\@evil.example'],
  ['a query', 'https://app.example.com/?next=x'],
  ['a fragment', 'https://app.example.com/#x'],
  ['no host', 'https://'],
]
const ACCEPTED = ['', 'https://app.example.com', 'http://localhost:5173', 'https://example.com/console/', 'https://[::1]:8443/app']

describe.each(DIALECTS)('global.page_url accepts only http(s) URLs on %s', (dialect) => {
  let ctx: TestContext
  let app: FastifyInstance
  let call: Call
  let admin: Account

  const current = async () => (await call('GET', `/api/settings/${KEY}`, admin)).json().data.setting.value
  const put = (value: unknown) => call('PUT', `/api/settings/${KEY}`, admin, { value })

  beforeAll(async () => {
    ctx = await createTestContext(dialect, { file: true })
    app = (await ctx.build({ limits: ROOMY_LIMITS })).app
    call = client(app)
    admin = await signUp(app, 'page_admin')
    expect((await put('https://before.example.com')).statusCode).toBe(200)
  })
  afterAll(() => ctx.close())

  it.each(REFUSED)('PUT /api/settings/:key refuses %s: 400 VALIDATION_ERROR naming the key, nothing changes', async (_, value) => {
    const response = await put(value)
    expect(response.statusCode, response.body).toBe(400)
    expect(response.json()).toMatchObject({ success: false, code: 'VALIDATION_ERROR', details: [{ field: KEY, message: expect.any(String) }] })
    expect(await current()).toBe('https://before.example.com')
  })

  it.each(ACCEPTED)('PUT /api/settings/:key accepts %j', async (value) => {
    const response = await put(value)
    expect(response.statusCode, response.body).toBe(200)
    expect(response.json().data.setting.value).toBe(value)
    expect((await put('https://before.example.com')).statusCode).toBe(200)
  })

  it('the bulk PUT /api/settings refuses it and applies nothing of the batch', async () => {
    const response = await call('PUT', '/api/settings', admin, {
      settings: [{ key: 'team.member_limit', value: 42 }, { key: KEY, value: 'data:text/html,hi' }],
    })
    expect(response.statusCode, response.body).toBe(400)
    expect(response.json()).toMatchObject({ code: 'VALIDATION_ERROR', details: [{ field: KEY }] })
    expect(await current()).toBe('https://before.example.com')
    expect((await call('GET', '/api/settings/team.member_limit', admin)).json().data.setting.value).toBe(10)
  })

  describe('a bad value stored before the rule existed', () => {
    let sink: SmtpSink
    let later: FastifyInstance

    beforeAll(async () => {
      sink = await startSmtpSink()
      await app.services.settings.update(smtpSettings(sink, { 'global.require_email_verification': false }))
      await rawRows(app.services.database, sql`UPDATE settings SET value = ${JSON.stringify('javascript:alert(document.cookie)//')} WHERE key = ${KEY}`)
      // An instance started on that database reads it as it is stored.
      later = (await ctx.build({ limits: ROOMY_LIMITS })).app
    })
    afterAll(() => sink?.close())

    it('is read as the default: mail links lead to PUBLIC_URL, never to javascript:', async () => {
      const laterCall = client(later)
      expect((await laterCall('GET', `/api/settings/${KEY}`, admin)).json().data.setting.value).toBe('')
      sink.clear()
      const asked = await later.inject({ method: 'POST', url: '/api/auth/email/forgot-password', payload: { email: admin.email } })
      expect(asked.statusCode, asked.body).toBe(200)
      const [mail] = await sink.waitFor(1)
      expect(mail!.text).toContain(`${PUBLIC_URL}/api/auth/email/reset-password?token=`)
      expect(mail!.text + mail!.html).not.toMatch(/javascript:/i)
    })
  })
})
