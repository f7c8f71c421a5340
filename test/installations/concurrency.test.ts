import { sql } from 'drizzle-orm'
import type { FastifyInstance } from 'fastify'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { installationValueBox } from '../../src/modules/installations/sealed-values.js'
import { createTestContext, TEST_SECRET, type TestContext } from '../helpers/app.js'
import { DIALECTS } from '../helpers/database.js'
import {
  importDocuments, install, installationOf, installationsOf, weatherDocument, type InputBody, type InstallationBody,
} from '../helpers/installations.js'
import { expectNoServerError, expectOutcome, fire, warmUp } from '../helpers/races.js'
import { SATELLITE_LIMITS } from '../helpers/satellites.js'
import { rawRows } from '../helpers/sql.js'
import { addMember, client, createTeam, crew as makeCrew, signUp, type Account, type Call } from '../helpers/teams.js'

const RACERS = 10
const LEVELS = ['debug', 'info', 'warn'] as const

/**
 * A complete set of the weather server's team values, distinct for each `n`. Odd sets list their
 * keys in reverse: writes that were not serialized would then take the rows in opposite orders and
 * deadlock on PostgreSQL, or interleave into a mix.
 */
function teamValues(n: number): Record<string, string> {
  const entries: Array<[string, string]> = [
    ['env:WEATHER_API_KEY', `wk-race-${n}`],
    ['env:LOG_LEVEL', LEVELS[n % LEVELS.length]!],
    ['env:PERSONAL_TOKEN', `team-token-${n}`],
    ['arg:--port', String(9000 + n)],
    ['arg:data_dir', `/data/race-${n}`],
  ]
  return Object.fromEntries(n % 2 === 0 ? entries : entries.reverse())
}

/**
 * Installations written by many requests at once, through the real API. Every write to a team's
 * installations first takes the team's row, so they run one after the other: names are decided
 * one creation at a time, a set of values is written whole, and a team deleted meanwhile either
 * waits for the write (and takes its installation with it) or makes it a 404 — never a 500.
 */
