import type { FastifyInstance } from 'fastify'
import { afterAll, beforeAll, describe, expect, it, onTestFinished } from 'vitest'
import { DEFAULT_PASSWORD, login, register, sessionCookie } from '../helpers/accounts.js'
import { createTestContext, type TestContext } from '../helpers/app.js'
import { DIALECTS } from '../helpers/database.js'
import { captureLogs } from '../helpers/log-capture.js'
import { smtpSettings, startSmtpSink, type SmtpSink } from '../helpers/smtp-sink.js'

/** Another ENCRYPTION_SECRET than the test default: what a changed or lost secret looks like. */
const OTHER_SECRET = 'a-different-secret-9876543210-zyxwvutsrqponmlkjih'
const SMTP_AUTH = { user: 'mailer', pass: 'smtp-pass-before' }
const CLIENT_SECRET = 'provider-client-secret-before'
const ADMIN = { username: 'secret_admin', email: 'secret.admin@example.com' }
const NO_LIMITS = { RATE_LIMIT_ENABLED: 'false' }

interface LogEntry { level: number; msg: string; keys?: string[] }

async function adminCookie(app: FastifyInstance): Promise<string> {
  const { response, cookie } = await login(app, ADMIN.email, DEFAULT_PASSWORD)
  if (response.statusCode !== 200 || cookie === undefined) throw new Error(`login failed: ${response.statusCode} ${response.body}`)
  return cookie
}

