import type { FastifyInstance } from 'fastify'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createTestContext, type TestContext } from '../helpers/app.js'
import { DIALECTS } from '../helpers/database.js'
import { client, createTeam, ROOMY_LIMITS, signUp, withTeamSetting, type Account, type Call, type TeamBody } from '../helpers/teams.js'

describe.each(DIALECTS)('creating teams on %s', (dialect) => {
  let ctx: TestContext
  let app: FastifyInstance
  let call: Call
  let admin: Account
  let seq = 0
  const fresh = () => signUp(app, `creator_${++seq}`)
  const setLimit = (value: number) => withTeamSetting(app, 'team.creation_limit', value)

  beforeAll(async () => {
    ctx = await createTestContext(dialect)
    app = (await ctx.build({ limits: ROOMY_LIMITS })).app
    call = client(app)
    admin = await signUp(app, 'creator_admin')
  })
  afterAll(() => ctx.close())

  describe('POST /api/teams', () => {
    it('answers 201; the caller is its owner and only member, as team_admin', async () => {
      const user = await fresh()
      const response = await call('POST', '/api/teams', user, { name: 'Platform Crew', description: 'Runs the platform' })
      expect(response.statusCode).toBe(201)
      const team: TeamBody = response.json().data.team
      expect(team).toMatchObject({
        name: 'Platform Crew',
        description: 'Runs the platform',
        owner_id: user.id,
        is_default: false,
        role: 'team_admin',
        is_owner: true,
        member_count: 1,
      })
      const members = (await call('GET', `/api/teams/${team.id}/members`, user)).json().data.members
      expect(members).toEqual([expect.objectContaining({ user_id: user.id, role: 'team_admin', is_owner: true })])
      const mine: TeamBody[] = (await call('GET', '/api/teams/me', user)).json().data.teams
      expect(mine.map((t) => t.id)).toContain(team.id)
    })

    it('answers 201 with no description (null)', async () => {
      const team = await createTeam(call, await fresh(), 'Quiet Team')
      expect(team.description).toBeNull()
    })

    it('is open to a global admin too', async () => {
      const team = await createTeam(call, admin, 'Admin Team')
      expect(team).toMatchObject({ owner_id: admin.id, role: 'team_admin', is_owner: true })
    })

    it('answers 401 without a session', async () => {
      const response = await call('POST', '/api/teams', undefined, { name: 'Nobody' })
      expect(response.statusCode).toBe(401)
      expect(response.json().code).toBe('UNAUTHORIZED')
    })

    it('accepts a name of 100 characters and a description of 500', async () => {
      const team = await createTeam(call, await fresh(), 'n'.repeat(100), 'd'.repeat(500))
      expect(team.name).toHaveLength(100)
      expect(team.description).toHaveLength(500)
    })

    const invalid: Array<[string, unknown, string]> = [
      ['an empty name', { name: '' }, 'name'],
      ['a name of 101 characters', { name: 'n'.repeat(101) }, 'name'],
      ['a name of whitespace only', { name: '  \t ' }, 'name'],
      ['no name', { description: 'Nameless' }, 'name'],
      ['a description of 501 characters', { name: 'Long Words', description: 'd'.repeat(501) }, 'description'],
      ['an unknown property', { name: 'Sneaky', owner_id: 'someone-else' }, 'owner_id'],
    ]
    it.each(invalid)('refuses %s: 400 VALIDATION_ERROR naming the field', async (_, payload, field) => {
      const user = await fresh()
      const response = await call('POST', '/api/teams', user, payload)
      expect(response.statusCode).toBe(400)
      const body = response.json()
      expect(body.code).toBe('VALIDATION_ERROR')
      expect(JSON.stringify(body.details)).toContain(field)
      expect((await call('GET', '/api/teams/me', user)).json().data.teams).toHaveLength(1)
    })
  })

  describe('team.creation_limit', () => {
    it('counts non-default teams only: with 2, the third answers 409 TEAM_LIMIT_REACHED', async () => {
      await setLimit(2)
      const user = await fresh()
      await createTeam(call, user, 'First')
      await createTeam(call, user, 'Second')
      const third = await call('POST', '/api/teams', user, { name: 'Third' })
      expect(third.statusCode).toBe(409)
      expect(third.json()).toMatchObject({ success: false, code: 'TEAM_LIMIT_REACHED' })
      // The default team plus the two allowed ones.
      expect((await call('GET', '/api/teams/me', user)).json().data.teams).toHaveLength(3)
    })

    it('counts teams owned, not joined, per user', async () => {
      await setLimit(1)
      const first = await fresh()
      const second = await fresh()
      const team = await createTeam(call, first, 'Owned By First')
      await call('POST', `/api/teams/${team.id}/members`, first, { login: second.username, role: 'team_admin' })
      // Membership in someone else's team does not use up the second user's allowance.
      await createTeam(call, second, 'Owned By Second')
      expect((await call('POST', '/api/teams', first, { name: 'One Too Many' })).json().code).toBe('TEAM_LIMIT_REACHED')
    })

    // A lost race is a matter of timing, so three users race at once; any one of them would show it.
    it('holds under concurrency: with 1, five parallel creations by one user give exactly one 201', async () => {
      await setLimit(1)
      const racers = [await fresh(), await fresh(), await fresh()]
      const rounds = await Promise.all(racers.map((user) =>
        Promise.all(Array.from({ length: 5 }, (_, i) => call('POST', '/api/teams', user, { name: `Racer ${i}` })))))
      for (const [i, responses] of rounds.entries()) {
        expect(responses.map((response) => response.statusCode).sort()).toEqual([201, 409, 409, 409, 409])
        for (const response of responses.filter((r) => r.statusCode === 409)) expect(response.json().code).toBe('TEAM_LIMIT_REACHED')
        expect((await call('GET', '/api/teams/me', racers[i]!)).json().data.teams).toHaveLength(2)
      }
    })
  })

  describe('slugs', () => {
    it('come from the name, lowercase [a-z0-9-]', async () => {
      const user = await fresh()
      expect((await createTeam(call, user, 'My Team!')).slug).toBe('my-team')
      expect((await createTeam(call, user, '  Ünïcode & Co. 42  ')).slug).toBe('unicode-co-42')
      expect((await createTeam(call, user, '!!!')).slug).toMatch(/^[a-z0-9-]+$/)
    })

    it('are made unique with -2, -3 for the same name', async () => {
      const [first, second] = [await fresh(), await fresh()]
      const a = await createTeam(call, first, 'Same Name')
      const b = await createTeam(call, second, 'Same Name')
      const c = await createTeam(call, first, 'Same Name')
      expect([a.slug, b.slug, c.slug]).toEqual(['same-name', 'same-name-2', 'same-name-3'])
    })

    it('never change on rename; the old slug stays taken', async () => {
      const user = await fresh()
      const team = await createTeam(call, user, 'Before Rename')
      const renamed = await call('PUT', `/api/teams/${team.id}`, user, { name: 'After Rename' })
      expect(renamed.statusCode).toBe(200)
      expect(renamed.json().data.team).toMatchObject({ name: 'After Rename', slug: 'before-rename' })
      expect((await call('GET', `/api/teams/${team.id}`, user)).json().data.team.slug).toBe('before-rename')
      expect((await createTeam(call, user, 'Before Rename')).slug).toBe('before-rename-2')
    })

    it('stay distinct under concurrency: six users creating the same name at once all get 201', async () => {
      const users = await Promise.all(Array.from({ length: 6 }, () => fresh()))
      const responses = await Promise.all(users.map((user) => call('POST', '/api/teams', user, { name: 'Stampede' })))
      expect(responses.map((response) => response.statusCode)).toEqual([201, 201, 201, 201, 201, 201])
      const slugs = responses.map((response) => response.json().data.team.slug as string)
      expect(new Set(slugs).size).toBe(6)
      expect([...slugs].sort()).toEqual(['stampede', 'stampede-2', 'stampede-3', 'stampede-4', 'stampede-5', 'stampede-6'])
    })
  })
})
