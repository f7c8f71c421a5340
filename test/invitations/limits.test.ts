import { and, eq } from 'drizzle-orm'
import type { FastifyInstance } from 'fastify'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createTestContext, type TestContext } from '../helpers/app.js'
import { DIALECTS } from '../helpers/database.js'
import { expectNoServerError, expectOutcome, fire, warmUp } from '../helpers/races.js'
import { client, createTeam, ROOMY_LIMITS, signUp, withTeamSetting, type Account, type Call } from '../helpers/teams.js'
import { accept, invite, invited, listed, registerInvited } from './helpers.js'

/**
 * `team.member_limit` counts members plus pending invitations, for invitations and for the
 * add-member route alike, and holds under concurrency; an invitation is accepted once.
 */
describe.each(DIALECTS)('invitations and the member limit on %s', (dialect) => {
  let ctx: TestContext
  let app: FastifyInstance
  let call: Call
  let owner: Account
  let seq = 0
  const unique = (prefix: string) => `${prefix}_${++seq}`

  beforeAll(async () => {
    ctx = await createTestContext(dialect)
    app = (await ctx.build({ limits: ROOMY_LIMITS })).app
    call = client(app)
    await signUp(app, 'limits_first_admin')
    owner = await signUp(app, 'limits_owner')
    await app.services.settings.update([{ key: 'team.creation_limit', value: 100 }])
  })
  afterAll(() => ctx.close())

  const memberRows = async (teamId: string, userId?: string) => {
    const { db, t } = app.services.database
    const where = userId === undefined ? eq(t.teamMembers.teamId, teamId) : and(eq(t.teamMembers.teamId, teamId), eq(t.teamMembers.userId, userId))
    return db.select().from(t.teamMembers).where(where)
  }

  it('a pending invitation holds a seat: past the limit both invitations and direct additions answer 409 MEMBER_LIMIT_REACHED', async () => {
    await withTeamSetting(app, 'team.member_limit', 3)
    const team = await createTeam(call, owner, unique('Seats'))
    await invited(call, team.id, owner, 'seat_a@example.com')
    await invited(call, team.id, owner, 'seat_b@example.com') // 1 member + 2 pending = 3
    const third = await invite(call, team.id, owner, 'seat_c@example.com')
    expect(third.statusCode).toBe(409)
    expect(third.json()).toMatchObject({ code: 'MEMBER_LIMIT_REACHED', error: expect.stringMatching(/pending invitations included/) })
    const someone = await signUp(app, unique('direct'))
    const direct = await call('POST', `/api/teams/${team.id}/members`, owner, { login: someone.username, role: 'team_user' })
    expect(direct.statusCode).toBe(409)
    expect(direct.json().code).toBe('MEMBER_LIMIT_REACHED')

    // Revoking one frees its seat for either way in.
    const [newest] = await listed(call, team.id, owner)
    expect((await call('DELETE', `/api/teams/${team.id}/invitations/${newest!.id}`, owner)).statusCode).toBe(200)
    expect((await call('POST', `/api/teams/${team.id}/members`, owner, { login: someone.username, role: 'team_user' })).statusCode).toBe(201)
    expect((await invite(call, team.id, owner, 'seat_d@example.com')).json().code).toBe('MEMBER_LIMIT_REACHED')
  })

  it('accepting turns the seat into a membership, so a full team still admits its invited person', async () => {
    await withTeamSetting(app, 'team.member_limit', 2)
    const team = await createTeam(call, owner, unique('Full'))
    const person = unique('full_invitee')
    const { token } = await invited(call, team.id, owner, `${person}@example.com`)
    const account = await registerInvited(app, person, token)
    expect((await accept(call, token, account)).statusCode).toBe(200)
    expect(await memberRows(team.id)).toHaveLength(2)
  })

  it('a limit lowered below the seats taken refuses the acceptance with 409 MEMBER_LIMIT_REACHED', async () => {
    const team = await createTeam(call, owner, unique('Lowered'))
    const person = unique('lowered_invitee')
    const { token } = await invited(call, team.id, owner, `${person}@example.com`)
    const account = await registerInvited(app, person, token)
    await withTeamSetting(app, 'team.member_limit', 1)
    const response = await accept(call, token, account)
    expect(response.statusCode).toBe(409)
    expect(response.json().code).toBe('MEMBER_LIMIT_REACHED')
    expect(await memberRows(team.id, account.id)).toHaveLength(0)
  })

  it('concurrent invitations cannot exceed the limit', async () => {
    await withTeamSetting(app, 'team.member_limit', 4)
    const team = await createTeam(call, owner, unique('Race'))
    await warmUp(app, 8)
    const responses = await fire(8, (index) => invite(call, team.id, owner, `race_${seq}_${index}@example.com`))
    expectNoServerError(responses)
    expectOutcome(responses, { 201: 3, '409 MEMBER_LIMIT_REACHED': 5 })
    expect(await listed(call, team.id, owner)).toHaveLength(3)
  })

  it('concurrent invitations of one address: exactly one is created', async () => {
    const team = await createTeam(call, owner, unique('Same address'))
    await warmUp(app, 6)
    const responses = await fire(6, () => invite(call, team.id, owner, 'same_address@example.com'))
    expectOutcome(responses, { 201: 1, '409 INVITATION_PENDING': 5 })
  })

  it('concurrent invitations and direct additions together stay within the limit', async () => {
    await withTeamSetting(app, 'team.member_limit', 3)
    const team = await createTeam(call, owner, unique('Mixed'))
    const people = [await signUp(app, unique('mixed')), await signUp(app, unique('mixed')), await signUp(app, unique('mixed'))]
    await warmUp(app, 6)
    const responses = await fire(6, (index) => index < 3
      ? call('POST', `/api/teams/${team.id}/members`, owner, { login: people[index]!.username, role: 'team_user' })
      : invite(call, team.id, owner, `mixed_${seq}_${index}@example.com`))
    expectNoServerError(responses)
    expect(responses.filter((response) => response.statusCode === 201)).toHaveLength(2)
    expect((await memberRows(team.id)).length + (await listed(call, team.id, owner)).length).toBe(3)
  })

  it('two concurrent acceptances: exactly one succeeds and one member row is made', async () => {
    const team = await createTeam(call, owner, unique('Accept race'))
    const person = unique('racer')
    const { token } = await invited(call, team.id, owner, `${person}@example.com`)
    const account = await registerInvited(app, person, token)
    await warmUp(app, 4)
    const responses = await fire(4, () => accept(call, token, account))
    expectNoServerError(responses)
    expect(responses.filter((response) => response.statusCode === 200)).toHaveLength(1)
    for (const loser of responses.filter((response) => response.statusCode !== 200)) {
      expect([400, 409]).toContain(loser.statusCode)
      expect(['INVALID_TOKEN', 'ALREADY_MEMBER']).toContain(loser.json().code)
    }
    expect(await memberRows(team.id, account.id)).toHaveLength(1)
    const { db, t } = app.services.database
    const rows = await db.select().from(t.auditEvents).where(eq(t.auditEvents.type, 'invitation.accepted'))
    expect(rows.filter((row) => row.target === team.id)).toHaveLength(1)
  })
})
