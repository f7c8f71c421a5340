import type { FastifyInstance } from 'fastify'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createTestContext, type TestContext } from '../helpers/app.js'
import { DIALECTS } from '../helpers/database.js'
import { importDocuments, install, installationOf, installationsOf, weatherDocument, type InstallationBody } from '../helpers/installations.js'
import { bearer, issueUnboundTokens } from '../helpers/oauth.js'
import { SATELLITE_LIMITS } from '../helpers/satellites.js'
import { addMember, client, createTeam, signUp, type Account, type Call, type TeamBody } from '../helpers/teams.js'

const MINE = '/api/users/me/mcp/installations'
const TEAM_KEY = 'wk-lists-team-5e4d3c2b1a'
const OWN_TOKEN = 'ghp-lists-own-0a1b2c3d4e'
const OTHERS_TOKEN = 'ghp-lists-other-9f8e7d6c5b'

interface Page {
  installations: InstallationBody[]
  pagination: { total: number; limit: number; offset: number; has_more: boolean }
}

/**
 * The lists read each installation as its own read does, from the caller's point of view: the
 * team's values and the caller's own, never another member's. The member's list runs by team
 * (slug), then name, over every team of the caller; pages add up to the whole list, with its total
 * on every page, past the end too.
 */
describe.each(DIALECTS)('installation lists on %s', (dialect) => {
  let ctx: TestContext
  let app: FastifyInstance
  let call: Call
  let owner: Account
  let member: Account
  let other: Account
  let zeta: TeamBody
  let alpha: TeamBody
  let token: string

  beforeAll(async () => {
    ctx = await createTestContext(dialect)
    app = (await ctx.build({ limits: SATELLITE_LIMITS })).app
    call = client(app)
    const admin = await signUp(app, 'lists_admin')
    owner = await signUp(app, 'lists_owner')
    member = await signUp(app, 'lists_member')
    other = await signUp(app, 'lists_other')
    const serverId = (await importDocuments(call, admin, [weatherDocument('io.github.example/lists-weather')]))[0]!
    // Made in the order opposite to their slugs', and installed under names out of order: the
    // lists must sort, not give the rows as they were written.
    zeta = await createTeam(call, owner, 'Lists Zeta')
    alpha = await createTeam(call, owner, 'Lists Alpha')
    for (const team of [zeta, alpha]) {
      await addMember(call, team.id, owner, member, 'team_user')
      await addMember(call, team.id, owner, other, 'team_user')
      for (const name of ['weather-c', 'weather-a', 'weather-b']) {
        const perUser = name !== 'weather-b'
        const installed = await install(call, team.id, owner, {
          server_id: serverId, name,
          ...(perUser ? { user_scoped: ['env:PERSONAL_TOKEN', 'env:LOG_LEVEL'] } : {}),
          values: { 'env:WEATHER_API_KEY': TEAM_KEY, 'arg:data_dir': `/srv/${name}`, ...(perUser ? {} : { 'env:PERSONAL_TOKEN': 'team-token', 'env:LOG_LEVEL': 'warn' }) },
        })
        if (!perUser) continue
        // The other member sets their own values everywhere; the member only on weather-a.
        const mine = `${installationOf(team.id, installed.id)}/my-values`
        expect((await call('PUT', mine, other, { values: { 'env:PERSONAL_TOKEN': OTHERS_TOKEN, 'env:LOG_LEVEL': 'debug' } })).statusCode).toBe(200)
        if (name === 'weather-a') expect((await call('PUT', mine, member, { values: { 'env:PERSONAL_TOKEN': OWN_TOKEN, 'env:LOG_LEVEL': 'info' } })).statusCode).toBe(200)
      }
    }
    // A token bound to no team reaches every team of the member (a team-bound one: test/oauth/team-bound-tokens.test.ts).
    token = (await issueUnboundTokens(app, member, 'mcp:read')).access_token
  })
  afterAll(() => ctx.close())

  const read = async (url: string): Promise<Page> => {
    const response = await app.inject({ method: 'GET', url, headers: bearer(token) })
    expect(response.statusCode, response.body).toBe(200)
    expect(response.body).not.toContain(TEAM_KEY)
    expect(response.body).not.toContain(OWN_TOKEN)
    expect(response.body).not.toContain(OTHERS_TOKEN)
    return response.json().data
  }
  const single = async (as: Account, installation: InstallationBody): Promise<InstallationBody> =>
    (await call('GET', installationOf(installation.team_id, installation.id), as)).json().data.installation

  it("the member's list: by team slug, then name; each entry as its own read shows it to the member", async () => {
    const page = await read(`${MINE}?limit=100`)
    expect(page.pagination).toEqual({ total: 6, limit: 100, offset: 0, has_more: false })
    expect(page.installations.map((each) => [each.team_id, each.name])).toEqual([
      [alpha.id, 'weather-a'], [alpha.id, 'weather-b'], [alpha.id, 'weather-c'],
      [zeta.id, 'weather-a'], [zeta.id, 'weather-b'], [zeta.id, 'weather-c'],
    ])
    for (const listed of page.installations) expect(listed).toEqual(await single(member, listed))
    // The member's own values count for them, the other member's do not.
    const [a, b, c] = page.installations
    expect(a).toMatchObject({ instance_mode: 'per_user', missing_inputs: [], status: 'pending' })
    expect(a!.inputs.find((input) => input.key === 'env:LOG_LEVEL')).toMatchObject({ scope: 'user', is_set: true, value: 'info' })
    expect(b).toMatchObject({ instance_mode: 'shared', missing_inputs: [], status: 'pending' })
    expect(b!.inputs.find((input) => input.key === 'env:LOG_LEVEL')).toMatchObject({ scope: 'team', is_set: true, value: 'warn' })
    expect(c).toMatchObject({ instance_mode: 'per_user', missing_inputs: ['env:PERSONAL_TOKEN'], status: 'needs_config' })
    expect(c!.inputs.find((input) => input.key === 'env:LOG_LEVEL')).toMatchObject({ is_set: false })
    expect(c!.inputs.find((input) => input.key === 'env:WEATHER_API_KEY')).toEqual(expect.objectContaining({ scope: 'team', secret: true, is_set: true }))
    expect(c!.inputs.find((input) => input.key === 'env:WEATHER_API_KEY')).not.toHaveProperty('value')
  })

  it('pages add up to the whole list, each with the total; past the end, an empty page still has it', async () => {
    const whole = (await read(`${MINE}?limit=100`)).installations
    const pages = [await read(`${MINE}?limit=4`), await read(`${MINE}?limit=4&offset=4`)]
    expect(pages.map((page) => page.pagination)).toEqual([
      { total: 6, limit: 4, offset: 0, has_more: true },
      { total: 6, limit: 4, offset: 4, has_more: false },
    ])
    expect(pages.flatMap((page) => page.installations)).toEqual(whole)
    expect(await read(`${MINE}?offset=6`)).toEqual({ installations: [], pagination: { total: 6, limit: 20, offset: 6, has_more: false } })
    expect(await read(`${MINE}?limit=1&offset=5`)).toEqual({ installations: [whole[5]], pagination: { total: 6, limit: 1, offset: 5, has_more: false } })
  })

  it("team_id keeps one of the member's teams; a team they are not in lists nothing", async () => {
    const whole = (await read(`${MINE}?limit=100`)).installations
    const one = await read(`${MINE}?team_id=${zeta.id}&limit=2&offset=1`)
    expect(one).toEqual({ installations: whole.slice(4, 6), pagination: { total: 3, limit: 2, offset: 1, has_more: false } })
    const elsewhere = await createTeam(call, other, 'Lists Elsewhere')
    await install(call, elsewhere.id, other, { server_id: whole[0]!.server.id, name: 'not-theirs' })
    expect(await read(`${MINE}?team_id=${elsewhere.id}`)).toEqual({ installations: [], pagination: { total: 0, limit: 20, offset: 0, has_more: false } })
    expect((await read(`${MINE}?limit=100`)).installations).toEqual(whole)
  })

  it("a team's list, by name: each entry as its own read shows it to that reader, pages with the total", async () => {
    for (const reader of [member, other, owner]) {
      const response = await call('GET', `${installationsOf(alpha.id)}?limit=2&offset=1`, reader)
      expect(response.statusCode, response.body).toBe(200)
      const page = response.json().data as Page
      expect(page.pagination).toEqual({ total: 3, limit: 2, offset: 1, has_more: false })
      expect(page.installations.map((each) => each.name)).toEqual(['weather-b', 'weather-c'])
      for (const listed of page.installations) expect(listed).toEqual(await single(reader, listed))
    }
    const others = (await call('GET', installationsOf(alpha.id), other)).json().data as Page
    expect(others.installations.map((each) => each.status)).toEqual(['pending', 'pending', 'pending'])
    const past = (await call('GET', `${installationsOf(alpha.id)}?offset=3`, member)).json().data as Page
    expect(past).toEqual({ installations: [], pagination: { total: 3, limit: 20, offset: 3, has_more: false } })
  })
})
