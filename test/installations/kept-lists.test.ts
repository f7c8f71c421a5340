import type { FastifyInstance, LightMyRequestResponse } from 'fastify'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createTestContext, type TestContext } from '../helpers/app.js'
import { manualClock, type ManualClock } from '../helpers/clock.js'
import { DIALECTS } from '../helpers/database.js'
import { keyPair } from '../helpers/hpke.js'
import { importDocuments, install, installationOf, installationsOf, weatherDocument, type InstallationBody } from '../helpers/installations.js'
import { bearer, issueUnboundTokens } from '../helpers/oauth.js'
import { createToken, heartbeat, pair, SATELLITE_LIMITS, type Paired } from '../helpers/satellites.js'
import { addMember, client, createTeam, signUp, type Account, type Call, type TeamBody } from '../helpers/teams.js'
import { until } from '../helpers/until.js'

const MINE = '/api/users/me/mcp/installations'
const CONFIG = '/api/users/me/mcp/client-config'

interface Page { installations: InstallationBody[]; pagination: { total: number } }

/**
 * The installation lists and client configurations an instance answers again while nothing they
 * show changed: two instances on one database, B read again and again (so it keeps its answers),
 * then a change made on A. B's next lists show it — at once on SQLite, whose file's change stamp
 * every read compares, and as soon as the database's notification arrives on PostgreSQL — and A's
 * own next list shows it at once. Each kind of change that a list shows is made once.
 */
