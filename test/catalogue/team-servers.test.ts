import { sql } from 'drizzle-orm'
import type { FastifyInstance, LightMyRequestResponse } from 'fastify'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createTestContext, type TestContext } from '../helpers/app.js'
import { createCategory, createServer, type ServerBody, type VersionBody } from '../helpers/catalogue.js'
import { DIALECTS } from '../helpers/database.js'
import { bearer, issueTokens } from '../helpers/oauth.js'
import { expectOutcome, fire, warmUp } from '../helpers/races.js'
import { rawRows } from '../helpers/sql.js'
import { addMember, client, createTeam, crew as makeCrew, ROOMY_LIMITS, signUp, type Account, type Call, type Crew } from '../helpers/teams.js'

type Body = Record<string, unknown>

interface AuditEvent { id: string; type: string; actor_id: string | null; target: string | null; details: Record<string, unknown> }

const SERVERS = '/api/mcp/servers'
const teamServers = (teamId: string) => `/api/teams/${teamId}/mcp/servers`

function expectCode(response: LightMyRequestResponse, status: number, code: string): void {
  expect(response.statusCode, response.body).toBe(status)
  expect(response.json()).toMatchObject({ success: false, code })
}

/**
 * Team servers: a team's admins add catalogue servers (and their versions) that only the team's
 * members see, through /api/teams/:teamId/mcp/servers…, with the global servers' fields and rules.
 */
