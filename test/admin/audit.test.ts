import type { FastifyInstance, LightMyRequestResponse } from 'fastify'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { login, register, sessionCookie } from '../helpers/accounts.js'
import { createTestContext, type TestContext } from '../helpers/app.js'
import { manualClock } from '../helpers/clock.js'
import { DIALECTS } from '../helpers/database.js'

const EVENT_KEYS = ['actor_id', 'created_at', 'details', 'id', 'ip', 'target', 'type']
const HOUR = 60 * 60 * 1000

interface Account { id: string; cookie: string }
interface Event { id: string; type: string; actor_id: string | null; ip: string | null; target: string | null; details: Record<string, unknown>; created_at: string }

async function signUp(app: FastifyInstance, username: string): Promise<Account> {
  const response = await register(app, { username, email: `${username}@example.com` })
  const cookie = sessionCookie(response)
  if (response.statusCode !== 201 || cookie === undefined) throw new Error(`registration failed: ${response.statusCode} ${response.body}`)
  return { id: response.json().data.user.id, cookie }
}

describe.each(DIALECTS)('audit log on %s', (dialect) => {
  let ctx: TestContext
  let app: FastifyInstance
  let admin: Account
  let user: Account
  const clock = manualClock()
  const start = clock.now()

  const get = (query = '', account: Account | null = admin): Promise<LightMyRequestResponse> =>
    app.inject({ method: 'GET', url: `/api/admin/audit-log${query}`, headers: account === null ? {} : { cookie: account.cookie } })
  const page = async (query = '') => {
    const response = await get(query)
    expect(response.statusCode, `${query}: ${response.body}`).toBe(200)
    return response.json().data as { events: Event[]; pagination: { total: number; limit: number; offset: number; has_more: boolean } }
  }

  beforeAll(async () => {
    ctx = await createTestContext(dialect)
    // No extension plugins: their plugin.loaded events would join the counts below.
    app = (await ctx.build({ clock, env: { RATE_LIMIT_ENABLED: 'false', PLUGINS_DIR: `${ctx.dataDir}/no-plugins` } })).app
    admin = await signUp(app, 'audit_admin')
    clock.advance(1000)
    user = await signUp(app, 'audit_user')
    // 25 more events, a second apart, so that paging has something to page through.
    for (let index = 0; index < 25; index++) {
      clock.advance(1000)
      await app.services.audit.record('plugin.loaded', { details: { index } })
    }
  })
  afterAll(() => ctx.close())

  it('401 without a session; 403 for a global_user, naming audit.view', async () => {
    const anonymous = await get('', null)
    expect(anonymous.statusCode).toBe(401)
    expect(anonymous.json().code).toBe('UNAUTHORIZED')
    const forbidden = await get('', user)
    expect(forbidden.statusCode).toBe(403)
    expect(forbidden.json()).toMatchObject({ code: 'FORBIDDEN', details: { required_permission: 'audit.view' } })
  })

  it('shows events as the audit API describes them', async () => {
    const { events } = await page('?type=user.registered')
    expect(events).toHaveLength(2)
    for (const event of events) expect(Object.keys(event).sort()).toEqual(EVENT_KEYS)
    expect(events[1]).toEqual({
      id: expect.any(String),
      type: 'user.registered',
      actor_id: admin.id,
      ip: '127.0.0.1',
      target: admin.id,
      details: { role_id: 'global_admin' },
      created_at: new Date(start).toISOString(),
    })
    expect(events[0]).toMatchObject({ actor_id: user.id, target: user.id, details: { role_id: 'global_user' } })
  })

  it('pages newest first: total, limit, offset, has_more', async () => {
    const all = await page('?limit=100')
    const total = all.pagination.total
    expect(total).toBe(27)
    expect(all.events).toHaveLength(total)
    const times = all.events.map((event) => Date.parse(event.created_at))
    expect(times).toEqual([...times].sort((a, b) => b - a))
    expect(all.events[0]!.details).toEqual({ index: 24 })
    expect(all.events.at(-1)!.type).toBe('user.registered')

    const first = await page()
    expect(first.pagination).toEqual({ total, limit: 20, offset: 0, has_more: true })
    expect(first.events.map((event) => event.id)).toEqual(all.events.slice(0, 20).map((event) => event.id))
    const rest = await page('?offset=20')
    expect(rest.pagination).toEqual({ total, limit: 20, offset: 20, has_more: false })
    expect(rest.events.map((event) => event.id)).toEqual(all.events.slice(20).map((event) => event.id))
    expect((await page('?limit=7&offset=7')).pagination).toEqual({ total, limit: 7, offset: 7, has_more: true })
    expect((await page(`?limit=7&offset=${total - 7}`)).pagination.has_more).toBe(false)
    expect((await page(`?offset=${total}`)).events).toEqual([])
  })

  it('filters by type, actor_id and since, alone and together', async () => {
    expect((await page('?type=plugin.loaded')).pagination.total).toBe(25)
    expect((await page('?type=no.such.type')).pagination.total).toBe(0)
    const byActor = await page(`?actor_id=${user.id}`)
    expect(byActor.events.map((event) => event.type)).toEqual(['user.registered'])

    clock.advance(HOUR)
    const since = new Date(clock.now()).toISOString()
    const loggedIn = await login(app, 'audit_user', 'correct horse battery')
    expect(loggedIn.response.statusCode).toBe(200)
    clock.advance(1000)
    expect((await login(app, 'audit_user', 'wrong password here')).response.statusCode).toBe(401)

    const recent = await page(`?since=${encodeURIComponent(since)}`)
    expect(recent.events.map((event) => event.type)).toEqual(['user.login_failed', 'user.login'])
    // `since` is inclusive, and takes any ISO 8601 offset.
    const sameInstant = new Date(Date.parse(since)).toISOString().replace('Z', '+00:00')
    expect((await page(`?since=${encodeURIComponent(sameInstant)}`)).pagination.total).toBe(2)
    const later = new Date(Date.parse(since) + 1).toISOString()
    expect((await page(`?since=${encodeURIComponent(later)}`)).events.map((event) => event.type)).toEqual(['user.login_failed'])

    const combined = await page(`?type=user.login&actor_id=${user.id}&since=${encodeURIComponent(since)}`)
    expect(combined.events).toHaveLength(1)
    expect(combined.events[0]).toMatchObject({ type: 'user.login', actor_id: user.id, details: { method: 'email' } })
    expect((await page(`?type=user.login&actor_id=${admin.id}&since=${encodeURIComponent(since)}`)).pagination.total).toBe(0)
  })

  it('never shows a password tried at login', async () => {
    await login(app, 'audit_admin', 'leaked-password-attempt')
    const response = await get('?limit=100')
    expect(response.body).not.toContain('leaked-password-attempt')
  })

  it.each(['?limit=0', '?limit=101', '?offset=-1', '?since=yesterday', '?since=2026-13-01T00:00:00Z', '?type=', '?actor=x'])(
    '400 for %s',
    async (query) => {
      const response = await get(query)
      expect(response.statusCode).toBe(400)
      expect(response.json().code).toBe('VALIDATION_ERROR')
    },
  )
})
