import type { FastifyInstance, LightMyRequestResponse } from 'fastify'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createTestContext, type TestContext } from '../helpers/app.js'
import { DIALECTS } from '../helpers/database.js'
import { client, ROOMY_LIMITS, signUp, type Account, type Call } from '../helpers/teams.js'

/**
 * The example plugin of the repository (plugins/notes), loaded from the default PLUGINS_DIR: it
 * must keep working, and keep each user's notes private, since authors copy it.
 */

interface Note { id: string; owner_id: string; title: string; body?: string; pinned?: boolean; created_at: string; updated_at: string }
interface AuditEvent { type: string; actor_id: string | null; target: string | null; details: Record<string, unknown> }

const GREETING_KEY = 'plugin.notes.greeting'
const DEFAULT_GREETING = 'Welcome to the notes.'
const MODERATED = 'plugin.item_deleted_by_moderator'
const ISO = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/

function expectError(response: LightMyRequestResponse, status: number, code: string): void {
  expect(response.statusCode, response.body).toBe(status)
  expect(response.json()).toMatchObject({ success: false, code })
}

describe.each(DIALECTS)('the example notes plugin on %s', (dialect) => {
  let ctx: TestContext
  let app: FastifyInstance
  let call: Call
  /** The first account: global_admin, whose role grants users.edit: the notes' moderator. */
  let admin: Account
  /** A global_user: notes need a session, no permission. */
  let user: Account
  /** Another global_user, whose notes `user` must not reach. */
  let other: Account

  const summary = async (by: Account = user) => {
    const response = await call('GET', '/api/plugin/notes/summary', by)
    expect(response.statusCode, response.body).toBe(200)
    expect(response.json().success).toBe(true)
    return response.json().data as { greeting: string; total: number }
  }
  const create = async (document: Record<string, unknown>, by: Account = user): Promise<Note> => {
    const response = await call('POST', '/api/plugin/notes/notes', by, document)
    expect(response.statusCode, response.body).toBe(201)
    expect(response.json()).toMatchObject({ success: true, message: 'Item created.' })
    return response.json().data.item
  }
  /** Every note `by` reaches through the list route. */
  const listed = async (by: Account): Promise<Note[]> => {
    const response = await call('GET', '/api/plugin/notes/notes?limit=100', by)
    expect(response.statusCode, response.body).toBe(200)
    const { items, pagination } = response.json().data as { items: Note[]; pagination: { total: number } }
    expect(pagination.total).toBe(items.length)
    return items
  }
  const moderationEvents = async (): Promise<AuditEvent[]> => {
    const response = await call('GET', `/api/admin/audit-log?type=${MODERATED}&limit=100`, admin)
    expect(response.statusCode, response.body).toBe(200)
    return response.json().data.events
  }

  beforeAll(async () => {
    ctx = await createTestContext(dialect)
    // No PLUGINS_DIR: the default ./plugins of the repository.
    ;({ app } = await ctx.build({ limits: ROOMY_LIMITS }))
    call = client(app)
    admin = await signUp(app, `notes_admin_${dialect}`)
    user = await signUp(app, `notes_user_${dialect}`)
    other = await signUp(app, `notes_other_${dialect}`)
  })
  afterAll(() => ctx.close())

  it('is listed as loaded: version 2.0.0, the notes collection, six routes', async () => {
    const response = await call('GET', '/api/admin/plugins', admin)
    expect(response.statusCode, response.body).toBe(200)
    const notes = (response.json().data.plugins as Array<{ id: string }>).find((plugin) => plugin.id === 'notes')
    expect(notes).toEqual({
      id: 'notes',
      name: 'Notes',
      version: '2.0.0',
      description: 'Private notes for signed-in users: a collection and a summary route.',
      status: 'loaded',
      // List, get, create, replace, delete, and the summary.
      route_count: 6,
      collections: ['notes'],
    })
  })

  it('round trip: create, list, get, replace, delete', async () => {
    const before = (await summary()).total
    const note = await create({ title: 'First', body: 'Some text', pinned: true })
    // The note belongs to its author.
    expect(note).toEqual({ id: expect.any(String), owner_id: user.id, title: 'First', body: 'Some text', pinned: true, created_at: expect.stringMatching(ISO), updated_at: expect.stringMatching(ISO) })
    const second = await create({ title: 'Second' })
    expect(second).not.toHaveProperty('body')

    const list = await call('GET', '/api/plugin/notes/notes?limit=100', user)
    expect(list.statusCode, list.body).toBe(200)
    const { items, pagination } = list.json().data as { items: Note[]; pagination: { total: number; limit: number; offset: number; has_more: boolean } }
    expect(pagination).toEqual({ total: before + 2, limit: 100, offset: 0, has_more: false })
    // Creation order: the newer note last.
    expect(items.slice(-2).map((item) => item.id)).toEqual([note.id, second.id])
    const page = await call('GET', `/api/plugin/notes/notes?limit=1&offset=${before}`, user)
    expect(page.json().data.items.map((item: Note) => item.id)).toEqual([note.id])
    expect(page.json().data.pagination).toMatchObject({ total: before + 2, has_more: true })

    const fetched = await call('GET', `/api/plugin/notes/notes/${note.id}`, user)
    expect(fetched.statusCode, fetched.body).toBe(200)
    expect(fetched.json().data.item).toEqual(note)

    const replaced = await call('PUT', `/api/plugin/notes/notes/${note.id}`, user, { title: 'First, edited' })
    expect(replaced.statusCode, replaced.body).toBe(200)
    // The whole document is replaced: body and pinned are gone; the id and creation time stay.
    expect(replaced.json().data.item).toEqual({ id: note.id, owner_id: user.id, title: 'First, edited', created_at: note.created_at, updated_at: expect.stringMatching(ISO) })
    expect((await call('GET', `/api/plugin/notes/notes/${note.id}`, user)).json().data.item.title).toBe('First, edited')

    const deleted = await call('DELETE', `/api/plugin/notes/notes/${note.id}`, user)
    expect(deleted.statusCode, deleted.body).toBe(200)
    expect(deleted.json()).toEqual({ success: true, message: 'Item deleted.' })
    expectError(await call('GET', `/api/plugin/notes/notes/${note.id}`, user), 404, 'NOT_FOUND')
    expectError(await call('DELETE', `/api/plugin/notes/notes/${note.id}`, user), 404, 'NOT_FOUND')
    expectError(await call('PUT', `/api/plugin/notes/notes/${note.id}`, user, { title: 'Gone' }), 404, 'NOT_FOUND')
    expect((await summary()).total).toBe(before + 1)
  })

  it("each user lists only their own notes; another user's note answers 404 and stays untouched", async () => {
    const mine = await create({ title: 'Mine', body: 'private' }, user)
    const theirs = await create({ title: 'Theirs', body: 'private too' }, other)
    expect(theirs.owner_id).toBe(other.id)

    const byUser = await listed(user)
    const byOther = await listed(other)
    expect(byUser.map((note) => note.id)).toContain(mine.id)
    expect(byUser.map((note) => note.id)).not.toContain(theirs.id)
    expect(byUser.every((note) => note.owner_id === user.id)).toBe(true)
    expect(byOther.map((note) => note.id)).toEqual([theirs.id])

    // The same answer as for an id that does not exist: nothing confirms the note is there.
    const unknown = await call('GET', '/api/plugin/notes/notes/01900000-0000-7000-8000-000000000000', user)
    expectError(unknown, 404, 'NOT_FOUND')
    for (const [method, payload] of [['GET'], ['PUT', { title: 'Taken over' }], ['DELETE']] as Array<[Parameters<Call>[0], unknown?]>) {
      const response = await call(method, `/api/plugin/notes/notes/${theirs.id}`, user, payload)
      expectError(response, 404, 'NOT_FOUND')
      expect(response.json()).toEqual(unknown.json())
    }
    const kept = await call('GET', `/api/plugin/notes/notes/${theirs.id}`, other)
    expect(kept.statusCode, kept.body).toBe(200)
    expect(kept.json().data.item).toEqual(theirs)
    // Each summary counts its caller's notes only.
    expect((await summary(other)).total).toBe(1)
    expect((await summary(user)).total).toBe(byUser.length)
  })

  it("the admin moderates: lists everyone's notes, deletes any (audited), cannot change another's", async () => {
    const reported = await create({ title: 'Reported' }, other)
    const own = await create({ title: "Admin's own" }, admin)
    const all = await listed(admin)
    expect(all.map((note) => note.id)).toEqual(expect.arrayContaining([reported.id, own.id]))
    expect(new Set(all.map((note) => note.owner_id))).toEqual(new Set([user.id, other.id, admin.id]))
    const read = await call('GET', `/api/plugin/notes/notes/${reported.id}`, admin)
    expect(read.statusCode, read.body).toBe(200)
    expect(read.json().data.item).toEqual(reported)
    // Only the owner changes a note.
    expectError(await call('PUT', `/api/plugin/notes/notes/${reported.id}`, admin, { title: 'Edited by the admin' }), 404, 'NOT_FOUND')
    expect((await call('GET', `/api/plugin/notes/notes/${reported.id}`, other)).json().data.item.title).toBe('Reported')

    const before = await moderationEvents()
    const deleted = await call('DELETE', `/api/plugin/notes/notes/${reported.id}`, admin)
    expect(deleted.statusCode, deleted.body).toBe(200)
    expect(deleted.json()).toEqual({ success: true, message: 'Item deleted.' })
    expectError(await call('GET', `/api/plugin/notes/notes/${reported.id}`, other), 404, 'NOT_FOUND')
    const events = await moderationEvents()
    expect(events).toHaveLength(before.length + 1)
    expect(events[0]).toMatchObject({
      type: MODERATED,
      actor_id: admin.id,
      target: reported.id,
      details: { plugin: 'notes', collection: 'notes', owner_id: other.id },
    })
    // The note's content stays out of the audit log.
    expect(JSON.stringify(events[0])).not.toContain('Reported')

    // Deleting one's own note is no moderation: no event.
    expect((await call('DELETE', `/api/plugin/notes/notes/${own.id}`, admin)).statusCode).toBe(200)
    expect(await moderationEvents()).toHaveLength(before.length + 1)
    expectError(await call('DELETE', `/api/plugin/notes/notes/${own.id}`, admin), 404, 'NOT_FOUND')
  })

  it("a deleted user's notes go with the account", async () => {
    const leaving = await signUp(app, `notes_leaving_${dialect}`)
    const note = await create({ title: 'Soon gone' }, leaving)
    expect((await call('DELETE', `/api/admin/users/${leaving.id}`, admin)).statusCode).toBe(200)
    expect((await listed(admin)).map((item) => item.id)).not.toContain(note.id)
    expectError(await call('GET', `/api/plugin/notes/notes/${note.id}`, admin), 404, 'NOT_FOUND')
  })

  it('documents are checked against the note schema', async () => {
    const before = (await summary()).total
    for (const document of [{}, { title: '' }, { title: 'x'.repeat(201) }, { title: 'ok', color: 'red' }, { title: 'ok', pinned: 'yes' }, { title: 5 }]) {
      expectError(await call('POST', '/api/plugin/notes/notes', user, document), 400, 'VALIDATION_ERROR')
    }
    const note = await create({ title: 'Valid' })
    expectError(await call('PUT', `/api/plugin/notes/notes/${note.id}`, user, { title: 'ok', id: 'forged' }), 400, 'VALIDATION_ERROR')
    expect((await summary()).total).toBe(before + 1)
  })

  it('/summary shows the greeting and the number of notes', async () => {
    const { total } = await summary()
    const all = await call('GET', '/api/plugin/notes/notes', user)
    expect(total).toBe(all.json().data.pagination.total)
    expect(await summary()).toEqual({ greeting: DEFAULT_GREETING, total })
    await create({ title: 'One more' })
    expect(await summary()).toEqual({ greeting: DEFAULT_GREETING, total: total + 1 })
  })

  it('/summary reflects a changed plugin.notes.greeting at once', async () => {
    const setting = await call('GET', `/api/settings/${GREETING_KEY}`, admin)
    expect(setting.statusCode, setting.body).toBe(200)
    expect(setting.json().data.setting).toMatchObject({ key: GREETING_KEY, name: 'greeting', type: 'string', value: DEFAULT_GREETING, encrypted: false })
    const group = await call('GET', '/api/settings/groups/plugin.notes', admin)
    expect(group.statusCode, group.body).toBe(200)
    expect(group.json().data.group).toMatchObject({ id: 'plugin.notes', name: 'Notes' })

    const greeting = `Hello, ${dialect} notes!`
    const changed = await call('PUT', `/api/settings/${GREETING_KEY}`, admin, { value: greeting })
    expect(changed.statusCode, changed.body).toBe(200)
    expect((await summary()).greeting).toBe(greeting)
    expectError(await call('PUT', `/api/settings/${GREETING_KEY}`, admin, { value: 42 }), 400, 'VALIDATION_ERROR')
    expect((await summary()).greeting).toBe(greeting)

    expect((await call('PUT', `/api/settings/${GREETING_KEY}`, admin, { value: DEFAULT_GREETING })).statusCode).toBe(200)
    expect((await summary()).greeting).toBe(DEFAULT_GREETING)
  })

  it('anonymous callers get 401 on every route', async () => {
    const note = await create({ title: 'Private to signed-in users' })
    const anonymous: Array<[Parameters<Call>[0], string, unknown?]> = [
      ['GET', '/api/plugin/notes/summary'],
      ['GET', '/api/plugin/notes/notes'],
      ['POST', '/api/plugin/notes/notes', { title: 'Anonymous' }],
      ['GET', `/api/plugin/notes/notes/${note.id}`],
      ['PUT', `/api/plugin/notes/notes/${note.id}`, { title: 'Anonymous' }],
      ['DELETE', `/api/plugin/notes/notes/${note.id}`],
    ]
    for (const [method, url, payload] of anonymous) {
      const response = await call(method, url, undefined, payload)
      expectError(response, 401, 'UNAUTHORIZED')
    }
    // Nothing was changed by them.
    const kept = await call('GET', `/api/plugin/notes/notes/${note.id}`, user)
    expect(kept.json().data.item.title).toBe('Private to signed-in users')
  })
})
