import { sql } from 'drizzle-orm'
import type { FastifyInstance } from 'fastify'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { totpSecretBox } from '../../src/modules/two-factor/sealed-secret.js'
import { DEFAULT_PASSWORD } from '../helpers/accounts.js'
import { createTestContext, TEST_SECRET, type TestContext } from '../helpers/app.js'
import { manualClock, type ManualClock } from '../helpers/clock.js'
import { DIALECTS } from '../helpers/database.js'
import { captureLogs, type LogCapture } from '../helpers/log-capture.js'
import { inputValue } from '../helpers/oauth.js'
import { rawRows } from '../helpers/sql.js'
import { signUp } from '../helpers/teams.js'
import { challengeCookie, codeAt, post, STEP_MS, verify, wrongCodeAt } from './helpers.js'

const FORM = { 'content-type': 'application/x-www-form-urlencoded', accept: 'text/html' }

/**
 * The TOTP secret, the codes, the recovery codes and the challenge cookie never reach a log line
 * (at LOG_LEVEL=trace) or an audit row; the secret is stored sealed (AES-GCM, bound to its user),
 * the recovery codes only as digests.
 */
describe.each(DIALECTS)('two-factor secrets on %s', (dialect) => {
  let ctx: TestContext
  let app: FastifyInstance
  let clock: ManualClock
  let logs: LogCapture
  const secrets = new Map<string, string>()
  const keep = (label: string, value: string) => {
    secrets.set(value, label)
    return value
  }

  beforeAll(async () => {
    ctx = await createTestContext(dialect)
    clock = manualClock()
    logs = captureLogs('trace')
    ;({ app } = await ctx.build({ clock, logger: logs.logger, env: { RATE_LIMIT_ENABLED: 'false', LOG_LEVEL: 'trace' } }))
  })
  afterAll(() => ctx.close())

  it('keeps every secret of the flows out of the logs and the audit trail, and the secret sealed at rest', async () => {
    const account = await signUp(app, `sec_${dialect.slice(0, 2)}`)
    const other = await signUp(app, `sec_${dialect.slice(0, 2)}_other`)
    const setup = await post(app, '/api/auth/2fa/setup', account.cookie)
    const secret = keep('TOTP secret', setup.json().data.secret)
    const enableCode = keep('enable code', codeAt(secret, clock.now()))
    const enabled = await post(app, '/api/auth/2fa/enable', account.cookie, { code: enableCode })
    expect(enabled.statusCode).toBe(200)
    const recoveryCodes: string[] = enabled.json().data.recovery_codes
    for (const code of recoveryCodes) {
      keep('recovery code', code)
      keep('recovery code (no hyphens)', code.replace(/-/g, ''))
    }

    // The sign-in, with a wrong code, a reused one, a right one and a recovery code.
    const login = await app.inject({ method: 'POST', url: '/api/auth/email/login', payload: { login: account.email, password: DEFAULT_PASSWORD } })
    const challenge = challengeCookie(login)!
    keep('challenge cookie', challenge.split('=')[1]!)
    await verify(app, challenge, { code: keep('wrong code', wrongCodeAt(secret, clock.now())) })
    await verify(app, challenge, { code: enableCode })
    clock.advance(STEP_MS)
    expect((await verify(app, challenge, { code: keep('sign-in code', codeAt(secret, clock.now())) })).statusCode).toBe(200)
    const second = challengeCookie(await app.inject({ method: 'POST', url: '/api/auth/email/login', payload: { login: account.email, password: DEFAULT_PASSWORD } }))!
    keep('second challenge cookie', second.split('=')[1]!)
    expect((await verify(app, second, { recovery_code: recoveryCodes[0]! })).statusCode).toBe(200)

    // The setup page of the other account, through its forms.
    const page = await app.inject({ method: 'GET', url: '/api/auth/account/two-factor', headers: { cookie: other.cookie, accept: 'text/html' } })
    const formCookie = String(page.headers['set-cookie']).split(';')[0]!
    const cookies = `${other.cookie}; ${formCookie}`
    const setupPage = await app.inject({
      method: 'POST', url: '/api/auth/account/two-factor/setup', headers: { ...FORM, cookie: cookies },
      payload: new URLSearchParams({ csrf_token: inputValue(page.body, 'csrf_token')! }).toString(),
    })
    expect(setupPage.statusCode, setupPage.body.slice(0, 300)).toBe(200)
    const pageSecret = keep('TOTP secret from the page', /data-secret="([A-Z2-7]+)"/.exec(setupPage.body)![1]!)
    const confirmed = await app.inject({
      method: 'POST', url: '/api/auth/account/two-factor/enable', headers: { ...FORM, cookie: cookies },
      payload: new URLSearchParams({ csrf_token: inputValue(setupPage.body, 'csrf_token')!, code: keep('page enable code', codeAt(pageSecret, clock.now())) }).toString(),
    })
    expect(confirmed.statusCode).toBe(200)
    for (const [, code] of confirmed.body.matchAll(/<li><code>([0-9a-z-]+)<\/code><\/li>/g)) keep('recovery code from the page', code!)

    // Disabling, with a wrong code first.
    clock.advance(STEP_MS)
    await post(app, '/api/auth/2fa/disable', account.cookie, { password: DEFAULT_PASSWORD, code: keep('wrong disable code', wrongCodeAt(secret, clock.now() + 7 * STEP_MS)) })

    // The logs: every line the app wrote at trace level.
    const text = logs.text()
    expect(text.length).toBeGreaterThan(1000)
    for (const [value, label] of secrets) {
      const pattern = /^[0-9]{6}$/.test(value) ? new RegExp(`(?<![0-9])${value}(?![0-9])`) : new RegExp(value.replace(/[-]/g, '\\-'), 'i')
      expect(pattern.test(text), `${label} in the logs`).toBe(false)
    }
    // The audit trail: every row, details included.
    const audit = JSON.stringify((await app.services.auditEvents.list({ limit: 100, offset: 0 })).rows)
    expect(audit).toContain('user.two_factor_failed')
    expect(audit).toContain('user.recovery_code_used')
    for (const [value, label] of secrets) expect(audit.toLowerCase().includes(value.toLowerCase()), `${label} in the audit trail`).toBe(false)

    // At rest: sealed (AES-GCM, v1 format), bound to its user; recovery codes only as digests.
    const [[sealed]] = (await rawRows(app.services.database, sql`select secret_sealed from two_factor_secrets where user_id = ${account.id}`)) as [[string]]
    expect(sealed).toMatch(/^v1\./)
    expect(sealed).not.toContain(secret)
    const box = totpSecretBox(TEST_SECRET)
    expect(box.open(account.id, sealed)).toBe(secret)
    expect(() => box.open(other.id, sealed)).toThrow()
    const dump = JSON.stringify(await rawRows(app.services.database, sql`select * from recovery_codes`)).toLowerCase()
    expect(dump).toContain(account.id.toLowerCase())
    for (const [value, label] of secrets) expect(dump.includes(value.toLowerCase()), `${label} in recovery_codes`).toBe(false)
    const challenges = JSON.stringify(await rawRows(app.services.database, sql`select * from two_factor_challenges`))
    for (const [value, label] of secrets) expect(challenges.includes(value), `${label} in two_factor_challenges`).toBe(false)
  })
})
