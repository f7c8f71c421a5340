import { sql } from 'drizzle-orm'
import type { FastifyInstance, LightMyRequestResponse } from 'fastify'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createTestContext, type TestContext } from '../helpers/app.js'
import { manualClock } from '../helpers/clock.js'
import { DIALECTS } from '../helpers/database.js'
import {
  createToken, expectValidationError, heartbeat, METRICS, pair, SATELLITE_LIMITS, SYSTEM_INFO, type Paired, type SatelliteBody,
} from '../helpers/satellites.js'
import { rawRows } from '../helpers/sql.js'
import { addMember, client, createTeam, signUp, type Account, type Call, type TeamBody } from '../helpers/teams.js'

interface AuditEvent { id: string; type: string; actor_id: string | null; target: string | null; details: Record<string, unknown> }

const SECOND = 1_000
const UNKNOWN_ID = 'no-such-satellite-id'
const SATELLITE_FIELDS = [
  'capabilities', 'created_at', 'disabled_at', 'id', 'isolation', 'last_heartbeat_at', 'name', 'public_key_changed_at', 'public_key_fingerprint',
  'registered_at', 'runtimes', 'satellite_type', 'satellite_url', 'status', 'system_info', 'system_metrics', 'team_id', 'updated_at', 'version',
]

function expectNotFound(response: LightMyRequestResponse): void {
  expect(response.statusCode, response.body).toBe(404)
  expect(response.json()).toMatchObject({ success: false, code: 'NOT_FOUND' })
}

function expectForbidden(response: LightMyRequestResponse, permission?: string): void {
  expect(response.statusCode, response.body).toBe(403)
  expect(response.json()).toMatchObject({ success: false, code: 'FORBIDDEN', ...(permission === undefined ? {} : { details: { required_permission: permission } }) })
}

