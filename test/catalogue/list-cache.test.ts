import type { FastifyInstance } from 'fastify'
import { until } from '../helpers/until.js'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createTestContext, type TestContext } from '../helpers/app.js'
import { addVersion, createCategory, createServer, insertTeamServer, type ServerBody } from '../helpers/catalogue.js'
import { DIALECTS } from '../helpers/database.js'
import { addMember, client, createTeam, ROOMY_LIMITS, signUp, type Account, type Call } from '../helpers/teams.js'

/**
 * The server list is cached per catalogue revision: every answer must still reflect every write
 * made before it — through the API, by a second instance on the same database, and by changes
 * outside the catalogue's own routes (a team deleted with its servers, a user joining a team).
 */
describe.each(DIALECTS)('the server list follows every change on %s', (dialect) => {
  let ctx: TestContext
  let app: FastifyInstance
  let other: FastifyInstance
  let call: Call
  let otherCall: Call
  let admin: Account
  let user: Account

  const list = async (caller: Account, query = '', via: Call = call) => {
    const response = await via('GET', `/api/mcp/servers?limit=100${query}`, caller)
    expect(response.statusCode).toBe(200)
    return response.json().data as { servers: ServerBody[]; pagination: { total: number } }
  }
  const names = async (caller: Account, query = '', via: Call = call) => (await list(caller, query, via)).servers.map((server) => server.name)

  beforeAll(async () => {
    ctx = await createTestContext(dialect, { file: true })
    app = (await ctx.build({ limits: ROOMY_LIMITS })).app
    other = (await ctx.build({ limits: ROOMY_LIMITS })).app
    call = client(app)
    otherCall = client(other)
    admin = await signUp(app, 'cache_admin')
    user = await signUp(app, 'cache_user')
  })
  afterAll(() => ctx.close())

  it('shows a server created, changed or deleted right after, on the same instance', async () => {
    const before = await list(user)
    const server = await createServer(call, admin, { name: 'Cache Alpha' })
    const after = await list(user)
    expect(after.pagination.total).toBe(before.pagination.total + 1)
    expect(after.servers.map((s) => s.name)).toContain('Cache Alpha')

    expect((await call('PUT', `/api/mcp/servers/global/${server.id}`, admin, { name: 'Cache Alpha Renamed' })).statusCode).toBe(200)
    expect(await names(user)).toContain('Cache Alpha Renamed')
    expect(await names(user)).not.toContain('Cache Alpha')

    expect((await call('DELETE', `/api/mcp/servers/global/${server.id}`, admin)).statusCode).toBe(200)
    expect(await names(user)).not.toContain('Cache Alpha Renamed')
    expect((await list(user)).pagination.total).toBe(before.pagination.total)
  })

  it('shows a write made through another instance on the same database', async () => {
    await list(user)
    await list(user, '', otherCall)
    // Another instance's write is seen once the database's notification arrives (at once on SQLite).
    const server = await createServer(otherCall, admin, { name: 'Cache Beta' })
    await until(async () => (await names(user)).includes('Cache Beta'), { what: 'the server on the first instance' })
    expect((await call('PUT', `/api/mcp/servers/global/${server.id}`, admin, { featured: true })).statusCode).toBe(200)
    await until(async () => (await list(user, '&featured=true', otherCall)).servers.some((s) => s.id === server.id), { what: 'the change on the other instance' })
  })

  it('follows versions, category deletion and the tag table', async () => {
    const category = await createCategory(call, admin, { name: 'Cache Category' })
    const server = await createServer(call, admin, { name: 'Cache Gamma', category_id: category.id, tags: ['cache-tag'] })
    expect((await list(user, `&category_id=${category.id}`)).servers.map((s) => s.id)).toEqual([server.id])
    await addVersion(call, admin, server.id, { version: '1.2.0' })
    expect((await list(user, '&tag=cache-tag')).servers[0]?.latest_version).toBe('1.2.0')

    expect((await call('DELETE', `/api/mcp/categories/${category.id}`, admin)).statusCode).toBe(200)
    expect((await list(user, `&category_id=${category.id}`)).pagination.total).toBe(0)
    expect((await list(user, '&tag=cache-tag')).servers[0]?.category_id).toBeNull()

    expect((await call('PUT', `/api/mcp/servers/global/${server.id}`, admin, { tags: ['other-tag'] })).statusCode).toBe(200)
    expect((await list(user, '&tag=cache-tag')).pagination.total).toBe(0)
    expect((await list(user, '&tag=other-tag')).servers.map((s) => s.id)).toEqual([server.id])
  })

  it('shows team servers to a user who joins the team, and drops them when the team is deleted', async () => {
    const owner = await signUp(app, 'cache_owner')
    const team = await createTeam(call, owner, 'Cache Team')
    await insertTeamServer(app.services.database, team.id, 'Cache Team Server')
    expect(await names(user)).not.toContain('Cache Team Server')
    expect(await names(owner)).toContain('Cache Team Server')
    expect(await names(admin)).toContain('Cache Team Server')

    await addMember(call, team.id, owner, user, 'team_user')
    expect(await names(user)).toContain('Cache Team Server')

    expect((await call('DELETE', `/api/teams/${team.id}`, owner)).statusCode).toBe(200)
    expect(await names(user)).not.toContain('Cache Team Server')
    expect(await names(admin)).not.toContain('Cache Team Server')
  })
})
