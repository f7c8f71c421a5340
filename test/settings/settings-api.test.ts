import type { FastifyInstance, LightMyRequestResponse } from 'fastify'
import { afterAll, beforeAll, describe, expect, it, onTestFinished } from 'vitest'
import { CORE_GROUPS, CORE_SETTINGS } from '../../src/modules/settings/definitions.js'
import { register, sessionCookie } from '../helpers/accounts.js'
import { createTestContext, type TestContext } from '../helpers/app.js'
import { manualClock } from '../helpers/clock.js'
import { DIALECTS } from '../helpers/database.js'

const SETTING_KEYS = ['description', 'encrypted', 'is_set', 'key', 'name', 'readable', 'type', 'updated_at', 'value']
const NO_LIMITS = { RATE_LIMIT_ENABLED: 'false' }

/** Registers through the API; answers the user's id and the `auth_session=…` pair. */
async function signUp(app: FastifyInstance, username: string): Promise<{ id: string; cookie: string }> {
  const response = await register(app, { username, email: `${username}@example.com` })
  const cookie = sessionCookie(response)
  if (response.statusCode !== 201 || cookie === undefined) throw new Error(`registration failed: ${response.statusCode} ${response.body}`)
  return { id: response.json().data.user.id, cookie }
}

function client(app: FastifyInstance) {
  return (method: 'GET' | 'PUT', url: string, cookie?: string, payload?: unknown): Promise<LightMyRequestResponse> =>
    app.inject({
      method,
      url,
      headers: cookie === undefined ? {} : { cookie },
      ...(payload === undefined ? {} : { payload: payload as object }),
    })
}