describe.each(DIALECTS)('team catalogue servers on %s', (dialect) => {
  let ctx: TestContext
  let app: FastifyInstance
  let call: Call
  /** The first account: global_admin, member of no team below. */
  let admin: Account
  /** Team A: its owner and a second team_admin, a team_user, and an outsider (a global_user in no team). */
  let a: Crew
  /** Team B, with its own team_admin (its owner). */
  let b: Crew
  let seq = 0
  const fresh = () => signUp(app, `team_srv_${++seq}`)
  const unique = (prefix: string) => `${prefix} ${++seq}`

  const post = (teamId: string, body: Body, account: Account) => call('POST', teamServers(teamId), account, body)
  const put = (teamId: string, id: string, body: Body, account: Account) => call('PUT', `${teamServers(teamId)}/${id}`, account, body)
  const remove = (teamId: string, id: string, account: Account) => call('DELETE', `${teamServers(teamId)}/${id}`, account)
  const postVersion = (teamId: string, id: string, body: Body, account: Account) => call('POST', `${teamServers(teamId)}/${id}/versions`, account, body)
  const putVersion = (teamId: string, id: string, versionId: string, body: Body, account: Account) =>
    call('PUT', `${teamServers(teamId)}/${id}/versions/${versionId}`, account, body)

  /** POST as `account` (team A's admin by default), 201 or the test fails. */
  const create = async (body: Body = {}, account: Account = a.teamAdmin, teamId: string = a.team.id): Promise<ServerBody> => {
    const response = await post(teamId, { name: unique('Team Server'), ...body }, account)
    expect(response.statusCode, response.body).toBe(201)
    return response.json().data.server
  }
  const addTeamVersion = async (teamId: string, serverId: string, version: string, account: Account = a.teamAdmin): Promise<VersionBody> => {
    const response = await postVersion(teamId, serverId, { version }, account)
    expect(response.statusCode, response.body).toBe(201)
    return response.json().data.version
  }

  const count = async (query: ReturnType<typeof sql>): Promise<number> => Number((await rawRows(app.services.database, query))[0]![0])
  /** Every table a catalogue write touches, and the audit trail. */
  const snapshot = async () => ({
    servers: await count(sql`select count(*) from mcp_servers`),
    versions: await count(sql`select count(*) from mcp_server_versions`),
    tags: await count(sql`select count(*) from mcp_server_tags`),
    audit: await count(sql`select count(*) from audit_events`),
  })
  const listed = async (account: Account, url = SERVERS): Promise<string[]> => {
    const response = await call('GET', url, account)
    expect(response.statusCode, response.body).toBe(200)
    return (response.json().data.servers as ServerBody[]).map((server) => server.id)
  }
  const auditEvent = async (type: string, target: string): Promise<AuditEvent | undefined> => {
    const response = await call('GET', `/api/admin/audit-log?type=${type}&limit=100`, admin)
    expect(response.statusCode, response.body).toBe(200)
    return (response.json().data.events as AuditEvent[]).find((event) => event.target === target)
  }

  beforeAll(async () => {
    ctx = await createTestContext(dialect)
    app = (await ctx.build({ limits: ROOMY_LIMITS })).app
    call = client(app)
    admin = await signUp(app, 'team_srv_admin')
    a = await makeCrew(call, fresh, 'Server Team A')
    b = await makeCrew(call, fresh, 'Server Team B')
  })
  afterAll(() => ctx.close())

  describe('a team_admin', () => {
    it('creates a team server: 201, visible to the team only, created by them, audited with the team', async () => {
      const category = await createCategory(call, admin, { name: unique('Team Category') })
      const response = await post(a.team.id, {
        name: '  Team Postgres  ', description: 'Our internal database server.', category_id: category.id, tags: [' Internal ', 'SQL'],
        language: 'TypeScript', runtime: 'node', transport_type: 'http', repository_url: 'https://git.example.com/pg',
        packages: [{ registry_type: 'npm', identifier: '@acme/pg-mcp', version: '1.0.0' }],
      }, a.teamAdmin)
      expect(response.statusCode, response.body).toBe(201)
      expect(response.json()).toMatchObject({ success: true, message: 'Server created.' })
      const server: ServerBody = response.json().data.server
      expect(server).toMatchObject({
        name: 'Team Postgres', slug: 'team-postgres', visibility: 'team', owner_team_id: a.team.id, created_by: a.teamAdmin.id,
        category_id: category.id, tags: ['internal', 'sql'], transport_type: 'http', latest_version: null, source: 'manual',
        packages: [{ registry_type: 'npm', identifier: '@acme/pg-mcp', version: '1.0.0' }],
      })
      const stored = await rawRows(app.services.database, sql`select visibility, owner_team_id from mcp_servers where id = ${server.id}`)
      expect(stored).toEqual([['team', a.team.id]])
      expect(await auditEvent('catalogue.server_created', server.id)).toMatchObject({
        actor_id: a.teamAdmin.id, details: { name: 'Team Postgres', slug: 'team-postgres', team_id: a.team.id },
      })
    })

    it('updates it partially, by id or slug, and audits the change with the team', async () => {
      const server = await create({ description: 'Before', language: 'Go' })
      const updated = await put(a.team.id, server.slug, { description: 'After', language: null, featured: true }, a.owner)
      expect(updated.statusCode, updated.body).toBe(200)
      expect(updated.json().data.server).toMatchObject({
        id: server.id, name: server.name, slug: server.slug, description: 'After', language: null, featured: true, visibility: 'team', owner_team_id: a.team.id,
      })
      const read = await call('GET', `${SERVERS}/${server.id}`, a.teamUser)
      expect(read.json().data.server).toMatchObject({ description: 'After', language: null, featured: true })
      const event = await auditEvent('catalogue.server_updated', server.id)
      expect(event).toMatchObject({ actor_id: a.owner.id, details: { team_id: a.team.id } })
      expect(event?.details.fields).toEqual(expect.arrayContaining(['description', 'language', 'featured']))
    })

    it('adds and changes versions: the latest mark follows, and both are audited with the team', async () => {
      const server = await create()
      const first = await addTeamVersion(a.team.id, server.id, '1.0.0')
      const second = await addTeamVersion(a.team.id, server.slug, '1.1.0')
      expect(first).toMatchObject({ server_id: server.id, version: '1.0.0', status: 'active' })
      expect(second.is_latest).toBe(true)
      expect((await call('GET', `${SERVERS}/${server.id}`, a.teamUser)).json().data.server.latest_version).toBe('1.1.0')

      const deprecated = await putVersion(a.team.id, server.id, second.id, { status: 'deprecated', changelog: 'Use 1.0.0.' }, a.teamAdmin)
      expect(deprecated.statusCode, deprecated.body).toBe(200)
      expect(deprecated.json().data.version).toMatchObject({ id: second.id, status: 'deprecated', changelog: 'Use 1.0.0.', is_latest: false })
      expect((await call('GET', `${SERVERS}/${server.id}`, a.teamUser)).json().data.server.latest_version).toBe('1.0.0')

      // The same rules as for global servers.
      expectCode(await postVersion(a.team.id, server.id, { version: '1.0.0+build.2' }, a.teamAdmin), 409, 'VERSION_EXISTS')
      expectCode(await postVersion(a.team.id, server.id, { version: 'v2' }, a.teamAdmin), 400, 'VALIDATION_ERROR')

      expect(await auditEvent('catalogue.version_created', server.id)).toMatchObject({ actor_id: a.teamAdmin.id, details: { team_id: a.team.id } })
      expect(await auditEvent('catalogue.version_updated', server.id)).toMatchObject({
        actor_id: a.teamAdmin.id, details: { version: '1.1.0', status: 'deprecated', team_id: a.team.id },
      })
    })

    it('deletes it with its versions and tags, audited with the team', async () => {
      const server = await create({ tags: ['gone'] })
      await addTeamVersion(a.team.id, server.id, '1.0.0')
      const deleted = await remove(a.team.id, server.id, a.teamAdmin)
      expect(deleted.statusCode, deleted.body).toBe(200)
      expect(deleted.json()).toEqual({ success: true, message: 'Server deleted.' })
      expectCode(await call('GET', `${SERVERS}/${server.id}`, a.teamAdmin), 404, 'NOT_FOUND')
      expect(await count(sql`select count(*) from mcp_servers where id = ${server.id}`)).toBe(0)
      expect(await count(sql`select count(*) from mcp_server_versions where server_id = ${server.id}`)).toBe(0)
      expect(await count(sql`select count(*) from mcp_server_tags where server_id = ${server.id}`)).toBe(0)
      expect(await auditEvent('catalogue.server_deleted', server.id)).toMatchObject({
        actor_id: a.teamAdmin.id, details: { name: server.name, slug: server.slug, team_id: a.team.id },
      })
    })

    it("cannot reach a global server, nor another team's server, through the team's path (404)", async () => {
      const global = await createServer(call, admin, { name: unique('Global Server') })
      const theirs = await create({}, b.owner, b.team.id)
      for (const id of [global.id, theirs.id, theirs.slug]) {
        expectCode(await put(a.team.id, id, { description: 'x' }, a.teamAdmin), 404, 'NOT_FOUND')
        expectCode(await remove(a.team.id, id, a.teamAdmin), 404, 'NOT_FOUND')
        expectCode(await postVersion(a.team.id, id, { version: '9.0.0' }, a.teamAdmin), 404, 'NOT_FOUND')
      }
      expect((await call('GET', `${SERVERS}/${global.id}`, admin)).json().data.server.description).toBe('')
      expect(await count(sql`select count(*) from mcp_servers where id in (${global.id}, ${theirs.id})`)).toBe(2)
      expect(await count(sql`select count(*) from mcp_server_versions where server_id in (${global.id}, ${theirs.id})`)).toBe(0)
    })
  })

  it('a team_user gets 403 naming team.servers.manage on every write, before the body is read, and nothing is written', async () => {
    const server = await create()
    const version = await addTeamVersion(a.team.id, server.id, '1.0.0')
    const before = await snapshot()
    const base = teamServers(a.team.id)
    const writes: Array<[string, string]> = [
      ['POST', base], ['PUT', `${base}/${server.id}`], ['DELETE', `${base}/${server.id}`],
      ['POST', `${base}/${server.id}/versions`], ['PUT', `${base}/${server.id}/versions/${version.id}`],
    ]
    for (const [method, url] of writes) {
      for (const payload of [JSON.stringify({ name: 'Sneaky', version: '2.0.0', status: 'yanked' }), '{not json']) {
        const response = await app.inject({ method: method as 'POST', url, headers: { cookie: a.teamUser.cookie, 'content-type': 'application/json' }, payload })
        expectCode(response, 403, 'FORBIDDEN')
        expect(response.json().details).toEqual({ required_permission: 'team.servers.manage' })
      }
    }
    expect(await snapshot()).toEqual(before)
  })

  it("another team's admin gets 404 on the team's write routes and on reading its server, and nothing is written", async () => {
    const server = await create()
    const version = await addTeamVersion(a.team.id, server.id, '1.0.0')
    const before = await snapshot()
    const intruding = await post(a.team.id, { name: 'Intruder' }, b.owner)
    expectCode(intruding, 404, 'NOT_FOUND')
    // The team's existence is not disclosed to a non-member.
    expect(intruding.json().error).toBe('Team not found.')
    expectCode(await put(a.team.id, server.id, { description: 'x' }, b.owner), 404, 'NOT_FOUND')
    expectCode(await remove(a.team.id, server.id, b.owner), 404, 'NOT_FOUND')
    expectCode(await postVersion(a.team.id, server.id, { version: '2.0.0' }, b.owner), 404, 'NOT_FOUND')
    expectCode(await putVersion(a.team.id, server.id, version.id, { status: 'yanked' }, b.owner), 404, 'NOT_FOUND')
    // Through their own team's path: the server is not theirs.
    expectCode(await put(b.team.id, server.id, { description: 'x' }, b.owner), 404, 'NOT_FOUND')
    expectCode(await remove(b.team.id, server.id, b.owner), 404, 'NOT_FOUND')
    expectCode(await postVersion(b.team.id, server.id, { version: '2.0.0' }, b.owner), 404, 'NOT_FOUND')
    expectCode(await putVersion(b.team.id, server.id, version.id, { status: 'yanked' }, b.owner), 404, 'NOT_FOUND')
    // Reads: as if it did not exist.
    expectCode(await call('GET', `${SERVERS}/${server.id}`, b.owner), 404, 'NOT_FOUND')
    expectCode(await call('GET', `${SERVERS}/${server.slug}/versions`, b.owner), 404, 'NOT_FOUND')
    expect(await snapshot()).toEqual(before)
  })

  it("a server is changed only through its own team's path, even by an admin of the other team who can read it", async () => {
    const server = await create()
    const version = await addTeamVersion(a.team.id, server.id, '1.0.0')
    // team_user of A (reads A's servers), team_admin of B (manages B's).
    const both = await fresh()
    await addMember(call, a.team.id, a.owner, both, 'team_user')
    await addMember(call, b.team.id, b.owner, both, 'team_admin')
    expect((await call('GET', `${SERVERS}/${server.id}`, both)).statusCode).toBe(200)
    const before = await snapshot()
    for (const account of [both, admin]) {
      expectCode(await put(b.team.id, server.id, { description: 'x' }, account), 404, 'NOT_FOUND')
      expectCode(await remove(b.team.id, server.slug, account), 404, 'NOT_FOUND')
      expectCode(await postVersion(b.team.id, server.id, { version: '2.0.0' }, account), 404, 'NOT_FOUND')
      expectCode(await putVersion(b.team.id, server.id, version.id, { status: 'yanked' }, account), 404, 'NOT_FOUND')
    }
    expect((await put(b.team.id, server.id, { description: 'x' }, both)).json().error).toBe('Server not found.')
    expectCode(await put(a.team.id, server.id, { description: 'x' }, both), 403, 'FORBIDDEN')
    expect(await snapshot()).toEqual(before)
  })

  describe('a global admin outside the team', () => {
    it("creates, updates, versions and deletes the team's servers", async () => {
      const created = await post(a.team.id, { name: unique('Admin Made'), tags: ['ops'] }, admin)
      expect(created.statusCode, created.body).toBe(201)
      const server: ServerBody = created.json().data.server
      expect(server).toMatchObject({ visibility: 'team', owner_team_id: a.team.id, created_by: admin.id })
      expect(await listed(a.teamUser)).toContain(server.id)
      expect(await listed(a.outsider)).not.toContain(server.id)

      const updated = await put(a.team.id, server.id, { status: 'maintenance' }, admin)
      expect(updated.statusCode, updated.body).toBe(200)
      expect(updated.json().data.server.status).toBe('maintenance')
      const version = await addTeamVersion(a.team.id, server.id, '0.1.0', admin)
      expect((await putVersion(a.team.id, server.id, version.id, { status: 'yanked' }, admin)).statusCode).toBe(200)

      const teamMade = await create()
      expect((await put(a.team.id, teamMade.id, { description: 'Edited by the admin' }, admin)).statusCode).toBe(200)
      expect((await remove(a.team.id, teamMade.id, admin)).statusCode).toBe(200)
      expect((await remove(a.team.id, server.id, admin)).statusCode).toBe(200)
      expect(await count(sql`select count(*) from mcp_servers where id in (${server.id}, ${teamMade.id})`)).toBe(0)
    })

    it('gets 404 for a team that does not exist, and nothing is written', async () => {
      const before = await snapshot()
      const response = await post('no-such-team', { name: 'Orphan' }, admin)
      expectCode(response, 404, 'NOT_FOUND')
      expect(response.json().error).toBe('Team not found.')
      expect(await snapshot()).toEqual(before)
    })

    it("cannot change a team server through the global routes, whose servers are the global ones (404)", async () => {
      const server = await create()
      expectCode(await call('PUT', `${SERVERS}/global/${server.id}`, admin, { description: 'x' }), 404, 'NOT_FOUND')
      expectCode(await call('DELETE', `${SERVERS}/global/${server.id}`, admin), 404, 'NOT_FOUND')
      expect(await count(sql`select count(*) from mcp_servers where id = ${server.id}`)).toBe(1)
    })
  })

  describe('reading the catalogue', () => {
    it("members see the team's servers in the list, the search, by id or slug and with their versions; others do not", async () => {
      const word = `zebrafish${dialect.slice(0, 3)}`
      // A page cached before the creation must not hide the new server.
      expect(await listed(a.teamUser, `${SERVERS}/search?q=${word}`)).toEqual([])
      const server = await create({ name: `Team ${word} Tool`, tags: ['private-tag'] })
      await addTeamVersion(a.team.id, server.id, '2.0.0')
      const global = await createServer(call, admin, { name: `Global ${word} Tool` })

      for (const member of [a.teamUser, a.teamAdmin, a.owner]) {
        expect(await listed(member)).toContain(server.id)
        expect(await listed(member, `${SERVERS}?tag=private-tag`)).toEqual([server.id])
        expect(await listed(member, `${SERVERS}/search?q=${word}`)).toEqual(expect.arrayContaining([server.id, global.id]))
        expect((await call('GET', `${SERVERS}/${server.slug}`, member)).statusCode).toBe(200)
        const versions = await call('GET', `${SERVERS}/${server.id}/versions`, member)
        expect(versions.json().data.versions.map((version: VersionBody) => version.version)).toEqual(['2.0.0'])
      }
      for (const other of [a.outsider, b.owner, b.teamUser]) {
        expect(await listed(other)).not.toContain(server.id)
        expect(await listed(other, `${SERVERS}?tag=private-tag`)).toEqual([])
        expect(await listed(other, `${SERVERS}/search?q=${word}`)).toEqual([global.id])
        expectCode(await call('GET', `${SERVERS}/${server.id}`, other), 404, 'NOT_FOUND')
        expectCode(await call('GET', `${SERVERS}/${server.slug}`, other), 404, 'NOT_FOUND')
      }
      // A member's OAuth client with mcp:read reads it too; an outsider's does not.
      const memberToken = (await issueTokens(app, a.teamUser.cookie, 'mcp:read')).access_token
      const outsiderToken = (await issueTokens(app, a.outsider.cookie, 'mcp:read')).access_token
      expect((await app.inject({ method: 'GET', url: `${SERVERS}/${server.id}`, headers: bearer(memberToken) })).statusCode).toBe(200)
      expect((await app.inject({ method: 'GET', url: `${SERVERS}/${server.id}`, headers: bearer(outsiderToken) })).statusCode).toBe(404)
    })

    it('a new member sees the servers at once; a member who leaves stops seeing them', async () => {
      const server = await create()
      const newcomer = await fresh()
      expect(await listed(newcomer)).not.toContain(server.id)
      await addMember(call, a.team.id, a.owner, newcomer, 'team_user')
      expect(await listed(newcomer)).toContain(server.id)
      expect((await call('DELETE', `/api/teams/${a.team.id}/members/${newcomer.id}`, a.owner)).statusCode).toBe(200)
      expect(await listed(newcomer)).not.toContain(server.id)
    })
  })

  describe('slugs', () => {
    it('are unique across global and team servers: a taken explicit slug is 409, a derived one moves on', async () => {
      const theirs = await create({ name: 'Shared Name', slug: 'shared-name' }, b.owner, b.team.id)
      const before = await snapshot()
      expectCode(await post(a.team.id, { name: 'Mine', slug: theirs.slug }, a.teamAdmin), 409, 'SLUG_TAKEN')
      expect(await snapshot()).toEqual(before)
      const mine = await create({ name: 'Shared Name' })
      expect(mine.slug).toBe('shared-name-2')
      expectCode(await put(a.team.id, mine.id, { slug: theirs.slug }, a.teamAdmin), 409, 'SLUG_TAKEN')
      expect((await put(a.team.id, mine.id, { slug: 'shared-name-mine' }, a.teamAdmin)).json().data.server.slug).toBe('shared-name-mine')
    })

    it('concurrent creations of one slug in one team: one 201, the others 409 SLUG_TAKEN, one row', async () => {
      const slug = `race-${dialect}`
      await warmUp(app, 6)
      const responses = await fire(6, (index) => post(a.team.id, { name: `Race ${index}`, slug }, index % 2 === 0 ? a.teamAdmin : a.owner))
      expectOutcome(responses, { 201: 1, '409 SLUG_TAKEN': 5 })
      expect(await count(sql`select count(*) from mcp_servers where slug = ${slug}`)).toBe(1)
    })
  })

  it('bad input answers 400 and writes nothing', async () => {
    const server = await create()
    const version = await addTeamVersion(a.team.id, server.id, '1.0.0')
    const before = await snapshot()
    const creates: Body[] = [
      {},
      { name: '   ' },
      { name: 'x'.repeat(256) },
      { name: 'Bad Slug', slug: 'Not A Slug' },
      { name: 'Reserved', slug: 'search' },
      { name: 'Bad URL', repository_url: 'javascript:alert(1)' },
      { name: 'Bad Remote', remotes: [{ type: 'sse', url: 'file:///etc/passwd' }] },
      { name: 'Bad Package', packages: [{ registry_type: 'npm', identifier: 'Not A Package!' }] },
      { name: 'Too Many Tags', tags: Array.from({ length: 21 }, (_, index) => `t${index}`) },
      { name: 'Blank Tag', tags: ['   '] },
      { name: 'No Category', category_id: 'no-such-category' },
      { name: 'Transport', transport_type: 'carrier-pigeon' },
      // The owner comes from the path: the body cannot set it.
      { name: 'Global Please', visibility: 'global' },
      { name: 'Other Team', owner_team_id: b.team.id },
    ]
    for (const body of creates) expectCode(await post(a.team.id, body, a.teamAdmin), 400, 'VALIDATION_ERROR')
    for (const body of [{}, { name: '' }, { slug: 'global' }, { website_url: 'ftp://x' }, { visibility: 'global' }]) {
      expectCode(await put(a.team.id, server.id, body, a.teamAdmin), 400, 'VALIDATION_ERROR')
    }
    for (const body of [{}, { version: '' }, { version: '1.0' }, { version: '2.0.0', status: 'yanked' }]) {
      expectCode(await postVersion(a.team.id, server.id, body, a.teamAdmin), 400, 'VALIDATION_ERROR')
    }
    for (const body of [{}, { version: '9.9.9' }, { status: 'retired' }]) {
      expectCode(await putVersion(a.team.id, server.id, version.id, body, a.teamAdmin), 400, 'VALIDATION_ERROR')
    }
    const malformed = await app.inject({ method: 'POST', url: teamServers(a.team.id), headers: { cookie: a.teamAdmin.cookie, 'content-type': 'application/json' }, payload: '{"name":' })
    expect(malformed.statusCode, malformed.body).toBe(400)
    // A global admin passes the team check for any id; the id itself is still validated.
    expectCode(await post('t'.repeat(101), { name: 'Long Team Id' }, admin), 400, 'VALIDATION_ERROR')
    expect(await snapshot()).toEqual(before)
    expect((await call('GET', `${SERVERS}/${server.id}`, a.teamUser)).json().data.server).toMatchObject({ name: server.name, visibility: 'team' })
  })

  it('deleting the team deletes its servers, their versions and tags (and nothing of the others)', async () => {
    const owner = await fresh()
    const team = await createTeam(call, owner, unique('Doomed Team'))
    const kept = await create({ tags: ['kept'] })
    await addTeamVersion(a.team.id, kept.id, '1.0.0')
    const doomed = [
      await create({ tags: ['doomed', 'x'] }, owner, team.id),
      await create({ tags: ['doomed'] }, owner, team.id),
    ]
    for (const server of doomed) {
      await addTeamVersion(team.id, server.id, '1.0.0', owner)
      await addTeamVersion(team.id, server.id, '1.1.0', owner)
    }
    const owned = async () => ({
      servers: await count(sql`select count(*) from mcp_servers where owner_team_id = ${team.id}`),
      versions: await count(sql`select count(*) from mcp_server_versions v join mcp_servers s on s.id = v.server_id where s.owner_team_id = ${team.id}`),
      tags: await count(sql`select count(*) from mcp_server_tags where server_id in (${doomed[0]!.id}, ${doomed[1]!.id})`),
    })
    expect(await owned()).toEqual({ servers: 2, versions: 4, tags: 3 })
    const before = await snapshot()

    const deleted = await call('DELETE', `/api/teams/${team.id}`, owner)
    expect(deleted.statusCode, deleted.body).toBe(200)
    expect(await count(sql`select count(*) from mcp_servers where id in (${doomed[0]!.id}, ${doomed[1]!.id})`)).toBe(0)
    expect(await count(sql`select count(*) from mcp_server_versions where server_id in (${doomed[0]!.id}, ${doomed[1]!.id})`)).toBe(0)
    expect(await count(sql`select count(*) from mcp_server_tags where server_id in (${doomed[0]!.id}, ${doomed[1]!.id})`)).toBe(0)
    const after = await snapshot()
    expect(after).toMatchObject({ servers: before.servers - 2, versions: before.versions - 4, tags: before.tags - 3 })
    expect((await call('GET', `${SERVERS}/${kept.id}`, a.teamUser)).statusCode).toBe(200)
    for (const server of doomed) expectCode(await call('GET', `${SERVERS}/${server.id}`, admin), 404, 'NOT_FOUND')
  })

  it("deleting a team while its servers are being written: every answer a 2xx or a 404, and none of the team's rows left", async () => {
    // On PostgreSQL the team's deletion and the writes lock the team's row and the catalogue's in
    // opposite orders unless the writes take the team's first: each round here deadlocked before.
    for (let round = 0; round < 4; round++) {
      const owner = await fresh()
      const team = await createTeam(call, owner, unique('Racing Team'))
      const [first, second, third] = [await create({}, owner, team.id), await create({}, owner, team.id), await create({}, owner, team.id)]
      const version = await addTeamVersion(team.id, first!.id, '1.0.0', owner)
      await warmUp(app, 7)
      const [deleted, ...writes] = await Promise.all([
        call('DELETE', `/api/teams/${team.id}`, owner),
        post(team.id, { name: unique('Racing Server') }, owner),
        put(team.id, first!.id, { description: 'Racing change' }, owner),
        remove(team.id, second!.id, owner),
        postVersion(team.id, third!.id, { version: '2.0.0' }, owner),
        putVersion(team.id, first!.id, version.id, { status: 'deprecated' }, owner),
        // A global admin through the global version route, which takes any server they see.
        call('POST', `${SERVERS}/${third!.id}/versions`, admin, { version: '3.0.0' }),
      ])
      expect(deleted!.statusCode, deleted!.body).toBe(200)
      for (const write of writes) expect([200, 201, 404], `${write.statusCode} ${write.body}`).toContain(write.statusCode)
      expect(await count(sql`select count(*) from mcp_servers where owner_team_id = ${team.id}`)).toBe(0)
      expect(await count(sql`select count(*) from mcp_server_versions where server_id in (${first!.id}, ${second!.id}, ${third!.id})`)).toBe(0)
    }
  })
})
