import { fileURLToPath } from 'node:url'
import { sql } from 'drizzle-orm'
import type { FastifyInstance, LightMyRequestResponse } from 'fastify'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { DEFAULT_PASSWORD, login } from '../helpers/accounts.js'
import { createTestContext, type TestContext } from '../helpers/app.js'
import { manualClock } from '../helpers/clock.js'
import { DIALECTS } from '../helpers/database.js'
import { rawRows } from '../helpers/sql.js'
import { client, ROOMY_LIMITS, signUp, type Account, type Call } from '../helpers/teams.js'
import { until } from '../helpers/until.js'

/**
 * Discovery and loading (test/fixtures/plugins/loading): every folder of PLUGINS_DIR is listed
 * with what became of it; the loaded plugins bring their settings, audit events and documented
 * routes, the failed and disabled ones nothing at all, and the service serves either way.
 */
const FIXTURES = fileURLToPath(new URL('../fixtures/plugins/loading', import.meta.url))
const ENV = { PLUGINS_DIR: FIXTURES, PLUGINS_DISABLED: 'disabled-crasher, not-present' }

interface Listed {
  id: string
  name: string
  version: string | null
  description: string | null
  status: 'loaded' | 'failed' | 'disabled'
  error?: string
  route_count: number
  collections: string[]
}
interface SettingBody { key: string; name: string; description: string; type: string; value: unknown; encrypted: boolean; is_set: boolean; readable: boolean; updated_at: string }
interface AuditEvent { type: string; actor_id: string | null; target: string | null; details: Record<string, unknown> }
interface Operation { tags?: string[]; security?: unknown }
interface Document { tags?: Array<{ name: string; description?: string }>; paths: Record<string, Record<string, Operation>> }

/** One entry per folder, sorted by folder name (upper case before lower case); hidden folders are not plugins. */
const LISTING: Listed[] = [
  {
    id: 'Bad_Name', name: 'Bad_Name', version: null, description: null, status: 'failed',
    error: 'the folder name is not a plugin id (^[a-z][a-z0-9-]{1,62}$)', route_count: 0, collections: [],
  },
  {
    id: 'broken-manifest', name: 'broken-manifest', version: null, description: null, status: 'failed',
    error: 'invalid manifest: unknown field "homepage"; version must be a semantic version such as 1.0.0; settings.retries.default must be an integer',
    route_count: 0, collections: [],
  },
  {
    id: 'crashes-at-import', name: 'crashes-at-import', version: null, description: null, status: 'failed',
    error: 'import failed: crashes-at-import cannot start: the native driver is missing', route_count: 0, collections: [],
  },
  { id: 'disabled-crasher', name: 'disabled-crasher', version: null, description: null, status: 'disabled', route_count: 0, collections: [] },
  {
    id: 'fails-in-register', name: 'Fails In Register', version: '0.0.1', description: null, status: 'failed',
    error: 'register gave up after adding a route', route_count: 0, collections: [],
  },
  {
    id: 'js-plugin', name: 'Plain JS', version: '0.3.1', description: 'Written in plain JavaScript.', status: 'loaded',
    route_count: 6, collections: ['entries'],
  },
  {
    id: 'no-entry', name: 'no-entry', version: null, description: null, status: 'failed',
    error: 'the folder has no index.ts or index.js', route_count: 0, collections: [],
  },
  {
    id: 'settings-demo', name: 'Settings Demo', version: '2.1.0', description: 'Reads its own settings back.', status: 'loaded',
    route_count: 7, collections: ['bookmarks'],
  },
]
const LOADED = LISTING.filter((plugin) => plugin.status === 'loaded')

