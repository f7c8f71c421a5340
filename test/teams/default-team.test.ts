import type { FastifyInstance } from 'fastify'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createTestContext, type TestContext } from '../helpers/app.js'
import { DIALECTS } from '../helpers/database.js'
import { addMember, client, createTeam, ROOMY_LIMITS, signUp, type Account, type Call, type TeamBody } from '../helpers/teams.js'

const TEAM_KEYS = ['created_at', 'description', 'id', 'is_default', 'is_owner', 'member_count', 'name', 'owner_id', 'role', 'slug', 'updated_at']

describe.each(DIALECTS)('default teams and reading teams on %s', (dialect) => {
  let ctx: TestContext
  let app: FastifyInstance
  let call: Call
  let admin: Account
  let seq = 0
  // Usernames sort after any team name the tests create, so "default first" is not name order.
  const fresh = () => signUp(app, `zz_user_${++seq}`)
  const defaultOf = async (account: Account): Promise<TeamBody> => (await call('GET', '/api/teams/me/default', account)).json().data.team

  beforeAll(async () => {
    ctx = await createTestContext(dialect)
    app = (await ctx.build({ limits: ROOMY_LIMITS })).app
    call = client(app)
    // The database's first user is its global admin.
    admin = await signUp(app, 'zz_root_admin')
  })
  afterAll(() => ctx.close())

  describe('the default team', () => {
    it('exists for every user from registration: named after them, owned by them, them alone as team_admin', async () => {
      for (const account of [admin, await fresh()]) {
        const response = await call('GET', '/api/teams/me/default', account)
        expect(response.statusCode).toBe(200)
        const team = response.json().data.team
        expect(Object.keys(team).sort()).toEqual(TEAM_KEYS)
        expect(team).toMatchObject({
          name: account.username,
          slug: account.username.replaceAll('_', '-'),
          owner_id: account.id,
          is_default: true,
          role: 'team_admin',
          is_owner: true,
          member_count: 1,
        })
      }
    })

    it('answers 401 without a session', async () => {
      const response = await call('GET', '/api/teams/me/default')
      expect(response.statusCode).toBe(401)
      expect(response.json().code).toBe('UNAUTHORIZED')
    })

    it('cannot be renamed (409 DEFAULT_TEAM), but its description can change', async () => {
      const user = await fresh()
      const team = await defaultOf(user)
      const renamed = await call('PUT', `/api/teams/${team.id}`, user, { name: 'Another Name' })
      expect(renamed.statusCode).toBe(409)
      expect(renamed.json()).toMatchObject({ success: false, code: 'DEFAULT_TEAM' })
      // Nor by a global admin.
      expect((await call('PUT', `/api/teams/${team.id}`, admin, { name: 'Another Name' })).json().code).toBe('DEFAULT_TEAM')

      const described = await call('PUT', `/api/teams/${team.id}`, user, { description: 'My own space' })
      expect(described.statusCode).toBe(200)
      expect(described.json().data.team).toMatchObject({ name: user.username, description: 'My own space', is_default: true })
      expect(await defaultOf(user)).toMatchObject({ name: user.username, description: 'My own space' })
    })

    it('cannot be deleted (409 DEFAULT_TEAM), not even by a global admin', async () => {
      const user = await fresh()
      const team = await defaultOf(user)
      for (const by of [user, admin]) {
        const response = await call('DELETE', `/api/teams/${team.id}`, by)
        expect(response.statusCode).toBe(409)
        expect(response.json().code).toBe('DEFAULT_TEAM')
      }
      expect((await call('GET', `/api/teams/${team.id}`, user)).statusCode).toBe(200)
    })

    it('cannot be transferred (409 DEFAULT_TEAM)', async () => {
      const user = await fresh()
      const team = await defaultOf(user)
      for (const [by, to] of [[user, user], [admin, user], [admin, admin]] as const) {
        const response = await call('PUT', `/api/teams/${team.id}/owner`, by, { user_id: to.id })
        expect(response.statusCode).toBe(409)
        expect(response.json().code).toBe('DEFAULT_TEAM')
      }
      expect((await defaultOf(user)).owner_id).toBe(user.id)
    })

    it('cannot be given members (409 DEFAULT_TEAM), by its owner or a global admin', async () => {
      const user = await fresh()
      const other = await fresh()
      const team = await defaultOf(user)
      for (const [by, login] of [[user, other.email], [user, other.username], [admin, other.username]] as const) {
        const response = await call('POST', `/api/teams/${team.id}/members`, by, { login, role: 'team_user' })
        expect(response.statusCode).toBe(409)
        expect(response.json().code).toBe('DEFAULT_TEAM')
      }
      expect((await defaultOf(user)).member_count).toBe(1)
      expect((await call('GET', `/api/teams/${team.id}`, other)).statusCode).toBe(404)
    })
  })

  describe("the caller's teams", () => {
    it.each(['/api/teams/me', '/api/users/me/teams'])('%s lists them, default first, with role, is_owner and is_default', async (url) => {
      const owner = await fresh()
      const member = await fresh()
      const owned = await createTeam(call, owner, 'Aardvarks')
      const joined = await createTeam(call, member, 'Aaa Joined')
      await addMember(call, joined.id, member, owner, 'team_user')

      const response = await call('GET', url, owner)
      expect(response.statusCode).toBe(200)
      const teams: TeamBody[] = response.json().data.teams
      expect(teams.map((team) => [team.name, team.role, team.is_owner, team.is_default])).toEqual([
        [owner.username, 'team_admin', true, true],
        ['Aaa Joined', 'team_user', false, false],
        ['Aardvarks', 'team_admin', true, false],
      ])
      expect(teams.find((team) => team.id === owned.id)?.member_count).toBe(1)
      expect(teams.find((team) => team.id === joined.id)).toMatchObject({ member_count: 2, owner_id: member.id })
      // Nobody else's teams.
      expect(teams.map((team) => team.owner_id).filter((id) => id !== owner.id && id !== member.id)).toEqual([])
      expect((await call('GET', url)).statusCode).toBe(401)
    })
  })

  describe('GET /api/teams/:id', () => {
    let owner: Account
    let member: Account
    let outsider: Account
    let team: TeamBody

    beforeAll(async () => {
      owner = await fresh()
      member = await fresh()
      outsider = await fresh()
      team = await createTeam(call, owner, 'Readers', 'A team to read')
      await addMember(call, team.id, owner, member, 'team_user')
    })

    it('answers a member with the team and their own role', async () => {
      const asOwner = await call('GET', `/api/teams/${team.id}`, owner)
      expect(asOwner.statusCode).toBe(200)
      expect(asOwner.json().data.team).toMatchObject({ id: team.id, name: 'Readers', description: 'A team to read', role: 'team_admin', is_owner: true, member_count: 2 })
      const asMember = await call('GET', `/api/teams/${team.id}`, member)
      expect(asMember.statusCode).toBe(200)
      expect(asMember.json().data.team).toMatchObject({ id: team.id, owner_id: owner.id, role: 'team_user', is_owner: false, is_default: false })
    })

    it('answers a non-member 404 NOT_FOUND, as for a team that does not exist', async () => {
      const hidden = await call('GET', `/api/teams/${team.id}`, outsider)
      const unknown = await call('GET', '/api/teams/no-such-team', outsider)
      for (const response of [hidden, unknown]) {
        expect(response.statusCode).toBe(404)
        expect(response.json()).toMatchObject({ success: false, code: 'NOT_FOUND' })
      }
      expect(hidden.json().error).toBe(unknown.json().error)
    })

    it('answers a global admin who is not a member, with role null', async () => {
      const response = await call('GET', `/api/teams/${team.id}`, admin)
      expect(response.statusCode).toBe(200)
      expect(response.json().data.team).toMatchObject({ id: team.id, role: null, is_owner: false, member_count: 2 })
    })

    it('answers a global admin 404 for an unknown id', async () => {
      const response = await call('GET', '/api/teams/no-such-team', admin)
      expect(response.statusCode).toBe(404)
      expect(response.json().code).toBe('NOT_FOUND')
    })

    it('answers 401 without a session', async () => {
      const response = await call('GET', `/api/teams/${team.id}`)
      expect(response.statusCode).toBe(401)
      expect(response.json().code).toBe('UNAUTHORIZED')
    })
  })
})
