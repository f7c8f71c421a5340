import type { FastifyInstance } from 'fastify'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createTestContext, type TestContext } from '../helpers/app.js'
import { manualClock } from '../helpers/clock.js'
import { DIALECTS } from '../helpers/database.js'
import { addMember, client, createTeam, crew as makeCrew, ROOMY_LIMITS, signUp, teamAs, type Account, type Call, type TeamBody } from '../helpers/teams.js'

interface MemberBody { user_id: string; role: string; is_owner: boolean }

describe.each(DIALECTS)('team ownership on %s', (dialect) => {
  let ctx: TestContext
  let app: FastifyInstance
  let call: Call
  let admin: Account
  let seq = 0
  const clock = manualClock()
  const fresh = () => signUp(app, `owner_${++seq}`)
  const crew = () => makeCrew(call, fresh, `Owned ${seq}`)
  const transfer = (teamId: string, by: Account | undefined, userId: string) => call('PUT', `/api/teams/${teamId}/owner`, by, { user_id: userId })
  const membersOf = async (teamId: string): Promise<MemberBody[]> => (await call('GET', `/api/teams/${teamId}/members`, admin)).json().data.members

  beforeAll(async () => {
    ctx = await createTestContext(dialect)
    app = (await ctx.build({ clock, limits: ROOMY_LIMITS })).app
    call = client(app)
    admin = await signUp(app, 'owner_admin')
  })
  afterAll(() => ctx.close())

  describe('PUT /api/teams/:id/owner', () => {
    it('the owner hands over to a team_user: 200; they become owner and team_admin, the old owner stays a team_admin', async () => {
      const c = await crew()
      const response = await transfer(c.team.id, c.owner, c.teamUser.id)
      expect(response.statusCode).toBe(200)
      expect(response.json().data.team).toMatchObject({ id: c.team.id, owner_id: c.teamUser.id, is_owner: false, role: 'team_admin' })

      expect(await teamAs(call, c.team.id, c.teamUser)).toMatchObject({ owner_id: c.teamUser.id, is_owner: true, role: 'team_admin' })
      expect(await teamAs(call, c.team.id, c.owner)).toMatchObject({ is_owner: false, role: 'team_admin', member_count: 3 })
      const members = await membersOf(c.team.id)
      expect(members.filter((m) => m.is_owner).map((m) => m.user_id)).toEqual([c.teamUser.id])
      expect(members.find((m) => m.user_id === c.owner.id)?.role).toBe('team_admin')
      expect(members.find((m) => m.user_id === c.teamUser.id)?.role).toBe('team_admin')
    })

    it('the owner rights move with it: the new owner may delete, the old one may leave but no longer delete', async () => {
      const c = await crew()
      expect((await transfer(c.team.id, c.owner, c.teamAdmin.id)).statusCode).toBe(200)
      expect((await call('DELETE', `/api/teams/${c.team.id}`, c.owner)).statusCode).toBe(403)
      expect((await call('DELETE', `/api/teams/${c.team.id}/members/${c.teamAdmin.id}`, c.owner)).json().code).toBe('OWNER_CANNOT_LEAVE')
      expect((await call('DELETE', `/api/teams/${c.team.id}/members/${c.owner.id}`, c.owner)).statusCode).toBe(200)
      expect((await call('DELETE', `/api/teams/${c.team.id}`, c.teamAdmin)).statusCode).toBe(200)
    })

    it('a target who is not a member: 404, ownership unchanged', async () => {
      const c = await crew()
      for (const userId of [c.outsider.id, 'no-such-user']) {
        const response = await transfer(c.team.id, c.owner, userId)
        expect(response.statusCode).toBe(404)
        expect(response.json().code).toBe('NOT_FOUND')
      }
      expect(await teamAs(call, c.team.id, c.owner)).toMatchObject({ is_owner: true, member_count: 3 })
      expect(await teamAs(call, c.team.id, c.outsider)).toBeUndefined()
    })

    it('a team_admin who is not the owner: 403, ownership unchanged', async () => {
      const c = await crew()
      for (const target of [c.teamAdmin, c.teamUser]) {
        const response = await transfer(c.team.id, c.teamAdmin, target.id)
        expect(response.statusCode).toBe(403)
        expect(response.json().code).toBe('FORBIDDEN')
      }
      expect((await teamAs(call, c.team.id, c.owner))?.owner_id).toBe(c.owner.id)
    })

    it('a team_user: 403; a non-member: 404; without a session: 401', async () => {
      const c = await crew()
      expect((await transfer(c.team.id, c.teamUser, c.teamUser.id)).statusCode).toBe(403)
      expect((await transfer(c.team.id, c.outsider, c.outsider.id)).statusCode).toBe(404)
      expect((await transfer(c.team.id, undefined, c.teamUser.id)).statusCode).toBe(401)
      expect((await teamAs(call, c.team.id, c.owner))?.owner_id).toBe(c.owner.id)
      expect(await teamAs(call, c.team.id, c.teamUser)).toMatchObject({ role: 'team_user' })
    })

    it('a global admin who is not a member may transfer (200)', async () => {
      const c = await crew()
      const response = await transfer(c.team.id, admin, c.teamUser.id)
      expect(response.statusCode).toBe(200)
      expect(response.json().data.team).toMatchObject({ owner_id: c.teamUser.id, role: null, is_owner: false })
      expect(await teamAs(call, c.team.id, c.teamUser)).toMatchObject({ is_owner: true, role: 'team_admin' })
    })

    it('refuses an unknown property or a missing user_id: 400', async () => {
      const c = await crew()
      for (const payload of [{}, { user_id: c.teamUser.id, role: 'team_user' }]) {
        const response = await call('PUT', `/api/teams/${c.team.id}/owner`, c.owner, payload)
        expect(response.statusCode).toBe(400)
        expect(response.json().code).toBe('VALIDATION_ERROR')
      }
    })
  })

  describe('deleting a user (DELETE /api/admin/users/:id)', () => {
    const deleteUser = async (user: Account) => {
      const response = await call('DELETE', `/api/admin/users/${user.id}`, admin)
      expect(response.statusCode).toBe(200)
    }

    it('removes their memberships and their default team', async () => {
      const leaving = await fresh()
      const defaultTeam: TeamBody = (await call('GET', '/api/teams/me/default', leaving)).json().data.team
      const c = await crew()
      await addMember(call, c.team.id, c.owner, leaving, 'team_admin')
      expect(await teamAs(call, c.team.id, c.owner)).toMatchObject({ member_count: 4 })

      await deleteUser(leaving)
      expect((await call('GET', `/api/teams/${defaultTeam.id}`, admin)).statusCode).toBe(404)
      expect(await teamAs(call, c.team.id, c.owner)).toMatchObject({ member_count: 3, owner_id: c.owner.id })
      expect((await membersOf(c.team.id)).map((m) => m.user_id)).not.toContain(leaving.id)
      expect(await app.services.teams.countMemberships(leaving.id)).toBe(0)
    })

    it('passes a team they owned to another team_admin (the longest-standing), keeping its members', async () => {
      const leaving = await fresh()
      const later = await fresh()
      const earlier = await fresh()
      const teamUser = await fresh()
      const team = await createTeam(call, leaving, 'Inherited')
      await addMember(call, team.id, leaving, teamUser, 'team_user')
      clock.advance(1000)
      // Registered last, so its id sorts last too: only joined_at makes it the heir.
      await addMember(call, team.id, leaving, earlier, 'team_admin')
      clock.advance(1000)
      await addMember(call, team.id, leaving, later, 'team_admin')

      await deleteUser(leaving)
      expect(await teamAs(call, team.id, earlier)).toMatchObject({ owner_id: earlier.id, is_owner: true, role: 'team_admin', member_count: 3 })
      expect(await teamAs(call, team.id, later)).toMatchObject({ owner_id: earlier.id, is_owner: false, role: 'team_admin' })
      expect(await teamAs(call, team.id, teamUser)).toMatchObject({ role: 'team_user' })
      // The heir has the owner's rights.
      expect((await call('DELETE', `/api/teams/${team.id}`, later)).statusCode).toBe(403)
      expect((await transfer(team.id, earlier, later.id)).statusCode).toBe(200)
    })

    it('deletes a team they owned with no other team_admin, even one with team_users', async () => {
      const leaving = await fresh()
      const teamUser = await fresh()
      const withMembers = await createTeam(call, leaving, 'Orphaned')
      await addMember(call, withMembers.id, leaving, teamUser, 'team_user')
      const alone = await createTeam(call, leaving, 'Alone')

      await deleteUser(leaving)
      for (const team of [withMembers, alone]) {
        const response = await call('GET', `/api/teams/${team.id}`, admin)
        expect(response.statusCode).toBe(404)
      }
      expect(await teamAs(call, withMembers.id, teamUser)).toBeUndefined()
      const left: TeamBody[] = (await call('GET', '/api/teams/me', teamUser)).json().data.teams
      expect(left.map((team) => team.id)).toEqual([expect.any(String)])
      expect(left[0]).toMatchObject({ is_default: true })
    })

    it('leaves teams they merely belonged to with their owners', async () => {
      const leaving = await fresh()
      const c = await crew()
      await addMember(call, c.team.id, c.owner, leaving, 'team_user')
      await deleteUser(leaving)
      expect(await teamAs(call, c.team.id, c.teamAdmin)).toMatchObject({ owner_id: c.owner.id, member_count: 3 })
    })
  })
})