const SESSION = [{ cookieAuth: [] }]
const PUBLIC: unknown[] = []
const DUAL_MCP_READ = [{ cookieAuth: [] }, { bearerAuth: ['mcp:read'] }]
/** Every operation the loaded plugins add to the document, with its tag and security. */
const PLUGIN_OPERATIONS: Record<string, Operation> = {
  'GET /api/plugin/js-plugin/entries': { tags: ['plugin:js-plugin'], security: SESSION },
  'POST /api/plugin/js-plugin/entries': { tags: ['plugin:js-plugin'], security: SESSION },
  'GET /api/plugin/js-plugin/entries/{itemId}': { tags: ['plugin:js-plugin'], security: SESSION },
  'PUT /api/plugin/js-plugin/entries/{itemId}': { tags: ['plugin:js-plugin'], security: SESSION },
  'DELETE /api/plugin/js-plugin/entries/{itemId}': { tags: ['plugin:js-plugin'], security: SESSION },
  'GET /api/plugin/js-plugin/ping': { tags: ['plugin:js-plugin'], security: PUBLIC },
  'GET /api/plugin/settings-demo/bookmarks': { tags: ['plugin:settings-demo'], security: DUAL_MCP_READ },
  'POST /api/plugin/settings-demo/bookmarks': { tags: ['plugin:settings-demo'], security: DUAL_MCP_READ },
  'GET /api/plugin/settings-demo/bookmarks/{itemId}': { tags: ['plugin:settings-demo'], security: DUAL_MCP_READ },
  'PUT /api/plugin/settings-demo/bookmarks/{itemId}': { tags: ['plugin:settings-demo'], security: DUAL_MCP_READ },
  'DELETE /api/plugin/settings-demo/bookmarks/{itemId}': { tags: ['plugin:settings-demo'], security: DUAL_MCP_READ },
  'GET /api/plugin/settings-demo/config': { tags: ['plugin:settings-demo'], security: SESSION },
  'GET /api/plugin/settings-demo/config/{key}': { tags: ['plugin:settings-demo'], security: SESSION },
}

const GROUP = 'plugin.settings-demo'
const KEY = {
  title: `${GROUP}.title`,
  limit: `${GROUP}.limit`,
  enabled: `${GROUP}.enabled`,
  api_key: `${GROUP}.api_key`,
} as const
const DEFAULTS = { title: 'Hello from the demo', limit: 7, enabled: true, api_key: '' }

/** Ids pushed by the fixtures when their module is evaluated (see each fixture's first statement). */
const imported = () => (globalThis as { __loadingFixtureImports?: string[] }).__loadingFixtureImports ?? []

function expectError(response: LightMyRequestResponse, status: number, code: string): void {
  expect(response.statusCode, response.body).toBe(status)
  expect(response.json()).toMatchObject({ success: false, code })
}

