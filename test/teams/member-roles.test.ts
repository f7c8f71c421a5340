import type { FastifyInstance } from 'fastify'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createTestContext, type TestContext } from '../helpers/app.js'
import { DIALECTS } from '../helpers/database.js'
import { client, crew as makeCrew, ROOMY_LIMITS, signUp, teamAs, type Account, type Call, type TeamBody } from '../helpers/teams.js'

describe.each(DIALECTS)('member roles, removal and leaving on %s', (dialect) => {
  let ctx: TestContext
  let app: FastifyInstance
  let call: Call
  let admin: Account
  let seq = 0
  const fresh = () => signUp(app, `roles_${++seq}`)
  const crew = () => makeCrew(call, fresh, `Roles ${seq}`)
  const setRole = (teamId: string, by: Account | undefined, userId: string, role: string) =>
    call('PUT', `/api/teams/${teamId}/members/${userId}`, by, { role })
  const remove = (teamId: string, by: Account | undefined, userId: string) => call('DELETE', `/api/teams/${teamId}/members/${userId}`, by)
  const roleIn = async (teamId: string, account: Account) => (await teamAs(call, teamId, account))?.role

  beforeAll(async () => {
    ctx = await createTestContext(dialect)
    app = (await ctx.build({ limits: ROOMY_LIMITS })).app
    call = client(app)
    admin = await signUp(app, 'roles_admin')
  })
  afterAll(() => ctx.close())

  describe('PUT /api/teams/:id/members/:userId', () => {
    it('the owner promotes a team_user to team_admin, who may then manage members', async () => {
      const c = await crew()
      expect((await call('POST', `/api/teams/${c.team.id}/members`, c.teamUser, { login: c.outsider.username, role: 'team_user' })).statusCode).toBe(403)
      const response = await setRole(c.team.id, c.owner, c.teamUser.id, 'team_admin')
      expect(response.statusCode).toBe(200)
      expect(response.json().success).toBe(true)
      expect(await roleIn(c.team.id, c.teamUser)).toBe('team_admin')
      expect((await call('POST', `/api/teams/${c.team.id}/members`, c.teamUser, { login: c.outsider.username, role: 'team_user' })).statusCode).toBe(201)
    })

    it('a team_admin demotes another team_admin back to team_user, who loses team.edit', async () => {
      const c = await crew()
      // The owner is the only other team_admin: demoting this one still leaves one.
      const response = await setRole(c.team.id, c.owner, c.teamAdmin.id, 'team_user')
      expect(response.statusCode).toBe(200)
      expect(await roleIn(c.team.id, c.teamAdmin)).toBe('team_user')
      const edit = await call('PUT', `/api/teams/${c.team.id}`, c.teamAdmin, { description: 'Still mine?' })
      expect(edit.statusCode).toBe(403)
      expect(edit.json().details).toEqual({ required_permission: 'team.edit' })
    })

    it('a team_admin who is not the owner may demote themself', async () => {
      const c = await crew()
      expect((await setRole(c.team.id, c.teamAdmin, c.teamAdmin.id, 'team_user')).statusCode).toBe(200)
      expect(await roleIn(c.team.id, c.teamAdmin)).toBe('team_user')
    })

    it('a global admin who is not a member may change roles (200)', async () => {
      const c = await crew()
      expect((await setRole(c.team.id, admin, c.teamUser.id, 'team_admin')).statusCode).toBe(200)
      expect(await roleIn(c.team.id, c.teamUser)).toBe('team_admin')
    })

    it("the owner's role cannot change: 409 OWNER_ROLE, whoever asks", async () => {
      const c = await crew()
      for (const by of [c.owner, c.teamAdmin, admin]) {
        const response = await setRole(c.team.id, by, c.owner.id, 'team_user')
        expect(response.statusCode).toBe(409)
        expect(response.json().code).toBe('OWNER_ROLE')
      }
      expect(await roleIn(c.team.id, c.owner)).toBe('team_admin')
    })

    /*
     * The owner is always a team_admin (created so, made so by a transfer, and OWNER_ROLE above), so
     * through the API every team has a second team_admin whenever a non-owner one is demoted: the
     * LAST_TEAM_ADMIN answer cannot be reached by HTTP calls alone. This test writes the one state
     * where it applies — the owner's membership row as team_user — straight through the teams
     * repository, and checks that the guard still refuses to leave the team without a team_admin.
     */
    it('never demotes the last team_admin: 409 LAST_TEAM_ADMIN (state set up in the database)', async () => {
      const c = await crew()
      await app.services.teams.setRole(c.team.id, c.owner.id, 'team_user')
      for (const by of [c.teamAdmin, admin]) {
        const response = await setRole(c.team.id, by, c.teamAdmin.id, 'team_user')
        expect(response.statusCode).toBe(409)
        expect(response.json().code).toBe('LAST_TEAM_ADMIN')
      }
      expect(await roleIn(c.team.id, c.teamAdmin)).toBe('team_admin')
    })

    it('a non-member target: 404; an unknown team: 404', async () => {
      const c = await crew()
      const response = await setRole(c.team.id, c.owner, c.outsider.id, 'team_admin')
      expect(response.statusCode).toBe(404)
      expect(response.json().code).toBe('NOT_FOUND')
      expect(await teamAs(call, c.team.id, c.outsider)).toBeUndefined()
      expect((await setRole('no-such-team', admin, c.owner.id, 'team_user')).statusCode).toBe(404)
    })

    it('a team_user cannot change roles, not even their own: 403 naming team.members.manage', async () => {
      const c = await crew()
      for (const target of [c.teamUser, c.teamAdmin]) {
        const response = await setRole(c.team.id, c.teamUser, target.id, target === c.teamUser ? 'team_admin' : 'team_user')
        expect(response.statusCode).toBe(403)
        expect(response.json().details).toEqual({ required_permission: 'team.members.manage' })
      }
      expect(await roleIn(c.team.id, c.teamUser)).toBe('team_user')
      expect(await roleIn(c.team.id, c.teamAdmin)).toBe('team_admin')
    })

    it('a non-member caller: 404; without a session: 401; an unknown role: 400', async () => {
      const c = await crew()
      expect((await setRole(c.team.id, c.outsider, c.teamUser.id, 'team_admin')).statusCode).toBe(404)
      expect((await setRole(c.team.id, undefined, c.teamUser.id, 'team_admin')).statusCode).toBe(401)
      const invalid = await setRole(c.team.id, c.owner, c.teamUser.id, 'owner')
      expect(invalid.statusCode).toBe(400)
      expect(invalid.json().code).toBe('VALIDATION_ERROR')
      expect(await roleIn(c.team.id, c.teamUser)).toBe('team_user')
    })
  })

  describe('DELETE /api/teams/:id/members/:userId', () => {
    it('a team_admin removes a team_user: 200; the membership is gone and the team hidden from them', async () => {
      const c = await crew()
      const response = await remove(c.team.id, c.teamAdmin, c.teamUser.id)
      expect(response.statusCode).toBe(200)
      expect(response.json().success).toBe(true)
      const gone = await call('GET', `/api/teams/${c.team.id}`, c.teamUser)
      expect(gone.statusCode).toBe(404)
      expect(gone.json().code).toBe('NOT_FOUND')
      const mine: TeamBody[] = (await call('GET', '/api/teams/me', c.teamUser)).json().data.teams
      expect(mine.map((team) => team.id)).not.toContain(c.team.id)
      expect(await teamAs(call, c.team.id, c.owner)).toMatchObject({ member_count: 2 })
    })

    it('a global admin who is not a member removes a member (200)', async () => {
      const c = await crew()
      expect((await remove(c.team.id, admin, c.teamAdmin.id)).statusCode).toBe(200)
      expect(await teamAs(call, c.team.id, c.teamAdmin)).toBeUndefined()
    })

    it('a team_user removing someone else: 403 naming team.members.manage; nobody removed', async () => {
      const c = await crew()
      for (const target of [c.teamAdmin, c.owner]) {
        const response = await remove(c.team.id, c.teamUser, target.id)
        expect(response.statusCode).toBe(403)
        expect(response.json()).toMatchObject({ code: 'FORBIDDEN', details: { required_permission: 'team.members.manage' } })
      }
      expect(await teamAs(call, c.team.id, c.owner)).toMatchObject({ member_count: 3 })
    })

    it('a team_user leaves (their own id): 200, then the team is hidden from them', async () => {
      const c = await crew()
      const response = await remove(c.team.id, c.teamUser, c.teamUser.id)
      expect(response.statusCode).toBe(200)
      expect(await teamAs(call, c.team.id, c.teamUser)).toBeUndefined()
      expect(await teamAs(call, c.team.id, c.owner)).toMatchObject({ member_count: 2 })
    })

    it('a team_admin who is not the owner leaves: 200', async () => {
      const c = await crew()
      expect((await remove(c.team.id, c.teamAdmin, c.teamAdmin.id)).statusCode).toBe(200)
      expect(await teamAs(call, c.team.id, c.teamAdmin)).toBeUndefined()
    })

    it('the owner cannot leave or be removed: 409 OWNER_CANNOT_LEAVE', async () => {
      const c = await crew()
      for (const by of [c.owner, c.teamAdmin, admin]) {
        const response = await remove(c.team.id, by, c.owner.id)
        expect(response.statusCode).toBe(409)
        expect(response.json().code).toBe('OWNER_CANNOT_LEAVE')
      }
      expect(await teamAs(call, c.team.id, c.owner)).toMatchObject({ is_owner: true, role: 'team_admin', member_count: 3 })
    })

    it('nor leave their default team: 409 OWNER_CANNOT_LEAVE', async () => {
      const user = await fresh()
      const team: TeamBody = (await call('GET', '/api/teams/me/default', user)).json().data.team
      expect((await remove(team.id, user, user.id)).json().code).toBe('OWNER_CANNOT_LEAVE')
      expect((await remove(team.id, admin, user.id)).json().code).toBe('OWNER_CANNOT_LEAVE')
    })

    it('removing a non-member: 404', async () => {
      const c = await crew()
      const response = await remove(c.team.id, c.owner, c.outsider.id)
      expect(response.statusCode).toBe(404)
      expect(response.json().code).toBe('NOT_FOUND')
    })

    it('a non-member caller: 404, even for their own id; without a session: 401', async () => {
      const c = await crew()
      expect((await remove(c.team.id, c.outsider, c.teamUser.id)).statusCode).toBe(404)
      expect((await remove(c.team.id, c.outsider, c.outsider.id)).statusCode).toBe(404)
      expect((await remove(c.team.id, undefined, c.teamUser.id)).statusCode).toBe(401)
      expect(await teamAs(call, c.team.id, c.owner)).toMatchObject({ member_count: 3 })
    })

    it('a member who left can be added again', async () => {
      const c = await crew()
      expect((await remove(c.team.id, c.teamUser, c.teamUser.id)).statusCode).toBe(200)
      expect((await call('POST', `/api/teams/${c.team.id}/members`, c.owner, { login: c.teamUser.email, role: 'team_admin' })).statusCode).toBe(201)
      expect(await roleIn(c.team.id, c.teamUser)).toBe('team_admin')
    })
  })
})
