import type { FastifyInstance } from 'fastify'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createTestContext, type TestContext } from '../helpers/app.js'
import { DIALECTS } from '../helpers/database.js'
import { client, createTeam, crew as makeCrew, ROOMY_LIMITS, signUp, teamAs, type Account, type Call, type Crew, type TeamBody } from '../helpers/teams.js'

describe.each(DIALECTS)('updating and deleting teams on %s', (dialect) => {
  let ctx: TestContext
  let app: FastifyInstance
  let call: Call
  let admin: Account
  let seq = 0
  const fresh = () => signUp(app, `manager_${++seq}`)

  const crew = () => makeCrew(call, fresh, `Crew ${seq}`)

  beforeAll(async () => {
    ctx = await createTestContext(dialect)
    app = (await ctx.build({ limits: ROOMY_LIMITS })).app
    call = client(app)
    admin = await signUp(app, 'manager_admin')
  })
  afterAll(() => ctx.close())

  describe('PUT /api/teams/:id', () => {
    let c: Crew
    beforeAll(async () => {
      c = await crew()
    })

    it('the owner renames it and changes its description: 200', async () => {
      const response = await call('PUT', `/api/teams/${c.team.id}`, c.owner, { name: 'Renamed By Owner', description: 'New words' })
      expect(response.statusCode).toBe(200)
      expect(response.json().data.team).toMatchObject({ id: c.team.id, name: 'Renamed By Owner', description: 'New words', slug: c.team.slug, role: 'team_admin', is_owner: true })
    })

    it('a team_admin who is not the owner: 200', async () => {
      const response = await call('PUT', `/api/teams/${c.team.id}`, c.teamAdmin, { name: 'Renamed By Admin' })
      expect(response.statusCode).toBe(200)
      expect(response.json().data.team).toMatchObject({ name: 'Renamed By Admin', role: 'team_admin', is_owner: false })
      expect((await teamAs(call, c.team.id, c.owner))?.name).toBe('Renamed By Admin')
    })

    it('clears the description with null', async () => {
      const response = await call('PUT', `/api/teams/${c.team.id}`, c.teamAdmin, { description: null })
      expect(response.statusCode).toBe(200)
      expect(response.json().data.team.description).toBeNull()
    })

    it('a team_user: 403 naming team.edit, nothing changes', async () => {
      const before = await teamAs(call, c.team.id, c.owner)
      const response = await call('PUT', `/api/teams/${c.team.id}`, c.teamUser, { name: 'Hijacked' })
      expect(response.statusCode).toBe(403)
      expect(response.json()).toMatchObject({ code: 'FORBIDDEN', details: { required_permission: 'team.edit' } })
      expect((await teamAs(call, c.team.id, c.owner))?.name).toBe(before?.name)
    })

    it('a non-member: 404, nothing changes', async () => {
      const before = await teamAs(call, c.team.id, c.owner)
      const response = await call('PUT', `/api/teams/${c.team.id}`, c.outsider, { name: 'Hijacked' })
      expect(response.statusCode).toBe(404)
      expect(response.json().code).toBe('NOT_FOUND')
      expect((await teamAs(call, c.team.id, c.owner))?.name).toBe(before?.name)
    })

    it('a global admin who is not a member: 200', async () => {
      const response = await call('PUT', `/api/teams/${c.team.id}`, admin, { name: 'Renamed By Global Admin' })
      expect(response.statusCode).toBe(200)
      expect(response.json().data.team).toMatchObject({ name: 'Renamed By Global Admin', role: null, is_owner: false })
      expect((await teamAs(call, c.team.id, c.teamUser))?.name).toBe('Renamed By Global Admin')
    })

    it('401 without a session; 404 for an unknown team', async () => {
      expect((await call('PUT', `/api/teams/${c.team.id}`, undefined, { name: 'X' })).statusCode).toBe(401)
      expect((await call('PUT', '/api/teams/no-such-team', admin, { name: 'X' })).statusCode).toBe(404)
    })

    const invalid: Array<[string, unknown]> = [
      ['an empty body', {}],
      ['an empty name', { name: '' }],
      ['a name of 101 characters', { name: 'n'.repeat(101) }],
      ['a description of 501 characters', { description: 'd'.repeat(501) }],
      ['an unknown property', { slug: 'new-slug' }],
    ]
    it.each(invalid)('refuses %s: 400 VALIDATION_ERROR', async (_, payload) => {
      const response = await call('PUT', `/api/teams/${c.team.id}`, c.owner, payload)
      expect(response.statusCode).toBe(400)
      expect(response.json().code).toBe('VALIDATION_ERROR')
    })
  })

  describe('DELETE /api/teams/:id', () => {
    it('the owner: 200; the team and its memberships are gone', async () => {
      const c = await crew()
      const response = await call('DELETE', `/api/teams/${c.team.id}`, c.owner)
      expect(response.statusCode).toBe(200)
      expect(response.json().success).toBe(true)
      expect((await call('GET', `/api/teams/${c.team.id}`, admin)).statusCode).toBe(404)
      for (const member of [c.owner, c.teamAdmin, c.teamUser]) {
        expect((await call('GET', `/api/teams/${c.team.id}`, member)).statusCode).toBe(404)
        const mine: TeamBody[] = (await call('GET', '/api/teams/me', member)).json().data.teams
        expect(mine.map((team) => team.id)).not.toContain(c.team.id)
      }
      expect(await app.services.teams.countMembers(c.team.id)).toBe(0)
    })

    it('a team_admin who is not the owner: 403, the team stays', async () => {
      const c = await crew()
      const response = await call('DELETE', `/api/teams/${c.team.id}`, c.teamAdmin)
      expect(response.statusCode).toBe(403)
      expect(response.json().code).toBe('FORBIDDEN')
      expect((await teamAs(call, c.team.id, c.owner))?.member_count).toBe(3)
    })

    it('a team_user: 403 naming team.delete, the team stays', async () => {
      const c = await crew()
      const response = await call('DELETE', `/api/teams/${c.team.id}`, c.teamUser)
      expect(response.statusCode).toBe(403)
      expect(response.json()).toMatchObject({ code: 'FORBIDDEN', details: { required_permission: 'team.delete' } })
      expect(await teamAs(call, c.team.id, c.owner)).toBeDefined()
    })

    it('a non-member: 404, the team stays', async () => {
      const c = await crew()
      const response = await call('DELETE', `/api/teams/${c.team.id}`, c.outsider)
      expect(response.statusCode).toBe(404)
      expect(response.json().code).toBe('NOT_FOUND')
      expect(await teamAs(call, c.team.id, c.owner)).toBeDefined()
    })

    it('a global admin who is not a member: 200', async () => {
      const c = await crew()
      const response = await call('DELETE', `/api/teams/${c.team.id}`, admin)
      expect(response.statusCode).toBe(200)
      expect(await teamAs(call, c.team.id, c.owner)).toBeUndefined()
      expect(await app.services.teams.countMembers(c.team.id)).toBe(0)
    })

    it('a deleted team frees a place under team.creation_limit', async () => {
      const user = await fresh()
      const teams = [await createTeam(call, user, 'Slot 1'), await createTeam(call, user, 'Slot 2'), await createTeam(call, user, 'Slot 3')]
      expect((await call('POST', '/api/teams', user, { name: 'Slot 4' })).json().code).toBe('TEAM_LIMIT_REACHED')
      expect((await call('DELETE', `/api/teams/${teams[0]!.id}`, user)).statusCode).toBe(200)
      expect((await call('POST', '/api/teams', user, { name: 'Slot 4' })).statusCode).toBe(201)
    })

    it('401 without a session; 404 for an unknown team', async () => {
      const c = await crew()
      expect((await call('DELETE', `/api/teams/${c.team.id}`)).statusCode).toBe(401)
      expect((await call('DELETE', '/api/teams/no-such-team', admin)).statusCode).toBe(404)
    })
  })
})
