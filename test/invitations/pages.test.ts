import type { FastifyInstance } from 'fastify'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createTestContext, type TestContext } from '../helpers/app.js'
import { DIALECTS } from '../helpers/database.js'
import { htmlTags } from '../helpers/oauth.js'
import { client, createTeam, crew, ROOMY_LIMITS, signUp, teamAs, type Account, type Call } from '../helpers/teams.js'
import { invited, listed, registerInvited, tokenOf } from './helpers.js'
import { expectPage, formsOf, pageBrowser, textOf } from './page-browser.js'

const TEAMS_PAGE = '/api/auth/account/teams'
const acceptPath = (token: string) => `/api/auth/invitations/${token}`

/** The invitation pages over app.inject: the accept page in each of its states, and the team invitations page. */
describe.each(DIALECTS)('the invitation pages on %s', (dialect) => {
  let ctx: TestContext
  let app: FastifyInstance
  let call: Call
  let owner: Account
  let seq = 0
  const unique = (prefix: string) => `${prefix}_${++seq}`
  const signedIn = (account: Account) => {
    const browser = pageBrowser(app)
    browser.useSession(account.cookie)
    return browser
  }

  beforeAll(async () => {
    ctx = await createTestContext(dialect)
    app = (await ctx.build({ limits: ROOMY_LIMITS })).app
    call = client(app)
    await signUp(app, 'page_first_admin')
    owner = await signUp(app, 'page_owner')
    await app.services.settings.update([{ key: 'team.creation_limit', value: 100 }])
  })
  afterAll(() => ctx.close())

  describe('the accept page', () => {
    it('signed out: names the team, inviter and role, links to sign in, and registers the invited address; the page then offers to accept', async () => {
      const team = await createTeam(call, owner, 'Signed out team')
      const person = unique('page_new')
      const { token } = await invited(call, team.id, owner, `${person}@example.com`, 'team_admin')
      const browser = pageBrowser(app)
      const page = await browser.get(acceptPath(token))
      expectPage(page, 200)
      expect(textOf(page)).toContain(`page_owner invited ${person}@example.com to the team Signed out team as team admin`)
      expect(htmlTags(page.body, 'a').map((a) => a.href)).toContain('/api/auth/sign-in')
      const [registerForm] = formsOf(page)
      expect(registerForm!.action).toBe(`${acceptPath(token)}/register`)

      const registered = await browser.post(registerForm!.action, { ...registerForm!.hidden, username: person, password: 'a long password 1' })
      expect(registered.statusCode, registered.body).toBe(303)
      expect(registered.headers.location).toBe(acceptPath(token))
      expect(browser.jar.get('auth_session')).toBeDefined()
      const offered = await browser.get(acceptPath(token))
      expectPage(offered, 200)
      const [acceptForm] = formsOf(offered)
      expect(acceptForm!.action).toBe(acceptPath(token))
      expectPage(await browser.post(acceptForm!.action, acceptForm!.hidden), 200)
      const me = (await call('GET', '/api/users/me', { id: '', username: person, email: '', cookie: `auth_session=${browser.jar.get('auth_session')}` })).json().data
      expect(me.email_verified).toBe(true)
      expect((await teamAs(call, team.id, { id: me.id, username: person, email: me.email, cookie: `auth_session=${browser.jar.get('auth_session')}` }))?.role).toBe('team_admin')
    })

    it('registration refused (a taken username) shows the page again with the reason and the typed username', async () => {
      const team = await createTeam(call, owner, 'Taken team')
      const { token } = await invited(call, team.id, owner, `${unique('page_taken')}@example.com`)
      const browser = pageBrowser(app)
      const [form] = formsOf(await browser.get(acceptPath(token)))
      const refused = await browser.post(form!.action, { ...form!.hidden, username: owner.username, password: 'a long password 1' })
      expectPage(refused, 409)
      expect(textOf(refused)).toContain('This username is already taken.')
      expect(htmlTags(refused.body, 'input').find((input) => input.name === 'username')?.value).toBe(owner.username)
    })

    it('signed in with another address, or unverified, or a member already: says why and offers no accept button', async () => {
      const team = await createTeam(call, owner, 'States team')
      const unverified = await signUp(app, unique('page_unverified'))
      const { token } = await invited(call, team.id, owner, unverified.email)
      const other = await signUp(app, unique('page_other'))

      const asOther = await signedIn(other).get(acceptPath(token))
      expectPage(asOther, 200)
      expect(textOf(asOther)).toContain(`You are signed in as ${other.email}, but only the account with the invited address may accept.`)
      expect(formsOf(asOther)).toEqual([])

      const asUnverified = await signedIn(unverified).get(acceptPath(token))
      expect(textOf(asUnverified)).toContain('Your email address is not verified yet')
      expect(formsOf(asUnverified)).toEqual([])

      const memberName = unique('page_member')
      const second = await invited(call, team.id, owner, `${memberName}@example.com`)
      const member = await registerInvited(app, memberName, second.token)
      await call('POST', `/api/teams/${team.id}/members`, owner, { login: memberName, role: 'team_user' })
      const asMember = await signedIn(member).get(acceptPath(second.token))
      expect(textOf(asMember)).toContain('You are a member of this team already.')
      expect(formsOf(asMember)).toEqual([])
    })

    it('a stale form token shows the page again (403 INVALID_CSRF_TOKEN); a cross-site post is refused (403); nothing is joined', async () => {
      const team = await createTeam(call, owner, 'Csrf team')
      const person = unique('page_csrf')
      const { token } = await invited(call, team.id, owner, `${person}@example.com`)
      const account = await registerInvited(app, person, token)
      const browser = signedIn(account)
      const [form] = formsOf(await browser.get(acceptPath(token)))
      const stale = await browser.post(form!.action, { csrf_token: 'x'.repeat(43) })
      expectPage(stale, 403)
      expect(stale.headers['content-type']).toMatch(/html/)
      expect(formsOf(stale)).toHaveLength(1)
      const crossSite = await browser.post(form!.action, form!.hidden, { origin: 'https://evil.example' })
      expect(crossSite.statusCode).toBe(403)
      expect(await teamAs(call, team.id, account)).toBeUndefined()
    })

    it('unknown, revoked and expired links are refusal pages with the reason', async () => {
      const team = await createTeam(call, owner, 'Refusal team')
      const { token, invitation } = await invited(call, team.id, owner, `${unique('page_revoked')}@example.com`)
      await call('DELETE', `/api/teams/${team.id}/invitations/${invitation.id}`, owner)
      const revoked = await pageBrowser(app).get(acceptPath(token))
      expectPage(revoked, 400)
      expect(textOf(revoked)).toContain('This invitation was revoked by the team.')
      const unknown = await pageBrowser(app).get(acceptPath('x'.repeat(43)))
      expectPage(unknown, 400)
      expect(textOf(unknown)).toContain('This invitation link is invalid.')
    })
  })

  describe('the team invitations page', () => {
    it('the account page links to it; without a session it sends to the sign-in page', async () => {
      const account = await signedIn(owner).get('/api/auth/account')
      expect(htmlTags(account.body, 'a').map((a) => a.href)).toContain(TEAMS_PAGE)
      const anonymous = await pageBrowser(app).get(TEAMS_PAGE)
      expect(anonymous.statusCode).toBe(303)
      expect(anonymous.headers.location).toBe('/api/auth/sign-in')
    })

    it('lists the teams the user manages, invites (the link shown once), and revokes', async () => {
      const c = await crew(call, () => signUp(app, unique('page_crew')), 'Managed team')
      const browser = signedIn(c.teamAdmin)
      const page = await browser.get(TEAMS_PAGE)
      expectPage(page, 200)
      expect(textOf(page)).toContain('Managed team')
      // Its default team and teams where it is a team_user are not listed.
      expect(textOf(page)).not.toContain(c.teamAdmin.username)
      const [invite] = formsOf(page)
      expect(invite).toMatchObject({ action: `${TEAMS_PAGE}/invite`, hidden: { team_id: c.team.id } })

      const created = await browser.post(invite!.action, { ...invite!.hidden, email: 'Page_Invitee@example.com', role: 'team_admin' })
      expectPage(created, 200)
      const link = htmlTags(created.body, 'input').find((input) => input.readonly !== undefined)?.value
      expect(link).toMatch(/^http:\/\/localhost:3000\/api\/auth\/invitations\/[A-Za-z0-9_-]{43}$/)
      expect((await call('GET', `/api/invitations/${tokenOf(link!)}`)).json().data).toMatchObject({ email: 'page_invitee@example.com', role: 'team_admin' })
      expect(textOf(created)).toContain('No mail was sent')

      const again = await browser.get(TEAMS_PAGE)
      expect(again.body).not.toContain(tokenOf(link!))
      expect(textOf(again)).toContain('page_invitee@example.com (team admin')
      const revoke = formsOf(again).find((form) => form.action === `${TEAMS_PAGE}/revoke`)!
      const revoked = await browser.post(revoke.action, revoke.hidden)
      expect(revoked.statusCode).toBe(303)
      expect(revoked.headers.location).toBe(`${TEAMS_PAGE}?revoked=1`)
      expect(textOf(await browser.get(revoked.headers.location as string))).toContain('The invitation was revoked')
      expect(await listed(call, c.team.id, c.owner)).toEqual([])

      // A refusal (the address is invited already, then a member) shows the page with the reason and status.
      await browser.post(invite!.action, { ...invite!.hidden, email: 'page_twice@example.com', role: 'team_user' })
      const twice = await browser.post(invite!.action, { ...invite!.hidden, email: 'page_twice@example.com', role: 'team_user' })
      expectPage(twice, 409)
      expect(textOf(twice)).toContain('pending invitation')
    })

    it('a team_user of a team cannot invite to it through the page (403), nor a stranger (404)', async () => {
      const c = await crew(call, () => signUp(app, unique('page_crew')), 'Guarded team')
      for (const [account, status] of [[c.teamUser, 403], [c.outsider, 404]] as const) {
        // A team of their own gives them the page's form (and its token), which they point at the guarded team.
        await createTeam(call, account, unique('Own team'))
        const browser = signedIn(account)
        const [form] = formsOf(await browser.get(TEAMS_PAGE))
        const refused = await browser.post(form!.action, { ...form!.hidden, team_id: c.team.id, email: 'page_sneak@example.com', role: 'team_admin' })
        expectPage(refused, status)
      }
      expect(await listed(call, c.team.id, c.owner)).toEqual([])
    })
  })
})
