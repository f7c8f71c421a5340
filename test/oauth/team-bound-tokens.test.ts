import type { FastifyInstance, LightMyRequestResponse } from 'fastify'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createTestContext, type TestContext } from '../helpers/app.js'
import { DIALECTS } from '../helpers/database.js'
import { importDocuments, install, installationOf, installationsOf, weatherDocument, type InstallationBody } from '../helpers/installations.js'
import { bearer, issueTokens, issueUnboundTokens } from '../helpers/oauth.js'
import { createToken, heartbeat, pair, SATELLITE_LIMITS } from '../helpers/satellites.js'
import { client, createTeam, signUp, type Account, type Call, type TeamBody } from '../helpers/teams.js'

const SCOPES = 'mcp:read teams:read account:read'
const VALUES = { 'env:WEATHER_API_KEY': 'wk-bound-7c6b5a', 'env:PERSONAL_TOKEN': 'pt-bound-3e2d1c', 'arg:data_dir': '/srv/weather' }

/**
 * A token bound to a team at consent reaches that team only — the caller-wide views answer
 * for it alone, and another team's routes answer 403 even to a member of both teams (or a global
 * admin). A token bound to no team (issued before consent chose one) and a session reach every
 * team of the user.
 */
describe.each(DIALECTS)('team-bound OAuth tokens on %s', (dialect) => {
  let ctx: TestContext
  let app: FastifyInstance
  let call: Call
  let admin: Account
  let member: Account
  let teamA: TeamBody
  let teamB: TeamBody
  let inA: InstallationBody
  let inB: InstallationBody
  let boundToA: string
  let adminBoundToA: string
  let unbound: string

  beforeAll(async () => {
    ctx = await createTestContext(dialect)
    app = (await ctx.build({ limits: SATELLITE_LIMITS })).app
    call = client(app)
    admin = await signUp(app, 'bound_admin')
    member = await signUp(app, 'bound_member')
    const serverId = (await importDocuments(call, admin, [weatherDocument('io.github.example/bound-weather')]))[0]!
    // A global satellite with a URL, online: both installations are placed and show in a client config.
    const satellite = await pair(app, (await createToken(call, admin)).token, 'bound-sat', { satellite_url: 'https://sat.example.com' })
    expect((await heartbeat(app, satellite.id, satellite.apiKey)).statusCode).toBe(200)
    teamA = await createTeam(call, member, 'Bound Alpha')
    teamB = await createTeam(call, member, 'Bound Beta')
    inA = await install(call, teamA.id, member, { server_id: serverId, name: 'weather-a', values: VALUES })
    inB = await install(call, teamB.id, member, { server_id: serverId, name: 'weather-b', values: VALUES })
    boundToA = (await issueTokens(app, member.cookie, SCOPES, { teamId: teamA.id })).access_token
    adminBoundToA = (await issueTokens(app, admin.cookie, SCOPES, { teamId: (await createTeam(call, admin, 'Admin Alpha')).id })).access_token
    unbound = (await issueUnboundTokens(app, member, SCOPES)).access_token
  })
  afterAll(() => ctx.close())

  const get = (url: string, token: string): Promise<LightMyRequestResponse> => app.inject({ method: 'GET', url, headers: bearer(token) })
  const asSession = (url: string): Promise<LightMyRequestResponse> => call('GET', url, member)
  const expectBoundRefusal = (response: LightMyRequestResponse, bound: string) => {
    expect(response.statusCode, response.body).toBe(403)
    expect(response.json()).toMatchObject({ success: false, code: 'FORBIDDEN', details: { bound_team_id: bound } })
  }
  const teamsOf = (response: LightMyRequestResponse): string[] => {
    expect(response.statusCode, response.body).toBe(200)
    return (response.json().data.installations as InstallationBody[]).map((installation) => installation.team_id).sort()
  }
  const configOf = (response: LightMyRequestResponse): string[] => {
    expect(response.statusCode, response.body).toBe(200)
    return Object.keys(response.json().data.mcpServers).sort()
  }
  const both = () => [teamA.id, teamB.id].sort()

  it('the caller-wide installation list and client config: team A only for a token bound to A, both teams otherwise', async () => {
    expect(teamsOf(await get('/api/users/me/mcp/installations', boundToA))).toEqual([teamA.id])
    expect(teamsOf(await get(`/api/users/me/mcp/installations?team_id=${teamA.id}`, boundToA))).toEqual([teamA.id])
    expect(configOf(await get('/api/users/me/mcp/client-config', boundToA))).toEqual([`${teamA.slug}-weather-a`])
    expect(configOf(await get(`/api/users/me/mcp/client-config?team_id=${teamA.id}`, boundToA))).toEqual([`${teamA.slug}-weather-a`])
    for (const read of [(url: string) => get(url, unbound), asSession]) {
      expect(teamsOf(await read('/api/users/me/mcp/installations'))).toEqual(both())
      expect(teamsOf(await read(`/api/users/me/mcp/installations?team_id=${teamB.id}`))).toEqual([teamB.id])
      expect(configOf(await read('/api/users/me/mcp/client-config'))).toEqual([`${teamA.slug}-weather-a`, `${teamB.slug}-weather-b`])
    }
  })

  it.each([
    ['/api/users/me/mcp/installations?team_id=B'],
    ['/api/users/me/mcp/client-config?team_id=B'],
    ['/api/teams/B'],
    ['/api/teams/B/mcp/installations'],
    ['/api/teams/B/mcp/installations/IN_B'],
    ['/api/teams/B/mcp/installations/IN_B/tools'],
    ['/api/teams/B/mcp/installations/IN_B/my-values'],
    ['/api/teams/B/mcp/installations/IN_B/logs'],
    ['/api/teams/me/default'],
  ])('GET %s: 403 for a token bound to A, 200 for a token bound to no team and for a session', async (path) => {
    const url = path.replace('IN_B', inB.id).replace('/B', `/${teamB.id}`).replace('=B', `=${teamB.id}`)
    expectBoundRefusal(await get(url, boundToA), teamA.id)
    expect((await get(url, unbound)).statusCode).toBe(200)
    expect((await asSession(url)).statusCode).toBe(200)
  })

  it.each([
    ['/api/teams/A'],
    ['/api/teams/A/mcp/installations'],
    ['/api/teams/A/mcp/installations/IN_A'],
    ['/api/teams/A/mcp/installations/IN_A/tools'],
    ['/api/teams/A/mcp/installations/IN_A/my-values'],
  ])('GET %s: the token bound to A reaches its own team', async (path) => {
    const response = await get(path.replace('IN_A', inA.id).replace('/A', `/${teamA.id}`), boundToA)
    expect(response.statusCode, response.body).toBe(200)
  })

  it('another team id answers 403 whether or not it exists, and the same to a global admin', async () => {
    expectBoundRefusal(await get('/api/teams/no-such-team/mcp/installations', boundToA), teamA.id)
    expectBoundRefusal(await get(installationOf(teamB.id, inA.id), boundToA), teamA.id)
    // A global admin holds every team permission, but not through a token bound to one team.
    const adminTeam = (await get('/api/teams/me', adminBoundToA)).json().data.teams[0] as TeamBody
    expectBoundRefusal(await get(installationsOf(teamB.id), adminBoundToA), adminTeam.id)
    expectBoundRefusal(await get(`/api/teams/${teamB.id}`, adminBoundToA), adminTeam.id)
  })

  it.each(['/api/teams/me', '/api/users/me/teams'])('GET %s lists team A alone for a token bound to A, every team otherwise', async (url) => {
    const ids = (response: LightMyRequestResponse) => (response.json().data.teams as TeamBody[]).map((team) => team.id).sort()
    expect(ids(await get(url, boundToA))).toEqual([teamA.id])
    const all = [member.id, teamA.id, teamB.id]
    expect(ids(await get(url, unbound))).toHaveLength(all.length)
    expect(ids(await asSession(url))).toHaveLength(all.length)
    expect(ids(await asSession(url))).toEqual(expect.arrayContaining([teamA.id, teamB.id]))
  })

  it('GET /api/users/me/account counts the teams the token reaches', async () => {
    expect((await get('/api/users/me/account', boundToA)).json().data.team_count).toBe(1)
    expect((await get('/api/users/me/account', unbound)).json().data.team_count).toBe(3)
    expect((await asSession('/api/users/me/account')).json().data.team_count).toBe(3)
  })
})
