import { eq } from 'drizzle-orm'
import type { FastifyInstance } from 'fastify'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createTestContext, type TestContext } from '../helpers/app.js'
import { manualClock, type ManualClock } from '../helpers/clock.js'
import { DIALECTS } from '../helpers/database.js'
import { client, createTeam, ROOMY_LIMITS, signUp, teamAs, type Account, type Call } from '../helpers/teams.js'
import { accept, INVITATION_KEYS, invite, invited, listed, registerInvited, type InvitationBody } from './helpers.js'

const DAY = 24 * 3600_000

describe.each(DIALECTS)('team invitations through the API on %s', (dialect) => {
  let ctx: TestContext
  let app: FastifyInstance
  let call: Call
  let clock: ManualClock
  let owner: Account
  let globalAdmin: Account
  let seq = 0
  const unique = (prefix: string) => `${prefix}_${++seq}`

  beforeAll(async () => {
    ctx = await createTestContext(dialect)
    clock = manualClock(Date.now())
    app = (await ctx.build({ clock, limits: ROOMY_LIMITS })).app
    call = client(app)
    globalAdmin = await signUp(app, 'inv_first_admin')
    owner = await signUp(app, 'inv_owner')
    await app.services.settings.update([{ key: 'team.creation_limit', value: 100 }])
  })
  afterAll(() => ctx.close())

  it('with mail off, the creating answer carries the accept link once; a new person registers with it, accepts and is a member', async () => {
    const team = await createTeam(call, owner, 'Mail off team')
    const response = await invite(call, team.id, owner, 'Newcomer_1@Example.com', 'team_admin')
    expect(response.statusCode).toBe(201)
    const body = response.json()
    expect(body.data.mail_sent).toBe(false)
    expect(body.message).toMatch(/no mail was sent/i)
    expect(body.data.accept_url).toMatch(/^http:\/\/localhost:3000\/api\/auth\/invitations\/[A-Za-z0-9_-]{43}$/)
    const invitation: InvitationBody = body.data.invitation
    expect(Object.keys(invitation).sort()).toEqual(INVITATION_KEYS)
    expect(invitation).toMatchObject({ team_id: team.id, email: 'newcomer_1@example.com', role: 'team_admin', status: 'pending', invited_by: { id: owner.id, username: owner.username }, accepted_at: null, revoked_at: null })
    expect(Date.parse(invitation.expires_at) - Date.parse(invitation.created_at)).toBe(7 * DAY)

    const token = body.data.accept_url.split('/').pop() as string
    const lookup = await call('GET', `/api/invitations/${token}`)
    expect(lookup.statusCode).toBe(200)
    expect(lookup.json().data).toEqual({ team: { id: team.id, name: 'Mail off team' }, inviter: { username: owner.username }, email: 'newcomer_1@example.com', role: 'team_admin', expires_at: invitation.expires_at })

    const newcomer = await registerInvited(app, 'newcomer_1', token, 'NEWCOMER_1@example.com')
    expect(newcomer.verified).toBe(true)
    expect(await teamAs(call, team.id, newcomer)).toBeUndefined()
    const accepted = await accept(call, token, newcomer)
    expect(accepted.statusCode, accepted.body).toBe(200)
    expect(accepted.json().data.team).toMatchObject({ id: team.id, role: 'team_admin', member_count: 2 })
    expect((await teamAs(call, team.id, newcomer))?.role).toBe('team_admin')

    // Used up: the link says so, and the list shows it accepted (only when asked: pending is the default).
    expect((await call('GET', `/api/invitations/${token}`)).json()).toMatchObject({ code: 'INVALID_TOKEN', error: expect.stringMatching(/accepted already/) })
    expect((await accept(call, token, newcomer)).json().code).toBe('INVALID_TOKEN')
    expect(await listed(call, team.id, owner)).toEqual([])
    const [all] = await listed(call, team.id, owner, '?status=all')
    expect(all).toMatchObject({ id: invitation.id, status: 'accepted', accepted_at: expect.any(String) })
  })

  it('refuses a second pending invitation of an address (INVITATION_PENDING), a member (ALREADY_MEMBER) and a default team (DEFAULT_TEAM)', async () => {
    const team = await createTeam(call, owner, 'Conflicts team')
    await invited(call, team.id, owner, 'twice@example.com')
    const again = await invite(call, team.id, owner, 'TWICE@example.com')
    expect(again.statusCode).toBe(409)
    expect(again.json().code).toBe('INVITATION_PENDING')
    const member = await signUp(app, unique('member'))
    await call('POST', `/api/teams/${team.id}/members`, owner, { login: member.username, role: 'team_user' })
    const ofMember = await invite(call, team.id, owner, member.email.toUpperCase())
    expect(ofMember.statusCode).toBe(409)
    expect(ofMember.json().code).toBe('ALREADY_MEMBER')
    const defaultTeam = (await call('GET', '/api/teams/me/default', owner)).json().data.team
    const onDefault = await invite(call, defaultTeam.id, owner, 'anyone@example.com')
    expect(onDefault.statusCode).toBe(409)
    expect(onDefault.json().code).toBe('DEFAULT_TEAM')
    expect((await listed(call, team.id, owner)).map((each) => each.email)).toEqual(['twice@example.com'])
  })

  it('accepting needs the invited address, verified: 403 INVITATION_EMAIL_MISMATCH, 403 EMAIL_NOT_VERIFIED; the invitation stays usable', async () => {
    const team = await createTeam(call, owner, 'Address team')
    const stranger = unique('stranger')
    const { token: other } = await invited(call, team.id, owner, `${stranger}@example.com`)
    const someoneElse = await registerInvited(app, unique('someone'), other, `${unique('else')}@example.com`)
    expect(someoneElse.verified).toBe(false)
    const wrong = await accept(call, other, someoneElse)
    expect(wrong.statusCode).toBe(403)
    expect(wrong.json().code).toBe('INVITATION_EMAIL_MISMATCH')

    const unverified = await signUp(app, unique('unverified'))
    const { token } = await invited(call, team.id, owner, unverified.email)
    const refused = await accept(call, token, unverified)
    expect(refused.statusCode).toBe(403)
    expect(refused.json().code).toBe('EMAIL_NOT_VERIFIED')
    expect(await teamAs(call, team.id, unverified)).toBeUndefined()
    expect((await call('GET', `/api/invitations/${token}`)).statusCode).toBe(200)
  })

  it('a member accepting answers 409 ALREADY_MEMBER and leaves the invitation pending; it holds no seat', async () => {
    const team = await createTeam(call, owner, 'Already team')
    const person = unique('already')
    const { token } = await invited(call, team.id, owner, `${person}@example.com`)
    const account = await registerInvited(app, person, token)
    expect((await call('POST', `/api/teams/${team.id}/members`, owner, { login: account.username, role: 'team_user' })).statusCode).toBe(201)
    const response = await accept(call, token, account)
    expect(response.statusCode).toBe(409)
    expect(response.json().code).toBe('ALREADY_MEMBER')
    expect((await listed(call, team.id, owner)).map((each) => each.status)).toEqual(['pending'])
    expect(await app.services.invitations.pendingSeats(team.id, app.services.database.db)).toBe(0)
  })

  it('an expired invitation answers 400 INVITATION_EXPIRED, lists as expired, and is purged a week later', async () => {
    const team = await createTeam(call, owner, 'Expiry team')
    const person = unique('late')
    const { token, invitation } = await invited(call, team.id, owner, `${person}@example.com`)
    const account = await registerInvited(app, person, token)
    clock.advance(7 * DAY + 1000)
    for (const response of [await call('GET', `/api/invitations/${token}`), await accept(call, token, account)]) {
      expect(response.statusCode).toBe(400)
      expect(response.json().code).toBe('INVITATION_EXPIRED')
    }
    expect(await listed(call, team.id, owner)).toEqual([])
    expect((await listed(call, team.id, owner, '?status=expired')).map((each) => each.id)).toEqual([invitation.id])
    // An expired invitation no longer verifies a registration either.
    expect((await registerInvited(app, unique('after_expiry'), token, `${person}_b@example.com`)).verified).toBe(false)
    const { db, t } = app.services.database
    await app.services.purgeExpired()
    expect(await db.select().from(t.teamInvitations).where(eq(t.teamInvitations.id, invitation.id))).toHaveLength(1)
    clock.advance(7 * DAY)
    await app.services.purgeExpired()
    expect(await db.select().from(t.teamInvitations).where(eq(t.teamInvitations.id, invitation.id))).toHaveLength(0)
    expect((await call('GET', `/api/invitations/${token}`)).json().code).toBe('INVALID_TOKEN')
  })

  it('revoking ends the link (400 INVALID_TOKEN), frees the seat, and cannot be repeated; an accepted one cannot be revoked', async () => {
    const team = await createTeam(call, owner, 'Revoke team')
    const { token, invitation } = await invited(call, team.id, owner, 'revoked@example.com')
    const revoked = await call('DELETE', `/api/teams/${team.id}/invitations/${invitation.id}`, owner)
    expect(revoked.statusCode).toBe(200)
    expect((await call('GET', `/api/invitations/${token}`)).json()).toMatchObject({ code: 'INVALID_TOKEN', error: expect.stringMatching(/revoked/) })
    expect((await call('DELETE', `/api/teams/${team.id}/invitations/${invitation.id}`, owner)).json().code).toBe('TOKEN_ALREADY_REVOKED')
    expect((await listed(call, team.id, owner, '?status=revoked')).map((each) => each.id)).toEqual([invitation.id])
    // A fresh invitation of the same address is allowed now.
    expect((await invite(call, team.id, owner, 'revoked@example.com')).statusCode).toBe(201)

    const person = unique('accepted')
    const second = await invited(call, team.id, owner, `${person}@example.com`)
    expect((await accept(call, second.token, await registerInvited(app, person, second.token))).statusCode).toBe(200)
    const late = await call('DELETE', `/api/teams/${team.id}/invitations/${second.invitation.id}`, owner)
    expect(late.statusCode).toBe(409)
    expect(late.json().code).toBe('TOKEN_ALREADY_USED')
  })

  it("another team's invitation id is not found (404), and unknown tokens answer 400 INVALID_TOKEN", async () => {
    const mine = await createTeam(call, owner, 'Mine team')
    const other = await signUp(app, unique('other_owner'))
    const theirs = await createTeam(call, other, 'Theirs team')
    const { invitation } = await invited(call, theirs.id, other, 'theirs@example.com')
    const response = await call('DELETE', `/api/teams/${mine.id}/invitations/${invitation.id}`, owner)
    expect(response.statusCode).toBe(404)
    expect((await listed(call, theirs.id, other)).map((each) => each.status)).toEqual(['pending'])
    const unknown = await call('GET', `/api/invitations/${'x'.repeat(43)}`)
    expect(unknown.statusCode).toBe(400)
    expect(unknown.json().code).toBe('INVALID_TOKEN')
  })

  it('an invitation ends with its team and with the account of whoever sent it', async () => {
    const inviter = await signUp(app, unique('inviter'))
    const team = await createTeam(call, owner, 'Ending team')
    expect((await call('POST', `/api/teams/${team.id}/members`, owner, { login: inviter.username, role: 'team_admin' })).statusCode).toBe(201)
    const byInviter = await invited(call, team.id, inviter, 'ends_with_inviter@example.com')
    const byOwner = await invited(call, team.id, owner, 'stays@example.com')
    expect((await call('DELETE', `/api/admin/users/${inviter.id}`, globalAdmin)).statusCode).toBe(200)
    expect((await call('GET', `/api/invitations/${byInviter.token}`)).json().code).toBe('INVALID_TOKEN')
    expect((await call('GET', `/api/invitations/${byOwner.token}`)).statusCode).toBe(200)
    expect((await call('DELETE', `/api/teams/${team.id}`, owner)).statusCode).toBe(200)
    expect((await call('GET', `/api/invitations/${byOwner.token}`)).json().code).toBe('INVALID_TOKEN')
  })

  it('lists newest first with pagination', async () => {
    const team = await createTeam(call, owner, 'Paged team')
    for (const n of [1, 2, 3]) {
      await invited(call, team.id, owner, `paged_${n}@example.com`)
      clock.advance(1000)
    }
    const page = await call('GET', `/api/teams/${team.id}/invitations?limit=2&offset=1`, owner)
    expect(page.statusCode).toBe(200)
    expect(page.json().data.invitations.map((each: InvitationBody) => each.email)).toEqual(['paged_2@example.com', 'paged_1@example.com'])
    expect(page.json().data.pagination).toEqual({ total: 3, limit: 2, offset: 1, has_more: false })
  })

  it('records invitation.created, .accepted and .revoked with the address and role, and team.member_added', async () => {
    const team = await createTeam(call, owner, 'Audited team')
    const person = unique('audited')
    const { token, invitation } = await invited(call, team.id, owner, `${person}@example.com`, 'team_admin')
    const account = await registerInvited(app, person, token)
    await accept(call, token, account)
    const { invitation: second } = await invited(call, team.id, owner, 'gone@example.com')
    await call('DELETE', `/api/teams/${team.id}/invitations/${second.id}`, owner)
    const { db, t } = app.services.database
    const rows = (await db.select().from(t.auditEvents).where(eq(t.auditEvents.target, team.id)))
      .filter((row) => row.type.startsWith('invitation.') || row.type === 'team.member_added')
      .sort((a, b) => a.createdAt.getTime() - b.createdAt.getTime() || a.id.localeCompare(b.id))
    expect(rows.map((row) => [row.type, row.actorId, row.details])).toEqual([
      ['invitation.created', owner.id, { team_id: team.id, invitation_id: invitation.id, email: `${person}@example.com`, role: 'team_admin' }],
      ['invitation.accepted', account.id, { team_id: team.id, invitation_id: invitation.id, email: `${person}@example.com`, role: 'team_admin' }],
      ['team.member_added', account.id, { team_id: team.id, user_id: account.id, role: 'team_admin', invitation_id: invitation.id }],
      ['invitation.created', owner.id, { team_id: team.id, invitation_id: second.id, email: 'gone@example.com', role: 'team_user' }],
      ['invitation.revoked', owner.id, { team_id: team.id, invitation_id: second.id, email: 'gone@example.com', role: 'team_user' }],
    ])
  })

  it('stores the token only as a digest, and no answer after the creating one carries it', async () => {
    const team = await createTeam(call, owner, 'Digest team')
    const { token, invitation } = await invited(call, team.id, owner, 'digest@example.com')
    const { db, t } = app.services.database
    const [row] = await db.select().from(t.teamInvitations).where(eq(t.teamInvitations.id, invitation.id))
    expect(JSON.stringify(row)).not.toContain(token)
    const answers = [
      await call('GET', `/api/teams/${team.id}/invitations?status=all`, owner),
      await call('GET', `/api/invitations/${token}`),
      await call('DELETE', `/api/teams/${team.id}/invitations/${invitation.id}`, owner),
      await call('GET', `/api/invitations/${token}`),
    ]
    for (const answer of answers) expect(answer.body).not.toContain(token)
    const audit = await db.select().from(t.auditEvents)
    expect(JSON.stringify(audit)).not.toContain(token)
  })
})
