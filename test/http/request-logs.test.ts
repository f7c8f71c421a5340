import type { FastifyInstance, InjectOptions } from 'fastify'
import { afterAll, beforeAll, describe, expect, it, onTestFinished } from 'vitest'
import { registerAndLogin } from '../helpers/accounts.js'
import { createTestContext, type TestContext } from '../helpers/app.js'
import { DIALECTS, type TestDialect } from '../helpers/database.js'
import { captureLogs, type LogCapture } from '../helpers/log-capture.js'
import { smtpSettings, startSmtpSink, type SmtpSink } from '../helpers/smtp-sink.js'

/**
 * What the log says about error answers: a refusal (4xx) is one info line naming method, route
 * and code; an expected condition (503 EMAIL_DISABLED, DATABASE_NOT_CONFIGURED,
 * DATABASE_UNAVAILABLE, 502 SMTP_ERROR) is a warning with its code, route and reason, and no stack.
 */

type Entry = Record<string, any>

const entries = (logs: LogCapture, from = 0): Entry[] => logs.lines.slice(from).map((line) => JSON.parse(line) as Entry)

async function freshContext(dialect: TestDialect): Promise<TestContext> {
  const ctx = await createTestContext(dialect)
  onTestFinished(() => ctx.close())
  return ctx
}

describe.each(DIALECTS)('request logs on %s', (dialect) => {
  let ctx: TestContext
  let app: FastifyInstance
  let logs: LogCapture
  let cookie: string
  let rejecting: SmtpSink

  beforeAll(async () => {
    ctx = await createTestContext(dialect)
    rejecting = await startSmtpSink({ reject: '550 5.1.1 mailbox unavailable' })
    logs = captureLogs('info')
    ;({ app } = await ctx.build({ logger: logs.logger, env: { RATE_LIMIT_ENABLED: 'false' } }))
    ;({ cookie } = await registerAndLogin(app, { username: 'admin', email: 'admin@example.test' }))
  })
  afterAll(async () => {
    await ctx?.close()
    await rejecting?.close()
  })

  /** The lines one request wrote, found by the request id it was given. */
  async function linesOf(requestId: string, request: InjectOptions) {
    const response = await app.inject({ ...request, headers: { ...request.headers, 'x-request-id': requestId } })
    return { response, lines: entries(logs).filter((entry) => entry.reqId === requestId) }
  }

  it('a 4xx is one info line with method, route pattern and code, without a stack', async () => {
    const { response, lines } = await linesOf('teams-404', { method: 'GET', url: '/api/teams/no-such-team', headers: { cookie } })
    expect(response.statusCode).toBe(404)
    expect(lines).toHaveLength(1)
    expect(lines[0]).toMatchObject({
      level: 30,
      msg: 'request completed',
      req: { method: 'GET', url: '/api/teams/no-such-team' },
      route: '/api/teams/:id',
      res: { statusCode: 404 },
      code: 'NOT_FOUND',
    })
    expect(JSON.stringify(lines)).not.toContain('stack')

    const anonymous = await linesOf('me-401', { method: 'GET', url: '/api/users/me' })
    expect(anonymous.response.statusCode).toBe(401)
    expect(anonymous.lines).toEqual([expect.objectContaining({ level: 30, route: '/api/users/me', code: 'UNAUTHORIZED', req: expect.objectContaining({ method: 'GET' }) })])
  })

  it('an unknown route is a 404 line without a route', async () => {
    const { lines } = await linesOf('nowhere-404', { method: 'DELETE', url: '/api/nowhere' })
    expect(lines).toHaveLength(1)
    expect(lines[0]).toMatchObject({ level: 30, req: { method: 'DELETE', url: '/api/nowhere' }, code: 'NOT_FOUND' })
    expect(lines[0]!.route).toBeUndefined()
  })

  it('503 EMAIL_DISABLED is a warning naming code and route, without a stack', async () => {
    await app.services.settings.update([{ key: 'global.send_mail', value: false }])
    const { response, lines } = await linesOf('forgot-503', { method: 'POST', url: '/api/auth/email/forgot-password', payload: { email: 'admin@example.test' } })
    expect(response.statusCode).toBe(503)
    const warning = lines.find((line) => line.level === 40)
    expect(warning).toMatchObject({ code: 'EMAIL_DISABLED', route: '/api/auth/email/forgot-password', msg: 'Email sending is disabled on this service.' })
    expect(warning!.err).toBeUndefined()
    expect(JSON.stringify(lines)).not.toContain('stack')
    expect(lines.filter((line) => line.level >= 50)).toEqual([])
  })

  it('502 SMTP_ERROR is a warning carrying the server reply, without a stack', async () => {
    await app.services.settings.update(smtpSettings(rejecting))
    const { response, lines } = await linesOf('test-mail-502', {
      method: 'POST', url: '/api/admin/email/test', headers: { cookie }, payload: { email: 'ops@example.test' },
    })
    expect(response.statusCode).toBe(502)
    const warning = lines.find((line) => line.level === 40)
    expect(warning).toMatchObject({ code: 'SMTP_ERROR', route: '/api/admin/email/test', msg: expect.stringContaining('550 5.1.1 mailbox unavailable') })
    expect(JSON.stringify(lines)).not.toContain('stack')
    expect(lines.filter((line) => line.level >= 50)).toEqual([])
  })

  it('503 DATABASE_NOT_CONFIGURED in setup mode is a warning without a stack', async () => {
    const setup = await freshContext(dialect)
    const setupLogs = captureLogs('info')
    const { app: waiting } = await setup.build({ logger: setupLogs.logger, env: { DATABASE_AUTO_SETUP: 'false' } })
    const response = await waiting.inject({ method: 'GET', url: '/api/users/me', headers: { 'x-request-id': 'setup-503' } })
    expect(response.statusCode).toBe(503)
    const lines = entries(setupLogs).filter((entry) => entry.reqId === 'setup-503')
    expect(lines.find((line) => line.level === 40)).toMatchObject({ code: 'DATABASE_NOT_CONFIGURED', route: '/api/users/me' })
    expect(JSON.stringify(lines)).not.toContain('stack')
  })

  it.runIf(dialect === 'postgresql')('503 DATABASE_UNAVAILABLE is a warning with the driver reason, without a stack', async () => {
    const lost = await freshContext(dialect)
    const lostLogs = captureLogs('info')
    const { app: orphan } = await lost.build({ logger: lostLogs.logger })
    const { cookie: session } = await registerAndLogin(orphan, { username: 'solo', email: 'solo@example.test' })
    // The pool ends under the service, as if PostgreSQL were gone for good.
    await orphan.services.database.close()
    const response = await orphan.inject({ method: 'GET', url: '/api/users/me', headers: { cookie: session, 'x-request-id': 'me-503' } })
    expect(response.statusCode).toBe(503)
    expect(response.json().code).toBe('DATABASE_UNAVAILABLE')
    const lines = entries(lostLogs).filter((entry) => entry.reqId === 'me-503')
    expect(lines.find((line) => line.level === 40)).toMatchObject({
      code: 'DATABASE_UNAVAILABLE', route: '/api/users/me', reason: expect.stringMatching(/pool/i),
    })
    expect(JSON.stringify(lines)).not.toContain('stack')
  })
})