describe.each(DIALECTS)('satellite management on %s', (dialect) => {
  let ctx: TestContext
  let app: FastifyInstance
  let call: Call
  const clock = manualClock(Date.now())
  /** The first account: global_admin. */
  let admin: Account
  /** A global_user in no team but their default one. */
  let user: Account
  /** Team A: its owner (a team_admin), a second team_admin, a team_user. */
  let ownerA: Account
  let adminA: Account
  let memberA: Account
  let teamA: TeamBody
  /** Team B's owner, a team_admin of another team. */
  let ownerB: Account
  let teamB: TeamBody
  let seq = 0

  const name = (prefix = 'sat') => `${prefix}-${dialect.slice(0, 2)}-${++seq}`
  const freshUser = () => signUp(app, `mgmt_${dialect}_${++seq}`)
  /** A global satellite, or a team one with `teamId`; the clock moves on a second first, so creation order is strict. */
  const fresh = async (teamId?: string, by: Account = admin): Promise<Paired> => {
    clock.advance(SECOND)
    return pair(app, (await createToken(call, by, teamId === undefined ? {} : { teamId })).token, name())
  }
  const beat = async (satellite: Paired, status: 'active' | 'degraded' | 'error' = 'active') => {
    const response = await heartbeat(app, satellite.id, satellite.apiKey, { status, system_metrics: METRICS })
    expect(response.statusCode, response.body).toBe(200)
  }
  const list = async (url: string, account: Account = admin) => {
    const response = await call('GET', url, account)
    expect(response.statusCode, response.body).toBe(200)
    return response.json().data as { satellites: SatelliteBody[]; pagination: { total: number; limit: number; offset: number; has_more: boolean } }
  }
  const idsOf = async (url: string, account: Account = admin) => (await list(url, account)).satellites.map((satellite) => satellite.id)
  const rowCount = async (id: string) =>
    Number((await rawRows(app.services.database, sql`select count(*) from satellites where id = ${id}`))[0]![0])
  const storedStatus = async (id: string) =>
    String((await rawRows(app.services.database, sql`select status from satellites where id = ${id}`))[0]![0])
  const storedDisabled = async (id: string) =>
    (await rawRows(app.services.database, sql`select disabled_at from satellites where id = ${id}`))[0]![0] !== null
  /** The newest events of a type (the audit log answers newest first). */
  const auditEvents = async (type: string): Promise<AuditEvent[]> => {
    const response = await call('GET', `/api/admin/audit-log?type=${type}&limit=100`, admin)
    expect(response.statusCode, response.body).toBe(200)
    return response.json().data.events
  }
  const eventsFor = async (type: string, target: string) => (await auditEvents(type)).filter((event) => event.target === target)
  /** A team of its own, owned by a fresh user. */
  const freshTeam = async () => {
    const owner = await freshUser()
    return { owner, team: await createTeam(call, owner, `Fleet ${++seq}`) }
  }

  beforeAll(async () => {
    ctx = await createTestContext(dialect)
    app = (await ctx.build({ clock, limits: SATELLITE_LIMITS })).app
    call = client(app)
    admin = await signUp(app, `mgmt_admin_${dialect}`)
    user = await freshUser()
    ownerA = await freshUser()
    adminA = await freshUser()
    memberA = await freshUser()
    ownerB = await freshUser()
    teamA = await createTeam(call, ownerA, 'Fleet A')
    await addMember(call, teamA.id, ownerA, adminA, 'team_admin')
    await addMember(call, teamA.id, ownerA, memberA, 'team_user')
    teamB = await createTeam(call, ownerB, 'Fleet B')
  })
  afterAll(() => ctx.close())

  describe('GET /api/satellites', () => {
    it('a global admin: every satellite with its fields, newest first, paginated', async () => {
      const { team } = await freshTeam()
      const created: Paired[] = []
      for (let i = 0; i < 5; i++) created.push(await fresh(team.id))
      const newestFirst = created.map((satellite) => satellite.id).reverse()

      const first = await list(`/api/satellites?team_id=${team.id}&limit=2`)
      expect(first.satellites.map((satellite) => satellite.id)).toEqual(newestFirst.slice(0, 2))
      expect(first.pagination).toEqual({ total: 5, limit: 2, offset: 0, has_more: true })
      const middle = await list(`/api/satellites?team_id=${team.id}&limit=2&offset=2`)
      expect(middle.satellites.map((satellite) => satellite.id)).toEqual(newestFirst.slice(2, 4))
      expect(middle.pagination).toEqual({ total: 5, limit: 2, offset: 2, has_more: true })
      const last = await list(`/api/satellites?team_id=${team.id}&limit=2&offset=4`)
      expect(last.satellites.map((satellite) => satellite.id)).toEqual(newestFirst.slice(4))
      expect(last.pagination).toEqual({ total: 5, limit: 2, offset: 4, has_more: false })
      const beyond = await list(`/api/satellites?team_id=${team.id}&offset=10`)
      expect(beyond.satellites).toEqual([])
      expect(beyond.pagination).toMatchObject({ total: 5, has_more: false })

      const [shown] = (await list(`/api/satellites?team_id=${team.id}&limit=1`)).satellites
      expect(Object.keys(shown!).sort()).toEqual(SATELLITE_FIELDS)
      expect(shown).toMatchObject({
        id: created[4]!.id, name: created[4]!.name, satellite_type: 'team', team_id: team.id, status: 'inactive', capabilities: [],
        satellite_url: null, system_info: SYSTEM_INFO, system_metrics: null, version: null, last_heartbeat_at: null,
        registered_at: new Date(clock.now()).toISOString(), created_at: new Date(clock.now()).toISOString(),
        isolation: 'none', runtimes: [], public_key_fingerprint: null, public_key_changed_at: null,
      })

      // Unfiltered: the default page of 20, the newest satellite first, created_at never increasing.
      const everything = await list('/api/satellites')
      expect(everything.pagination).toMatchObject({ limit: 20, offset: 0 })
      expect(everything.satellites[0]!.id).toBe(created[4]!.id)
      const times = everything.satellites.map((satellite) => Date.parse(satellite.created_at))
      expect(times).toEqual([...times].sort((a, b) => b - a))
      const total = Number((await rawRows(app.services.database, sql`select count(*) from satellites`))[0]![0])
      expect(everything.pagination.total).toBe(total)
    })

    it('a global_user or a team admin: 403 satellites.view; a satellite key or no session: 401', async () => {
      expectForbidden(await call('GET', '/api/satellites', user), 'satellites.view')
      expectForbidden(await call('GET', '/api/satellites', ownerA), 'satellites.view')
      expect((await call('GET', '/api/satellites')).statusCode).toBe(401)
    })

    it('filters: satellite_type, team_id and every status, offline included, alone and combined', async () => {
      const { team } = await freshTeam()
      const offline = await fresh(team.id)
      await beat(offline)
      clock.advance(91 * SECOND)
      const inactive = await fresh(team.id)
      const active = await fresh(team.id)
      await beat(active)
      const degraded = await fresh(team.id)
      await beat(degraded, 'degraded')
      const failing = await fresh(team.id)
      await beat(failing, 'error')
      const disabled = await fresh(team.id)
      await beat(disabled)
      expect((await call('PUT', `/api/satellites/${disabled.id}`, admin, { status: 'disabled' })).statusCode).toBe(200)
      const globalOne = await fresh()

      const expected = { inactive, active, degraded, error: failing, offline, disabled }
      for (const [status, satellite] of Object.entries(expected)) {
        const { satellites, pagination } = await list(`/api/satellites?team_id=${team.id}&status=${status}`)
        expect(satellites.map((shown) => shown.id), status).toEqual([satellite.id])
        expect(satellites[0]!.status).toBe(status)
        expect(pagination.total).toBe(1)
        expect(await idsOf(`/api/teams/${team.id}/satellites?status=${status}`), status).toEqual([satellite.id])
        // Across all satellites, each listed one really shows that status.
        for (const shown of (await list(`/api/satellites?status=${status}&limit=100`)).satellites) expect(shown.status).toBe(status)
      }
      const all = [disabled, failing, degraded, active, inactive, offline].map((satellite) => satellite.id)
      expect(await idsOf(`/api/satellites?team_id=${team.id}`)).toEqual(all)
      expect(await idsOf(`/api/satellites?team_id=${team.id}&satellite_type=team`)).toEqual(all)
      expect(await idsOf(`/api/satellites?team_id=${team.id}&satellite_type=global`)).toEqual([])

      const globals = (await list('/api/satellites?satellite_type=global&limit=100')).satellites
      expect(globals.map((satellite) => satellite.id)).toContain(globalOne.id)
      for (const satellite of globals) expect(satellite).toMatchObject({ satellite_type: 'global', team_id: null })
      const teams = (await list('/api/satellites?satellite_type=team&limit=100')).satellites
      expect(teams.map((satellite) => satellite.id)).toEqual(expect.arrayContaining(all))
      expect(teams.map((satellite) => satellite.id)).not.toContain(globalOne.id)
      expect(await idsOf('/api/satellites?status=inactive&satellite_type=global&limit=100')).toContain(globalOne.id)
      expect(await idsOf(`/api/satellites?team_id=${UNKNOWN_ID}`)).toEqual([])

      // Time alone moves the derived statuses: 91 s later every reporting one is offline.
      clock.advance(91 * SECOND)
      expect(await idsOf(`/api/satellites?team_id=${team.id}&status=offline`)).toEqual([failing, degraded, active, offline].map((satellite) => satellite.id))
      expect(await idsOf(`/api/satellites?team_id=${team.id}&status=active`)).toEqual([])
    })

    it.each([
      'status=bogus', 'status=ACTIVE', 'status=', 'satellite_type=personal', 'satellite_type=', 'team_id=', 'limit=0', 'limit=101',
      'limit=ten', 'offset=-1', 'unknown=1',
    ])('a bad query (%s): 400 VALIDATION_ERROR', async (query) => {
      expectValidationError(await call('GET', `/api/satellites?${query}`, admin))
    })
  })

  describe('GET /api/teams/:teamId/satellites', () => {
    it("the team's admins and global admins see only that team's satellites; other teams' admins and outsiders 404; a team_user 403", async () => {
      const mine = [await fresh(teamA.id, ownerA), await fresh(teamA.id, adminA)]
      const theirs = await fresh(teamB.id)
      const globalOne = await fresh()
      const expected = mine.map((satellite) => satellite.id).reverse()

      for (const account of [ownerA, adminA, admin]) {
        const { satellites, pagination } = await list(`/api/teams/${teamA.id}/satellites?limit=100`, account)
        const ids = satellites.map((satellite) => satellite.id)
        expect(ids.slice(0, 2)).toEqual(expected)
        expect(ids).not.toContain(theirs.id)
        expect(ids).not.toContain(globalOne.id)
        for (const satellite of satellites) expect(satellite).toMatchObject({ satellite_type: 'team', team_id: teamA.id })
        expect(pagination.total).toBe(satellites.length)
      }
      expect(await idsOf(`/api/teams/${teamB.id}/satellites`, ownerB)).toContain(theirs.id)
      expect(await idsOf(`/api/teams/${teamB.id}/satellites`, ownerB)).not.toEqual(expect.arrayContaining(expected))

      expectNotFound(await call('GET', `/api/teams/${teamA.id}/satellites`, ownerB))
      expectNotFound(await call('GET', `/api/teams/${teamA.id}/satellites`, user))
      expectNotFound(await call('GET', `/api/teams/${UNKNOWN_ID}/satellites`, ownerA))
      expectForbidden(await call('GET', `/api/teams/${teamA.id}/satellites`, memberA))
      expect((await call('GET', `/api/teams/${teamA.id}/satellites`)).statusCode).toBe(401)
    })

    it.each(['status=bogus', 'satellite_type=team', `team_id=x`, 'limit=0', 'offset=-1'])('a bad query (%s): 400', async (query) => {
      expectValidationError(await call('GET', `/api/teams/${teamA.id}/satellites?${query}`, ownerA))
    })
  })

  describe('GET /api/satellites/:id', () => {
    it('global admins see any; team admins their own team\'s; everyone else, and unknown ids, 404', async () => {
      const teamOne = await fresh(teamA.id)
      const globalOne = await fresh()
      const otherTeams = await fresh(teamB.id)

      for (const [account, id] of [[admin, teamOne.id], [admin, globalOne.id], [admin, otherTeams.id], [ownerA, teamOne.id], [adminA, teamOne.id], [ownerB, otherTeams.id]] as const) {
        const response = await call('GET', `/api/satellites/${id}`, account)
        expect(response.statusCode, response.body).toBe(200)
        expect(response.json()).toMatchObject({ success: true, data: { satellite: { id } } })
      }
      const shown = (await call('GET', `/api/satellites/${teamOne.id}`, ownerA)).json().data.satellite
      expect(Object.keys(shown).sort()).toEqual(SATELLITE_FIELDS)
      expect(shown).toMatchObject({ id: teamOne.id, name: teamOne.name, satellite_type: 'team', team_id: teamA.id, status: 'inactive' })

      for (const [account, id] of [
        [memberA, teamOne.id], [ownerB, teamOne.id], [user, teamOne.id], [ownerA, globalOne.id], [ownerA, otherTeams.id], [user, globalOne.id],
        [admin, UNKNOWN_ID], [ownerA, UNKNOWN_ID],
      ] as const) {
        expectNotFound(await call('GET', `/api/satellites/${id}`, account))
      }
      expect((await call('GET', `/api/satellites/${teamOne.id}`)).statusCode).toBe(401)
    })
  })

  describe('PUT /api/satellites/:id', () => {
    it('a global admin disables and enables; each change is audited once; setting the same status again changes nothing', async () => {
      const satellite = await fresh(teamA.id)
      await beat(satellite)
      clock.advance(SECOND)
      const disabled = await call('PUT', `/api/satellites/${satellite.id}`, admin, { status: 'disabled' })
      expect(disabled.statusCode, disabled.body).toBe(200)
      expect(disabled.json()).toMatchObject({
        success: true, message: expect.any(String),
        data: { satellite: { id: satellite.id, status: 'disabled', disabled_at: new Date(clock.now()).toISOString(), updated_at: new Date(clock.now()).toISOString() } },
      })
      expect(await storedDisabled(satellite.id)).toBe(true)
      // Disabling keeps what its heartbeats said, for when it is enabled again.
      expect(await storedStatus(satellite.id)).toBe('active')
      expect((await heartbeat(app, satellite.id, satellite.apiKey)).json()).toMatchObject({ code: 'SATELLITE_DISABLED' })

      const disabledAt = clock.now()
      clock.advance(SECOND)
      const again = await call('PUT', `/api/satellites/${satellite.id}`, admin, { status: 'disabled' })
      expect(again.statusCode).toBe(200)
      expect(again.json().data.satellite).toMatchObject({ status: 'disabled', updated_at: new Date(disabledAt).toISOString() })

      const [event, ...more] = await eventsFor('satellite.disabled', satellite.id)
      expect(more).toEqual([])
      expect(event).toMatchObject({ type: 'satellite.disabled', actor_id: admin.id, target: satellite.id, details: { name: satellite.name } })

      const enabled = await call('PUT', `/api/satellites/${satellite.id}`, admin, { status: 'active' })
      expect(enabled.statusCode, enabled.body).toBe(200)
      expect(enabled.json().data.satellite.id).toBe(satellite.id)
      expect(await storedDisabled(satellite.id)).toBe(false)
      expect(enabled.json().data.satellite).toMatchObject({ status: 'active', disabled_at: null })
      expect((await call('PUT', `/api/satellites/${satellite.id}`, admin, { status: 'active' })).statusCode).toBe(200)
      const enabledEvents = await eventsFor('satellite.enabled', satellite.id)
      expect(enabledEvents).toHaveLength(1)
      expect(enabledEvents[0]).toMatchObject({ actor_id: admin.id, target: satellite.id, details: { name: satellite.name } })
      // Enabling one that was never disabled is no event either.
      const untouched = await fresh()
      expect((await call('PUT', `/api/satellites/${untouched.id}`, admin, { status: 'active' })).json().data.satellite.status).toBe('inactive')
      expect(await eventsFor('satellite.enabled', untouched.id)).toEqual([])
    })

    it("team admins, team users and global users: 403 satellites.manage, even on their own team's satellite; nothing changes", async () => {
      const satellite = await fresh(teamA.id)
      for (const account of [ownerA, adminA, memberA, user]) {
        expectForbidden(await call('PUT', `/api/satellites/${satellite.id}`, account, { status: 'disabled' }), 'satellites.manage')
      }
      expect((await call('PUT', `/api/satellites/${satellite.id}`, undefined, { status: 'disabled' })).statusCode).toBe(401)
      expect(await storedStatus(satellite.id)).toBe('inactive')
      expect(await eventsFor('satellite.disabled', satellite.id)).toEqual([])
    })

    it('an unknown id: 404', async () => {
      expectNotFound(await call('PUT', `/api/satellites/${UNKNOWN_ID}`, admin, { status: 'disabled' }))
      expectNotFound(await call('PUT', `/api/satellites/${UNKNOWN_ID}`, admin, { status: 'active' }))
    })

    it.each([
      ['no status', {}],
      ['status inactive', { status: 'inactive' }],
      ['status offline', { status: 'offline' }],
      ['status degraded', { status: 'degraded' }],
      ['status in capitals', { status: 'DISABLED' }],
      ['status null', { status: null }],
      ['an extra field', { status: 'disabled', name: 'renamed' }],
    ])('a body with %s: 400 VALIDATION_ERROR, nothing changes', async (_label, payload) => {
      const satellite = await fresh()
      expectValidationError(await call('PUT', `/api/satellites/${satellite.id}`, admin, payload))
      expect(await storedStatus(satellite.id)).toBe('inactive')
    })
  })

  describe('DELETE /api/satellites/:id', () => {
    it('a global admin: 200, then 404, the row gone, its key 401, one audit event', async () => {
      const satellite = await fresh(teamA.id)
      await beat(satellite)
      const response = await call('DELETE', `/api/satellites/${satellite.id}`, admin)
      expect(response.statusCode, response.body).toBe(200)
      expect(response.json()).toMatchObject({ success: true, message: expect.any(String) })

      expectNotFound(await call('GET', `/api/satellites/${satellite.id}`, admin))
      expect(await rowCount(satellite.id)).toBe(0)
      expect(await idsOf(`/api/satellites?team_id=${teamA.id}&limit=100`)).not.toContain(satellite.id)
      expect((await heartbeat(app, satellite.id, satellite.apiKey)).statusCode).toBe(401)
      expectNotFound(await call('DELETE', `/api/satellites/${satellite.id}`, admin))

      const events = await eventsFor('satellite.deleted', satellite.id)
      expect(events).toHaveLength(1)
      expect(events[0]).toMatchObject({
        type: 'satellite.deleted', actor_id: admin.id, target: satellite.id,
        details: { name: satellite.name, satellite_type: 'team', team_id: teamA.id },
      })
    })

    it('team admins, team users and global users: 403; no session: 401; the satellite stays', async () => {
      const satellite = await fresh(teamA.id)
      for (const account of [ownerA, adminA, memberA, user]) {
        expectForbidden(await call('DELETE', `/api/satellites/${satellite.id}`, account), 'satellites.manage')
      }
      expect((await call('DELETE', `/api/satellites/${satellite.id}`)).statusCode).toBe(401)
      expect(await rowCount(satellite.id)).toBe(1)
      await beat(satellite)
    })

    it('an unknown id: 404', async () => {
      expectNotFound(await call('DELETE', `/api/satellites/${UNKNOWN_ID}`, admin))
    })
  })

  describe('audit and teams', () => {
    it('pairing records satellite.registered with the satellite as target', async () => {
      const token = await createToken(call, ownerA, { teamId: teamA.id })
      const satellite = await pair(app, token.token, name('audited'))
      const events = await eventsFor('satellite.registered', satellite.id)
      expect(events).toHaveLength(1)
      expect(events[0]).toMatchObject({
        type: 'satellite.registered', target: satellite.id,
        details: { name: satellite.name, satellite_type: 'team', team_id: teamA.id, token_id: token.id, re_registered: false },
      })
    })

    it("deleting a team deletes its satellites; their keys stop working; other teams' and global satellites stay", async () => {
      const { owner, team } = await freshTeam()
      const [first, second] = [await fresh(team.id), await fresh(team.id, owner)]
      await beat(first)
      const elsewhere = await fresh(teamB.id)
      const globalOne = await fresh()

      const removed = await call('DELETE', `/api/teams/${team.id}`, owner)
      expect(removed.statusCode, removed.body).toBe(200)

      for (const satellite of [first, second]) {
        expect(await rowCount(satellite.id)).toBe(0)
        expectNotFound(await call('GET', `/api/satellites/${satellite.id}`, admin))
        const response = await heartbeat(app, satellite.id, satellite.apiKey)
        expect(response.statusCode, response.body).toBe(401)
        expect(response.headers['www-authenticate']).toBe('Bearer error="invalid_token"')
      }
      expect(await idsOf(`/api/satellites?team_id=${team.id}`)).toEqual([])
      for (const satellite of [elsewhere, globalOne]) {
        expect(await rowCount(satellite.id)).toBe(1)
        await beat(satellite)
      }
    })
  })
})