describe.each(DIALECTS)('kept installation lists across two instances on %s', (dialect) => {
  let ctx: TestContext
  let a: FastifyInstance
  let b: FastifyInstance
  let callA: Call
  let clock: ManualClock
  let admin: Account
  let owner: Account
  let member: Account
  let team: TeamBody
  let serverId: string
  let token: string
  let satellite: Paired
  let seq = 0

  beforeAll(async () => {
    ctx = await createTestContext(dialect, { file: true })
    clock = manualClock(Date.now())
    a = (await ctx.build({ limits: SATELLITE_LIMITS, clock, env: { RATE_LIMIT_ENABLED: 'false' } })).app
    b = (await ctx.build({ limits: SATELLITE_LIMITS, clock, env: { RATE_LIMIT_ENABLED: 'false' } })).app
    callA = client(a)
    admin = await signUp(a, `kl_admin_${dialect}`)
    owner = await signUp(a, `kl_owner_${dialect}`)
    member = await signUp(a, `kl_member_${dialect}`)
    serverId = (await importDocuments(callA, admin, [weatherDocument(`io.github.example/kept-lists-${dialect}`)]))[0]!
    team = await createTeam(callA, owner, `Kept Lists ${dialect}`)
    await addMember(callA, team.id, owner, member, 'team_user')
    const registration = await createToken(callA, owner, { teamId: team.id })
    satellite = await pair(a, registration.token, `kl-sat-${dialect}`, { satellite_url: 'https://kl.example.com', public_key: (await keyPair()).publicKey })
    expect((await heartbeat(a, satellite.id, satellite.apiKey)).statusCode).toBe(200)
    await install(callA, team.id, owner, { server_id: serverId, name: 'first', user_scoped: ['env:PERSONAL_TOKEN'], values: { 'env:WEATHER_API_KEY': 'wk-kept-1', 'arg:data_dir': '/srv/first', 'env:LOG_LEVEL': 'warn' } })
    token = (await issueUnboundTokens(a, member, 'mcp:read')).access_token
  })
  afterAll(() => ctx.close())

  const get = async (app: FastifyInstance, url: string): Promise<LightMyRequestResponse> => {
    const response = await app.inject({ method: 'GET', url, headers: bearer(token) })
    expect(response.statusCode, response.body).toBe(200)
    return response
  }
  const mine = async (app: FastifyInstance, query = '?limit=100'): Promise<Page> => (await get(app, `${MINE}${query}`)).json().data
  const teamList = async (app: FastifyInstance): Promise<Page> => (await get(app, `${installationsOf(team.id)}?limit=100`)).json().data
  const config = async (app: FastifyInstance): Promise<Record<string, { url: string }>> => (await get(app, CONFIG)).json().data.mcpServers
  const named = (page: Page, name: string) => page.installations.find((each) => each.name === name)

  /**
   * B answers `read` many times (its answer kept), then `change` runs on A: `shows` must hold on A
   * at once (A tells itself at the commit, whoever wrote: a member or a satellite) and on B once
   * the database's notification arrives on PostgreSQL.
   */
  async function seenOnBoth<T>(read: (app: FastifyInstance) => Promise<T>, change: () => Promise<void>, shows: (answer: T) => boolean): Promise<void> {
    for (let i = 0; i < 5; i++) expect(shows(await read(b))).toBe(false)
    await change()
    expect(shows(await read(a))).toBe(true)
    if (dialect === 'sqlite') expect(shows(await read(b))).toBe(true)
    else await until(async () => shows(await read(b)), { what: 'the change on B' })
  }

  it('kept: an unchanged list is the same bytes again, and the same as a fresh instance builds', async () => {
    const first = await get(b, MINE)
    const again = await get(b, MINE)
    expect(again.body).toBe(first.body)
    expect((await get(a, MINE)).body).toBe(first.body)
  })

  it("a team value set on A: both lists and the member's list on B show it", async () => {
    const url = `${installationOf(team.id, named(await teamList(a), 'first')!.id)}/values`
    await seenOnBoth(mine, async () => {
      expect((await callA('PUT', url, owner, { values: { 'env:LOG_LEVEL': 'debug' } })).statusCode).toBe(200)
    }, (page) => named(page, 'first')!.inputs.find((input) => input.key === 'env:LOG_LEVEL')!.value === 'debug')
    expect(named(await teamList(b), 'first')!.inputs.find((input) => input.key === 'env:LOG_LEVEL')!.value).toBe('debug')
  })

  it("the member's own value set on A: the member's list on B counts it", async () => {
    const url = `${installationOf(team.id, named(await teamList(a), 'first')!.id)}/my-values`
    await seenOnBoth(mine, async () => {
      expect((await client(a)('PUT', url, member, { values: { 'env:PERSONAL_TOKEN': 'ghp-kept-own' } })).statusCode).toBe(200)
    }, (page) => named(page, 'first')!.inputs.find((input) => input.key === 'env:PERSONAL_TOKEN')!.is_set)
  })

  it('an installation added, then removed, on A', async () => {
    let added: InstallationBody | undefined
    await seenOnBoth(teamList, async () => {
      added = await install(callA, team.id, owner, { server_id: serverId, name: `added-${++seq}`, values: { 'env:WEATHER_API_KEY': 'wk', 'arg:data_dir': '/srv/x', 'env:PERSONAL_TOKEN': 't' } })
    }, (page) => named(page, added?.name ?? '-') !== undefined)
    await seenOnBoth(mine, async () => {
      expect((await callA('DELETE', installationOf(team.id, added!.id), owner)).statusCode).toBe(200)
    }, (page) => named(page, added!.name) === undefined)
  })

  it("the member joins a team on A: their list on B has its installations; leaving takes them away", async () => {
    const other = await createTeam(callA, owner, `Kept Other ${dialect}`)
    await install(callA, other.id, owner, { server_id: serverId, name: 'elsewhere', values: { 'env:WEATHER_API_KEY': 'wk', 'arg:data_dir': '/srv/y', 'env:PERSONAL_TOKEN': 't' } })
    await seenOnBoth(mine, () => addMember(callA, other.id, owner, member, 'team_user'), (page) => named(page, 'elsewhere') !== undefined)
    await seenOnBoth(mine, async () => {
      expect((await callA('DELETE', `/api/teams/${other.id}/members/${member.id}`, owner)).statusCode).toBe(200)
    }, (page) => named(page, 'elsewhere') === undefined)
  })

  it("the satellite's report on A: the status on B follows it", async () => {
    const doc = (await a.inject({ method: 'GET', url: `/api/satellites/${satellite.id}/desired-state`, headers: { authorization: `Bearer ${satellite.apiKey}` } })).json().data
    const firstId = named(await teamList(a), 'first')!.id
    const instances = doc.instances.filter((each: { installation_id: string }) => each.installation_id === firstId)
    expect(instances.length).toBeGreaterThan(0)
    await seenOnBoth(teamList, async () => {
      const report = await a.inject({
        method: 'PUT', url: `/api/satellites/${satellite.id}/observed-state`, headers: { authorization: `Bearer ${satellite.apiKey}` },
        payload: { revision: doc.revision, instances: instances.map((each: { instance_id: string; spec_hash: string }) => ({ instance_id: each.instance_id, spec_hash: each.spec_hash, phase: 'degraded', message: 'kept-lists probe' })) },
      })
      expect(report.statusCode, report.body).toBe(200)
    }, (page) => named(page, 'first')!.status_reason?.includes('kept-lists probe') === true)
  })

  it('a satellite silent for 90 s reads unknown on both; its next heartbeat (made on A) brings it back on B', async () => {
    const status = (page: Page) => named(page, 'first')!.status
    expect(status(await teamList(b))).not.toBe('unknown')
    clock.advance(91_000)
    expect(status(await teamList(a))).toBe('unknown')
    expect(status(await teamList(b))).toBe('unknown')
    await seenOnBoth(teamList, async () => {
      expect((await heartbeat(a, satellite.id, satellite.apiKey)).statusCode).toBe(200)
    }, (page) => status(page) !== 'unknown')
  })

  it('the catalogue entry renamed on A: the lists on B show the new name', async () => {
    await seenOnBoth(mine, async () => {
      const renamed = await callA('PUT', `/api/mcp/servers/global/${serverId}`, admin, { name: `Weather renamed ${dialect}` })
      expect(renamed.statusCode, renamed.body).toBe(200)
    }, (page) => named(page, 'first')!.server.name === `Weather renamed ${dialect}`)
  })

  it('the client configuration: the satellite says on A that it stops, and B leaves its endpoints out; its heartbeat brings them back', async () => {
    const served = (servers: Record<string, { url: string }>) => Object.values(servers).some((each) => each.url.startsWith('https://kl.example.com/mcp/'))
    expect(served(await config(b))).toBe(true)
    await seenOnBoth(async (app) => !served(await config(app)), async () => {
      const stopped = await a.inject({ method: 'POST', url: `/api/satellites/${satellite.id}/offline`, headers: { authorization: `Bearer ${satellite.apiKey}` } })
      expect(stopped.statusCode, stopped.body).toBe(200)
    }, (left) => left)
    await seenOnBoth(async (app) => served(await config(app)), async () => {
      expect((await heartbeat(a, satellite.id, satellite.apiKey)).statusCode).toBe(200)
    }, (back) => back)
  })
})
