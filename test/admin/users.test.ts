import { eq } from 'drizzle-orm'
import type { FastifyInstance, LightMyRequestResponse } from 'fastify'
import { afterAll, beforeAll, describe, expect, it, onTestFinished } from 'vitest'
import { newId } from '../../src/db/ids.js'
import { AppError } from '../../src/http/errors.js'
import { UserAdministration } from '../../src/modules/admin/service.js'
import { register, sessionCookie } from '../helpers/accounts.js'
import { createTestContext, type TestContext } from '../helpers/app.js'
import { manualClock } from '../helpers/clock.js'
import { DIALECTS, type TestDialect } from '../helpers/database.js'

const USER_KEYS = ['auth_methods', 'created_at', 'email', 'email_verified', 'first_name', 'id', 'last_name', 'role_id', 'username']
const NO_LIMITS = { RATE_LIMIT_ENABLED: 'false' }

interface Account { id: string; username: string; email: string; cookie: string }
type Method = 'GET' | 'PUT' | 'DELETE'

async function signUp(app: FastifyInstance, username: string): Promise<Account> {
  const email = `${username}@example.com`
  const response = await register(app, { username, email })
  const cookie = sessionCookie(response)
  if (response.statusCode !== 201 || cookie === undefined) throw new Error(`registration failed: ${response.statusCode} ${response.body}`)
  return { id: response.json().data.user.id, username, email, cookie }
}

function client(app: FastifyInstance) {
  return (method: Method, url: string, account?: Account, payload?: unknown): Promise<LightMyRequestResponse> =>
    app.inject({
      method,
      url,
      headers: account === undefined ? {} : { cookie: account.cookie },
      ...(payload === undefined ? {} : { payload: payload as object }),
    })
}

async function countAdmins(app: FastifyInstance): Promise<number> {
  return app.services.users.countAdmins()
}

