import { eq, sql } from 'drizzle-orm'
import type { FastifyInstance, LightMyRequestResponse } from 'fastify'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createTestContext, type TestContext } from '../helpers/app.js'
import { createCategory, createServer, insertTeamServer, type CategoryBody, type ServerBody } from '../helpers/catalogue.js'
import { manualClock } from '../helpers/clock.js'
import { DIALECTS } from '../helpers/database.js'
import { bearer, issueTokens } from '../helpers/oauth.js'
import { rawRows } from '../helpers/sql.js'
import { client, createTeam, ROOMY_LIMITS, signUp, type Account, type Call } from '../helpers/teams.js'

type Method = 'GET' | 'POST' | 'PUT' | 'DELETE'

interface AuditEvent { id: string; type: string; actor_id: string | null; target: string | null; details: Record<string, unknown> }

const CATEGORIES = '/api/mcp/categories'
const UNKNOWN_ID = 'no-such-category-id'

/** The field names of a 400 VALIDATION_ERROR answer. */
function expectValidationError(response: LightMyRequestResponse, field: string): void {
  expect(response.statusCode, response.body).toBe(400)
  const body = response.json()
  expect(body).toMatchObject({ success: false, code: 'VALIDATION_ERROR' })
  expect(Array.isArray(body.details)).toBe(true)
  expect((body.details as Array<{ field: string }>).map((detail) => detail.field)).toContain(field)
}

function expectConflict(response: LightMyRequestResponse): void {
  expect(response.statusCode, response.body).toBe(409)
  expect(response.json()).toMatchObject({ success: false, code: 'CATEGORY_NAME_TAKEN' })
}

