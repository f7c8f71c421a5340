import { fileURLToPath } from 'node:url'
import { sql } from 'drizzle-orm'
import type { FastifyInstance, LightMyRequestResponse } from 'fastify'
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest'
import { createTestContext, type TestContext } from '../helpers/app.js'
import { manualClock } from '../helpers/clock.js'
import { DIALECTS } from '../helpers/database.js'
import { bearer, issueTokens } from '../helpers/oauth.js'
import { expectNoServerError, fire, statuses } from '../helpers/races.js'
import { rawRows } from '../helpers/sql.js'
import { client, ROOMY_LIMITS, signUp, type Account, type Call } from '../helpers/teams.js'

/** alpha (notes, shared with mcp:read, secrets with settings.edit, store routes), beta (notes), loose (refused). */
const PLUGINS_DIR = fileURLToPath(new URL('../fixtures/plugins/collections', import.meta.url))

const ALPHA = '/api/plugin/alpha/notes'
const BETA = '/api/plugin/beta/notes'
const SHARED = '/api/plugin/alpha/shared'
const SECRETS = '/api/plugin/alpha/secrets'
const UUID_V7 = /^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/
/** A well-formed UUIDv7 that no item has. */
const UNKNOWN_ID = '01890a5d-ac96-774b-bcce-b302099a8057'
const DOCUMENT_LIMIT = 64 * 1024
const JSON_HEADERS = { 'content-type': 'application/json' }

interface Item { id: string; created_at: string; updated_at: string; [field: string]: unknown }
interface Page { items: Item[]; pagination: { total: number; limit: number; offset: number; has_more: boolean } }

function expectStatus(response: LightMyRequestResponse, status: number): void {
  expect(response.statusCode, response.body).toBe(status)
}

function expectError(response: LightMyRequestResponse, status: number, code: string): Record<string, unknown> {
  expectStatus(response, status)
  const body = response.json()
  expect(body).toMatchObject({ success: false, code })
  expect(typeof body.error).toBe('string')
  return body
}

function expectNotFound(response: LightMyRequestResponse): void {
  expect(expectError(response, 404, 'NOT_FOUND')).toEqual({ success: false, code: 'NOT_FOUND', error: expect.any(String) })
}

/** A 400 VALIDATION_ERROR whose details name each of `fields` (in `where`). */
function expectInvalid(response: LightMyRequestResponse, fields: string[], where = 'body'): Array<{ field: string; message: string; in: string }> {
  const body = expectError(response, 400, 'VALIDATION_ERROR')
  const details = body.details as Array<{ field: string; message: string; in: string }>
  expect(Array.isArray(details), response.body).toBe(true)
  for (const field of fields) expect(details, response.body).toContainEqual({ field, message: expect.any(String), in: where })
  return details
}