describe.each(DIALECTS)('user administration on %s', (dialect) => {
  let ctx: TestContext
  let app: FastifyInstance
  let call: ReturnType<typeof client>
  let admin: Account
  let user: Account
  let seq = 0
  const clock = manualClock()
  const fresh = (prefix = 'member') => signUp(app, `${prefix}_${++seq}`)

  beforeAll(async () => {
    ctx = await createTestContext(dialect)
    app = (await ctx.build({ clock, env: NO_LIMITS })).app
    call = client(app)
    admin = await signUp(app, 'root_admin')
    user = await signUp(app, 'plain_user')
  })
  afterAll(() => ctx.close())

  describe('who may call', () => {
    const routes: Array<[Method, string, unknown, string]> = [
      ['GET', '/api/admin/users', undefined, 'users.view'],
      ['GET', '/api/admin/users/some-id', undefined, 'users.view'],
      ['PUT', '/api/admin/users/some-id', { first_name: 'X' }, 'users.edit'],
      ['PUT', '/api/admin/users/some-id/role', { role_id: 'global_admin' }, 'roles.manage'],
      ['DELETE', '/api/admin/users/some-id', undefined, 'users.delete'],
    ]

    it.each(routes)('%s %s: 401 without a session', async (method, url, payload) => {
      const response = await call(method, url, undefined, payload)
      expect(response.statusCode).toBe(401)
      expect(response.json()).toMatchObject({ success: false, code: 'UNAUTHORIZED' })
    })

    it.each(routes)('%s %s: 403 for a global_user, naming the permission', async (method, url, payload, permission) => {
      const response = await call(method, url, user, payload)
      expect(response.statusCode).toBe(403)
      expect(response.json()).toMatchObject({ code: 'FORBIDDEN', details: { required_permission: permission } })
    })

    it('a global_user cannot promote themself', async () => {
      const response = await call('PUT', `/api/admin/users/${user.id}/role`, user, { role_id: 'global_admin' })
      expect(response.statusCode).toBe(403)
      expect((await app.services.users.findById(user.id))!.roleId).toBe('global_user')
    })
  })

  describe('GET /api/admin/users/:id', () => {
    it('answers the user as the public user view, never a hash', async () => {
      const response = await call('GET', `/api/admin/users/${user.id}`, admin)
      expect(response.statusCode).toBe(200)
      const { data } = response.json()
      expect(Object.keys(data)).toEqual(['user'])
      expect(Object.keys(data.user).sort()).toEqual(USER_KEYS)
      expect(data.user).toMatchObject({ id: user.id, username: 'plain_user', email: 'plain_user@example.com', role_id: 'global_user', auth_methods: ['email'] })
      expect(response.body).not.toContain('argon2')
    })

    it('404 for an unknown id', async () => {
      const unknown = await call('GET', '/api/admin/users/no-such-user', admin)
      expect(unknown.statusCode).toBe(404)
      expect(unknown.json().code).toBe('NOT_FOUND')
    })
  })

  describe('PUT /api/admin/users/:id', () => {
    it('changes names, email (lowercased) and the verification state; audit user.updated', async () => {
      const member = await fresh()
      const response = await call('PUT', `/api/admin/users/${member.id}`, admin, {
        first_name: 'Ada', last_name: 'Lovelace', email: `Renamed.${member.username}@Example.COM`, email_verified: true,
      })
      expect(response.statusCode).toBe(200)
      expect(response.json().data.user).toMatchObject({
        id: member.id, first_name: 'Ada', last_name: 'Lovelace', email: `renamed.${member.username}@example.com`, email_verified: true,
      })
      const cleared = await call('PUT', `/api/admin/users/${member.id}`, admin, { first_name: null, username: `${member.username}_2` })
      expect(cleared.json().data.user).toMatchObject({ first_name: null, last_name: 'Lovelace', username: `${member.username}_2` })
      expect((await call('GET', `/api/admin/users/${member.id}`, admin)).json().data.user.username).toBe(`${member.username}_2`)

      const events = (await call('GET', `/api/admin/audit-log?type=user.updated&actor_id=${admin.id}`, admin)).json().data.events
      expect(events[0]).toMatchObject({ target: member.id, details: { fields: ['first_name', 'username'] } })
      expect(events[1]).toMatchObject({ target: member.id, details: { fields: ['first_name', 'last_name', 'email', 'email_verified'] } })
    })

    it('409 EMAIL_TAKEN / USERNAME_TAKEN, case-insensitively; the user keeps their own values', async () => {
      const member = await fresh()
      const taken = await call('PUT', `/api/admin/users/${member.id}`, admin, { email: user.email.toUpperCase() })
      expect(taken.statusCode).toBe(409)
      expect(taken.json().code).toBe('EMAIL_TAKEN')
      const takenName = await call('PUT', `/api/admin/users/${member.id}`, admin, { username: user.username.toUpperCase() })
      expect(takenName.statusCode).toBe(409)
      expect(takenName.json().code).toBe('USERNAME_TAKEN')
      // Re-saving one's own values, even in another case, is no conflict.
      const same = await call('PUT', `/api/admin/users/${member.id}`, admin, { username: member.username.toUpperCase(), email: member.email })
      expect(same.statusCode).toBe(200)
      expect(same.json().data.user.username).toBe(member.username.toUpperCase())
    })

    it.each([
      ['an empty body', {}],
      ['an unknown field', { role_id: 'global_admin' }],
      ['a bad username', { username: 'a b' }],
      ['a bad email', { email: 'not-an-email' }],
      ['a non-boolean email_verified', { email_verified: 'yes' }],
    ])('400 for %s', async (_what, payload) => {
      const response = await call('PUT', `/api/admin/users/${user.id}`, admin, payload)
      expect(response.statusCode).toBe(400)
      expect(response.json().code).toBe('VALIDATION_ERROR')
    })

    it('404 for an unknown user', async () => {
      expect((await call('PUT', '/api/admin/users/no-such-user', admin, { first_name: 'X' })).statusCode).toBe(404)
    })
  })

  describe('PUT /api/admin/users/:id/role', () => {
    it("refuses one's own role with 409 CANNOT_CHANGE_OWN_ROLE", async () => {
      const response = await call('PUT', `/api/admin/users/${admin.id}/role`, admin, { role_id: 'global_user' })
      expect(response.statusCode).toBe(409)
      expect(response.json().code).toBe('CANNOT_CHANGE_OWN_ROLE')
      expect((await app.services.users.findById(admin.id))!.roleId).toBe('global_admin')
    })

    it("a promotion gives admin permissions on the user's next request; a demotion takes them away; both audited", async () => {
      const member = await fresh()
      expect((await call('GET', '/api/admin/users', member)).statusCode).toBe(403)

      const promoted = await call('PUT', `/api/admin/users/${member.id}/role`, admin, { role_id: 'global_admin' })
      expect(promoted.statusCode).toBe(200)
      expect(promoted.json().data.user).toMatchObject({ id: member.id, role_id: 'global_admin' })
      // Same session, next request: the new role applies (never cached in the session).
      expect((await call('GET', '/api/admin/users', member)).statusCode).toBe(200)
      expect((await call('GET', '/api/roles', member)).statusCode).toBe(200)

      const demoted = await call('PUT', `/api/admin/users/${member.id}/role`, admin, { role_id: 'global_user' })
      expect(demoted.statusCode).toBe(200)
      expect((await call('GET', '/api/admin/users', member)).statusCode).toBe(403)

      const events = (await call('GET', '/api/admin/audit-log?type=user.role_changed', admin)).json().data.events
      expect(events.slice(0, 2)).toMatchObject([
        { actor_id: admin.id, target: member.id, details: { from: 'global_admin', to: 'global_user' } },
        { actor_id: admin.id, target: member.id, details: { from: 'global_user', to: 'global_admin' } },
      ])
    })

    it('a promoted admin can change other roles, though not their own', async () => {
      const second = await fresh('second_admin')
      await call('PUT', `/api/admin/users/${second.id}/role`, admin, { role_id: 'global_admin' })
      const member = await fresh()
      expect((await call('PUT', `/api/admin/users/${member.id}/role`, second, { role_id: 'global_admin' })).statusCode).toBe(200)
      expect((await call('PUT', `/api/admin/users/${second.id}/role`, second, { role_id: 'global_user' })).json().code).toBe('CANNOT_CHANGE_OWN_ROLE')
      // Leave one admin again for the tests that count them.
      for (const id of [member.id, second.id]) await call('PUT', `/api/admin/users/${id}/role`, admin, { role_id: 'global_user' })
      expect(await countAdmins(app)).toBe(1)
    })

    it('setting the role a user already has changes and records nothing', async () => {
      const member = await fresh()
      const before = (await call('GET', '/api/admin/audit-log?type=user.role_changed', admin)).json().data.pagination.total
      const response = await call('PUT', `/api/admin/users/${member.id}/role`, admin, { role_id: 'global_user' })
      expect(response.statusCode).toBe(200)
      expect(response.json().data.user.role_id).toBe('global_user')
      expect((await call('GET', '/api/admin/audit-log?type=user.role_changed', admin)).json().data.pagination.total).toBe(before)
    })

    it('400 for an unknown role or extra fields; 404 for an unknown user', async () => {
      for (const payload of [{ role_id: 'team_admin' }, { role_id: 'root' }, {}, { role_id: 'global_user', note: 'x' }]) {
        const response = await call('PUT', `/api/admin/users/${user.id}/role`, admin, payload)
        expect(response.statusCode, JSON.stringify(payload)).toBe(400)
      }
      expect((await call('PUT', '/api/admin/users/no-such-user/role', admin, { role_id: 'global_admin' })).statusCode).toBe(404)
    })
  })

  describe('DELETE /api/admin/users/:id', () => {
    it('409 CANNOT_DELETE_SELF for the own account', async () => {
      const response = await call('DELETE', `/api/admin/users/${admin.id}`, admin)
      expect(response.statusCode).toBe(409)
      expect(response.json().code).toBe('CANNOT_DELETE_SELF')
      expect(await app.services.users.findById(admin.id)).toBeDefined()
    })

    it('deletes the user, their sessions, memberships and default team; their session stops working; audited', async () => {
      const member = await fresh()
      const { db, t } = app.services.database
      const [team] = await db.select().from(t.teams).where(eq(t.teams.ownerId, member.id))
      expect(team).toMatchObject({ isDefault: true })
      expect((await call('GET', '/api/users/me', member)).statusCode).toBe(200)

      const response = await call('DELETE', `/api/admin/users/${member.id}`, admin)
      expect(response.statusCode).toBe(200)
      expect(response.json()).toEqual({ success: true, message: 'User deleted.' })

      const me = await call('GET', '/api/users/me', member)
      expect(me.statusCode).toBe(401)
      expect(me.json().code).toBe('UNAUTHORIZED')
      expect(await app.services.users.findById(member.id)).toBeUndefined()
      expect(await db.select().from(t.teams).where(eq(t.teams.id, team!.id))).toEqual([])
      expect(await db.select().from(t.teamMembers).where(eq(t.teamMembers.userId, member.id))).toEqual([])
      expect(await db.select().from(t.sessions).where(eq(t.sessions.userId, member.id))).toEqual([])
      expect((await call('GET', `/api/admin/users/${member.id}`, admin)).statusCode).toBe(404)
      expect((await call('DELETE', `/api/admin/users/${member.id}`, admin)).statusCode).toBe(404)

      const [event] = (await call('GET', `/api/admin/audit-log?type=user.deleted`, admin)).json().data.events
      expect(event).toMatchObject({ actor_id: admin.id, target: member.id, details: { username: member.username, role_id: 'global_user' } })
    })

    it('deletes another global admin while one remains', async () => {
      const other = await fresh('other_admin')
      await call('PUT', `/api/admin/users/${other.id}/role`, admin, { role_id: 'global_admin' })
      expect(await countAdmins(app)).toBe(2)
      expect((await call('DELETE', `/api/admin/users/${other.id}`, admin)).statusCode).toBe(200)
      expect(await countAdmins(app)).toBe(1)
    })
  })

  describe('the last global admin', () => {
    // Through the API an admin acting on another admin means two exist; the rule matters when the
    // acting admin has just lost the role (concurrency, below). The service shows it directly.
    it('is neither demoted nor deleted (409 LAST_ADMIN)', async () => {
      const { database, users, teamService, audit } = app.services
      const administration = new UserAdministration({ database, users, teamService, audit, clock })
      const someoneElse = { id: user.id, ip: '127.0.0.1' }
      expect(await countAdmins(app)).toBe(1)
      for (const attempt of [
        () => administration.changeRole(admin.id, 'global_user', someoneElse),
        () => administration.remove(admin.id, someoneElse),
      ]) {
        const error = await attempt().catch((caught: unknown) => caught)
        expect(error).toBeInstanceOf(AppError)
        expect(error).toMatchObject({ statusCode: 409, code: 'LAST_ADMIN' })
      }
      expect((await users.findById(admin.id))!.roleId).toBe('global_admin')
    })
  })

  describe('GET /api/admin/users (list)', () => {
    it('paginates in the database: total, limit, offset, has_more; newest first', async () => {
      const ctxList = await listContext(dialect)
      const { app: listApp, admin: listAdmin } = ctxList
      const list = async (query: string) => {
        const response = await client(listApp)('GET', `/api/admin/users${query}`, listAdmin)
        expect(response.statusCode, query).toBe(200)
        return response.json().data as { users: Array<{ id: string; username: string }>; pagination: Record<string, unknown> }
      }
      const total = ctxList.total

      const first = await list('')
      expect(first.pagination).toEqual({ total, limit: 20, offset: 0, has_more: true })
      expect(first.users).toHaveLength(20)
      const second = await list('?limit=20&offset=20')
      expect(second.pagination).toEqual({ total, limit: 20, offset: 20, has_more: false })
      expect(second.users).toHaveLength(total - 20)
      const ids = [...first.users, ...second.users].map((each) => each.id)
      expect(new Set(ids).size).toBe(total)
      // Newest first: the admin registered first, so comes last.
      expect(ids.at(-1)).toBe(listAdmin.id)
      expect(first.users[0]!.username).toBe(ctxList.newest)

      expect((await list('?limit=5&offset=10')).pagination).toEqual({ total, limit: 5, offset: 10, has_more: true })
      expect((await list(`?limit=5&offset=${total - 5}`)).pagination).toEqual({ total, limit: 5, offset: total - 5, has_more: false })
      const beyond = await list(`?offset=${total + 10}`)
      expect(beyond.users).toEqual([])
      expect(beyond.pagination).toEqual({ total, limit: 20, offset: total + 10, has_more: false })
      expect((await list('?limit=100')).users).toHaveLength(total)
    })

    it('filters by q (username or email, case-insensitive), role_id and auth_method', async () => {
      const { app: listApp, admin: listAdmin } = await listContext(dialect)
      const list = async (query: string) => {
        const response = await client(listApp)('GET', `/api/admin/users${query}`, listAdmin)
        expect(response.statusCode, query).toBe(200)
        return response.json().data as { users: Array<{ username: string; email: string; role_id: string; auth_methods: string[] }>; pagination: { total: number } }
      }

      const byName = await list('?q=BULK_00')
      expect(byName.pagination.total).toBe(10)
      expect(byName.users.every((each) => each.username.startsWith('bulk_00'))).toBe(true)
      const byEmail = await list('?q=%40EXAMPLE.org')
      expect(byEmail.users.map((each) => each.email).sort()).toEqual(['bulk_004@example.org', 'bulk_017@example.org'])
      expect((await list('?q=nobody-matches')).pagination.total).toBe(0)
      // LIKE wildcards are matched literally.
      expect((await list('?q=%25')).pagination.total).toBe(0)
      expect((await list('?q=bulk_0_')).pagination.total).toBe(0)

      const admins = await list('?role_id=global_admin')
      expect(admins.users.map((each) => each.username).sort()).toEqual(['bulk_010', 'list_admin'])
      expect((await list('?role_id=global_user')).pagination.total).toBe(25)

      const provider = await list('?auth_method=provider')
      expect(provider.users.map((each) => each.username).sort()).toEqual(['bulk_020', 'bulk_021', 'bulk_022'])
      expect(provider.users.every((each) => each.auth_methods.includes('provider'))).toBe(true)
      expect((await list('?auth_method=email')).pagination.total).toBe(26 - 3 + 1)

      const combined = await list('?q=bulk_02&role_id=global_user&auth_method=provider&limit=2')
      expect(combined.pagination).toEqual({ total: 3, limit: 2, offset: 0, has_more: true })
    })

    it.each([
      '?limit=0', '?limit=101', '?offset=-1', '?limit=abc', '?limit=2.5', '?role_id=root', '?auth_method=github', '?q=', '?sort=username',
    ])('400 for %s', async (query) => {
      const response = await call('GET', `/api/admin/users${query}`, admin)
      expect(response.statusCode).toBe(400)
      expect(response.json().code).toBe('VALIDATION_ERROR')
    })
  })

  describe('concurrency', () => {
    const ROUNDS = 5

    it('two admins demoting each other at once leave one admin', async () => {
      const { app: raceApp, admin: first } = await raceContext(dialect)
      const race = client(raceApp)
      const second = await signUp(raceApp, 'race_second')
      for (let round = 0; round < ROUNDS; round++) {
        expect((await race('PUT', `/api/admin/users/${second.id}/role`, first, { role_id: 'global_admin' })).statusCode).toBe(200)
        const answers = await Promise.all([
          race('PUT', `/api/admin/users/${second.id}/role`, first, { role_id: 'global_user' }),
          race('PUT', `/api/admin/users/${first.id}/role`, second, { role_id: 'global_user' }),
        ])
        const statuses = answers.map((answer) => answer.statusCode).sort()
        expect(statuses[0], answers.map((answer) => answer.body).join('\n')).toBe(200)
        expect([403, 409]).toContain(statuses[1])
        const refused = answers.find((answer) => answer.statusCode !== 200)!.json().code
        expect(['LAST_ADMIN', 'FORBIDDEN']).toContain(refused)
        expect(await countAdmins(raceApp)).toBe(1)
        // Whoever won, make `first` the admin again for the next round.
        if ((await raceApp.services.users.findById(first.id))!.roleId !== 'global_admin') {
          await raceApp.services.users.update(first.id, { roleId: 'global_admin' })
          await raceApp.services.users.update(second.id, { roleId: 'global_user' })
        }
      }
    })

    it('two admins deleting each other at once leave one admin', async () => {
      const { app: raceApp, admin: first } = await raceContext(dialect)
      const race = client(raceApp)
      for (let round = 0; round < ROUNDS; round++) {
        const second = await signUp(raceApp, `race_delete_${round}`)
        await race('PUT', `/api/admin/users/${second.id}/role`, first, { role_id: 'global_admin' })
        const answers = await Promise.all([
          race('DELETE', `/api/admin/users/${second.id}`, first),
          race('DELETE', `/api/admin/users/${first.id}`, second),
        ])
        const statuses = answers.map((answer) => answer.statusCode).sort()
        expect(statuses[0], answers.map((answer) => answer.body).join('\n')).toBe(200)
        // The loser is refused by the rule (409), or is already gone (401) or no admin (403).
        expect([401, 403, 409]).toContain(statuses[1])
        expect(await countAdmins(raceApp)).toBe(1)
        if ((await raceApp.services.users.findById(first.id)) === undefined) return
      }
    })

    it('with three admins, a demoted admin cannot act on the role it just lost', async () => {
      const { app: raceApp, admin: first } = await raceContext(dialect)
      const race = client(raceApp)
      const second = await signUp(raceApp, 'trio_second')
      const third = await signUp(raceApp, 'trio_third')
      for (const each of [second, third]) await race('PUT', `/api/admin/users/${each.id}/role`, first, { role_id: 'global_admin' })
      const answers = await Promise.all([
        race('PUT', `/api/admin/users/${second.id}/role`, first, { role_id: 'global_user' }),
        race('PUT', `/api/admin/users/${first.id}/role`, second, { role_id: 'global_user' }),
      ])
      expect(answers.map((answer) => answer.statusCode).sort()).toEqual([200, 403])
      expect(await countAdmins(raceApp)).toBe(2)
    })
  })
})

