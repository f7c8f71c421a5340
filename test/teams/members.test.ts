import type { FastifyInstance } from 'fastify'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createTestContext, type TestContext } from '../helpers/app.js'
import { DIALECTS } from '../helpers/database.js'
import {
  client, createTeam, crew as makeCrew, ROOMY_LIMITS, signUp, teamAs, withTeamSetting, type Account, type Call, type Crew,
} from '../helpers/teams.js'

const MEMBER_KEYS = ['email', 'is_owner', 'joined_at', 'role', 'user_id', 'username']

interface MemberBody { user_id: string; username: string; email: string | null; role: string; is_owner: boolean; joined_at: string }

describe.each(DIALECTS)('team members on %s', (dialect) => {
  let ctx: TestContext
  let app: FastifyInstance
  let call: Call
  let admin: Account
  let seq = 0
  const fresh = () => signUp(app, `member_${++seq}`)
  const crew = () => makeCrew(call, fresh, `Members ${seq}`)
  const membersOf = async (teamId: string, as: Account): Promise<MemberBody[]> => (await call('GET', `/api/teams/${teamId}/members`, as)).json().data.members
  const add = (teamId: string, by: Account | undefined, login: string, role = 'team_user') =>
    call('POST', `/api/teams/${teamId}/members`, by, { login, role })

  beforeAll(async () => {
    ctx = await createTestContext(dialect)
    app = (await ctx.build({ limits: ROOMY_LIMITS })).app
    call = client(app)
    admin = await signUp(app, 'member_admin')
  })
  afterAll(() => ctx.close())

  describe('GET /api/teams/:id/members', () => {
    let c: Crew
    beforeAll(async () => {
      c = await crew()
    })

    it('lists each member with user_id, username, email (the caller\'s own only), role, is_owner, joined_at', async () => {
      const response = await call('GET', `/api/teams/${c.team.id}/members`, c.owner)
      expect(response.statusCode).toBe(200)
      const members: MemberBody[] = response.json().data.members
      for (const member of members) {
        expect(Object.keys(member).sort()).toEqual(MEMBER_KEYS)
        expect(new Date(member.joined_at).toISOString()).toBe(member.joined_at)
      }
      const seen = members.map(({ user_id, username, email, role, is_owner }) => ({ user_id, username, email, role, is_owner }))
      expect(seen).toHaveLength(3)
      expect(seen).toEqual(expect.arrayContaining([
        { user_id: c.owner.id, username: c.owner.username, email: c.owner.email, role: 'team_admin', is_owner: true },
        { user_id: c.teamAdmin.id, username: c.teamAdmin.username, email: null, role: 'team_admin', is_owner: false },
        { user_id: c.teamUser.id, username: c.teamUser.username, email: null, role: 'team_user', is_owner: false },
      ]))
    })

    it('a team_user and a team_admin may view them (200), each seeing their own address only', async () => {
      for (const member of [c.teamUser, c.teamAdmin]) {
        const response = await call('GET', `/api/teams/${c.team.id}/members`, member)
        expect(response.statusCode).toBe(200)
        const members: MemberBody[] = response.json().data.members
        expect(members).toHaveLength(3)
        expect(members.filter((m) => m.email !== null)).toEqual([expect.objectContaining({ user_id: member.id, email: member.email })])
      }
    })

    it('a global admin who is not a member may view them (200), with every address', async () => {
      const members = await membersOf(c.team.id, admin)
      expect(members).toHaveLength(3)
      expect(members.map((m) => m.email).sort()).toEqual([c.owner.email, c.teamAdmin.email, c.teamUser.email].sort())
    })

    it('a non-member gets 404; without a session 401', async () => {
      const response = await call('GET', `/api/teams/${c.team.id}/members`, c.outsider)
      expect(response.statusCode).toBe(404)
      expect(response.json().code).toBe('NOT_FOUND')
      expect((await call('GET', `/api/teams/${c.team.id}/members`)).statusCode).toBe(401)
    })
  })

  describe('POST /api/teams/:id/members', () => {
    it('adds an existing user by email and by username: 201 with the members', async () => {
      const owner = await fresh()
      const [byEmail, byName] = [await fresh(), await fresh()]
      const team = await createTeam(call, owner, 'Adders')

      const first = await add(team.id, owner, byEmail.email, 'team_user')
      expect(first.statusCode).toBe(201)
      // The address the adder typed is echoed back; one they did not type is not revealed.
      expect(first.json().data.members).toContainEqual(expect.objectContaining({ user_id: byEmail.id, email: byEmail.email, role: 'team_user', is_owner: false }))

      const second = await add(team.id, owner, byName.username, 'team_admin')
      expect(second.statusCode).toBe(201)
      expect(second.json().data.members).toHaveLength(3)
      expect(second.json().data.members).toContainEqual(expect.objectContaining({ user_id: byName.id, email: null, role: 'team_admin' }))
      expect(second.json().data.members).toContainEqual(expect.objectContaining({ user_id: byEmail.id, email: null }))

      // The new members now see the team, with their role.
      expect(await teamAs(call, team.id, byEmail)).toMatchObject({ role: 'team_user', member_count: 3 })
      expect(await teamAs(call, team.id, byName)).toMatchObject({ role: 'team_admin', is_owner: false })
    })

    it('a team_admin who is not the owner may add (201)', async () => {
      const c = await crew()
      const response = await add(c.team.id, c.teamAdmin, c.outsider.username)
      expect(response.statusCode).toBe(201)
      expect(await teamAs(call, c.team.id, c.outsider)).toMatchObject({ role: 'team_user' })
    })

    it('a global admin who is not a member may add (201)', async () => {
      const c = await crew()
      expect((await add(c.team.id, admin, c.outsider.email)).statusCode).toBe(201)
      expect((await membersOf(c.team.id, c.owner)).map((m) => m.user_id)).toContain(c.outsider.id)
    })

    it('an unknown login: 404 NOT_FOUND', async () => {
      const c = await crew()
      for (const login of ['nobody_here', 'nobody@example.com']) {
        const response = await add(c.team.id, c.owner, login)
        expect(response.statusCode).toBe(404)
        expect(response.json().code).toBe('NOT_FOUND')
      }
      expect(await membersOf(c.team.id, c.owner)).toHaveLength(3)
    })

    it('someone already a member: 409 ALREADY_MEMBER, their role unchanged', async () => {
      const c = await crew()
      for (const [login, role] of [[c.teamUser.username, 'team_admin'], [c.teamUser.email, 'team_user'], [c.owner.username, 'team_user']]) {
        const response = await add(c.team.id, c.owner, login!, role)
        expect(response.statusCode).toBe(409)
        expect(response.json().code).toBe('ALREADY_MEMBER')
      }
      const members = await membersOf(c.team.id, c.owner)
      expect(members.find((m) => m.user_id === c.teamUser.id)?.role).toBe('team_user')
      expect(members.find((m) => m.user_id === c.owner.id)?.role).toBe('team_admin')
    })

    it('a team_user cannot add: 403 naming team.members.manage', async () => {
      const c = await crew()
      const response = await add(c.team.id, c.teamUser, c.outsider.username)
      expect(response.statusCode).toBe(403)
      expect(response.json()).toMatchObject({ code: 'FORBIDDEN', details: { required_permission: 'team.members.manage' } })
      expect(await teamAs(call, c.team.id, c.outsider)).toBeUndefined()
    })

    it('a non-member gets 404, even adding themself; without a session 401', async () => {
      const c = await crew()
      const response = await add(c.team.id, c.outsider, c.outsider.username, 'team_admin')
      expect(response.statusCode).toBe(404)
      expect(response.json().code).toBe('NOT_FOUND')
      expect(await teamAs(call, c.team.id, c.outsider)).toBeUndefined()
      expect((await add(c.team.id, undefined, c.outsider.username)).statusCode).toBe(401)
    })

    const invalid: Array<[string, unknown]> = [
      ['no login', { role: 'team_user' }],
      ['an empty login', { login: '', role: 'team_user' }],
      ['no role', { login: 'someone' }],
      ['an unknown role', { login: 'someone', role: 'global_admin' }],
      ['an unknown property', { login: 'someone', role: 'team_user', owner: true }],
    ]
    it.each(invalid)('refuses %s: 400 VALIDATION_ERROR', async (_, payload) => {
      const owner = await fresh()
      const team = await createTeam(call, owner, 'Validators')
      const response = await call('POST', `/api/teams/${team.id}/members`, owner, payload)
      expect(response.statusCode).toBe(400)
      expect(response.json().code).toBe('VALIDATION_ERROR')
    })
  })

  describe('team.member_limit', () => {
    it('with 2: the owner and one more; the next answers 409 MEMBER_LIMIT_REACHED', async () => {
      await withTeamSetting(app, 'team.member_limit', 2)
      const owner = await fresh()
      const [second, third] = [await fresh(), await fresh()]
      const team = await createTeam(call, owner, 'Pair')
      expect((await add(team.id, owner, second.username)).statusCode).toBe(201)
      const refused = await add(team.id, owner, third.username)
      expect(refused.statusCode).toBe(409)
      expect(refused.json()).toMatchObject({ success: false, code: 'MEMBER_LIMIT_REACHED' })
      expect(await teamAs(call, team.id, owner)).toMatchObject({ member_count: 2 })
      expect(await teamAs(call, team.id, third)).toBeUndefined()
      // Someone already in a full team is told so, not that the team is full.
      expect((await add(team.id, owner, second.username)).json().code).toBe('ALREADY_MEMBER')
    })

    it('holds for a global admin too', async () => {
      await withTeamSetting(app, 'team.member_limit', 1)
      const owner = await fresh()
      const team = await createTeam(call, owner, 'Solo')
      expect((await add(team.id, admin, admin.username)).json().code).toBe('MEMBER_LIMIT_REACHED')
    })

    // A lost race is a matter of timing, so three teams fill up at once; any one of them would show it.
    it('holds under concurrency: with 3, five users added at once, exactly two succeed', async () => {
      await withTeamSetting(app, 'team.member_limit', 3)
      const owners = [await fresh(), await fresh(), await fresh()]
      const candidates = await Promise.all(Array.from({ length: 5 }, () => fresh()))
      const teams = await Promise.all(owners.map((owner, i) => createTeam(call, owner, `Crowd ${i}`)))
      const rounds = await Promise.all(teams.map((team, i) =>
        Promise.all(candidates.map((candidate) => add(team.id, owners[i]!, candidate.username)))))
      for (const [i, responses] of rounds.entries()) {
        expect(responses.map((response) => response.statusCode).sort()).toEqual([201, 201, 409, 409, 409])
        for (const response of responses.filter((r) => r.statusCode === 409)) expect(response.json().code).toBe('MEMBER_LIMIT_REACHED')
        expect(await membersOf(teams[i]!.id, owners[i]!)).toHaveLength(3)
        expect(await teamAs(call, teams[i]!.id, owners[i]!)).toMatchObject({ member_count: 3 })
      }
    })
  })
})
