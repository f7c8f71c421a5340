import type { FastifyInstance } from 'fastify'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { UserCaller } from '../../src/auth/caller.js'
import { createTestContext, type TestContext } from '../helpers/app.js'
import { DIALECTS } from '../helpers/database.js'
import { client, createTeam, ROOMY_LIMITS, signUp, type Account, type Call, type TeamBody } from '../helpers/teams.js'

const bearer = (token: string) => ({ authorization: `Bearer ${token}` })

/**
 * The teams routes declared dual with a stand-in bearer verifier, until the OAuth2
 * issue provides real access tokens: `teams-token` carries teams:read, `mcp-token` only mcp:read.
 */
describe.each(DIALECTS)('teams routes with a bearer token on %s', (dialect) => {
  let ctx: TestContext
  let app: FastifyInstance
  let call: Call
  let holder: Account
  let other: Account
  let holderTeam: TeamBody
  let otherTeam: TeamBody

  const asBearer = (method: 'GET' | 'POST' | 'PUT' | 'DELETE', url: string, token: string, payload?: object) =>
    app.inject({ method, url, headers: bearer(token), ...(payload === undefined ? {} : { payload }) })

  beforeAll(async () => {
    ctx = await createTestContext(dialect)
    const tokenFor = (scopes: string[]): UserCaller => ({ kind: 'user', via: 'bearer', userId: holder.id, role: 'global_user', scopes, credentialId: 'tok' })
    app = (await ctx.build({
      limits: ROOMY_LIMITS,
      credentials: {
        bearer: async (token) => (token === 'teams-token' ? tokenFor(['teams:read']) : token === 'mcp-token' ? tokenFor(['mcp:read']) : null),
      },
    })).app
    call = client(app)
    await signUp(app, 'bearer_admin')
    holder = await signUp(app, 'bearer_holder')
    other = await signUp(app, 'bearer_other')
    holderTeam = await createTeam(call, holder, 'Holder Team')
    otherTeam = await createTeam(call, other, 'Other Team')
  })
  afterAll(() => ctx.close())

  it('GET /api/teams/me/default accepts a bearer with teams:read', async () => {
    const response = await asBearer('GET', '/api/teams/me/default', 'teams-token')
    expect(response.statusCode).toBe(200)
    expect(response.json().data.team).toMatchObject({ name: holder.username, owner_id: holder.id, is_default: true, is_owner: true })
  })

  it.each(['/api/teams/me', '/api/users/me/teams'])('GET %s accepts a bearer with teams:read', async (url) => {
    const response = await asBearer('GET', url, 'teams-token')
    expect(response.statusCode).toBe(200)
    expect(response.json().data.teams.map((team: TeamBody) => team.name)).toEqual([holder.username, 'Holder Team'])
  })

  it('GET /api/teams/:id accepts a bearer with teams:read for a member, 404 for a non-member', async () => {
    const mine = await asBearer('GET', `/api/teams/${holderTeam.id}`, 'teams-token')
    expect(mine.statusCode).toBe(200)
    expect(mine.json().data.team).toMatchObject({ id: holderTeam.id, role: 'team_admin', is_owner: true })
    const theirs = await asBearer('GET', `/api/teams/${otherTeam.id}`, 'teams-token')
    expect(theirs.statusCode).toBe(404)
    expect(theirs.json().code).toBe('NOT_FOUND')
  })

  it.each(['/api/teams/me/default', '/api/teams/me', '/api/users/me/teams', '/api/teams/HOLDER'])(
    'GET %s answers 403 insufficient_scope to a bearer without teams:read',
    async (path) => {
      const url = path.replace('HOLDER', holderTeam.id)
      const response = await asBearer('GET', url, 'mcp-token')
      expect(response.statusCode).toBe(403)
      expect(response.json()).toMatchObject({ success: false, code: 'FORBIDDEN', details: { required_scope: 'teams:read' } })
      expect(response.headers['www-authenticate']).toContain('error="insufficient_scope"')
      expect(response.headers['www-authenticate']).toContain('scope="teams:read"')
    },
  )

  it('an unknown bearer token: 401 invalid_token', async () => {
    const response = await asBearer('GET', '/api/teams/me/default', 'forged-token')
    expect(response.statusCode).toBe(401)
    expect(response.headers['www-authenticate']).toContain('invalid_token')
  })

  it('the session-only routes refuse a bearer, even with teams:read: 401, nothing written', async () => {
    const created = await asBearer('POST', '/api/teams', 'teams-token', { name: 'Via Bearer' })
    expect(created.statusCode).toBe(401)
    expect(created.json().code).toBe('UNAUTHORIZED')
    const renamed = await asBearer('PUT', `/api/teams/${holderTeam.id}`, 'teams-token', { name: 'Renamed Via Bearer' })
    expect(renamed.statusCode).toBe(401)
    const members = await asBearer('GET', `/api/teams/${holderTeam.id}/members`, 'teams-token')
    expect(members.statusCode).toBe(401)
    const teams: TeamBody[] = (await call('GET', '/api/teams/me', holder)).json().data.teams
    expect(teams.map((team) => team.name)).toEqual([holder.username, 'Holder Team'])
  })
})
