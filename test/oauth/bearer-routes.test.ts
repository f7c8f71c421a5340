import type { FastifyInstance, LightMyRequestResponse } from 'fastify'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createTestContext, type TestContext } from '../helpers/app.js'
import { manualClock } from '../helpers/clock.js'
import { DIALECTS } from '../helpers/database.js'
import { ALL_SCOPES, bearer, CLI_CLIENT_ID, issueTokens, revoke, type TokenSet } from '../helpers/oauth.js'
import { client, createTeam, signUp, type Account, type Call, type TeamBody } from '../helpers/teams.js'

const MINUTE = 60_000
type Scope = (typeof ALL_SCOPES)[number]

/** Bearer access on dual routes, with real access tokens from the authorization server. */
describe.each(DIALECTS)('dual routes with OAuth access tokens on %s', (dialect) => {
  let ctx: TestContext
  let app: FastifyInstance
  let call: Call
  const clock = manualClock(Date.now())
  let admin: Account
  let holder: Account
  let holderTeam: TeamBody
  let otherTeam: TeamBody
  let defaultTeam: TeamBody
  /** One token per single scope, and one with every scope but that one. */
  const only = new Map<Scope, TokenSet>()
  const allBut = new Map<Scope, TokenSet>()
  let full: TokenSet
  let adminFull: TokenSet

  const get = (url: string, token: string, headers: Record<string, string> = {}) =>
    app.inject({ method: 'GET', url, headers: { ...bearer(token), ...headers } })

  const expectInvalidToken = (response: LightMyRequestResponse) => {
    expect(response.statusCode).toBe(401)
    expect(response.json()).toMatchObject({ success: false, code: 'UNAUTHORIZED' })
    expect(response.headers['www-authenticate']).toContain('error="invalid_token"')
  }

  /**
   * The six dual routes, their scope, and what a correct answer shows. Consent binds these tokens
   * to the holder's default team (none chosen): they reach that team alone.
   */
  const routes: Array<[string, Scope, (body: any) => void]> = [
    ['/api/users/me', 'user:read', (body) => expect(body.data).toMatchObject({ id: holder.id, username: holder.username })],
    ['/api/users/me/account', 'account:read', (body) => expect(body.data).toMatchObject({ role_id: 'global_user', team_count: 1 })],
    ['/api/users/me/teams', 'teams:read', (body) => expect(body.data.teams.map((team: TeamBody) => team.id)).toEqual([defaultTeam.id])],
    ['/api/teams/me/default', 'teams:read', (body) => expect(body.data.team).toMatchObject({ owner_id: holder.id, is_default: true })],
    ['/api/teams/me', 'teams:read', (body) => expect(body.data.teams.map((team: TeamBody) => team.name)).toEqual([holder.username])],
    ['/api/teams/DEFAULT_TEAM', 'teams:read', (body) => expect(body.data.team).toMatchObject({ id: defaultTeam.id, is_owner: true })],
  ]
  const url = (path: string) => path.replace('DEFAULT_TEAM', defaultTeam.id)

  beforeAll(async () => {
    ctx = await createTestContext(dialect)
    app = (await ctx.build({ clock, env: { RATE_LIMIT_ENABLED: 'false' } })).app
    call = client(app)
    admin = await signUp(app, 'bearer_routes_admin')
    holder = await signUp(app, 'bearer_routes_holder')
    const other = await signUp(app, 'bearer_routes_other')
    holderTeam = await createTeam(call, holder, 'Holder Team')
    otherTeam = await createTeam(call, other, 'Other Team')
    defaultTeam = (await call('GET', '/api/teams/me/default', holder)).json().data.team
    for (const scope of ['user:read', 'account:read', 'teams:read', 'mcp:read'] as const) {
      only.set(scope, await issueTokens(app, holder.cookie, scope))
      allBut.set(scope, await issueTokens(app, holder.cookie, ALL_SCOPES.filter((name) => name !== scope).join(' ')))
    }
    full = await issueTokens(app, holder.cookie, ALL_SCOPES.join(' '))
    adminFull = await issueTokens(app, admin.cookie, ALL_SCOPES.join(' '))
  })
  afterAll(() => ctx.close())

  it.each(routes)('GET %s with %s: 200', async (path, scope, check) => {
    for (const token of [only.get(scope)!, full]) {
      const response = await get(url(path), token.access_token)
      expect(response.statusCode, response.body).toBe(200)
      check(response.json())
    }
  })

  it.each(routes)('GET %s without %s (every other scope): 403 insufficient_scope', async (path, scope) => {
    for (const token of [allBut.get(scope)!, only.get('mcp:read')!]) {
      const response = await get(url(path), token.access_token)
      expect(response.statusCode).toBe(403)
      expect(response.json()).toMatchObject({ success: false, code: 'FORBIDDEN', details: { required_scope: scope } })
      expect(response.headers['www-authenticate']).toContain('error="insufficient_scope"')
      expect(response.headers['www-authenticate']).toContain(`scope="${scope}"`)
    }
  })

  it('another team than the token\'s: 403, whether or not its user is a member', async () => {
    for (const team of [otherTeam, holderTeam]) {
      const response = await get(`/api/teams/${team.id}`, full.access_token)
      expect(response.statusCode).toBe(403)
      expect(response.json()).toMatchObject({ code: 'FORBIDDEN', details: { bound_team_id: defaultTeam.id } })
    }
  })

  it('an unknown token: 401 invalid_token, even next to a valid session cookie', async () => {
    expectInvalidToken(await get('/api/users/me', 'no-such-token-0123456789abcdefghijklmnop'))
    expectInvalidToken(await get('/api/users/me', 'no-such-token-0123456789abcdefghijklmnop', { cookie: holder.cookie }))
    // A refresh token is not an access token.
    expectInvalidToken(await get('/api/users/me', full.refresh_token!))
  })

  it('a revoked token: 401 invalid_token', async () => {
    const tokens = await issueTokens(app, holder.cookie, 'user:read')
    expect((await get('/api/users/me', tokens.access_token)).statusCode).toBe(200)
    expect((await revoke(app, { token: tokens.access_token, client_id: CLI_CLIENT_ID })).statusCode).toBe(200)
    expectInvalidToken(await get('/api/users/me', tokens.access_token))
  })

  it('session-only routes refuse a bearer, even with every scope: 401, nothing written', async () => {
    const cases: Array<[string, string, object | undefined, TokenSet]> = [
      ['PUT', '/api/auth/email/change-password', { current_password: 'correct horse battery', new_password: 'another long password' }, full],
      ['POST', '/api/teams', { name: 'Via Bearer' }, full],
      ['PUT', '/api/auth/profile/update', { first_name: 'Bearer' }, full],
      ['PUT', `/api/teams/${holderTeam.id}`, { name: 'Renamed Via Bearer' }, full],
      ['GET', `/api/teams/${holderTeam.id}/members`, undefined, full],
      ['GET', '/api/admin/users', undefined, adminFull],
      ['GET', '/api/settings', undefined, adminFull],
    ]
    for (const [method, path, payload, token] of cases) {
      const response = await app.inject({
        method: method as 'GET' | 'POST' | 'PUT', url: path, headers: bearer(token.access_token), ...(payload === undefined ? {} : { payload }),
      })
      expect(response.statusCode, `${method} ${path}`).toBe(401)
      expect(response.json().code).toBe('UNAUTHORIZED')
    }
    const teams: TeamBody[] = (await call('GET', '/api/teams/me', holder)).json().data.teams
    expect(teams.map((team) => team.name)).toEqual([holder.username, 'Holder Team'])
    expect((await call('GET', '/api/users/me', holder)).json().data.first_name).toBeNull()
  })

  it('login disabled: a non-admin bearer gets 403 LOGIN_DISABLED, an admin bearer keeps working', async () => {
    await app.services.settings.update([{ key: 'global.enable_login', value: false }])
    try {
      for (const path of ['/api/users/me', '/api/teams/me']) {
        const refused = await get(path, full.access_token)
        expect(refused.statusCode).toBe(403)
        expect(refused.json().code).toBe('LOGIN_DISABLED')
        const allowed = await get(path, adminFull.access_token)
        expect(allowed.statusCode).toBe(200)
      }
      expect((await get('/api/users/me', adminFull.access_token)).json().data.id).toBe(admin.id)
    } finally {
      await app.services.settings.update([{ key: 'global.enable_login', value: true }])
    }
    expect((await get('/api/users/me', full.access_token)).statusCode).toBe(200)
  })

  it('a deleted user\'s token: 401', async () => {
    const doomed = await signUp(app, 'bearer_routes_doomed')
    const tokens = await issueTokens(app, doomed.cookie, 'user:read teams:read')
    expect((await get('/api/users/me', tokens.access_token)).statusCode).toBe(200)
    const deleted = await call('DELETE', `/api/admin/users/${doomed.id}`, admin)
    expect(deleted.statusCode, deleted.body).toBe(200)
    expect((await get('/api/users/me', tokens.access_token)).statusCode).toBe(401)
    expect((await get('/api/teams/me', tokens.access_token)).statusCode).toBe(401)
  })

  it('a token older than an hour: 401 invalid_token', async () => {
    const tokens = await issueTokens(app, holder.cookie, 'user:read')
    clock.advance(59 * MINUTE)
    expect((await get('/api/users/me', tokens.access_token)).statusCode).toBe(200)
    clock.advance(2 * MINUTE)
    expectInvalidToken(await get('/api/users/me', tokens.access_token))
  })
})