describe.each(DIALECTS)('secret settings under a changed ENCRYPTION_SECRET on %s', (dialect) => {
  let ctx: TestContext
  let sink: SmtpSink
  let before: FastifyInstance
  let beforeCookie: string
  let after: FastifyInstance
  let cookie: string
  const logs = captureLogs('info')

  const setting = async (key: string) => {
    const response = await after.inject({ method: 'GET', url: `/api/settings/${key}`, headers: { cookie } })
    expect(response.statusCode, response.body).toBe(200)
    return response.json().data.setting
  }
  const testMail = () =>
    after.inject({ method: 'POST', url: '/api/admin/email/test', headers: { cookie }, payload: { email: 'someone@example.test' } })

  beforeAll(async () => {
    sink = await startSmtpSink({ auth: SMTP_AUTH })
    ctx = await createTestContext(dialect, { file: true })
    before = (await ctx.build({ env: NO_LIMITS })).app
    const registered = await register(before, ADMIN)
    expect(registered.statusCode, registered.body).toBe(201)
    beforeCookie = sessionCookie(registered)!
    await before.services.settings.update([
      ...smtpSettings(sink, { 'smtp.username': SMTP_AUTH.user, 'smtp.password': SMTP_AUTH.pass }),
      { key: 'provider.oauth.client_id', value: 'client-id' },
      { key: 'provider.oauth.client_secret', value: CLIENT_SECRET },
      { key: 'provider.oauth.enabled', value: true },
    ])
    expect(await before.services.mail.enabled()).toBe(true)

    // The same database, started with another secret: it must come up.
    after = (await ctx.build({ env: { ...NO_LIMITS, ENCRYPTION_SECRET: OTHER_SECRET }, logger: logs.logger })).app
    cookie = await adminCookie(after)
  })
  afterAll(async () => {
    await ctx.close()
    await sink.close()
  })

  it('starts and logs one warning naming the undecryptable keys and the remedies, never a value', () => {
    const warnings = logs.lines
      .map((line) => JSON.parse(line) as LogEntry)
      .filter((entry) => entry.level === 40 && entry.msg.includes('cannot be decrypted'))
    expect(warnings).toHaveLength(1)
    const [warning] = warnings
    expect(warning!.keys?.sort()).toEqual(['provider.oauth.client_secret', 'smtp.password'])
    expect(warning!.msg).toContain('smtp.password')
    expect(warning!.msg).toContain('provider.oauth.client_secret')
    expect(warning!.msg).toContain('npm run secret:rotate')
    expect(warning!.msg).toContain('PUT /api/settings/<key>')
    for (const secret of [SMTP_AUTH.pass, CLIENT_SECRET, OTHER_SECRET]) expect(logs.text()).not.toContain(secret)
  })

  it('shows such a setting as set but unreadable; every other setting is readable', async () => {
    expect(await setting('smtp.password')).toMatchObject({ encrypted: true, value: null, is_set: true, readable: false })
    expect(await setting('provider.oauth.client_secret')).toMatchObject({ encrypted: true, value: null, is_set: true, readable: false })
    const response = await after.inject({ method: 'GET', url: '/api/settings', headers: { cookie } })
    const settings = response.json().data.groups.flatMap((group: { settings: Array<{ key: string; readable: boolean }> }) => group.settings)
    expect(settings.filter((each: { readable: boolean }) => !each.readable).map((each: { key: string }) => each.key).sort())
      .toEqual(['provider.oauth.client_secret', 'smtp.password'])
    expect(await setting('smtp.username')).toMatchObject({ value: SMTP_AUTH.user, readable: true })
  })

  it('treats the unreadable values as unset: mail and provider sign-in act as not configured', async () => {
    expect(await after.services.settings.get('smtp.password')).toBe('')
    expect(await after.services.mail.enabled()).toBe(false)
    const mail = await testMail()
    expect(mail.statusCode, mail.body).toBe(400)
    expect(mail.json()).toMatchObject({ success: false, code: 'SMTP_NOT_CONFIGURED', error: expect.stringContaining('smtp.password') })
    expect(sink.messages).toHaveLength(0)

    const status = await after.inject({ method: 'GET', url: '/api/auth/provider/status' })
    expect(status.json().data).toMatchObject({ enabled: true, configured: false })
    const start = await after.inject({ method: 'GET', url: '/api/auth/provider/login' })
    expect(start.statusCode).toBe(403)
    expect(start.json()).toMatchObject({ success: false, code: 'PROVIDER_OAUTH_DISABLED' })
  })

  it('does not accept sessions issued under the old secret (token digests are keyed by it)', async () => {
    const response = await after.inject({ method: 'GET', url: '/api/settings/smtp.host', headers: { cookie: beforeCookie } })
    expect(response.statusCode).toBe(401)
  })

  it('PUT sets the secret again under the current secret: readable, and used', async () => {
    const response = await after.inject({ method: 'PUT', url: '/api/settings/smtp.password', headers: { cookie }, payload: { value: SMTP_AUTH.pass } })
    expect(response.statusCode, response.body).toBe(200)
    expect(response.json().data.setting).toMatchObject({ key: 'smtp.password', value: null, is_set: true, readable: true })
    expect(await setting('smtp.password')).toMatchObject({ is_set: true, readable: true })
    expect(await setting('provider.oauth.client_secret')).toMatchObject({ readable: false })
    expect(after.services.settings.unreadable()).toEqual(['provider.oauth.client_secret'])

    expect(await after.services.mail.enabled()).toBe(true)
    const mail = await testMail()
    expect(mail.statusCode, mail.body).toBe(200)
    await sink.waitFor(1)

    const secret = await after.inject({ method: 'PUT', url: '/api/settings/provider.oauth.client_secret', headers: { cookie }, payload: { value: CLIENT_SECRET } })
    expect(secret.json().data.setting).toMatchObject({ is_set: true, readable: true })
    const status = await after.inject({ method: 'GET', url: '/api/auth/provider/status' })
    expect(status.json().data).toMatchObject({ enabled: true, configured: true })
  })
})

describe.each(DIALECTS)('secret settings never set, under another ENCRYPTION_SECRET on %s', (dialect) => {
  it('keep their default quietly: not set, readable, no warning', async () => {
    const ctx = await createTestContext(dialect, { file: true })
    onTestFinished(() => ctx.close())
    await ctx.build()
    const logs = captureLogs('info')
    const { app } = await ctx.build({ env: { ENCRYPTION_SECRET: OTHER_SECRET }, logger: logs.logger })
    expect(app.services.settings.unreadable()).toEqual([])
    const [view] = (await app.services.settings.list()).filter((each) => each.key === 'smtp.password')
    expect(view).toMatchObject({ value: '', is_set: false, readable: true })
    expect(logs.text()).not.toContain('cannot be decrypted')
  })
})