/** A database of its own holding 26 users (plus its admin) with known names, roles and methods. */
async function listContext(dialect: TestDialect) {
  const ctx = await createTestContext(dialect)
  onTestFinished(() => ctx.close())
  const clock = manualClock()
  const { app } = await ctx.build({ clock, env: NO_LIMITS })
  const admin = await signUp(app, 'list_admin')
  let newest = ''
  for (let index = 0; index < 26; index++) {
    clock.advance(1000)
    const username = `bulk_${String(index).padStart(3, '0')}`
    const provider = index >= 20 && index <= 22
    newest = username
    await app.services.users.insert({
      id: newId(),
      username,
      email: index === 4 || index === 17 ? `${username}@example.org` : `${username}@example.com`,
      passwordHash: provider ? null : '$argon2id$v=19$m=65536,t=3,p=4$not-a-real-hash',
      providerUserId: provider ? `gh-${index}` : null,
      roleId: index === 10 ? 'global_admin' : 'global_user',
      createdAt: new Date(clock.now()),
      updatedAt: new Date(clock.now()),
    })
  }
  return { app, admin, newest, total: 27 }
}

/** A database of its own whose first user is `race_first`, the admin. */
async function raceContext(dialect: TestDialect) {
  const ctx = await createTestContext(dialect)
  onTestFinished(() => ctx.close())
  const { app } = await ctx.build({ env: NO_LIMITS })
  return { app, admin: await signUp(app, 'race_first') }
}
