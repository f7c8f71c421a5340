import type { FastifyInstance, LightMyRequestResponse } from 'fastify'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createTestContext, type TestContext } from '../helpers/app.js'
import { DIALECTS } from '../helpers/database.js'
import { captureLogs, type LogCapture } from '../helpers/log-capture.js'
import { smtpSettings, startSmtpSink, type SmtpSink } from '../helpers/smtp-sink.js'
import { client, createTeam, ROOMY_LIMITS, signUp, type Account, type Call } from '../helpers/teams.js'
import { registerInvited, tokenOf } from './helpers.js'
import { formsOf, pageBrowser } from './page-browser.js'

/**
 * An invitation's token is a secret: after the answer that creates it, it appears in no answer,
 * no log line (even at trace level, though links carry it in the path) and no audit row.
 */
describe.each(DIALECTS)('invitation tokens stay secret on %s', (dialect) => {
  let ctx: TestContext
  let app: FastifyInstance
  let call: Call
  let logs: LogCapture
  let sink: SmtpSink
  let owner: Account

  beforeAll(async () => {
    ctx = await createTestContext(dialect)
    logs = captureLogs('trace')
    // A sink that refuses every recipient: the failed mail's log line is among those searched.
    sink = await startSmtpSink({ reject: '550 5.1.1 no such mailbox here' })
    app = (await ctx.build({ limits: ROOMY_LIMITS, logger: logs.logger })).app
    call = client(app)
    await signUp(app, 'secret_first_admin')
    owner = await signUp(app, 'secret_owner')
    await app.services.settings.update(smtpSettings(sink, { 'global.require_email_verification': false, 'global.page_url': '' }))
  })
  afterAll(async () => {
    await ctx?.close()
    await sink?.close()
  })

  it('only the creating answer carries the token', async () => {
    const team = await createTeam(call, owner, 'Secret team')
    const created = await call('POST', `/api/teams/${team.id}/invitations`, owner, { email: 'secret_invitee@example.com', role: 'team_user' })
    expect(created.statusCode).toBe(201)
    expect(created.json().data.mail_sent).toBe(false)
    const token = tokenOf(created.json().data.accept_url)
    const answers: LightMyRequestResponse[] = []
    const keep = (response: LightMyRequestResponse) => {
      answers.push(response)
      return response
    }

    keep(await call('GET', `/api/teams/${team.id}/invitations?status=all`, owner))
    keep(await call('GET', `/api/invitations/${token}`))
    keep(await call('GET', `/api/invitations/${token}x`))
    const invitee = await registerInvited(app, 'secret_invitee', token)
    const browser = pageBrowser(app)
    browser.useSession(invitee.cookie)
    const page = keep(await browser.get(`/api/auth/invitations/${token}`))
    expect(page.statusCode).toBe(200)
    const [form] = formsOf(page)
    keep(await browser.post(form!.action, { csrf_token: 'stale' }))
    expect(keep(await browser.post(form!.action, form!.hidden)).statusCode).toBe(200)
    keep(await browser.get(`/api/auth/invitations/${token}`))
    keep(await call('POST', `/api/invitations/${token}/accept`, invitee))
    keep(await call('GET', `/api/teams/${team.id}/invitations?status=all`, owner))
    const teamsPage = pageBrowser(app)
    teamsPage.useSession(owner.cookie)
    keep(await teamsPage.get('/api/auth/account/teams'))

    for (const answer of answers) {
      // The page's own form posts to the link it was opened at: that is the one place the token may be.
      const body = answer.body.replaceAll(`action="/api/auth/invitations/${token}"`, '')
      expect(body, `${answer.statusCode} ${answer.body.slice(0, 200)}`).not.toContain(token)
      expect(JSON.stringify(answer.headers)).not.toContain(token)
    }
    expect(logs.lines.length).toBeGreaterThan(10)
    expect(logs.text()).toContain('[token omitted]')
    expect(logs.text()).toContain('invitation mail not sent')
    expect(logs.text()).not.toContain(token)
    const { db, t } = app.services.database
    expect(JSON.stringify(await db.select().from(t.auditEvents))).not.toContain(token)
  })
})