describe.each(DIALECTS)('catalogue categories on %s', (dialect) => {
  let ctx: TestContext
  let app: FastifyInstance
  let call: Call
  const clock = manualClock(Date.now())
  /** The first account: global_admin. */
  let admin: Account
  /** A global_user, owner of the team below. */
  let member: Account
  /** A global_user in no team but their default one. */
  let outsider: Account
  let teamId: string
  let readToken: string
  let userReadToken: string
  let adminReadToken: string
  let seq = 0

  const asBearer = (method: Method, url: string, token: string, payload?: object) =>
    app.inject({ method, url, headers: bearer(token), ...(payload === undefined ? {} : { payload }) })

  /** Every category, as `account` sees it. */
  const listAs = async (account: Account): Promise<CategoryBody[]> => {
    const response = await call('GET', CATEGORIES, account)
    expect(response.statusCode, response.body).toBe(200)
    return response.json().data.categories
  }
  const categoryAs = async (account: Account, id: string): Promise<CategoryBody | undefined> =>
    (await listAs(account)).find((category) => category.id === id)
  const countOf = async (account: Account, id: string): Promise<number | undefined> => (await categoryAs(account, id))?.server_count
  const serverAs = async (account: Account, id: string): Promise<ServerBody> => {
    const response = await call('GET', `/api/mcp/servers/${id}`, account)
    expect(response.statusCode, response.body).toBe(200)
    return response.json().data.server
  }
  const categoryRows = async (): Promise<number> =>
    Number((await rawRows(app.services.database, sql`select count(*) from mcp_categories`))[0]![0])
  /** The newest events of a type (the audit log answers newest first). */
  const auditEvents = async (type: string): Promise<AuditEvent[]> => {
    const response = await call('GET', `/api/admin/audit-log?type=${type}&limit=100`, admin)
    expect(response.statusCode, response.body).toBe(200)
    return response.json().data.events
  }
  const setCategory = async (serverId: string, categoryId: string | null) => {
    const { db, t } = app.services.database
    await db.update(t.mcpServers).set({ categoryId }).where(eq(t.mcpServers.id, serverId))
  }

  beforeAll(async () => {
    ctx = await createTestContext(dialect)
    app = (await ctx.build({ clock, limits: ROOMY_LIMITS })).app
    call = client(app)
    admin = await signUp(app, 'cat_admin')
    member = await signUp(app, 'cat_member')
    outsider = await signUp(app, 'cat_outsider')
    teamId = (await createTeam(call, member, 'Category Counters')).id
    readToken = (await issueTokens(app, member.cookie, 'mcp:read')).access_token
    userReadToken = (await issueTokens(app, member.cookie, 'user:read')).access_token
    adminReadToken = (await issueTokens(app, admin.cookie, 'mcp:read')).access_token
  })
  afterAll(() => ctx.close())

  describe('GET /api/mcp/categories', () => {
    it('answers any signed-in user and a bearer token with mcp:read', async () => {
      const category = await createCategory(call, admin, { name: 'Readable Everywhere' })
      for (const response of [
        await call('GET', CATEGORIES, outsider),
        await call('GET', CATEGORIES, admin),
        await asBearer('GET', CATEGORIES, readToken),
        await asBearer('GET', CATEGORIES, adminReadToken),
      ]) {
        expect(response.statusCode, response.body).toBe(200)
        expect(response.json().success).toBe(true)
        expect(response.json().data.categories).toContainEqual(category)
      }
    })

    it('answers 403 with required_scope to a bearer token without mcp:read', async () => {
      const response = await asBearer('GET', CATEGORIES, userReadToken)
      expect(response.statusCode).toBe(403)
      expect(response.json()).toMatchObject({ success: false, code: 'FORBIDDEN', details: { required_scope: 'mcp:read' } })
      expect(response.headers['www-authenticate']).toContain('error="insufficient_scope"')
    })

    it('answers 401 UNAUTHORIZED without credentials', async () => {
      const response = await call('GET', CATEGORIES)
      expect(response.statusCode).toBe(401)
      expect(response.json()).toMatchObject({ success: false, code: 'UNAUTHORIZED' })
    })

    it('orders by sort_order, then name, then id', async () => {
      const made = [
        await createCategory(call, admin, { name: 'order kiwi', sort_order: 700 }),
        await createCategory(call, admin, { name: 'order apple', sort_order: 700 }),
        await createCategory(call, admin, { name: 'order zucchini', sort_order: -700 }),
        await createCategory(call, admin, { name: 'order mango', sort_order: 699 }),
        await createCategory(call, admin, { name: 'order banana', sort_order: 700 }),
      ]
      const ids = new Set(made.map((category) => category.id))
      const names = (await listAs(outsider)).filter((category) => ids.has(category.id)).map((category) => category.name)
      expect(names).toEqual(['order zucchini', 'order mango', 'order apple', 'order banana', 'order kiwi'])
      const all = await listAs(outsider)
      const sortOrders = all.map((category) => category.sort_order)
      expect(sortOrders).toEqual([...sortOrders].sort((a, b) => a - b))
    })

    it('server_count counts the servers of each category, and follows a server moved by PUT', async () => {
      const tools = await createCategory(call, admin, { name: 'Counted Tools' })
      const data = await createCategory(call, admin, { name: 'Counted Data' })
      const empty = await createCategory(call, admin, { name: 'Counted Nothing' })
      expect(tools.server_count).toBe(0)
      const first = await createServer(call, admin, { name: 'Count Me One', category_id: tools.id })
      await createServer(call, admin, { name: 'Count Me Two', category_id: tools.id })
      await createServer(call, admin, { name: 'Count Me Three', category_id: data.id })
      await createServer(call, admin, { name: 'Count Me Nowhere' })
      for (const account of [outsider, admin]) {
        expect(await countOf(account, tools.id)).toBe(2)
        expect(await countOf(account, data.id)).toBe(1)
        expect(await countOf(account, empty.id)).toBe(0)
      }
      const viaToken = (await asBearer('GET', CATEGORIES, readToken)).json().data.categories as CategoryBody[]
      expect(viaToken.find((category) => category.id === tools.id)?.server_count).toBe(2)

      const moved = await call('PUT', `/api/mcp/servers/global/${first.id}`, admin, { category_id: data.id })
      expect(moved.statusCode, moved.body).toBe(200)
      expect(await countOf(outsider, tools.id)).toBe(1)
      expect(await countOf(outsider, data.id)).toBe(2)

      const cleared = await call('PUT', `/api/mcp/servers/global/${first.id}`, admin, { category_id: null })
      expect(cleared.statusCode, cleared.body).toBe(200)
      expect(await countOf(outsider, tools.id)).toBe(1)
      expect(await countOf(outsider, data.id)).toBe(1)
    })

    it('counts a team server only for members of its team and for the global admin', async () => {
      const category = await createCategory(call, admin, { name: 'Counted With Teams' })
      await createServer(call, admin, { name: 'Global In Team Count', category_id: category.id })
      const teamServer = await insertTeamServer(app.services.database, teamId, 'Team Only Counted')
      await setCategory(teamServer, category.id)

      expect(await countOf(member, category.id)).toBe(2)
      expect(await countOf(admin, category.id)).toBe(2)
      expect(await countOf(outsider, category.id)).toBe(1)
      const viaToken = (await asBearer('GET', CATEGORIES, readToken)).json().data.categories as CategoryBody[]
      expect(viaToken.find((found) => found.id === category.id)?.server_count).toBe(2)
    })
  })

  describe('POST /api/mcp/categories', () => {
    it('answers 201 with the category, its name trimmed', async () => {
      const before = await categoryRows()
      const response = await call('POST', CATEGORIES, admin, { name: '  Databases Trimmed  ', description: 'SQL and friends', icon: 'database', sort_order: 10 })
      expect(response.statusCode, response.body).toBe(201)
      const body = response.json()
      expect(body.success).toBe(true)
      const category: CategoryBody = body.data.category
      expect(category).toEqual({
        id: expect.any(String),
        name: 'Databases Trimmed',
        description: 'SQL and friends',
        icon: 'database',
        sort_order: 10,
        server_count: 0,
        created_at: new Date(clock.now()).toISOString(),
        updated_at: new Date(clock.now()).toISOString(),
      })
      expect(await categoryRows()).toBe(before + 1)
      expect(await categoryAs(outsider, category.id)).toEqual(category)
    })

    it('defaults: no description, no icon, sort_order 0', async () => {
      const category = await createCategory(call, admin, { name: 'Bare Category' })
      expect(category).toMatchObject({ name: 'Bare Category', description: null, icon: null, sort_order: 0, server_count: 0 })
    })

    const accepted: Array<[string, { name: string; sort_order?: number; description?: string | null; icon?: string | null }]> = [
      ['a name of 1 character', { name: 'x' }],
      ['a name of 100 characters', { name: 'n'.repeat(100) }],
      ['a name of 100 characters between spaces', { name: ` ${'m'.repeat(98)} ` }],
      ['sort_order 1 000 000', { name: 'Highest Order', sort_order: 1_000_000 }],
      ['sort_order -1 000 000', { name: 'Lowest Order', sort_order: -1_000_000 }],
      ['a description of 1000 characters', { name: 'Wordy Category', description: 'd'.repeat(1000) }],
      ['explicit nulls', { name: 'Null Category', description: null, icon: null }],
    ]
    it.each(accepted)('accepts %s', async (_, payload) => {
      const response = await call('POST', CATEGORIES, admin, payload)
      expect(response.statusCode, response.body).toBe(201)
      const category = response.json().data.category
      expect(category.name).toBe(payload.name.trim())
      expect(category.sort_order).toBe(payload.sort_order ?? 0)
    })

    it('refuses a name taken in another case: 409 CATEGORY_NAME_TAKEN, nothing written', async () => {
      await createCategory(call, admin, { name: 'Databases' })
      const before = await categoryRows()
      for (const name of ['databases', 'DATABASES', '  Databases  ']) {
        expectConflict(await call('POST', CATEGORIES, admin, { name }))
      }
      expect(await categoryRows()).toBe(before)
      expect((await listAs(admin)).filter((category) => category.name.toLowerCase() === 'databases')).toHaveLength(1)
    })

    it('compares names beyond ASCII case-insensitively too (Ärzte, ärzte): 409 on create and on rename', async () => {
      await createCategory(call, admin, { name: 'Ärzte' })
      const other = await createCategory(call, admin, { name: 'Zahnärzte' })
      const before = await categoryRows()
      expectConflict(await call('POST', CATEGORIES, admin, { name: 'ärzte' }))
      expectConflict(await call('POST', CATEGORIES, admin, { name: 'ÄRZTE' }))
      expectConflict(await call('PUT', `${CATEGORIES}/${other.id}`, admin, { name: 'ärzte' }))
      expect(await categoryRows()).toBe(before)
      expect(await categoryAs(admin, other.id)).toEqual(other)
    })

    const invalid: Array<[string, unknown, string]> = [
      ['no name', { description: 'Nameless' }, 'name'],
      ['an empty name', { name: '' }, 'name'],
      ['a blank name', { name: '   \t ' }, 'name'],
      ['a name of 101 characters', { name: 'n'.repeat(101) }, 'name'],
      ['a name that is a number', { name: 42 }, 'name'],
      ['a null name', { name: null }, 'name'],
      ['a description of 1001 characters', { name: 'Too Wordy', description: 'd'.repeat(1001) }, 'description'],
      ['a description that is a number', { name: 'Numeric Description', description: 7 }, 'description'],
      ['an icon of 101 characters', { name: 'Big Icon', icon: 'i'.repeat(101) }, 'icon'],
      ['sort_order as a string', { name: 'Stringy Order', sort_order: '5' }, 'sort_order'],
      ['a fractional sort_order', { name: 'Half Order', sort_order: 1.5 }, 'sort_order'],
      ['sort_order 1 000 001', { name: 'Too High', sort_order: 1_000_001 }, 'sort_order'],
      ['sort_order -1 000 001', { name: 'Too Low', sort_order: -1_000_001 }, 'sort_order'],
      ['an unknown field', { name: 'Sneaky Category', color: 'red' }, 'color'],
      ['a server_count', { name: 'Counted Already', server_count: 5 }, 'server_count'],
    ]
    it.each(invalid)('refuses %s: 400 VALIDATION_ERROR naming the field, nothing written', async (_, payload, field) => {
      const before = await categoryRows()
      expectValidationError(await call('POST', CATEGORIES, admin, payload), field)
      expect(await categoryRows()).toBe(before)
    })

    it('answers 403 with required_permission to a global_user, nothing written', async () => {
      const before = await categoryRows()
      const response = await call('POST', CATEGORIES, member, { name: 'Not Allowed' })
      expect(response.statusCode).toBe(403)
      expect(response.json()).toMatchObject({ success: false, code: 'FORBIDDEN', details: { required_permission: 'mcp.categories.manage' } })
      expect(await categoryRows()).toBe(before)
    })

    it('answers 401 to a bearer token, even the admin\'s with mcp:read: the route takes a session only', async () => {
      const before = await categoryRows()
      const response = await asBearer('POST', CATEGORIES, adminReadToken, { name: 'Via Token' })
      expect(response.statusCode).toBe(401)
      expect(response.json()).toMatchObject({ success: false, code: 'UNAUTHORIZED' })
      expect(await categoryRows()).toBe(before)
    })

    it.each([
      ['a valid body', { name: 'Anonymous Category' }],
      ['an invalid body', { name: '', color: 'red' }],
    ])('answers 401 without credentials, given %s (before validation)', async (_, payload) => {
      const before = await categoryRows()
      const response = await call('POST', CATEGORIES, undefined, payload)
      expect(response.statusCode).toBe(401)
      expect(response.json()).toMatchObject({ success: false, code: 'UNAUTHORIZED' })
      expect(await categoryRows()).toBe(before)
    })
  })

  describe('PUT /api/mcp/categories/:id', () => {
    it('changes only the fields sent; updated_at moves, created_at stays', async () => {
      const category = await createCategory(call, admin, { name: 'Partial Target', description: 'Keeps me', icon: 'wrench', sort_order: 7 })
      clock.advance(5_000)
      const response = await call('PUT', `${CATEGORIES}/${category.id}`, admin, { sort_order: 8 })
      expect(response.statusCode, response.body).toBe(200)
      const updated: CategoryBody = response.json().data.category
      expect(updated).toEqual({ ...category, sort_order: 8, updated_at: new Date(clock.now()).toISOString() })
      expect(await categoryAs(outsider, category.id)).toEqual(updated)

      const renamed = await call('PUT', `${CATEGORIES}/${category.id}`, admin, { name: '  Partial Renamed ', description: 'New words' })
      expect(renamed.statusCode, renamed.body).toBe(200)
      expect(renamed.json().data.category).toMatchObject({ name: 'Partial Renamed', description: 'New words', icon: 'wrench', sort_order: 8 })
    })

    it('null clears description and icon, nothing else', async () => {
      const category = await createCategory(call, admin, { name: 'Clearable', description: 'Soon gone', icon: 'trash', sort_order: 3 })
      const response = await call('PUT', `${CATEGORIES}/${category.id}`, admin, { description: null, icon: null })
      expect(response.statusCode, response.body).toBe(200)
      expect(response.json().data.category).toMatchObject({ name: 'Clearable', description: null, icon: null, sort_order: 3 })
      expect(await categoryAs(admin, category.id)).toMatchObject({ description: null, icon: null })
    })

    it('answers with the server_count of the category', async () => {
      const category = await createCategory(call, admin, { name: 'Counted On Update' })
      await createServer(call, admin, { name: 'Counted Update Server', category_id: category.id })
      const response = await call('PUT', `${CATEGORIES}/${category.id}`, admin, { icon: 'x' })
      expect(response.json().data.category.server_count).toBe(1)
    })

    it('renames a category to another case of its own name', async () => {
      const category = await createCategory(call, admin, { name: 'case shifter' })
      const response = await call('PUT', `${CATEGORIES}/${category.id}`, admin, { name: 'Case Shifter' })
      expect(response.statusCode, response.body).toBe(200)
      expect(response.json().data.category.name).toBe('Case Shifter')
      expect((await categoryAs(admin, category.id))?.name).toBe('Case Shifter')
    })

    let renameTarget: CategoryBody | undefined
    it.each(['Rename Target', 'rename target', 'RENAME TARGET', ' Rename Target '])(
      'refuses renaming onto another category\'s name (%j): 409 CATEGORY_NAME_TAKEN, nothing changed',
      async (name) => {
        renameTarget ??= await createCategory(call, admin, { name: 'Rename Target' })
        const source = await createCategory(call, admin, { name: `Rename Source ${++seq}`, sort_order: 4 })
        expectConflict(await call('PUT', `${CATEGORIES}/${source.id}`, admin, { name, sort_order: 5 }))
        expect(await categoryAs(admin, source.id)).toEqual(source)
        expect(await categoryAs(admin, renameTarget.id)).toMatchObject({ name: 'Rename Target' })
      },
    )

    it('answers 404 NOT_FOUND for an unknown id', async () => {
      const response = await call('PUT', `${CATEGORIES}/${UNKNOWN_ID}`, admin, { name: 'Ghost' })
      expect(response.statusCode).toBe(404)
      expect(response.json()).toMatchObject({ success: false, code: 'NOT_FOUND' })
    })

    const invalid: Array<[string, unknown, string]> = [
      ['an empty body', {}, 'body'],
      ['an empty name', { name: '' }, 'name'],
      ['a blank name', { name: '  ' }, 'name'],
      ['a null name', { name: null }, 'name'],
      ['a name of 101 characters', { name: 'n'.repeat(101) }, 'name'],
      ['a null sort_order', { sort_order: null }, 'sort_order'],
      ['sort_order 1 000 001', { sort_order: 1_000_001 }, 'sort_order'],
      ['an unknown field', { name: 'Fine', slug: 'fine' }, 'slug'],
    ]
    it.each(invalid)('refuses %s: 400 VALIDATION_ERROR, nothing changed', async (_, payload, field) => {
      const category = await createCategory(call, admin, { name: `Stays Put ${++seq}`, sort_order: 2 })
      expectValidationError(await call('PUT', `${CATEGORIES}/${category.id}`, admin, payload), field)
      expect(await categoryAs(admin, category.id)).toEqual(category)
    })

    it('answers 403 to a global_user and 401 without credentials (before validation), nothing changed', async () => {
      const category = await createCategory(call, admin, { name: 'Guarded Update' })
      const forbidden = await call('PUT', `${CATEGORIES}/${category.id}`, member, { name: 'Hijacked' })
      expect(forbidden.statusCode).toBe(403)
      expect(forbidden.json()).toMatchObject({ code: 'FORBIDDEN', details: { required_permission: 'mcp.categories.manage' } })
      for (const payload of [{ name: 'Hijacked' }, {}]) {
        const anonymous = await call('PUT', `${CATEGORIES}/${category.id}`, undefined, payload)
        expect(anonymous.statusCode).toBe(401)
        expect(anonymous.json().code).toBe('UNAUTHORIZED')
      }
      expect((await asBearer('PUT', `${CATEGORIES}/${category.id}`, adminReadToken, { name: 'Hijacked' })).statusCode).toBe(401)
      expect(await categoryAs(admin, category.id)).toEqual(category)
    })
  })

  describe('DELETE /api/mcp/categories/:id', () => {
    it('uncategorizes its servers (their updated_at moves), leaves others alone, and is gone', async () => {
      const doomed = await createCategory(call, admin, { name: 'Doomed Category' })
      const survivor = await createCategory(call, admin, { name: 'Surviving Category' })
      const inside = [
        await createServer(call, admin, { name: 'Doomed Server One', category_id: doomed.id }),
        await createServer(call, admin, { name: 'Doomed Server Two', category_id: doomed.id }),
      ]
      const teamServer = await insertTeamServer(app.services.database, teamId, 'Doomed Team Server')
      await setCategory(teamServer, doomed.id)
      const outside = await createServer(call, admin, { name: 'Surviving Server', category_id: survivor.id })
      clock.advance(60_000)

      const response = await call('DELETE', `${CATEGORIES}/${doomed.id}`, admin)
      expect(response.statusCode, response.body).toBe(200)
      expect(response.json()).toMatchObject({ success: true, message: expect.stringContaining('3 servers') })

      for (const server of inside) {
        const after = await serverAs(admin, server.id)
        expect(after.category_id).toBeNull()
        expect(after.updated_at).toBe(new Date(clock.now()).toISOString())
        expect(Date.parse(after.updated_at)).toBeGreaterThan(Date.parse(server.updated_at))
      }
      expect((await serverAs(member, teamServer)).category_id).toBeNull()
      expect(await serverAs(admin, outside.id)).toEqual(outside)
      const [[stillIn]] = await rawRows(app.services.database, sql`select count(*) from mcp_servers where category_id = ${doomed.id}`) as [[unknown]]
      expect(Number(stillIn)).toBe(0)

      expect(await categoryAs(admin, doomed.id)).toBeUndefined()
      expect(await countOf(admin, survivor.id)).toBe(1)
      const again = await call('PUT', `${CATEGORIES}/${doomed.id}`, admin, { name: 'Resurrected' })
      expect(again.statusCode).toBe(404)
      expect(again.json().code).toBe('NOT_FOUND')
      const twice = await call('DELETE', `${CATEGORIES}/${doomed.id}`, admin)
      expect(twice.statusCode).toBe(404)
      // The name is free again.
      expect((await createCategory(call, admin, { name: 'doomed category' })).name).toBe('doomed category')
    })

    it('answers 404 NOT_FOUND for an unknown id', async () => {
      const response = await call('DELETE', `${CATEGORIES}/${UNKNOWN_ID}`, admin)
      expect(response.statusCode).toBe(404)
      expect(response.json()).toMatchObject({ success: false, code: 'NOT_FOUND' })
    })

    it('answers 403 to a global_user, 401 without credentials or with a bearer token; the category stays', async () => {
      const category = await createCategory(call, admin, { name: 'Guarded Delete' })
      const forbidden = await call('DELETE', `${CATEGORIES}/${category.id}`, outsider)
      expect(forbidden.statusCode).toBe(403)
      expect(forbidden.json()).toMatchObject({ code: 'FORBIDDEN', details: { required_permission: 'mcp.categories.manage' } })
      expect((await call('DELETE', `${CATEGORIES}/${category.id}`)).statusCode).toBe(401)
      expect((await asBearer('DELETE', `${CATEGORIES}/${category.id}`, adminReadToken)).statusCode).toBe(401)
      expect(await categoryAs(admin, category.id)).toEqual(category)
    })
  })

  describe('audit', () => {
    it('records catalogue.category_created, _updated and _deleted with the admin as actor and the category as target', async () => {
      const category = await createCategory(call, admin, { name: 'Audited Category' })
      const created = (await auditEvents('catalogue.category_created')).find((event) => event.target === category.id)
      expect(created).toMatchObject({ type: 'catalogue.category_created', actor_id: admin.id, target: category.id, details: { name: 'Audited Category' } })

      expect((await call('PUT', `${CATEGORIES}/${category.id}`, admin, { icon: 'scroll' })).statusCode).toBe(200)
      const updated = (await auditEvents('catalogue.category_updated')).find((event) => event.target === category.id)
      expect(updated).toMatchObject({ type: 'catalogue.category_updated', actor_id: admin.id, target: category.id })

      await createServer(call, admin, { name: 'Audited Category Member', category_id: category.id })
      expect((await call('DELETE', `${CATEGORIES}/${category.id}`, admin)).statusCode).toBe(200)
      const deleted = (await auditEvents('catalogue.category_deleted')).find((event) => event.target === category.id)
      expect(deleted).toMatchObject({ type: 'catalogue.category_deleted', actor_id: admin.id, target: category.id, details: { uncategorized: 1 } })
    })

    it('records nothing for a refused change', async () => {
      await createCategory(call, admin, { name: 'Audit Taken' })
      const other = await createCategory(call, admin, { name: 'Audit Other' })
      const [created, updated, deleted] = await Promise.all([
        auditEvents('catalogue.category_created'), auditEvents('catalogue.category_updated'), auditEvents('catalogue.category_deleted'),
      ])
      expect((await call('POST', CATEGORIES, admin, { name: 'audit taken' })).statusCode).toBe(409)
      expect((await call('PUT', `${CATEGORIES}/${other.id}`, admin, { name: 'AUDIT TAKEN' })).statusCode).toBe(409)
      expect((await call('PUT', `${CATEGORIES}/${UNKNOWN_ID}`, admin, { icon: 'x' })).statusCode).toBe(404)
      expect((await call('DELETE', `${CATEGORIES}/${UNKNOWN_ID}`, admin)).statusCode).toBe(404)
      expect((await call('POST', CATEGORIES, member, { name: 'By A User' })).statusCode).toBe(403)
      expect((await auditEvents('catalogue.category_created')).map((event) => event.id)).toEqual(created.map((event) => event.id))
      expect((await auditEvents('catalogue.category_updated')).map((event) => event.id)).toEqual(updated.map((event) => event.id))
      expect((await auditEvents('catalogue.category_deleted')).map((event) => event.id)).toEqual(deleted.map((event) => event.id))
    })
  })
})