describe.each(DIALECTS)('settings API on %s', (dialect) => {
  let ctx: TestContext
  let app: FastifyInstance
  let call: ReturnType<typeof client>
  let admin: { id: string; cookie: string }
  let user: { id: string; cookie: string }
  const clock = manualClock()

  const get = (url: string, cookie = admin.cookie) => call('GET', url, cookie)
  const put = (url: string, payload: unknown, cookie = admin.cookie) => call('PUT', url, cookie, payload)
  const valueOf = async (key: string) => (await get(`/api/settings/${key}`)).json().data.setting.value
  const auditEvents = async (type = 'settings.updated') => (await get(`/api/admin/audit-log?type=${type}&limit=100`)).json().data.events

  beforeAll(async () => {
    ctx = await createTestContext(dialect)
    app = (await ctx.build({ clock, env: NO_LIMITS })).app
    call = client(app)
    admin = await signUp(app, 'settings_admin')
    user = await signUp(app, 'settings_user')
  })
  afterAll(() => ctx.close())

  describe('who may call', () => {
    const routes: Array<[method: 'GET' | 'PUT', url: string, payload: unknown, permission: string]> = [
      ['GET', '/api/settings', undefined, 'settings.view'],
      ['GET', '/api/settings/groups/global', undefined, 'settings.view'],
      ['GET', '/api/settings/global.enable_login', undefined, 'settings.view'],
      ['PUT', '/api/settings/global.enable_login', { value: false }, 'settings.edit'],
      ['PUT', '/api/settings', { settings: [{ key: 'global.enable_login', value: false }] }, 'settings.edit'],
    ]

    it.each(routes)('%s %s: 401 without a session', async (method, url, payload) => {
      const response = await call(method, url, undefined, payload)
      expect(response.statusCode).toBe(401)
      expect(response.json()).toMatchObject({ success: false, code: 'UNAUTHORIZED' })
    })

    it.each(routes)('%s %s: 403 for a global_user, naming the permission', async (method, url, payload, permission) => {
      const response = await call(method, url, user.cookie, payload)
      expect(response.statusCode).toBe(403)
      expect(response.json()).toMatchObject({ success: false, code: 'FORBIDDEN', details: { required_permission: permission } })
    })

    it('a global_user changes nothing', async () => {
      await put('/api/settings/team.member_limit', { value: 42 }, user.cookie)
      expect(await valueOf('team.member_limit')).toBe(10)
    })
  })

  describe('reading', () => {
    it('GET /api/settings: every group with its typed settings', async () => {
      const response = await get('/api/settings')
      expect(response.statusCode).toBe(200)
      // The core's groups; the example plugin's (plugins/notes) follow them, tested with the plugins.
      const groups = response.json().data.groups.filter((group: { id: string }) => !group.id.startsWith('plugin.'))
      expect(groups.map((group: { id: string }) => group.id)).toEqual(CORE_GROUPS.map((group) => group.id))
      const settings = groups.flatMap((group: { id: string; settings: Array<{ key: string }> }) =>
        group.settings.map((setting) => ({ group: group.id, ...setting })))
      expect(settings.map((setting: { key: string }) => setting.key).sort()).toEqual(Object.keys(CORE_SETTINGS).sort())
      for (const setting of settings) {
        const definition = CORE_SETTINGS[setting.key as keyof typeof CORE_SETTINGS]
        expect(Object.keys(setting).sort(), setting.key).toEqual(['group', ...SETTING_KEYS].sort())
        expect(setting.group, setting.key).toBe(definition.group)
        expect(setting.type, setting.key).toBe(definition.type)
        expect(setting.name, setting.key).toBe(definition.name)
        expect(setting.encrypted, setting.key).toBe('encrypted' in definition && definition.encrypted === true)
        expect(setting.readable, setting.key).toBe(true)
        if (setting.encrypted) expect(setting.value, setting.key).toBeNull()
        else expect(typeof setting.value, setting.key).toBe(definition.type)
        expect(new Date(setting.updated_at).toISOString()).toBe(setting.updated_at)
      }
      const byKey = Object.fromEntries(settings.map((setting: { key: string; value: unknown }) => [setting.key, setting.value]))
      expect(byKey).toMatchObject({
        'global.enable_login': true,
        'global.send_mail': false,
        'team.creation_limit': 3,
        'smtp.port': 587,
        'provider.oauth.scope': 'user:email',
        'provider.oauth.callback_url': 'http://localhost:3000/api/auth/provider/callback',
      })
    })

    it('GET /api/settings/groups/:groupId: one group; 404 for an unknown one', async () => {
      const response = await get('/api/settings/groups/smtp')
      expect(response.statusCode).toBe(200)
      const { group } = response.json().data
      expect(group).toMatchObject({ id: 'smtp', name: 'SMTP' })
      expect(group.settings.map((setting: { key: string }) => setting.key).sort()).toEqual(
        Object.keys(CORE_SETTINGS).filter((key) => key.startsWith('smtp.')).sort(),
      )

      const unknown = await get('/api/settings/groups/nope')
      expect(unknown.statusCode).toBe(404)
      expect(unknown.json()).toMatchObject({ success: false, code: 'NOT_FOUND', error: 'Settings group nope not found.' })
    })

    it('GET /api/settings/:key: one setting; 404 for an unknown key (also "groups" itself)', async () => {
      const response = await get('/api/settings/team.creation_limit')
      expect(response.statusCode).toBe(200)
      expect(response.json()).toEqual({
        success: true,
        data: {
          setting: expect.objectContaining({ key: 'team.creation_limit', type: 'number', value: 3, encrypted: false, is_set: true }),
        },
      })
      for (const key of ['no.such.key', 'groups']) {
        const unknown = await get(`/api/settings/${key}`)
        expect(unknown.statusCode, key).toBe(404)
        expect(unknown.json(), key).toMatchObject({ success: false, code: 'NOT_FOUND', error: `Setting ${key} not found.` })
      }
    })
  })

  describe('PUT /api/settings/:key', () => {
    it('changes a boolean, a number and a string; the answer and later reads show it', async () => {
      const before = (await get('/api/settings/global.enable_swagger_docs')).json().data.setting.updated_at
      clock.advance(1000)
      const changes: Array<[string, string | number | boolean]> = [
        ['global.enable_swagger_docs', false],
        ['team.member_limit', 25],
        ['smtp.from_name', 'Platform Ops'],
      ]
      for (const [key, value] of changes) {
        const response = await put(`/api/settings/${key}`, { value })
        expect(response.statusCode, key).toBe(200)
        const { setting } = response.json().data
        expect(Object.keys(setting).sort()).toEqual(SETTING_KEYS)
        expect(setting).toMatchObject({ key, value, encrypted: false, is_set: true })
        expect(await valueOf(key), key).toBe(value)
      }
      const after = (await get('/api/settings/global.enable_swagger_docs')).json().data.setting.updated_at
      expect(Date.parse(after)).toBe(Date.parse(before) + 1000)
      // It takes effect: the documentation switch closes /documentation at once on this instance.
      expect((await app.inject({ method: 'GET', url: '/documentation/json' })).statusCode).toBe(404)
      await put('/api/settings/global.enable_swagger_docs', { value: true })
      expect((await app.inject({ method: 'GET', url: '/documentation/json' })).statusCode).toBe(200)
    })

    const invalid: Array<[key: string, value: unknown]> = [
      ['global.enable_login', 'maybe'],
      ['global.enable_login', 'true'],
      ['global.enable_login', 1],
      ['team.creation_limit', -1],
      ['team.creation_limit', 10_001],
      ['team.creation_limit', 2.5],
      ['team.creation_limit', '5'],
      ['smtp.port', 0],
      ['smtp.port', 65_536],
      ['smtp.host', 42],
      ['global.page_url', 'x'.repeat(2049)],
    ]
    it.each(invalid)('%s refuses %j with 400 and keeps its value', async (key, value) => {
      const before = await valueOf(key)
      const response = await put(`/api/settings/${key}`, { value })
      expect(response.statusCode).toBe(400)
      expect(response.json()).toMatchObject({ success: false, code: 'VALIDATION_ERROR' })
      expect(await valueOf(key)).toBe(before)
    })

    it('accepts the bounds of a number range', async () => {
      for (const value of [0, 10_000]) {
        const response = await put('/api/settings/team.creation_limit', { value })
        expect(response.statusCode, String(value)).toBe(200)
        expect(response.json().data.setting.value).toBe(value)
      }
      await put('/api/settings/team.creation_limit', { value: 3 })
    })

    it('names the key and the problem in details', async () => {
      const response = await put('/api/settings/global.enable_login', { value: 'maybe' })
      expect(response.json().details).toEqual([expect.objectContaining({ field: 'global.enable_login', message: 'must be a boolean' })])
    })

    it('404 for an unknown key: settings cannot be created through the API', async () => {
      const response = await put('/api/settings/no.such.key', { value: 'x' })
      expect(response.statusCode).toBe(404)
      expect(response.json()).toMatchObject({ success: false, code: 'NOT_FOUND', error: 'Setting no.such.key not found.' })
      expect((await get('/api/settings/no.such.key')).statusCode).toBe(404)
    })

    it.each([[{}], [{ value: true, extra: 1 }], [{ value: null }], [{ value: [true] }]])('400 for the body %j', async (payload) => {
      const response = await put('/api/settings/global.enable_login', payload)
      expect(response.statusCode).toBe(400)
      expect(response.json().code).toBe('VALIDATION_ERROR')
    })
  })

  describe('PUT /api/settings (bulk)', () => {
    it('changes several settings in one request', async () => {
      const response = await put('/api/settings', {
        settings: [
          { key: 'team.creation_limit', value: 7 },
          { key: 'smtp.host', value: 'mail.example.com' },
          { key: 'smtp.require_tls', value: true },
        ],
      })
      expect(response.statusCode).toBe(200)
      const { settings } = response.json().data
      expect(settings.map((setting: { key: string; value: unknown }) => [setting.key, setting.value])).toEqual([
        ['team.creation_limit', 7],
        ['smtp.host', 'mail.example.com'],
        ['smtp.require_tls', true],
      ])
      expect(await valueOf('team.creation_limit')).toBe(7)
      expect(await valueOf('smtp.host')).toBe('mail.example.com')
      expect(await valueOf('smtp.require_tls')).toBe(true)
    })

    const refused: Array<[what: string, bad: { key: string; value: unknown }]> = [
      ['an invalid value', { key: 'global.send_mail', value: 'maybe' }],
      ['an unknown key', { key: 'no.such.key', value: 1 }],
      ['a key given twice', { key: 'team.member_limit', value: 12 }],
    ]
    it.each(refused)('all or nothing: %s changes nothing (400) and records nothing', async (_what, bad) => {
      const keys = ['team.member_limit', 'smtp.from_email', 'global.send_mail']
      const before = await Promise.all(keys.map(valueOf))
      const eventsBefore = (await auditEvents()).length
      const response = await put('/api/settings', {
        settings: [
          { key: 'team.member_limit', value: 99 },
          { key: 'smtp.from_email', value: 'changed@example.com' },
          bad,
        ],
      })
      expect(response.statusCode).toBe(400)
      expect(response.json()).toMatchObject({ code: 'VALIDATION_ERROR', details: [expect.objectContaining({ field: bad.key })] })
      expect(await Promise.all(keys.map(valueOf))).toEqual(before)
      expect((await auditEvents()).length).toBe(eventsBefore)
    })

    it.each([
      ['no items', { settings: [] }],
      ['101 items', { settings: Array.from({ length: 101 }, () => ({ key: 'team.member_limit', value: 10 })) }],
      ['an item with an extra property', { settings: [{ key: 'team.member_limit', value: 10, note: 'x' }] }],
      ['an item without a value', { settings: [{ key: 'team.member_limit' }] }],
      ['no settings array', { key: 'team.member_limit', value: 10 }],
    ])('400 for %s', async (_what, payload) => {
      const response = await put('/api/settings', payload)
      expect(response.statusCode).toBe(400)
      expect(response.json().code).toBe('VALIDATION_ERROR')
    })
  })

  describe('encrypted settings', () => {
    const SECRET = 'Sup3r-Secret-Pa55word-Ξ'

    it('answer value null; is_set turns true once smtp.password is set and false once cleared', async () => {
      const initial = (await get('/api/settings/smtp.password')).json().data.setting
      expect(initial).toMatchObject({ key: 'smtp.password', encrypted: true, value: null, is_set: false })

      const set = await put('/api/settings/smtp.password', { value: SECRET })
      expect(set.statusCode).toBe(200)
      expect(set.json().data.setting).toMatchObject({ value: null, is_set: true, encrypted: true })
      expect(set.body).not.toContain(SECRET)
      expect((await get('/api/settings/smtp.password')).json().data.setting).toMatchObject({ value: null, is_set: true })
      // The service still holds the plaintext for its own use.
      expect(await app.services.settings.get('smtp.password')).toBe(SECRET)

      for (const url of ['/api/settings', '/api/settings/groups/smtp', '/api/settings/smtp.password']) {
        expect((await get(url)).body, url).not.toContain(SECRET)
      }

      const cleared = await put('/api/settings', { settings: [{ key: 'smtp.password', value: '' }] })
      expect(cleared.json().data.settings[0]).toMatchObject({ value: null, is_set: false })
    })

    it('never shows provider.oauth.client_secret either', async () => {
      const response = await put('/api/settings', { settings: [{ key: 'provider.oauth.client_secret', value: 'client-secret-value-123' }] })
      expect(response.statusCode).toBe(200)
      expect(response.json().data.settings[0]).toMatchObject({ key: 'provider.oauth.client_secret', value: null, is_set: true })
      expect((await get('/api/settings/groups/provider-oauth')).body).not.toContain('client-secret-value-123')
    })
  })

  describe('audit', () => {
    it('records one settings.updated event per request with the keys only, never a value', async () => {
      const secret = 'audit-secret-value-987'
      const before = (await auditEvents()).length
      await put('/api/settings/smtp.password', { value: secret })
      await put('/api/settings', {
        settings: [
          { key: 'smtp.username', value: 'mailer-user-xyz' },
          { key: 'provider.oauth.client_secret', value: secret },
        ],
      })
      const events = await auditEvents()
      expect(events.length).toBe(before + 2)
      // Newest first.
      expect(events[0]).toMatchObject({
        type: 'settings.updated', actor_id: admin.id, ip: '127.0.0.1',
        details: { keys: ['smtp.username', 'provider.oauth.client_secret'] },
      })
      expect(events[1]).toMatchObject({ type: 'settings.updated', actor_id: admin.id, target: 'smtp.password', details: { keys: ['smtp.password'] } })
      for (const event of events.slice(0, 2)) expect(Object.keys(event.details)).toEqual(['keys'])

      const whole = await get('/api/admin/audit-log?limit=100')
      expect(whole.statusCode).toBe(200)
      expect(whole.body).not.toContain(secret)
      expect(whole.body).not.toContain('mailer-user-xyz')
    })
  })
})