describe.each(DIALECTS)('installations under concurrency on %s', (dialect) => {
  let ctx: TestContext
  let app: FastifyInstance
  let call: Call
  let admin: Account
  let weatherId: string
  let seq = 0
  const fresh = () => signUp(app, `race_${++seq}`)
  const box = installationValueBox(TEST_SECRET)

  const count = async (query: ReturnType<typeof sql>): Promise<number> => Number((await rawRows(app.services.database, query))[0]![0])
  const inputOf = (inputs: InputBody[], key: string) => inputs.find((input) => input.key === key)

  /** The stored plaintext of a secret value, opened as the service would. */
  async function opened(installationId: string, userId: string | null, key: string): Promise<string> {
    const rows = await rawRows(app.services.database, userId === null
      ? sql`select sealed from mcp_installation_values where installation_id = ${installationId} and user_id is null and key = ${key}`
      : sql`select sealed from mcp_installation_values where installation_id = ${installationId} and user_id = ${userId} and key = ${key}`)
    expect(rows, `${installationId} ${userId} ${key}`).toHaveLength(1)
    return box.open(String(rows[0]![0]), { installationId, userId, key })
  }

  beforeAll(async () => {
    ctx = await createTestContext(dialect)
    app = (await ctx.build({ limits: SATELLITE_LIMITS })).app
    call = client(app)
    admin = await signUp(app, 'race_admin')
    weatherId = (await importDocuments(call, admin, [weatherDocument('io.github.example/weather-races')]))[0]!
  })
  afterAll(() => ctx.close())

  it(`${RACERS} creations with one explicit name: one 201, the others 409 INSTALLATION_NAME_TAKEN, one row and only its values`, async () => {
    const crew = await makeCrew(call, fresh, 'Name Race Team')
    const audited = () => count(sql`select count(*) from audit_events where type = 'installation.created'`)
    const auditedBefore = await audited()
    await warmUp(app, RACERS)
    const responses = await fire(RACERS, (index) => call('POST', installationsOf(crew.team.id), index % 2 === 0 ? crew.teamAdmin : crew.owner, {
      server_id: weatherId, name: 'contested', values: { 'env:LOG_LEVEL': LEVELS[index % LEVELS.length] },
    }))
    expectOutcome(responses, { 201: 1, '409 INSTALLATION_NAME_TAKEN': RACERS - 1 })
    expect(await count(sql`select count(*) from mcp_installations where team_id = ${crew.team.id}`)).toBe(1)
    // The losers' values and audit events went with their transactions.
    expect(await count(sql`select count(*) from mcp_installation_values v join mcp_installations i on i.id = v.installation_id where i.team_id = ${crew.team.id}`)).toBe(1)
    expect(await audited()).toBe(auditedBefore + 1)
  })

  it(`${RACERS} creations without a name: ${RACERS} × 201 under the slug, -2, -3 … each name once`, async () => {
    const crew = await makeCrew(call, fresh, 'Default Name Race Team')
    await warmUp(app, RACERS)
    const responses = await fire(RACERS, () => call('POST', installationsOf(crew.team.id), crew.teamAdmin, { server_id: weatherId }))
    expectOutcome(responses, { 201: RACERS })
    const created = responses.map((response) => response.json().data.installation as InstallationBody)
    const slug = created[0]!.server.slug
    const expected = Array.from({ length: RACERS }, (_, index) => (index === 0 ? slug : `${slug}-${index + 1}`))
    expect(created.map((installation) => installation.name).sort()).toEqual([...expected].sort())
    const stored = await rawRows(app.services.database, sql`select name from mcp_installations where team_id = ${crew.team.id}`)
    expect(stored.map((row) => String(row[0])).sort()).toEqual([...expected].sort())
  })

  it('concurrent PUT values of whole sets: every write 200, and the stored values are exactly one of the sets', async () => {
    const crew = await makeCrew(call, fresh, 'Values Race Team')
    const installation = await install(call, crew.team.id, crew.teamAdmin, { server_id: weatherId, name: 'raced-values' })
    const path = `${installationOf(crew.team.id, installation.id)}/values`
    await warmUp(app, RACERS)
    const responses = await fire(RACERS, (index) => call('PUT', path, index % 2 === 0 ? crew.teamAdmin : crew.owner, { values: teamValues(index) }))
    // Writes to one installation wait for each other behind the team's row: none is refused.
    expectOutcome(responses, { 200: RACERS })

    const read = (await call('GET', installationOf(crew.team.id, installation.id), crew.teamUser)).json().data.installation as InstallationBody
    const port = inputOf(read.inputs, 'arg:--port')?.value
    const winner = Number(port) - 9000
    expect(winner, `port ${port}`).toBeGreaterThanOrEqual(0)
    expect(winner).toBeLessThan(RACERS)
    const set = teamValues(winner)
    // The non-secret values through the API, the secret ones opened from the database: all of one set.
    expect(inputOf(read.inputs, 'env:LOG_LEVEL')?.value).toBe(set['env:LOG_LEVEL'])
    expect(inputOf(read.inputs, 'arg:data_dir')?.value).toBe(set['arg:data_dir'])
    expect(await opened(installation.id, null, 'env:WEATHER_API_KEY')).toBe(set['env:WEATHER_API_KEY'])
    expect(await opened(installation.id, null, 'env:PERSONAL_TOKEN')).toBe(set['env:PERSONAL_TOKEN'])
    expect(await count(sql`select count(*) from mcp_installation_values where installation_id = ${installation.id}`)).toBe(Object.keys(set).length)
    expect(read).toMatchObject({ missing_inputs: [], spec_revision: installation.spec_revision + RACERS })
  })

  it("concurrent my-values writes by several members (and the team's values meanwhile): each member's own values kept, none lost", async () => {
    const crew = await makeCrew(call, fresh, 'My Values Race Team')
    const members: Account[] = [crew.owner, crew.teamAdmin, crew.teamUser]
    for (let n = 0; n < 5; n++) {
      const member = await fresh()
      await addMember(call, crew.team.id, crew.owner, member, n % 2 === 0 ? 'team_user' : 'team_admin')
      members.push(member)
    }
    const installation = await install(call, crew.team.id, crew.teamAdmin, {
      server_id: weatherId, name: 'raced-own-values', user_scoped: ['env:PERSONAL_TOKEN', 'arg:data_dir'],
    })
    const base = installationOf(crew.team.id, installation.id)
    const own = (index: number) => ({ 'env:PERSONAL_TOKEN': `own-token-${members[index]!.username}`, 'arg:data_dir': `/home/${members[index]!.username}` })
    await warmUp(app, members.length + 1)
    const [team, ...mine] = await Promise.all([
      call('PUT', `${base}/values`, crew.teamAdmin, { values: { 'env:WEATHER_API_KEY': 'wk-team', 'env:LOG_LEVEL': 'warn' } }),
      ...members.map((member, index) => call('PUT', `${base}/my-values`, member, { values: own(index) })),
    ])
    expectOutcome([team!, ...mine], { 200: members.length + 1 })

    for (const [index, member] of members.entries()) {
      const values = (await call('GET', `${base}/my-values`, member)).json().data.values as InputBody[]
      expect(inputOf(values, 'arg:data_dir'), member.username).toMatchObject({ is_set: true, value: own(index)['arg:data_dir'] })
      expect(inputOf(values, 'env:PERSONAL_TOKEN'), member.username).toMatchObject({ is_set: true })
      expect(await opened(installation.id, member.id, 'env:PERSONAL_TOKEN')).toBe(own(index)['env:PERSONAL_TOKEN'])
    }
    expect(await count(sql`select count(*) from mcp_installation_values where installation_id = ${installation.id} and user_id is not null`)).toBe(members.length * 2)
    expect(await count(sql`select count(*) from mcp_installation_values where installation_id = ${installation.id} and user_id is null`)).toBe(2)
    expect(await opened(installation.id, null, 'env:WEATHER_API_KEY')).toBe('wk-team')
  })

  it('creations racing the deletion of their team: each 201 (then gone with the team) or 404, never a 500', async () => {
    for (let round = 0; round < 4; round++) {
      const owner = await fresh()
      const team = await createTeam(call, owner, `Doomed Installations ${round}`)
      const existing = await install(call, team.id, owner, {
        server_id: weatherId, name: 'existing', user_scoped: ['env:PERSONAL_TOKEN'], values: { 'env:WEATHER_API_KEY': 'wk-doomed' },
      })
      // The team's own server too: it goes with the team, as do the installations that use it.
      const own = await call('POST', `/api/teams/${team.id}/mcp/servers`, owner, {
        name: `Doomed Server ${round}`, packages: [{ registry_type: 'npm', identifier: '@doomed/server', environment_variables: [{ name: 'TOKEN', secret: true }] }],
      })
      expect(own.statusCode, own.body).toBe(201)
      const ownServerId = own.json().data.server.id as string
      expect((await call('POST', `/api/teams/${team.id}/mcp/servers/${ownServerId}/versions`, owner, { version: '1.0.0' })).statusCode).toBe(201)

      const path = installationsOf(team.id)
      const writers = [
        () => call('POST', path, owner, { server_id: weatherId }),
        () => call('POST', path, owner, { server_id: weatherId, name: `racing-${round}`, values: { 'env:LOG_LEVEL': 'warn' } }),
        () => call('POST', path, owner, { server_id: ownServerId, values: { 'env:TOKEN': 'doomed-token' } }),
        // A global admin passes the route's team check for any id; the service finds the team gone.
        () => call('POST', path, admin, { server_id: weatherId }),
        () => call('PUT', `${installationOf(team.id, existing.id)}/values`, owner, { values: { 'arg:data_dir': '/data/doomed' } }),
        () => call('PUT', `${installationOf(team.id, existing.id)}/my-values`, owner, { values: { 'env:PERSONAL_TOKEN': 'own-doomed' } }),
        () => call('POST', `${installationOf(team.id, existing.id)}/restart`, owner),
      ]
      // The deletion is sent with the writes, then after them by a few turns of the event loop: on
      // SQLite, where transactions take turns, that is what lets both sides win in some round.
      await warmUp(app, writers.length + 1)
      const writing = writers.map((writer) => writer())
      for (let turn = 0; turn < [0, 1, 2, 8][round]!; turn++) await new Promise((resolve) => setImmediate(resolve))
      const deleted = await call('DELETE', `/api/teams/${team.id}`, owner)
      const writes = await Promise.all(writing)
      expect(deleted!.statusCode, deleted!.body).toBe(200)
      expectNoServerError(writes)
      for (const write of writes) {
        expect([200, 201, 404], `${write.statusCode} ${write.body}`).toContain(write.statusCode)
        if (write.statusCode === 404) expect(write.json().code).toBe('NOT_FOUND')
      }
      const ids = writes.filter((write) => write.statusCode === 201).map((write) => write.json().data.installation.id as string)
      // Whatever was created went with the team: no installation of it, and no value left behind.
      expect(await count(sql`select count(*) from mcp_installations where team_id = ${team.id}`)).toBe(0)
      for (const id of [existing.id, ...ids]) {
        expect(await count(sql`select count(*) from mcp_installation_values where installation_id = ${id}`), id).toBe(0)
      }
      expect(await count(sql`select count(*) from mcp_servers where id = ${ownServerId}`)).toBe(0)
    }
  })
})
