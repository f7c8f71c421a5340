import type { FastifyInstance } from 'fastify'
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest'
import { register, sessionCookie } from '../helpers/accounts.js'
import { createTestContext, type TestContext } from '../helpers/app.js'
import { DIALECTS } from '../helpers/database.js'
import { smtpSettings, startSmtpSink, type ReceivedMail, type SmtpSink } from '../helpers/smtp-sink.js'
import { client, createTeam, ROOMY_LIMITS, teamAs, type Account, type Call } from '../helpers/teams.js'
import { accept, invite, tokenOf } from './helpers.js'
import { expectPage, formsOf, pageBrowser, PUBLIC_URL, textOf } from './page-browser.js'

const LINK = /http:\/\/localhost:3000\/api\/auth\/invitations\/[A-Za-z0-9_-]{43}/

/**
 * The invitation mail through a real SMTP server on loopback: sent when mail is on, read back from
 * the sink, its link followed to the accept page and the page's form submitted; a registration
 * with the invitation needs no verification mail.
 */
describe.each(DIALECTS)('the invitation mail on %s', (dialect) => {
  let ctx: TestContext
  let app: FastifyInstance
  let call: Call
  let sink: SmtpSink
  let owner: Account

  /** Registers with mail on: the verification mail comes, its link is opened, then the account signs in. */
  async function verifiedAccount(username: string): Promise<Account> {
    const email = `${username}@example.com`
    const before = sink.messages.length
    const registered = await register(app, { username, email })
    expect(registered.statusCode).toBe(201)
    expect(sessionCookie(registered)).toBeUndefined()
    const [verification] = (await sink.waitFor(before + 1)).slice(before)
    const link = new URL(/http:\/\/\S+verify\?token=[A-Za-z0-9_-]+/.exec(verification!.text)![0])
    expect((await app.inject({ url: `${link.pathname}${link.search}` })).statusCode).toBe(200)
    const login = await app.inject({ method: 'POST', url: '/api/auth/email/login', payload: { login: email, password: 'correct horse battery' } })
    return { id: login.json().data.user.id, username, email, cookie: sessionCookie(login)! }
  }

  /** The one mail sent to `to` after `before` mails had arrived. */
  async function mailTo(to: string, before: number): Promise<ReceivedMail> {
    const arrived = (await sink.waitFor(before + 1)).slice(before)
    expect(arrived.map((mail) => mail.to)).toEqual([[to]])
    return arrived[0]!
  }

  beforeAll(async () => {
    ctx = await createTestContext(dialect)
    sink = await startSmtpSink()
    app = (await ctx.build({ limits: ROOMY_LIMITS })).app
    call = client(app)
    await app.services.settings.update(smtpSettings(sink, { 'global.page_url': '', 'team.creation_limit': 100 }))
    await register(app, { username: 'mail_first_admin', email: 'mail_first_admin@example.com' })
    owner = await verifiedAccount('mail_owner')
  })
  beforeEach(() => app.services.settings.update([{ key: 'global.page_url', value: '' }]))
  afterAll(async () => {
    await ctx?.close()
    await sink?.close()
  })

  it('mails an existing user the link; following it and submitting the page\'s form joins the team; the page then says it was used', async () => {
    const bob = await verifiedAccount('mail_bob')
    const team = await createTeam(call, owner, 'Ops <&> "team"')
    const before = sink.messages.length
    const created = await invite(call, team.id, owner, 'MAIL_BOB@example.com')
    expect(created.statusCode).toBe(201)
    expect(created.json().data.mail_sent).toBe(true)
    expect(created.json().message).toBe('Invitation created and mailed.')

    const mail = await mailTo('mail_bob@example.com', before)
    expect(mail.subject).toMatch(/invited to join a team/)
    expect(mail.text).toContain(`mail_owner invited you to join the team "Ops <&> "team"" on`)
    expect(mail.text).toContain('as team_user')
    expect(mail.html).toContain('Ops &lt;&amp;&gt; &quot;team&quot;')
    expect(mail.html).not.toContain('Ops <&>')
    const link = LINK.exec(mail.text)![0]
    expect(link).toBe(created.json().data.accept_url)
    expect(mail.html).toContain(`href="${link}"`)

    const browser = pageBrowser(app)
    browser.useSession(bob.cookie)
    const path = new URL(link).pathname
    const page = await browser.get(path)
    expectPage(page, 200)
    expect(textOf(page)).toContain('mail_owner invited mail_bob@example.com to the team Ops <&> "team" as team member')
    const [form] = formsOf(page)
    expect(form!.action).toBe(path)
    const joined = await browser.post(form!.action, form!.hidden)
    expectPage(joined, 200)
    expect(textOf(joined)).toContain('You are now a member of Ops <&> "team".')
    expect((await teamAs(call, team.id, bob))?.role).toBe('team_user')

    const returning = await browser.get(path)
    expectPage(returning, 400)
    expect(textOf(returning)).toContain('This invitation was accepted already.')
  })

  it('a new person registers with the mailed invitation: no verification mail, the address is verified, and they accept', async () => {
    const team = await createTeam(call, owner, 'Newcomers')
    let before = sink.messages.length
    await invite(call, team.id, owner, 'mail_newcomer@example.com', 'team_admin')
    const token = tokenOf(LINK.exec((await mailTo('mail_newcomer@example.com', before)).text)![0])
    before = sink.messages.length
    const registered = await register(app, { username: 'mail_newcomer', email: 'mail_newcomer@example.com', invitation_token: token } as Parameters<typeof register>[1])
    expect(registered.statusCode).toBe(201)
    expect(registered.json().data.user.email_verified).toBe(true)
    const cookie = sessionCookie(registered)
    expect(cookie).toBeDefined()
    const newcomer = { id: registered.json().data.user.id, username: 'mail_newcomer', email: 'mail_newcomer@example.com', cookie: cookie! }
    expect((await accept(call, token, newcomer)).statusCode).toBe(200)
    expect((await teamAs(call, team.id, newcomer))?.role).toBe('team_admin')
    // Nothing was mailed to the newcomer: neither a verification nor anything else.
    expect(sink.messages.slice(before)).toEqual([])
  })

  it('with a frontend configured, the link leads to <page_url>/invitations/<token>', async () => {
    await app.services.settings.update([{ key: 'global.page_url', value: 'https://app.example.test/' }])
    const team = await createTeam(call, owner, 'Frontend team')
    const before = sink.messages.length
    const created = await invite(call, team.id, owner, 'mail_frontend@example.com')
    const url: string = created.json().data.accept_url
    expect(url).toMatch(/^https:\/\/app\.example\.test\/invitations\/[A-Za-z0-9_-]{43}$/)
    expect((await mailTo('mail_frontend@example.com', before)).text).toContain(url)
    expect((await call('GET', `/api/invitations/${tokenOf(url)}`)).statusCode).toBe(200)
  })

  it('a mail the server refuses leaves the invitation made and says so (mail_sent false)', async () => {
    const refusing = await startSmtpSink({ reject: '550 5.1.1 mailbox unavailable' })
    try {
      await app.services.settings.update(smtpSettings(refusing, { 'global.page_url': '' }))
      const team = await createTeam(call, owner, 'Refused mail')
      const created = await invite(call, team.id, owner, 'mail_refused@example.com')
      expect(created.statusCode).toBe(201)
      expect(created.json().data.mail_sent).toBe(false)
      expect((await call('GET', `/api/invitations/${tokenOf(created.json().data.accept_url)}`)).statusCode).toBe(200)
    } finally {
      await app.services.settings.update(smtpSettings(sink, { 'global.page_url': '' }))
      await refusing.close()
    }
  })

  it('mail switched off: no mail, and the accept link works all the same', async () => {
    await app.services.settings.update([{ key: 'global.send_mail', value: false }])
    try {
      const team = await createTeam(call, owner, 'Silent team')
      const before = sink.messages.length
      const created = await invite(call, team.id, owner, 'mail_silent@example.com')
      expect(created.json().data).toMatchObject({ mail_sent: false, accept_url: expect.stringMatching(LINK) })
      expect(sink.messages.slice(before)).toEqual([])
      expect(created.json().data.accept_url.startsWith(PUBLIC_URL)).toBe(true)
    } finally {
      await app.services.settings.update([{ key: 'global.send_mail', value: true }])
    }
  })
})