describe.each(DIALECTS)('settings API across instances on %s', (dialect) => {
  it('a change made on one instance is seen by another on the same database within 5 s', async () => {
    const ctx = await createTestContext(dialect, { file: true })
    onTestFinished(() => ctx.close())
    const firstClock = manualClock()
    const secondClock = manualClock()
    const first = (await ctx.build({ clock: firstClock, env: NO_LIMITS })).app
    const second = (await ctx.build({ clock: secondClock, env: NO_LIMITS })).app
    const admin = await signUp(first, 'multi_admin')
    const onSecond = client(second)
    const read = async (key: string) => (await onSecond('GET', `/api/settings/${key}`, admin.cookie)).json().data.setting.value

    // The second instance has read (and cached) the values before the change.
    expect(await read('team.member_limit')).toBe(10)
    expect((await second.inject({ method: 'GET', url: '/documentation/json' })).statusCode).toBe(200)

    const changed = await client(first)('PUT', '/api/settings', admin.cookie, {
      settings: [{ key: 'team.member_limit', value: 33 }, { key: 'global.enable_swagger_docs', value: false }],
    })
    expect(changed.statusCode).toBe(200)

    secondClock.advance(5000)
    expect(await read('team.member_limit')).toBe(33)
    expect(await read('global.enable_swagger_docs')).toBe(false)
    expect((await second.inject({ method: 'GET', url: '/documentation/json' })).statusCode).toBe(404)
  })
})
