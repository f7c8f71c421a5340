import type { FastifyInstance } from 'fastify'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createTestContext, type TestContext } from '../helpers/app.js'
import { DIALECTS } from '../helpers/database.js'
import { addMember, client, createTeam, ROOMY_LIMITS, signUp, type Account, type Call } from '../helpers/teams.js'

/**
 * Adding someone to a team needs no consent from them, so membership must not reveal their email
 * address: a member's `email` is shown to that member and to global admins (users.view) only —
 * and echoed in the add answer to whoever typed it. And every membership, role and ownership
 * change leaves an audit event (never with an email in it).
 */
interface Member { user_id: string; username: string; email: string | null; role: string; is_owner: boolean }
interface AuditEvent { type: string; actor_id: string | null; ip: string | null; target: string | null; details: Record<string, unknown> }

describe.each(DIALECTS)('team membership discloses no email and is audited on %s', (dialect) => {
  let ctx: TestContext
  let app: FastifyInstance
  let call: Call
  let admin: Account
  let seq = 0
  const fresh = () => signUp(app, `tmd_${++seq}`)
  const emailsBy = (members: Member[]) => Object.fromEntries(members.map((member) => [member.user_id, member.email]))
  const membersAs = async (teamId: string, as: Account): Promise<Member[]> => {
    const response = await call('GET', `/api/teams/${teamId}/members`, as)
    expect(response.statusCode, response.body).toBe(200)
    return response.json().data.members
  }
  const events = async (type: string): Promise<AuditEvent[]> => {
    const response = await call('GET', `/api/admin/audit-log?type=${type}&limit=100`, admin)
    expect(response.statusCode, response.body).toBe(200)
    return response.json().data.events
  }

  beforeAll(async () => {
    ctx = await createTestContext(dialect)
    app = (await ctx.build({ limits: ROOMY_LIMITS })).app
    call = client(app)
    admin = await signUp(app, 'tmd_admin')
  })
  afterAll(() => ctx.close())

  describe('no email through membership', () => {
    it('adding a victim by username and reading the members shows the adder only their own address', async () => {
      const [mallory, victim] = [await fresh(), await fresh()]
      const team = await createTeam(call, mallory, 'Harvest')
      const added = await call('POST', `/api/teams/${team.id}/members`, mallory, { login: victim.username, role: 'team_user' })
      expect(added.statusCode, added.body).toBe(201)
      expect(emailsBy(added.json().data.members)).toEqual({ [mallory.id]: mallory.email, [victim.id]: null })
      expect(emailsBy(await membersAs(team.id, mallory))).toEqual({ [mallory.id]: mallory.email, [victim.id]: null })
      expect(added.body).not.toContain(victim.email)
    })

    it('each member sees their own address and nobody else\'s', async () => {
      const [owner, one, two] = [await fresh(), await fresh(), await fresh()]
      const team = await createTeam(call, owner, 'Peers')
      await addMember(call, team.id, owner, one, 'team_admin')
      await addMember(call, team.id, owner, two, 'team_user')
      for (const viewer of [owner, one, two]) {
        const expected = { [owner.id]: null, [one.id]: null, [two.id]: null, [viewer.id]: viewer.email }
        expect(emailsBy(await membersAs(team.id, viewer))).toEqual(expected)
      }
    })

    it('a global admin (users.view) sees every address', async () => {
      const [owner, member] = [await fresh(), await fresh()]
      const team = await createTeam(call, owner, 'Audited')
      await addMember(call, team.id, owner, member, 'team_user')
      expect(emailsBy(await membersAs(team.id, admin))).toEqual({ [owner.id]: owner.email, [member.id]: member.email })
    })

    it('adding by email echoes the address typed, in that answer only', async () => {
      const [owner, first, second] = [await fresh(), await fresh(), await fresh()]
      const team = await createTeam(call, owner, 'Typed')
      await addMember(call, team.id, owner, first, 'team_user')
      const added = await call('POST', `/api/teams/${team.id}/members`, owner, { login: second.email.toUpperCase(), role: 'team_user' })
      expect(added.statusCode, added.body).toBe(201)
      expect(emailsBy(added.json().data.members)).toEqual({ [owner.id]: owner.email, [first.id]: null, [second.id]: second.email })
      expect(emailsBy(await membersAs(team.id, owner))).toEqual({ [owner.id]: owner.email, [first.id]: null, [second.id]: null })
    })

    it('the OpenAPI document says email is nullable and when it is shown', async () => {
      const document = (await app.inject({ method: 'GET', url: '/documentation/json' })).json()
      const list = document.paths['/api/teams/{id}/members'].get
      const schema = list.responses['200'].content['application/json'].schema
      const email = schema.properties.data.properties.members.items.properties.email
      expect(JSON.stringify(email)).toContain('null')
      expect(list.description).toMatch(/users\.view/)
    })
  })

  describe('every membership change is audited', () => {
    it('team created, member added, role changed, member removed, member left, owner transferred, team deleted', async () => {
      const [owner, member, leaver, heir] = [await fresh(), await fresh(), await fresh(), await fresh()]
      const team = await createTeam(call, owner, 'Logged')
      const add = (who: Account, role: string) => call('POST', `/api/teams/${team.id}/members`, owner, { login: who.email, role })
      for (const who of [member, leaver, heir]) expect((await add(who, 'team_user')).statusCode).toBe(201)
      expect((await call('PUT', `/api/teams/${team.id}/members/${member.id}`, owner, { role: 'team_admin' })).statusCode).toBe(200)
      expect((await call('DELETE', `/api/teams/${team.id}/members/${member.id}`, owner)).statusCode).toBe(200)
      expect((await call('DELETE', `/api/teams/${team.id}/members/${leaver.id}`, leaver)).statusCode).toBe(200)
      expect((await call('PUT', `/api/teams/${team.id}/owner`, owner, { user_id: heir.id })).statusCode).toBe(200)
      expect((await call('DELETE', `/api/teams/${team.id}`, heir)).statusCode).toBe(200)

      const ofTeam = async (type: string) => (await events(type)).filter((event) => event.details.team_id === team.id)
      const common = (actor: Account) => ({ actor_id: actor.id, ip: expect.any(String), target: team.id })

      expect(await ofTeam('team.created')).toEqual([expect.objectContaining({ ...common(owner), details: expect.objectContaining({ team_id: team.id }) })])
      const added = await ofTeam('team.member_added')
      expect(added).toHaveLength(3)
      expect(added.map((event) => event.details.user_id).sort()).toEqual([member.id, leaver.id, heir.id].sort())
      for (const event of added) expect(event).toMatchObject({ ...common(owner), details: { team_id: team.id, role: 'team_user' } })
      expect(await ofTeam('team.member_role_changed')).toEqual([
        expect.objectContaining({ ...common(owner), details: { team_id: team.id, user_id: member.id, from: 'team_user', to: 'team_admin' } }),
      ])
      expect(await ofTeam('team.member_removed')).toEqual([
        expect.objectContaining({ ...common(owner), details: { team_id: team.id, user_id: member.id, role: 'team_admin' } }),
      ])
      expect(await ofTeam('team.member_left')).toEqual([
        expect.objectContaining({ ...common(leaver), details: { team_id: team.id, user_id: leaver.id, role: 'team_user' } }),
      ])
      expect(await ofTeam('team.owner_transferred')).toEqual([
        expect.objectContaining({ ...common(owner), details: { team_id: team.id, user_id: heir.id, previous_owner_id: owner.id } }),
      ])
      expect(await ofTeam('team.deleted')).toEqual([expect.objectContaining({ ...common(heir), details: expect.objectContaining({ team_id: team.id }) })])

      // Details name ids and roles, never an address (even when the adder typed one).
      const all = (await call('GET', '/api/admin/audit-log?limit=100', admin)).json().data.events as AuditEvent[]
      const teamEvents = all.filter((event) => event.type.startsWith('team.'))
      expect(teamEvents.length).toBeGreaterThanOrEqual(9)
      expect(JSON.stringify(teamEvents)).not.toContain('@')
    })

    it('a refused change writes no event', async () => {
      const [owner, member] = [await fresh(), await fresh()]
      const team = await createTeam(call, owner, 'Refusals')
      await addMember(call, team.id, owner, member, 'team_user')
      expect((await call('POST', `/api/teams/${team.id}/members`, owner, { login: member.username, role: 'team_user' })).statusCode).toBe(409)
      expect((await call('PUT', `/api/teams/${team.id}/members/${owner.id}`, owner, { role: 'team_user' })).statusCode).toBe(409)
      expect((await call('DELETE', `/api/teams/${team.id}/members/${owner.id}`, owner)).statusCode).toBe(409)
      expect((await call('DELETE', `/api/teams/${team.id}/members/${owner.id}`, member)).statusCode).toBe(403)
      const ofTeam = async (type: string) => (await events(type)).filter((event) => event.details.team_id === team.id)
      expect(await ofTeam('team.member_added')).toHaveLength(1)
      for (const type of ['team.member_role_changed', 'team.member_removed', 'team.member_left']) expect(await ofTeam(type), type).toEqual([])
    })
  })
})
