import type { FastifyInstance, InjectOptions } from 'fastify'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createTestContext, type TestContext } from '../helpers/app.js'
import { manualClock, type ManualClock } from '../helpers/clock.js'
import { DIALECTS } from '../helpers/database.js'
import { bearer, issueTokens } from '../helpers/oauth.js'
import { operationsOf, servedDocument, type DocumentedOperation } from '../helpers/openapi-document.js'
import { signUp, type Account } from '../helpers/teams.js'
import { codeAt, enrol, post, STEP_MS } from './helpers.js'

/**
 * `global.require_2fa_for_admins`: a global admin without two-factor is refused (403
 * TWO_FACTOR_REQUIRED) on every route but the exempt ones, with a session and with a bearer token.
 * The table is every operation of the served OpenAPI document that admits a session or a bearer
 * token, so a route added later is covered, and the exempt set is asserted exactly. The refusal
 * comes from the authorization hook, before any body is read, so each operation is called with
 * placeholder path parameters and an empty body.
 */
const EXEMPT = ['GET /api/users/me', 'POST /api/auth/2fa/enable', 'POST /api/auth/2fa/setup']
const SCOPES = 'mcp:read account:read user:read teams:read'

describe.each(DIALECTS)('two-factor required of admins on %s', (dialect) => {
  let ctx: TestContext
  let app: FastifyInstance
  let clock: ManualClock
  let admin: Account
  let adminToken: string
  let user: Account
  let userToken: string
  let operations: DocumentedOperation[]

  const admits = (operation: DocumentedOperation, scheme: 'cookieAuth' | 'bearerAuth') => (operation.operation.security ?? []).some((entry) => scheme in entry)
  const request = (operation: DocumentedOperation, headers: Record<string, string>): InjectOptions => {
    const url = operation.path.replace(/\{[^}]+\}/g, 'placeholder')
    const unsafe = operation.method !== 'GET' && operation.method !== 'DELETE'
    return { method: operation.method as InjectOptions['method'], url, headers, ...(unsafe ? { payload: {} } : {}) }
  }
  const requireTwoFactor = (value: boolean) => app.services.settings.update([{ key: 'global.require_2fa_for_admins', value }])
  /** `METHOD /path` of every operation that refused with TWO_FACTOR_REQUIRED, and of those that did not. */
  async function sweep(scheme: 'cookieAuth' | 'bearerAuth', headers: Record<string, string>): Promise<{ refused: string[]; open: string[] }> {
    const refused: string[] = []
    const open: string[] = []
    for (const operation of operations.filter((each) => admits(each, scheme))) {
      const response = await app.inject(request(operation, headers))
      const name = `${operation.method} ${operation.path}`
      expect(response.statusCode, `${name}: ${response.body.slice(0, 200)}`).toBeLessThan(500)
      if (response.statusCode === 403 && response.json().code === 'TWO_FACTOR_REQUIRED') refused.push(name)
      else open.push(name)
    }
    return { refused, open }
  }

  beforeAll(async () => {
    ctx = await createTestContext(dialect)
    clock = manualClock()
    ;({ app } = await ctx.build({ clock, env: { RATE_LIMIT_ENABLED: 'false' } }))
    admin = await signUp(app, `req_${dialect.slice(0, 2)}_admin`)
    user = await signUp(app, `req_${dialect.slice(0, 2)}_user`)
    adminToken = (await issueTokens(app, admin.cookie, SCOPES)).access_token
    userToken = (await issueTokens(app, user.cookie, SCOPES)).access_token
    operations = operationsOf(await servedDocument(app))
  })
  afterAll(() => ctx.close())

  it('is off by default: an admin without two-factor is not held back', async () => {
    expect(await app.services.settings.get('global.require_2fa_for_admins')).toBe(false)
    expect((await app.inject({ method: 'GET', url: '/api/admin/users', headers: { cookie: admin.cookie } })).statusCode).toBe(200)
  })

  it('refuses an admin without two-factor everywhere but the exempt routes, with a session and with a bearer token', async () => {
    await requireTwoFactor(true)
    try {
      const bySession = await sweep('cookieAuth', { cookie: admin.cookie })
      expect(bySession.open.sort()).toEqual(EXEMPT)
      expect(bySession.refused.length).toBeGreaterThan(50)
      const byToken = await sweep('bearerAuth', bearer(adminToken))
      expect(byToken.open).toEqual(['GET /api/users/me'])
      expect(byToken.refused).toEqual(expect.arrayContaining(['GET /api/teams/me', 'GET /api/users/me/account']))
      const refusal = await app.inject({ method: 'GET', url: '/api/teams/me', headers: bearer(adminToken) })
      expect(refusal.json()).toMatchObject({ success: false, code: 'TWO_FACTOR_REQUIRED', error: expect.stringContaining('two-factor') })
      // The pages needed to enrol stay open (sign-out, the account page and the two-factor page are public pages).
      expect((await app.inject({ method: 'GET', url: '/api/auth/account', headers: { cookie: admin.cookie } })).statusCode).toBe(200)
      const page = await app.inject({ method: 'GET', url: '/api/auth/account/two-factor', headers: { cookie: admin.cookie } })
      expect(page.statusCode).toBe(200)
      expect(page.body).toContain('requires two-factor authentication for administrators')
    } finally {
      await requireTwoFactor(false)
    }
  })

  it('leaves normal users alone', async () => {
    await requireTwoFactor(true)
    try {
      const bySession = await sweep('cookieAuth', { cookie: user.cookie })
      expect(bySession.refused).toEqual([])
      const byToken = await sweep('bearerAuth', bearer(userToken))
      expect(byToken.refused).toEqual([])
      expect((await app.inject({ method: 'GET', url: '/api/teams/me', headers: { cookie: user.cookie } })).statusCode).toBe(200)
    } finally {
      await requireTwoFactor(false)
    }
  })

  it('lets an admin enrol while held back, and then lets them through, session and token alike', async () => {
    const second = await signUp(app, `req_${dialect.slice(0, 2)}_second`)
    const promoted = await app.inject({ method: 'PUT', url: `/api/admin/users/${second.id}/role`, headers: { cookie: admin.cookie }, payload: { role_id: 'global_admin' } })
    expect(promoted.statusCode, promoted.body).toBe(200)
    const secondToken = (await issueTokens(app, second.cookie, SCOPES)).access_token
    await requireTwoFactor(true)
    try {
      expect((await app.inject({ method: 'GET', url: '/api/admin/users', headers: { cookie: second.cookie } })).json().code).toBe('TWO_FACTOR_REQUIRED')
      expect((await app.inject({ method: 'GET', url: '/api/teams/me', headers: bearer(secondToken) })).json().code).toBe('TWO_FACTOR_REQUIRED')
      // Setup and enable are exempt: the admin enrols with the session they have.
      await enrol(app, second, clock.now())
      expect((await app.inject({ method: 'GET', url: '/api/admin/users', headers: { cookie: second.cookie } })).statusCode).toBe(200)
      expect((await app.inject({ method: 'GET', url: '/api/teams/me', headers: bearer(secondToken) })).statusCode).toBe(200)
      const bySession = await sweep('cookieAuth', { cookie: second.cookie })
      expect(bySession.refused).toEqual([])
      // The first admin is still held back.
      expect((await app.inject({ method: 'GET', url: '/api/admin/users', headers: { cookie: admin.cookie } })).json().code).toBe('TWO_FACTOR_REQUIRED')
    } finally {
      await requireTwoFactor(false)
    }
  })

  it('holds an admin back again once they switch two-factor off', async () => {
    const third = await signUp(app, `req_${dialect.slice(0, 2)}_third`)
    await app.inject({ method: 'PUT', url: `/api/admin/users/${third.id}/role`, headers: { cookie: admin.cookie }, payload: { role_id: 'global_admin' } })
    const { secret } = await enrol(app, third, clock.now())
    await requireTwoFactor(true)
    try {
      expect((await app.inject({ method: 'GET', url: '/api/admin/users', headers: { cookie: third.cookie } })).statusCode).toBe(200)
      clock.advance(STEP_MS)
      const off = await post(app, '/api/auth/2fa/disable', third.cookie, { password: 'correct horse battery', code: codeAt(secret, clock.now()) })
      // Switching it off is not exempt, but this admin still has it on when asking.
      expect(off.statusCode, off.body).toBe(200)
      expect((await app.inject({ method: 'GET', url: '/api/admin/users', headers: { cookie: third.cookie } })).json().code).toBe('TWO_FACTOR_REQUIRED')
    } finally {
      await requireTwoFactor(false)
    }
  })
})