describe.each(DIALECTS)('plugin discovery and loading on %s', (dialect) => {
  let ctx: TestContext
  let app: FastifyInstance
  let call: Call
  /** The first account: global_admin. */
  let admin: Account
  /** A global_user. */
  let user: Account

  const listing = async (on: Call = call) => {
    const response = await on('GET', '/api/admin/plugins', admin)
    expect(response.statusCode, response.body).toBe(200)
    expect(response.json().success).toBe(true)
    return response.json().data.plugins as Listed[]
  }
  const pluginConfig = async (on: Call = call) => {
    const response = await on('GET', '/api/plugin/settings-demo/config', admin)
    expect(response.statusCode, response.body).toBe(200)
    return response.json().data as typeof DEFAULTS
  }
  const setting = async (key: string) => {
    const response = await call('GET', `/api/settings/${key}`, admin)
    expect(response.statusCode, response.body).toBe(200)
    return response.json().data.setting as SettingBody
  }
  const put = (key: string, value: unknown) => call('PUT', `/api/settings/${key}`, admin, { value })
  const loadEvents = async () => {
    const response = await call('GET', '/api/admin/audit-log?type=plugin.loaded&limit=100', admin)
    expect(response.statusCode, response.body).toBe(200)
    return response.json().data.events as AuditEvent[]
  }

  beforeAll(async () => {
    ctx = await createTestContext(dialect, { file: true })
    ;({ app } = await ctx.build({ env: ENV, limits: ROOMY_LIMITS }))
    call = client(app)
    admin = await signUp(app, `loading_admin_${dialect}`)
    user = await signUp(app, `loading_user_${dialect}`)
  })
  afterAll(() => ctx.close())

  describe('GET /api/admin/plugins', () => {
    it('lists every folder with its status, the cause of each failure, route counts and collections', async () => {
      expect(await listing()).toEqual(LISTING)
    })

    it('a disabled plugin carries no error and no manifest data', async () => {
      const disabled = (await listing()).find((plugin) => plugin.id === 'disabled-crasher')
      expect(disabled).toBeDefined()
      expect(Object.keys(disabled!).sort()).toEqual(['collections', 'description', 'id', 'name', 'route_count', 'status', 'version'])
      // Named in PLUGINS_DISABLED without a folder: nothing is listed for it.
      expect((await listing()).map((plugin) => plugin.id)).not.toContain('not-present')
    })

    it('imports the candidates only: not a disabled plugin, not a badly named folder, not index.ts beside index.js, not a hidden folder', () => {
      expect(imported()).toEqual(expect.arrayContaining(['broken-manifest', 'crashes-at-import', 'fails-in-register', 'js-plugin', 'settings-demo']))
      for (const never of ['disabled-crasher', 'Bad_Name', 'js-plugin/index.ts', '.scratch']) expect(imported(), never).not.toContain(never)
    })

    it('401 without a session, 403 for a user without plugins.view', async () => {
      expectError(await call('GET', '/api/admin/plugins'), 401, 'UNAUTHORIZED')
      const forbidden = await call('GET', '/api/admin/plugins', user)
      expectError(forbidden, 403, 'FORBIDDEN')
      expect(forbidden.json().details).toMatchObject({ required_permission: 'plugins.view' })
    })
  })

  describe('the service despite failed plugins', () => {
    it('answers health and login', async () => {
      const health = await call('GET', '/api/health')
      expect(health.statusCode, health.body).toBe(200)
      const ready = await call('GET', '/api/health/ready')
      expect(ready.statusCode, ready.body).toBe(200)
      const { response, cookie } = await login(app, admin.email, DEFAULT_PASSWORD)
      expect(response.statusCode, response.body).toBe(200)
      expect(cookie).toEqual(expect.any(String))
    })

    it('serves the loaded plugins: a session route, a public route, collections', async () => {
      expect(await pluginConfig()).toEqual(DEFAULTS)
      expectError(await call('GET', '/api/plugin/settings-demo/config'), 401, 'UNAUTHORIZED')

      const ping = await call('GET', '/api/plugin/js-plugin/ping')
      expect(ping.statusCode, ping.body).toBe(200)
      expect(ping.json()).toEqual({ success: true, data: { pong: 'js-plugin' } })

      const created = await call('POST', '/api/plugin/js-plugin/entries', user, { text: 'from plain JS' })
      expect(created.statusCode, created.body).toBe(201)
      const { id } = created.json().data.item
      const fetched = await call('GET', `/api/plugin/js-plugin/entries/${id}`, user)
      expect(fetched.statusCode, fetched.body).toBe(200)
      expect(fetched.json().data.item).toMatchObject({ id, text: 'from plain JS' })
      expectError(await call('GET', '/api/plugin/js-plugin/entries'), 401, 'UNAUTHORIZED')
      expectError(await call('POST', '/api/plugin/js-plugin/entries', user, { text: 'x', extra: true }), 400, 'VALIDATION_ERROR')

      const bookmark = await call('POST', '/api/plugin/settings-demo/bookmarks', user, { url: 'https://example.test', stars: 5 })
      expect(bookmark.statusCode, bookmark.body).toBe(201)
      const list = await call('GET', '/api/plugin/settings-demo/bookmarks', user)
      expect(list.statusCode, list.body).toBe(200)
      expect(list.json().data.items).toEqual([expect.objectContaining({ url: 'https://example.test', stars: 5 })])
    })

    it('a custom route with a params schema refuses an unknown parameter value', async () => {
      const one = await call('GET', '/api/plugin/settings-demo/config/limit', admin)
      expect(one.statusCode, one.body).toBe(200)
      expect(one.json().data).toEqual({ key: 'limit', value: DEFAULTS.limit })
      expectError(await call('GET', '/api/plugin/settings-demo/config/password', admin), 400, 'VALIDATION_ERROR')
    })

    it('the failed and disabled plugins have no routes: 404 like any unknown path, also for a route added before register failed', async () => {
      for (const url of [
        '/api/plugin/fails-in-register/early',
        '/api/plugin/broken-manifest/things',
        '/api/plugin/crashes-at-import/anything',
        '/api/plugin/disabled-crasher/anything',
        '/api/plugin/no-entry',
        '/api/plugin/bad-name',
      ]) {
        const response = await call('GET', url, admin)
        expectError(response, 404, 'NOT_FOUND')
        expect(response.json().error, url).toBe(`Route GET ${url} not found; the API's routes are listed at /documentation.`)
      }
      // Nor does another method reveal the route: 404, not 405 with Allow.
      const otherMethod = await call('DELETE', '/api/plugin/fails-in-register/early', admin)
      expectError(otherMethod, 404, 'NOT_FOUND')
      expect(otherMethod.headers.allow).toBeUndefined()
    })
  })

  describe('plugin settings', () => {
    it('a group named after the plugin, with each setting typed, described and at its default; the secret masked', async () => {
      const all = await call('GET', '/api/settings', admin)
      expect(all.statusCode, all.body).toBe(200)
      const groups = all.json().data.groups as Array<{ id: string; name: string; settings: SettingBody[] }>
      // Only the loaded plugin that declares settings contributes a group.
      expect(groups.map((group) => group.id).filter((id) => id.startsWith('plugin.'))).toEqual([GROUP])

      const response = await call('GET', `/api/settings/groups/${GROUP}`, admin)
      expect(response.statusCode, response.body).toBe(200)
      const { group } = response.json().data
      expect(group).toMatchObject({ id: GROUP, name: 'Settings Demo', description: 'Reads its own settings back.' })
      expect(groups.find((each) => each.id === GROUP)).toEqual(group)
      const shown = (group.settings as SettingBody[]).map(({ updated_at: _updatedAt, ...rest }) => rest)
      expect(shown).toEqual([
        { key: KEY.title, name: 'title', description: 'A plain text setting.', type: 'string', value: DEFAULTS.title, encrypted: false, is_set: true, readable: true },
        { key: KEY.limit, name: 'limit', description: 'A whole number.', type: 'number', value: DEFAULTS.limit, encrypted: false, is_set: true, readable: true },
        { key: KEY.enabled, name: 'enabled', description: 'A switch.', type: 'boolean', value: DEFAULTS.enabled, encrypted: false, is_set: true, readable: true },
        { key: KEY.api_key, name: 'api_key', description: 'A secret, stored sealed.', type: 'string', value: null, encrypted: true, is_set: false, readable: true },
      ])
    })

    it('failed and disabled plugins contribute no settings', async () => {
      for (const id of ['fails-in-register', 'broken-manifest', 'disabled-crasher']) {
        expectError(await call('GET', `/api/settings/groups/plugin.${id}`, admin), 404, 'NOT_FOUND')
      }
      expectError(await call('GET', '/api/settings/plugin.fails-in-register.mode', admin), 404, 'NOT_FOUND')
      expectError(await put('plugin.fails-in-register.mode', 'lazy'), 404, 'NOT_FOUND')
      expectError(await put('plugin.broken-manifest.retries', 3), 404, 'NOT_FOUND')
    })

    it('each type is changed through PUT and the plugin reads the new value at once; the secret stays masked', async () => {
      const changes = { title: 'Changed title', limit: 42, enabled: false, api_key: 'sk-live-0123456789' }
      for (const name of ['title', 'limit', 'enabled'] as const) {
        const response = await put(KEY[name], changes[name])
        expect(response.statusCode, response.body).toBe(200)
        expect(response.json().data.setting).toMatchObject({ key: KEY[name], value: changes[name], encrypted: false })
      }
      const secret = await put(KEY.api_key, changes.api_key)
      expect(secret.statusCode, secret.body).toBe(200)
      expect(secret.json().data.setting).toMatchObject({ key: KEY.api_key, value: null, encrypted: true, is_set: true })
      expect(secret.body).not.toContain(changes.api_key)

      expect(await pluginConfig()).toEqual(changes)
      expect(await setting(KEY.limit)).toMatchObject({ value: 42, type: 'number' })
      const masked = await setting(KEY.api_key)
      expect(masked).toMatchObject({ value: null, is_set: true })
      const group = await call('GET', `/api/settings/groups/${GROUP}`, admin)
      expect(group.body).not.toContain(changes.api_key)

      // Sealed in the database, never the plaintext.
      const [row] = await rawRows(app.services.database, sql`select value from settings where key = ${KEY.api_key}`)
      expect(String(row![0])).not.toContain(changes.api_key)

      // Emptied, the secret is not set any more.
      expect((await put(KEY.api_key, '')).statusCode).toBe(200)
      expect(await setting(KEY.api_key)).toMatchObject({ value: null, is_set: false })
      expect((await pluginConfig()).api_key).toBe('')
    })

    it('a value of the wrong type → 400 VALIDATION_ERROR naming the key, and nothing changes', async () => {
      const before = await pluginConfig()
      const wrong: Array<[string, unknown, string]> = [
        [KEY.title, 5, 'must be a string'],
        [KEY.title, 'x'.repeat(4097), 'must be at most 4096 characters'],
        [KEY.limit, '7', 'must be an integer'],
        [KEY.limit, 2.5, 'must be an integer'],
        [KEY.enabled, 'true', 'must be a boolean'],
        [KEY.enabled, 1, 'must be a boolean'],
        [KEY.api_key, 123, 'must be a string'],
      ]
      for (const [key, value, message] of wrong) {
        const response = await put(key, value)
        expectError(response, 400, 'VALIDATION_ERROR')
        expect(response.json().details, `${key} = ${JSON.stringify(value).slice(0, 20)}`).toEqual([expect.objectContaining({ field: key, message })])
      }
      expectError(await put(KEY.limit, null), 400, 'VALIDATION_ERROR')
      expectError(await put(`${GROUP}.undeclared`, 'x'), 404, 'NOT_FOUND')
      expect(await pluginConfig()).toEqual(before)
    })

    it('settings need settings.view and settings.edit: a plain user is refused', async () => {
      expectError(await call('GET', `/api/settings/groups/${GROUP}`, user), 403, 'FORBIDDEN')
      expectError(await call('PUT', `/api/settings/${KEY.title}`, user, { value: 'by a user' }), 403, 'FORBIDDEN')
      expect((await pluginConfig()).title).not.toBe('by a user')
    })
  })

  it('records plugin.loaded once per loaded plugin with its id, version, route count and collections; none for the others', async () => {
    const events = await loadEvents()
    expect(events.map((event) => event.target).sort()).toEqual(LOADED.map((plugin) => plugin.id))
    for (const plugin of LOADED) {
      expect(events.find((event) => event.target === plugin.id)).toMatchObject({
        type: 'plugin.loaded',
        actor_id: null,
        target: plugin.id,
        details: { id: plugin.id, version: plugin.version, route_count: plugin.route_count, collections: plugin.collections },
      })
    }
    const stored = await rawRows(app.services.database, sql`select target from audit_events where type = 'plugin.loaded' order by target`)
    expect(stored.map((row) => row[0])).toEqual(LOADED.map((plugin) => plugin.id))
  })

  describe('OpenAPI', () => {
    let document: Document

    beforeAll(async () => {
      const response = await call('GET', '/documentation/json')
      expect(response.statusCode, response.body).toBe(200)
      document = response.json()
    })

    it('documents exactly the loaded plugins\' routes, each under its plugin tag with the security of its policy', () => {
      const documented: Record<string, Operation> = {}
      for (const [path, item] of Object.entries(document.paths)) {
        if (!path.startsWith('/api/plugin/')) continue
        for (const [method, operation] of Object.entries(item)) documented[`${method.toUpperCase()} ${path}`] = { tags: operation.tags, security: operation.security }
      }
      expect(documented).toEqual(PLUGIN_OPERATIONS)
    })

    it('hides every route of a failed plugin, also one it added before failing', () => {
      const paths = Object.keys(document.paths)
      for (const failed of LISTING.filter((plugin) => plugin.status !== 'loaded')) {
        expect(paths.filter((path) => path.startsWith(`/api/plugin/${failed.id}`)), failed.id).toEqual([])
      }
      expect(paths).not.toContain('/api/plugin/fails-in-register/early')
    })

    it('adds a document tag per loaded plugin naming it and its version, none for the others', () => {
      const tags = (document.tags ?? []).filter((tag) => tag.name.startsWith('plugin:'))
      expect(tags.map((tag) => tag.name)).toEqual(LOADED.map((plugin) => `plugin:${plugin.id}`))
      for (const plugin of LOADED) {
        const tag = tags.find((each) => each.name === `plugin:${plugin.id}`)
        expect(tag?.description).toContain(plugin.name)
        expect(tag?.description).toContain(plugin.version!)
      }
    })
  })

  // Last: the second instance records its own plugin.loaded events.
  it('a second instance on the same database loads the same plugins and sees a changed setting within the revalidation period', async () => {
    const clock = manualClock(Date.now())
    const second = (await ctx.build({ env: ENV, clock, limits: ROOMY_LIMITS })).app
    const callSecond = client(second)
    expect(await listing(callSecond)).toEqual(LISTING)

    const title = `Set on the first instance (${dialect})`
    expect((await put(KEY.title, title)).statusCode).toBe(200)
    expect((await put(KEY.api_key, 'sk-shared-secret')).statusCode).toBe(200)
    // The first instance at once…
    expect(await pluginConfig()).toMatchObject({ title, api_key: 'sk-shared-secret' })
    // …the second at its next read (SQLite: the file's change stamp), or once the database's
    // notification of the change reaches it (PostgreSQL).
    const expected = await pluginConfig()
    await until(async () => JSON.stringify(await pluginConfig(callSecond)) === JSON.stringify(expected), { what: 'the second instance seeing the setting' })
    expect(await pluginConfig(callSecond)).toEqual(expected)

    const events = await loadEvents()
    for (const plugin of LOADED) expect(events.filter((event) => event.target === plugin.id), plugin.id).toHaveLength(2)
  })
})