describe.each(DIALECTS)('plugin collections on %s', (dialect) => {
  let ctx: TestContext
  let app: FastifyInstance
  let call: Call
  const clock = manualClock(Date.now())
  /** The first account: global_admin. */
  let admin: Account
  /** A global_user. */
  let user: Account

  const rows = (query: ReturnType<typeof sql>) => rawRows(app.services.database, query)
  /** How many items the table holds, all plugins together, or those of one collection. */
  const countItems = async (pluginId?: string, collection?: string): Promise<number> => {
    const [[n]] = (pluginId === undefined
      ? await rows(sql`select count(*) from plugin_items`)
      : await rows(sql`select count(*) from plugin_items where plugin_id = ${pluginId} and collection = ${collection}`)) as [[unknown]]
    return Number(n)
  }
  /** The stored document of one item, parsed, or undefined when there is no row. */
  const storedDocument = async (pluginId: string, collection: string, id: string): Promise<unknown> => {
    const found = await rows(sql`select document from plugin_items where plugin_id = ${pluginId} and collection = ${collection} and id = ${id}`)
    if (found.length === 0) return undefined
    const value = found[0]![0]
    return typeof value === 'string' ? JSON.parse(value) : value
  }

  const create = async (url: string, document: Record<string, unknown>, account: Account = user): Promise<Item> => {
    const response = await call('POST', url, account, document)
    expectStatus(response, 201)
    return response.json().data.item
  }
  const page = async (url: string, account: Account = user): Promise<Page> => {
    const response = await call('GET', url, account)
    expectStatus(response, 200)
    return response.json().data
  }
  /** Empties a collection through its own API. */
  const empty = async (url: string, account: Account = user) => {
    for (let items = (await page(`${url}?limit=100`, account)).items; items.length > 0; items = (await page(`${url}?limit=100`, account)).items) {
      for (const item of items) expectStatus(await call('DELETE', `${url}/${item.id}`, account), 200)
    }
  }
  /** A raw request with a session cookie (or none) and a body sent as given. */
  const send = (method: 'POST' | 'PUT', url: string, payload: string, headers: Record<string, string>, account?: Account) =>
    app.inject({ method, url, payload, headers: { ...headers, ...(account === undefined ? {} : { cookie: account.cookie }) } })

  beforeAll(async () => {
    ctx = await createTestContext(dialect)
    app = (await ctx.build({ env: { PLUGINS_DIR }, limits: ROOMY_LIMITS, clock })).app
    call = client(app)
    admin = await signUp(app, `coll_admin_${dialect}`)
    user = await signUp(app, `coll_user_${dialect}`)
  })
  afterAll(() => ctx.close())

  beforeEach(async () => {
    await empty(ALPHA)
    await empty(BETA)
    await empty(SHARED)
    await empty(SECRETS, admin)
    expect(await countItems()).toBe(0)
  })

  describe('loading', () => {
    it('loads both fixture plugins with their collections and fails the one whose schema admits unknown properties', async () => {
      const response = await call('GET', '/api/admin/plugins', admin)
      expectStatus(response, 200)
      const plugins = response.json().data.plugins as Array<{ id: string; status: string; collections: string[]; error?: string }>
      const byId = Object.fromEntries(plugins.map((plugin) => [plugin.id, plugin]))
      expect(byId.alpha).toMatchObject({ status: 'loaded', collections: ['notes', 'shared', 'secrets'] })
      expect(byId.beta).toMatchObject({ status: 'loaded', collections: ['notes'] })
      expect(byId.loose).toMatchObject({ status: 'failed' })
      expect(byId.loose!.error).toMatch(/additionalProperties: false/)
      expect(byId.alpha!.error).toBeUndefined()

      // The failed plugin serves nothing, and wrote nothing.
      expectNotFound(await call('GET', '/api/plugin/loose/notes', user))
      expectNotFound(await call('POST', '/api/plugin/loose/notes', user, { title: 'x', extra: 1 }))
      expect(await countItems()).toBe(0)
    })
  })

  describe('CRUD', () => {
    it('creates, reads, lists, replaces and deletes an item with the documented envelopes', async () => {
      clock.advance(1_000)
      const createdAt = new Date(clock.now()).toISOString()
      const created = await call('POST', ALPHA, user, { title: 'First', body: 'hello', pinned: true, priority: 3 })
      expectStatus(created, 201)
      const item = created.json().data.item as Item
      expect(created.json()).toEqual({
        success: true,
        message: expect.any(String),
        data: { item: { id: item.id, title: 'First', body: 'hello', pinned: true, priority: 3, created_at: createdAt, updated_at: createdAt } },
      })
      expect(item.id).toMatch(UUID_V7)
      expect(await rows(sql`select plugin_id, collection, id from plugin_items`)).toEqual([['alpha', 'notes', item.id]])
      expect(await storedDocument('alpha', 'notes', item.id)).toEqual({ title: 'First', body: 'hello', pinned: true, priority: 3 })

      const got = await call('GET', `${ALPHA}/${item.id}`, user)
      expectStatus(got, 200)
      expect(got.json()).toEqual({ success: true, data: { item } })

      const listed = await call('GET', ALPHA, user)
      expectStatus(listed, 200)
      expect(listed.json()).toEqual({ success: true, data: { items: [item], pagination: { total: 1, limit: 20, offset: 0, has_more: false } } })

      // PUT replaces the whole document: what it omits is gone; created_at stays, updated_at moves.
      clock.advance(5_000)
      const replacedAt = new Date(clock.now()).toISOString()
      const replaced = await call('PUT', `${ALPHA}/${item.id}`, user, { title: 'Renamed', tags: ['a', 'b'] })
      expectStatus(replaced, 200)
      const expected = { id: item.id, title: 'Renamed', tags: ['a', 'b'], created_at: createdAt, updated_at: replacedAt }
      expect(replaced.json()).toEqual({ success: true, message: expect.any(String), data: { item: expected } })
      expect((await call('GET', `${ALPHA}/${item.id}`, user)).json()).toEqual({ success: true, data: { item: expected } })
      expect(await storedDocument('alpha', 'notes', item.id)).toEqual({ title: 'Renamed', tags: ['a', 'b'] })
      const [[storedCreated, storedUpdated]] = (await rows(sql`select created_at, updated_at from plugin_items where id = ${item.id}`)) as [[unknown, unknown]]
      expect(new Date(storedCreated as string | number).getTime()).toBe(Date.parse(createdAt))
      expect(new Date(storedUpdated as string | number).getTime()).toBe(Date.parse(replacedAt))

      const deleted = await call('DELETE', `${ALPHA}/${item.id}`, user)
      expectStatus(deleted, 200)
      expect(deleted.json()).toEqual({ success: true, message: expect.any(String) })
      expectNotFound(await call('GET', `${ALPHA}/${item.id}`, user))
      expectNotFound(await call('PUT', `${ALPHA}/${item.id}`, user, { title: 'Back?' }))
      expectNotFound(await call('DELETE', `${ALPHA}/${item.id}`, user))
      expect(await countItems()).toBe(0)
      expect((await page(ALPHA)).pagination).toEqual({ total: 0, limit: 20, offset: 0, has_more: false })
    })

    it('lists in creation order with total, has_more, limit and offset', async () => {
      const created: Item[] = []
      for (let i = 0; i < 5; i++) {
        clock.advance(1_000)
        created.push(await create(ALPHA, { title: `n${i}` }))
      }
      const ids = created.map((item) => item.id)

      const first = await page(`${ALPHA}?limit=2`)
      expect(first.items).toEqual(created.slice(0, 2))
      expect(first.pagination).toEqual({ total: 5, limit: 2, offset: 0, has_more: true })
      const middle = await page(`${ALPHA}?limit=2&offset=2`)
      expect(middle.items.map((item) => item.id)).toEqual(ids.slice(2, 4))
      expect(middle.pagination).toEqual({ total: 5, limit: 2, offset: 2, has_more: true })
      const last = await page(`${ALPHA}?limit=2&offset=4`)
      expect(last.items.map((item) => item.id)).toEqual(ids.slice(4))
      expect(last.pagination).toEqual({ total: 5, limit: 2, offset: 4, has_more: false })
      const exact = await page(`${ALPHA}?limit=5`)
      expect(exact.pagination).toEqual({ total: 5, limit: 5, offset: 0, has_more: false })
      const beyond = await page(`${ALPHA}?offset=10`)
      expect(beyond).toEqual({ items: [], pagination: { total: 5, limit: 20, offset: 10, has_more: false } })
      const all = await page(ALPHA)
      expect(all.items.map((item) => item.title)).toEqual(['n0', 'n1', 'n2', 'n3', 'n4'])
      expect(all.items).toEqual(created)

      // A replaced item keeps its place: the order is creation, not modification.
      clock.advance(1_000)
      expectStatus(await call('PUT', `${ALPHA}/${ids[0]}`, user, { title: 'n0 again' }), 200)
      expect((await page(ALPHA)).items.map((item) => item.id)).toEqual(ids)
    })

    it('serves the default page of 20 and at most 100', async () => {
      for (let i = 0; i < 22; i++) await create(ALPHA, { title: `p${i}` })
      const byDefault = await page(ALPHA)
      expect(byDefault.items).toHaveLength(20)
      expect(byDefault.pagination).toEqual({ total: 22, limit: 20, offset: 0, has_more: true })
      const rest = await page(`${ALPHA}?offset=20`)
      expect(rest.items.map((item) => item.title)).toEqual(['p20', 'p21'])
      const widest = await page(`${ALPHA}?limit=100`)
      expect(widest.items).toHaveLength(22)
      expect(widest.pagination).toEqual({ total: 22, limit: 100, offset: 0, has_more: false })
    })
  })

  describe('validation', () => {
    let kept: Item
    beforeEach(async () => {
      kept = await create(ALPHA, { title: 'Kept', body: 'untouched' })
    })
    /** The table holds exactly the one item, as it was created. */
    const expectUnchanged = async () => {
      expect(await countItems()).toBe(1)
      expect(await storedDocument('alpha', 'notes', kept.id)).toEqual({ title: 'Kept', body: 'untouched' })
      expect((await call('GET', `${ALPHA}/${kept.id}`, user)).json().data.item).toEqual(kept)
    }

    it('refuses a document without a required field, naming it', async () => {
      const details = expectInvalid(await call('POST', ALPHA, user, { body: 'no title' }), ['title'])
      expect(details).toHaveLength(1)
      expectInvalid(await call('PUT', `${ALPHA}/${kept.id}`, user, { body: 'no title' }), ['title'])
      await expectUnchanged()
    })

    it('refuses a field of the wrong type or out of its bounds, naming it', async () => {
      expectInvalid(await call('POST', ALPHA, user, { title: 42 }), ['title'])
      expectInvalid(await call('POST', ALPHA, user, { title: 'ok', pinned: 'yes' }), ['pinned'])
      expectInvalid(await call('POST', ALPHA, user, { title: 'ok', priority: '3' }), ['priority'])
      expectInvalid(await call('POST', ALPHA, user, { title: 'ok', priority: 11 }), ['priority'])
      expectInvalid(await call('POST', ALPHA, user, { title: '' }), ['title'])
      expectInvalid(await call('POST', ALPHA, user, { title: 'x'.repeat(201) }), ['title'])
      expectInvalid(await call('POST', ALPHA, user, { title: 'ok', meta: { matrix: [[1, 'two']] } }), ['meta.matrix.0.1'])
      expectInvalid(await call('PUT', `${ALPHA}/${kept.id}`, user, { title: false }), ['title'])
      await expectUnchanged()
    })

    it('refuses unknown properties, at the top and nested', async () => {
      const top = expectInvalid(await call('POST', ALPHA, user, { title: 'ok', colour: 'red' }), ['colour'])
      expect(top).toEqual([{ field: 'colour', message: 'is not allowed', in: 'body' }])
      expectInvalid(await call('POST', ALPHA, user, { title: 'ok', meta: { colour: 'red' } }), ['meta.colour'])
      expectInvalid(await call('POST', ALPHA, user, { title: 'ok', meta: { links: [{ label: 'a', url: 'b', rel: 'c' }] } }), ['meta.links.0.rel'])
      // The item's own fields are not part of the document either.
      expectInvalid(await call('POST', ALPHA, user, { title: 'ok', id: 'mine' }), ['id'])
      expectInvalid(await call('PUT', `${ALPHA}/${kept.id}`, user, { title: 'ok', created_at: '2020-01-01T00:00:00.000Z' }), ['created_at'])
      await expectUnchanged()
    })

    it('refuses a body that is not a JSON object', async () => {
      for (const payload of ['[]', '"text"', '42', 'null']) {
        expectInvalid(await send('POST', ALPHA, payload, JSON_HEADERS, user), [])
      }
      await expectUnchanged()
    })

    it('answers 400 INVALID_JSON to malformed JSON and 415 to a body that is not JSON', async () => {
      expectError(await send('POST', ALPHA, '{"title": ', JSON_HEADERS, user), 400, 'INVALID_JSON')
      expectError(await send('PUT', `${ALPHA}/${kept.id}`, '{"title": "x",}', JSON_HEADERS, user), 400, 'INVALID_JSON')
      expectError(await send('POST', ALPHA, 'title=plain', { 'content-type': 'text/plain' }, user), 415, 'UNSUPPORTED_MEDIA_TYPE')
      expectError(await send('PUT', `${ALPHA}/${kept.id}`, 'title=plain', { 'content-type': 'text/plain' }, user), 415, 'UNSUPPORTED_MEDIA_TYPE')
      expectError(await send('POST', ALPHA, 'title=form', { 'content-type': 'application/x-www-form-urlencoded' }, user), 415, 'UNSUPPORTED_MEDIA_TYPE')
      expectError(await send('POST', ALPHA, '', JSON_HEADERS, user), 400, 'INVALID_JSON')
      // A member named __proto__ is refused by the parser, never merged into anything.
      expectError(await send('POST', ALPHA, '{"title":"x","__proto__":{"pinned":true}}', JSON_HEADERS, user), 400, 'INVALID_JSON')
      expectError(await send('POST', ALPHA, '{"title":"x"}', {}, user), 415, 'UNSUPPORTED_MEDIA_TYPE')
      await expectUnchanged()
    })

    it('takes a document of exactly 64 KiB and refuses one byte more with 413', async () => {
      const sized = (bytes: number) => {
        const frame = JSON.stringify({ title: 'big', body: '' })
        return JSON.stringify({ title: 'big', body: 'x'.repeat(bytes - frame.length) })
      }
      expect(Buffer.byteLength(sized(DOCUMENT_LIMIT))).toBe(DOCUMENT_LIMIT)

      const tooLarge = expectError(await send('POST', ALPHA, sized(DOCUMENT_LIMIT + 1), JSON_HEADERS, user), 413, 'PAYLOAD_TOO_LARGE')
      expect(tooLarge.error).toMatch(new RegExp(`${DOCUMENT_LIMIT} bytes`))
      expectError(await send('POST', ALPHA, sized(200_000), JSON_HEADERS, user), 413, 'PAYLOAD_TOO_LARGE')
      expectError(await send('PUT', `${ALPHA}/${kept.id}`, sized(DOCUMENT_LIMIT + 1), JSON_HEADERS, user), 413, 'PAYLOAD_TOO_LARGE')
      await expectUnchanged()

      const atLimit = await send('POST', ALPHA, sized(DOCUMENT_LIMIT), JSON_HEADERS, user)
      expectStatus(atLimit, 201)
      const big = atLimit.json().data.item as Item
      expect((big.body as string).length).toBe(DOCUMENT_LIMIT - JSON.stringify({ title: 'big', body: '' }).length)
      expect(await countItems()).toBe(2)
    })

    it('answers 404 for an unknown item id on GET, PUT and DELETE', async () => {
      for (const id of [UNKNOWN_ID, 'not-an-id', kept.id.toUpperCase()]) {
        expectNotFound(await call('GET', `${ALPHA}/${id}`, user))
        expectNotFound(await call('PUT', `${ALPHA}/${id}`, user, { title: 'ghost' }))
        expectNotFound(await call('DELETE', `${ALPHA}/${id}`, user))
      }
      // Ids no database can compare are refused before any query (PostgreSQL's text cannot hold NUL).
      for (const id of ['%00', 'a%00b']) {
        expectInvalid(await call('GET', `${ALPHA}/${id}`, user), ['itemId'], 'params')
        expectInvalid(await call('PUT', `${ALPHA}/${id}`, user, { title: 'ghost' }), ['itemId'], 'params')
        expectInvalid(await call('DELETE', `${ALPHA}/${id}`, user), ['itemId'], 'params')
      }
      await expectUnchanged()
    })

    it('refuses out-of-range or unknown list parameters with 400', async () => {
      expectInvalid(await call('GET', `${ALPHA}?limit=0`, user), ['limit'], 'querystring')
      expectInvalid(await call('GET', `${ALPHA}?limit=101`, user), ['limit'], 'querystring')
      expectInvalid(await call('GET', `${ALPHA}?limit=ten`, user), ['limit'], 'querystring')
      expectInvalid(await call('GET', `${ALPHA}?limit=2.5`, user), ['limit'], 'querystring')
      expectInvalid(await call('GET', `${ALPHA}?offset=-1`, user), ['offset'], 'querystring')
      expectInvalid(await call('GET', `${ALPHA}?offset=1000001`, user), ['offset'], 'querystring')
      expectInvalid(await call('GET', `${ALPHA}?limit=Infinity`, user), ['limit'], 'querystring')
      expectInvalid(await call('GET', `${ALPHA}?sort=title`, user), ['sort'], 'querystring')
      expectInvalid(await call('GET', `${ALPHA}/${'a'.repeat(101)}`, user), ['itemId'], 'params')
      // The bounds themselves are served.
      expect((await page(`${ALPHA}?limit=1&offset=1000000`)).pagination).toEqual({ total: 1, limit: 1, offset: 1_000_000, has_more: false })
      await expectUnchanged()
    })
  })

  describe('access', () => {
    it('answers 401 without a session, before looking at the body', async () => {
      expectError(await call('GET', ALPHA), 401, 'UNAUTHORIZED')
      expectError(await call('GET', `${ALPHA}/${UNKNOWN_ID}`), 401, 'UNAUTHORIZED')
      expectError(await call('POST', ALPHA, undefined, { title: 'anonymous' }), 401, 'UNAUTHORIZED')
      expectError(await call('DELETE', `${ALPHA}/${UNKNOWN_ID}`), 401, 'UNAUTHORIZED')
      expectError(await send('POST', ALPHA, '{"title": ', JSON_HEADERS), 401, 'UNAUTHORIZED')
      expectError(await send('POST', ALPHA, JSON.stringify({ title: 'x', body: 'y'.repeat(200_000) }), JSON_HEADERS), 401, 'UNAUTHORIZED')
      expectError(await send('PUT', `${ALPHA}/${UNKNOWN_ID}`, 'plain', { 'content-type': 'text/plain' }), 401, 'UNAUTHORIZED')
      expectError(await call('POST', ALPHA, undefined, { unknown: true }), 401, 'UNAUTHORIZED')
      expectError(await call('GET', ALPHA, { ...user, cookie: 'auth_session=forged' }), 401, 'UNAUTHORIZED')
      expect(await countItems()).toBe(0)
    })

    it('a collection with a permission: 403 for a plain user (whatever the body), served to an admin', async () => {
      const forbidden = (response: LightMyRequestResponse) =>
        expect(expectError(response, 403, 'FORBIDDEN').details).toEqual({ required_permission: 'settings.edit' })
      forbidden(await call('GET', SECRETS, user))
      forbidden(await call('POST', SECRETS, user, { label: 'mine' }))
      forbidden(await call('POST', SECRETS, user, { nonsense: 1 }))
      forbidden(await send('POST', SECRETS, '{"label": ', JSON_HEADERS, user))
      forbidden(await send('POST', SECRETS, JSON.stringify({ label: 'x'.repeat(100_000) }), JSON_HEADERS, user))
      expect(await countItems()).toBe(0)

      const secret = await create(SECRETS, { label: 'root only' }, admin)
      forbidden(await call('GET', `${SECRETS}/${secret.id}`, user))
      forbidden(await call('PUT', `${SECRETS}/${secret.id}`, user, { label: 'taken' }))
      forbidden(await call('DELETE', `${SECRETS}/${secret.id}`, user))
      expect(await storedDocument('alpha', 'secrets', secret.id)).toEqual({ label: 'root only' })

      const got = await call('GET', `${SECRETS}/${secret.id}`, admin)
      expectStatus(got, 200)
      expect(got.json().data.item).toEqual(secret)
      expect((await page(SECRETS, admin)).items).toEqual([secret])
      expectInvalid(await call('POST', SECRETS, admin, { nonsense: 1 }), ['label', 'nonsense'])
      // The collection is sessions only: a bearer token is refused even for an admin.
      const token = (await issueTokens(app, admin.cookie, 'mcp:read')).access_token
      expectError(await app.inject({ method: 'GET', url: SECRETS, headers: bearer(token) }), 401, 'UNAUTHORIZED')
    })

    it('a collection with a scope: a session or a bearer token with the scope; a token without it is 403', async () => {
      const scoped = (await issueTokens(app, user.cookie, 'mcp:read')).access_token
      const unscoped = (await issueTokens(app, user.cookie, 'account:read')).access_token

      const viaToken = await app.inject({ method: 'POST', url: SHARED, headers: bearer(scoped), payload: { text: 'from a token' } })
      expectStatus(viaToken, 201)
      const item = viaToken.json().data.item as Item
      const listed = await app.inject({ method: 'GET', url: SHARED, headers: bearer(scoped) })
      expectStatus(listed, 200)
      expect(listed.json().data.items).toEqual([item])
      const got = await app.inject({ method: 'GET', url: `${SHARED}/${item.id}`, headers: bearer(scoped) })
      expect(got.json()).toEqual({ success: true, data: { item } })
      // A session is admitted as well.
      expect((await page(SHARED)).items).toEqual([item])

      for (const request of [
        { method: 'GET' as const, url: SHARED },
        { method: 'GET' as const, url: `${SHARED}/${item.id}` },
        { method: 'POST' as const, url: SHARED, payload: { text: 'no scope' } },
        { method: 'PUT' as const, url: `${SHARED}/${item.id}`, payload: { text: 'no scope' } },
        { method: 'DELETE' as const, url: `${SHARED}/${item.id}` },
      ]) {
        const response = await app.inject({ ...request, headers: bearer(unscoped) })
        expect(expectError(response, 403, 'FORBIDDEN').details).toEqual({ required_scope: 'mcp:read' })
        expect(String(response.headers['www-authenticate'])).toMatch(/insufficient_scope/)
      }
      // Refused before the body is read.
      const malformed = await app.inject({ method: 'POST', url: SHARED, headers: { ...bearer(unscoped), ...JSON_HEADERS }, payload: '{"text": ' })
      expectError(malformed, 403, 'FORBIDDEN')
      expectError(await app.inject({ method: 'GET', url: SHARED, headers: bearer('not-a-token') }), 401, 'UNAUTHORIZED')
      expect(await countItems()).toBe(1)
      expect(await storedDocument('alpha', 'shared', item.id)).toEqual({ text: 'from a token' })
    })

    it('a collection without a scope admits sessions only: a bearer token is 401, even with a scope', async () => {
      const token = (await issueTokens(app, user.cookie, 'mcp:read')).access_token
      const mine = await create(ALPHA, { title: 'session only' })
      for (const request of [
        { method: 'GET' as const, url: ALPHA },
        { method: 'GET' as const, url: `${ALPHA}/${mine.id}` },
        { method: 'POST' as const, url: ALPHA, payload: { title: 'by token' } },
        { method: 'PUT' as const, url: `${ALPHA}/${mine.id}`, payload: { title: 'by token' } },
        { method: 'DELETE' as const, url: `${ALPHA}/${mine.id}` },
        { method: 'POST' as const, url: '/api/plugin/alpha/import', payload: { title: 'by token' } },
      ]) {
        expectError(await app.inject({ ...request, headers: bearer(token) }), 401, 'UNAUTHORIZED')
      }
      expect(await countItems()).toBe(1)
      expect(await storedDocument('alpha', 'notes', mine.id)).toEqual({ title: 'session only' })
    })

    it('any signed-in user shares a collection without a permission', async () => {
      const note = await create(ALPHA, { title: 'by the user' }, user)
      expect((await page(ALPHA, admin)).items).toEqual([note])
      expectStatus(await call('PUT', `${ALPHA}/${note.id}`, admin, { title: 'by the admin' }), 200)
      expect((await call('GET', `${ALPHA}/${note.id}`, user)).json().data.item.title).toBe('by the admin')
    })
  })

  describe('isolation', () => {
    it("an item of alpha's notes is unreachable through beta's notes, even by its exact id", async () => {
      const alphaItem = await create(ALPHA, { title: 'alpha only', body: 'secret to alpha' })
      const betaItem = await create(BETA, { title: 'beta only' })

      expectNotFound(await call('GET', `${BETA}/${alphaItem.id}`, user))
      expectNotFound(await call('PUT', `${BETA}/${alphaItem.id}`, user, { title: 'hijacked' }))
      expectNotFound(await call('DELETE', `${BETA}/${alphaItem.id}`, user))
      expectNotFound(await call('GET', `${ALPHA}/${betaItem.id}`, user))
      expectNotFound(await call('DELETE', `${ALPHA}/${betaItem.id}`, user))
      // Nor through another collection of the same plugin.
      expectNotFound(await call('GET', `${SHARED}/${alphaItem.id}`, user))
      expectNotFound(await call('PUT', `${SHARED}/${alphaItem.id}`, user, { text: 'hijacked' }))
      expectNotFound(await call('DELETE', `${SECRETS}/${alphaItem.id}`, admin))

      expect(await page(BETA)).toEqual({ items: [betaItem], pagination: { total: 1, limit: 20, offset: 0, has_more: false } })
      expect(await page(ALPHA)).toEqual({ items: [alphaItem], pagination: { total: 1, limit: 20, offset: 0, has_more: false } })
      expect((await page(SHARED)).pagination.total).toBe(0)

      // The store route of each plugin reads its own collection only.
      expect((await call('GET', `/api/plugin/alpha/peek/${alphaItem.id}`, user)).json()).toEqual({ success: true, data: { item: alphaItem } })
      expectNotFound(await call('GET', `/api/plugin/beta/peek/${alphaItem.id}`, user))
      expectNotFound(await call('GET', `/api/plugin/alpha/peek/${betaItem.id}`, user))
      expect((await call('GET', `/api/plugin/beta/peek/${betaItem.id}`, user)).json()).toEqual({ success: true, data: { item: betaItem } })

      // Every attempt left both items as they were.
      expect((await call('GET', `${ALPHA}/${alphaItem.id}`, user)).json().data.item).toEqual(alphaItem)
      const stored = await rows(sql`select plugin_id, collection, id from plugin_items order by plugin_id, collection`)
      expect(stored).toEqual([['alpha', 'notes', alphaItem.id], ['beta', 'notes', betaItem.id]])
      expect(await storedDocument('alpha', 'notes', alphaItem.id)).toEqual({ title: 'alpha only', body: 'secret to alpha' })
      expect(await storedDocument('beta', 'notes', betaItem.id)).toEqual({ title: 'beta only' })
    })

    it("each plugin's pagination counts its own collection only", async () => {
      for (let i = 0; i < 3; i++) await create(ALPHA, { title: `a${i}` })
      await create(BETA, { title: 'b0' })
      expect((await page(ALPHA)).pagination).toEqual({ total: 3, limit: 20, offset: 0, has_more: false })
      expect((await page(`${BETA}?limit=1`)).pagination).toEqual({ total: 1, limit: 1, offset: 0, has_more: false })
      expect(await countItems('alpha', 'notes')).toBe(3)
      expect(await countItems('beta', 'notes')).toBe(1)
    })
  })

  describe("the store from a plugin's own routes", () => {
    const IMPORT = '/api/plugin/alpha/import'

    it('validates what the plugin writes: 400 VALIDATION_ERROR, nothing written', async () => {
      const missing = await call('POST', IMPORT, user, { body: 'no title' })
      expect(expectInvalid(missing, ['title'])).toHaveLength(1)
      expect(expectInvalid(await call('POST', IMPORT, user, { title: 'ok', colour: 'red' }), ['colour'])).toEqual([
        { field: 'colour', message: 'is not allowed', in: 'body' },
      ])
      expectInvalid(await call('POST', IMPORT, user, { title: 7, pinned: 'no' }), ['title', 'pinned'])
      expectInvalid(await call('POST', IMPORT, user, { title: 'ok', meta: { matrix: [[1], [2, 'x']] } }), ['meta.matrix.1.1'])
      expectInvalid(await send('POST', IMPORT, '[]', JSON_HEADERS, user), [])
      // The size bound holds for what the plugin writes too, not only for request bodies.
      expectError(await call('POST', IMPORT, user, { title: 'big', body: 'x'.repeat(DOCUMENT_LIMIT) }), 413, 'PAYLOAD_TOO_LARGE')
      expect(await countItems()).toBe(0)
      expectError(await call('POST', IMPORT, undefined, { title: 'anonymous' }), 401, 'UNAUTHORIZED')
      expect(await countItems()).toBe(0)
    })

    it('creates, reads, replaces, deletes and lists through the store, as the collection routes see it', async () => {
      clock.advance(1_000)
      const at = new Date(clock.now()).toISOString()
      const imported = await call('POST', IMPORT, user, { title: 'Imported', tags: ['x'] })
      expectStatus(imported, 201)
      const item = imported.json().data.item as Item
      expect(item).toEqual({ id: expect.stringMatching(UUID_V7), title: 'Imported', tags: ['x'], created_at: at, updated_at: at })
      expect((await call('GET', `${ALPHA}/${item.id}`, user)).json()).toEqual({ success: true, data: { item } })
      expect((await call('GET', `/api/plugin/alpha/peek/${item.id}`, user)).json()).toEqual({ success: true, data: { item } })
      expectNotFound(await call('GET', `/api/plugin/alpha/peek/${UNKNOWN_ID}`, user))
      expect(await rows(sql`select plugin_id, collection, id from plugin_items`)).toEqual([['alpha', 'notes', item.id]])

      // replace: validated, null for an unknown id.
      expectInvalid(await call('PUT', `/api/plugin/alpha/rewrite/${item.id}`, user, { title: 'ok', extra: 1 }), ['extra'])
      expect(await storedDocument('alpha', 'notes', item.id)).toEqual({ title: 'Imported', tags: ['x'] })
      expectNotFound(await call('PUT', `/api/plugin/alpha/rewrite/${UNKNOWN_ID}`, user, { title: 'ghost' }))
      clock.advance(1_000)
      const rewritten = await call('PUT', `/api/plugin/alpha/rewrite/${item.id}`, user, { title: 'Rewritten' })
      expectStatus(rewritten, 200)
      expect(rewritten.json().data.item).toEqual({ id: item.id, title: 'Rewritten', created_at: at, updated_at: new Date(clock.now()).toISOString() })
      expect(await storedDocument('alpha', 'notes', item.id)).toEqual({ title: 'Rewritten' })

      // list: its own bounds, whatever the route lets through.
      await create(ALPHA, { title: 'second' })
      const tally = await call('GET', '/api/plugin/alpha/tally?limit=1', user)
      expect(tally.json()).toEqual({ success: true, data: { ids: [item.id], total: 2 } })
      const storeRefusal = (response: LightMyRequestResponse) => {
        const details = expectError(response, 400, 'VALIDATION_ERROR').details as Array<{ field: string }>
        expect(details.map((detail) => detail.field)).toEqual(['limit'])
      }
      storeRefusal(await call('GET', '/api/plugin/alpha/tally?limit=0', user))
      storeRefusal(await call('GET', '/api/plugin/alpha/tally?limit=101', user))
      const badOffset = expectError(await call('GET', '/api/plugin/alpha/tally?offset=-1', user), 400, 'VALIDATION_ERROR')
      expect((badOffset.details as Array<{ field: string }>).map((detail) => detail.field)).toEqual(['offset'])

      // remove: true once, then false.
      expect((await call('DELETE', `/api/plugin/alpha/drop/${item.id}`, user)).json()).toEqual({ success: true, data: { removed: true } })
      expect((await call('DELETE', `/api/plugin/alpha/drop/${item.id}`, user)).json()).toEqual({ success: true, data: { removed: false } })
      expectNotFound(await call('GET', `${ALPHA}/${item.id}`, user))
      expect(await countItems()).toBe(1)
    })
  })

  describe('concurrency', () => {
    it('20 parallel creations: 20 distinct ids, all listed in creation order', async () => {
      const responses = await fire(20, (index) => call('POST', ALPHA, user, { title: `parallel ${index}` }))
      expectNoServerError(responses)
      expect(statuses(responses)).toEqual(Array(20).fill(201))
      const ids = responses.map((response) => response.json().data.item.id as string)
      expect(new Set(ids).size).toBe(20)
      const listed = await page(`${ALPHA}?limit=100`)
      expect(listed.pagination.total).toBe(20)
      expect(listed.items.map((item) => item.id).sort()).toEqual([...ids].sort())
      // The page is in id order, which is creation order.
      const order = listed.items.map((item) => item.id)
      expect(order).toEqual([...order].sort())
      expect(await countItems('alpha', 'notes')).toBe(20)
    })

    it('10 parallel deletions of one item: exactly one 200, nine 404, never a 5xx', async () => {
      const target = await create(ALPHA, { title: 'contested' })
      const bystander = await create(ALPHA, { title: 'bystander' })
      const responses = await fire(10, () => call('DELETE', `${ALPHA}/${target.id}`, user))
      expectNoServerError(responses)
      expect(statuses(responses)).toEqual([200, ...Array(9).fill(404)])
      for (const response of responses.filter((each) => each.statusCode === 404)) expect(response.json().code).toBe('NOT_FOUND')
      expect(await rows(sql`select id from plugin_items`)).toEqual([[bystander.id]])
    })

    it('parallel replacements of one item: all 200, the final document is one of them', async () => {
      const target = await create(ALPHA, { title: 'original', body: 'dropped by every replacement' })
      const documents = Array.from({ length: 10 }, (_, index) => ({ title: `version ${index}`, priority: index }))
      const responses = await fire(10, (index) => call('PUT', `${ALPHA}/${target.id}`, user, documents[index]))
      expectNoServerError(responses)
      expect(statuses(responses)).toEqual(Array(10).fill(200))
      const final = (await call('GET', `${ALPHA}/${target.id}`, user)).json().data.item as Item
      const { id, created_at: createdAt, updated_at: updatedAt, ...document } = final
      expect(id).toBe(target.id)
      expect(createdAt).toBe(target.created_at)
      expect(typeof updatedAt).toBe('string')
      expect(documents).toContainEqual(document)
      expect(await storedDocument('alpha', 'notes', target.id)).toEqual(document)
      expect(await countItems()).toBe(1)
    })

    it('parallel replacements and a deletion of one item: each a 200 or a 404, nothing left', async () => {
      const target = await create(ALPHA, { title: 'doomed' })
      const responses = await fire(10, (index) =>
        index === 5 ? call('DELETE', `${ALPHA}/${target.id}`, user) : call('PUT', `${ALPHA}/${target.id}`, user, { title: `v${index}` }))
      expectNoServerError(responses)
      expect(responses[5]!.statusCode).toBe(200)
      for (const response of responses) expect([200, 404]).toContain(response.statusCode)
      expect(await countItems()).toBe(0)
    })
  })

  describe('storage', () => {
    const RICH = {
      title: 'Ünïcødé 🚀 日本語 — "quoted" \\ back\\slash',
      body: 'line one\nline two\ttabbed\r\n\u2028separator\u00a0nbsp',
      pinned: false,
      priority: 0,
      tags: ['😀', 'straße', '', 'עברית', '🏳️‍🌈'],
      meta: {
        color: '红色',
        matrix: [[1, -2, 3], [], [0], [-1000, 1000]],
        links: [{ label: 'é', url: 'https://example.com/ü?q=1&r=ø#frag' }, { label: '', url: '' }],
      },
    }

    it('round-trips unicode and nested arrays and objects exactly, falsy values included', async () => {
      const created = await call('POST', ALPHA, user, RICH)
      expectStatus(created, 201)
      const item = created.json().data.item as Item
      const { id, created_at: _createdAt, updated_at: _updatedAt, ...document } = item
      expect(document).toEqual(RICH)
      expect((await call('GET', `${ALPHA}/${id}`, user)).json().data.item).toEqual(item)
      expect((await page(ALPHA)).items).toEqual([item])
      expect((await call('GET', `/api/plugin/alpha/peek/${id}`, user)).json().data.item).toEqual(item)
      expect(await storedDocument('alpha', 'notes', id)).toEqual(RICH)

      const replaced = await call('PUT', `${ALPHA}/${id}`, user, { ...RICH, title: 'ß→✓' })
      expectStatus(replaced, 200)
      expect(await storedDocument('alpha', 'notes', id)).toEqual({ ...RICH, title: 'ß→✓' })
    })

    it('refuses text no database can store (NUL, unpaired surrogates) with 400, nothing written', async () => {
      expectInvalid(await call('POST', ALPHA, user, { title: 'nul\u0000here' }), ['title'])
      expectInvalid(await send('POST', ALPHA, '{"title":"half \\ud800 pair"}', JSON_HEADERS, user), ['title'])
      expectInvalid(await call('POST', ALPHA, user, { title: 'ok', tags: ['fine', 'bad\u0000'] }), ['tags.1'])
      expect(await countItems()).toBe(0)
    })

    it(`stores the document as ${dialect === 'sqlite' ? 'JSON text' : 'jsonb'}`, async () => {
      const item = await create(ALPHA, RICH)
      if (dialect === 'sqlite') {
        const [[type, text]] = (await rows(sql`select typeof(document), document from plugin_items where id = ${item.id}`)) as [[string, string]]
        expect(type).toBe('text')
        expect(JSON.parse(text)).toEqual(RICH)
        const [[title, firstCell]] = (await rows(sql`select json_extract(document, '$.title') as title, json_extract(document, '$.meta.matrix[3][1]') as cell from plugin_items where id = ${item.id}`)) as [[string, number]]
        expect(title).toBe(RICH.title)
        expect(Number(firstCell)).toBe(1000)
      } else {
        const [[kind, type, title, cell]] = (await rows(sql`
          select jsonb_typeof(document) as kind, pg_typeof(document)::text as type, document->>'title' as title, document #>> '{meta,matrix,3,1}' as cell
          from plugin_items where id = ${item.id}`)) as [[string, string, string, string]]
        expect(kind).toBe('object')
        expect(type).toBe('jsonb')
        expect(title).toBe(RICH.title)
        expect(cell).toBe('1000')
        const [[column]] = (await rows(sql`
          select data_type from information_schema.columns where table_name = 'plugin_items' and column_name = 'document'`)) as [[string]]
        expect(column).toBe('jsonb')
      }
      // Neither the id nor the timestamps are in the document.
      const stored = (await storedDocument('alpha', 'notes', item.id)) as Record<string, unknown>
      expect(Object.keys(stored).sort()).toEqual(Object.keys(RICH).sort())
    })
  })
})
