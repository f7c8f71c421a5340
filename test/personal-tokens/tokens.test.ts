import type { FastifyInstance } from 'fastify'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createTestContext, type TestContext } from '../helpers/app.js'
import { manualClock, type ManualClock } from '../helpers/clock.js'
import { DIALECTS } from '../helpers/database.js'
import { captureLogs, type LogCapture } from '../helpers/log-capture.js'
import { addMember, client, createTeam, signUp, type Account, type Call } from '../helpers/teams.js'
import { until } from '../helpers/until.js'
import { auditEvents, createToken, getWith, storedRow, TOKEN_SHAPE, tokenFor } from './helpers.js'

/**
 * Personal access tokens through the HTTP API: made with a session, used as bearer credentials on
 * the routes that admit a session or a bearer token, under the scope and team rules of OAuth
 * access tokens, and ended by expiry, deletion, a password change and the user's deletion.
 */
describe.each(DIALECTS)('personal access tokens on %s', (dialect) => {
  let ctx: TestContext
  let app: FastifyInstance
  let clock: ManualClock
  let logs: LogCapture
  let call: Call
  let admin: Account
  let user: Account
  /** Every token value and digest made here: none may appear in a log line or an audit row. */
  const secrets: string[] = []
  let counter = 0
  const fresh = () => signUp(app, `pat_${dialect}_${++counter}`)

  async function made(account: Account, body: Parameters<typeof tokenFor>[2] = {}) {
    const created = await tokenFor(app, account, body)
    secrets.push(created.token, (await storedRow(app, created.id))!.digest)
    return created
  }

  beforeAll(async () => {
    ctx = await createTestContext(dialect)
    clock = manualClock(Date.now())
    logs = captureLogs('debug')
    ;({ app } = await ctx.build({ clock, logger: logs.logger, env: { RATE_LIMIT_ENABLED: 'false' } }))
    call = client(app)
    admin = await signUp(app, `pat_admin_${dialect}`)
    user = await fresh()
  })
  afterAll(() => ctx.close())

  it('creates a token shown once, stored only as a digest, usable on dual routes and listed without its value', async () => {
    const response = await createToken(app, user, { name: 'deploy job', scopes: ['teams:read', 'user:read'], expires_in_days: 30 })
    expect(response.statusCode, response.body).toBe(201)
    const { data } = response.json()
    expect(data.token).toMatch(TOKEN_SHAPE)
    expect(data).toMatchObject({ name: 'deploy job', scopes: ['user:read', 'teams:read'], team_id: null })
    expect(Date.parse(data.expires_at) - Date.parse(data.created_at)).toBe(30 * 24 * 3600_000)
    const row = (await storedRow(app, data.id))!
    secrets.push(data.token, row.digest)
    expect(row.digest).not.toContain(data.token.slice(12))
    expect(JSON.stringify(row)).not.toContain(data.token.slice(12))

    const me = await getWith(app, '/api/users/me', data.token)
    expect(me.statusCode, me.body).toBe(200)
    expect(me.json().data.id).toBe(user.id)
    const teams = await getWith(app, '/api/teams/me', data.token)
    expect(teams.statusCode).toBe(200)
    expect(teams.json().data.teams.map((team: { is_default: boolean }) => team.is_default)).toEqual([true])
    expect((await getWith(app, '/api/teams/me/default', data.token)).statusCode).toBe(200)

    const listed = await call('GET', '/api/users/me/tokens', user)
    expect(listed.statusCode).toBe(200)
    expect(listed.json().data.tokens).toEqual([expect.objectContaining({ id: data.id, name: 'deploy job', scopes: ['user:read', 'teams:read'], expired: false })])
    expect(listed.json().data.pagination).toEqual({ total: 1, limit: 20, offset: 0, has_more: false })
    expect(listed.body).not.toContain(data.token)
    expect(listed.body).not.toContain(row.digest)
    // The use is recorded off the request's path.
    await until(async () => (await storedRow(app, data.id))?.lastUsedAt !== null, { what: 'last_used_at' })
    const again = (await call('GET', '/api/users/me/tokens', user)).json().data.tokens[0]
    expect(again.last_used_at).toBe(new Date(clock.now()).toISOString())
  })

  it('records a use at most once a minute', async () => {
    const { token, id } = await made(user)
    expect((await getWith(app, '/api/users/me', token)).statusCode).toBe(200)
    await until(async () => (await storedRow(app, id))?.lastUsedAt !== null, { what: 'the first use' })
    const first = (await storedRow(app, id))!.lastUsedAt!.getTime()
    clock.advance(30_000)
    expect((await getWith(app, '/api/users/me', token)).statusCode).toBe(200)
    // A request that does write proves the previous one did not: each is awaited by the next check.
    clock.advance(31_000)
    expect((await getWith(app, '/api/users/me', token)).statusCode).toBe(200)
    await until(async () => (await storedRow(app, id))!.lastUsedAt!.getTime() !== first, { what: 'the second recorded use' })
    expect((await storedRow(app, id))!.lastUsedAt!.getTime()).toBe(first + 61_000)
  })

  it('a route needs its scope: 403 insufficient_scope with the challenge', async () => {
    const { token } = await made(user, { scopes: ['user:read'] })
    expect((await getWith(app, '/api/users/me', token)).statusCode).toBe(200)
    const refused = await getWith(app, '/api/teams/me', token)
    expect(refused.statusCode).toBe(403)
    expect(refused.json()).toMatchObject({ code: 'FORBIDDEN', details: { required_scope: 'teams:read' } })
    expect(refused.headers['www-authenticate']).toMatch(/^Bearer error="insufficient_scope", scope="teams:read"/)
    expect((await getWith(app, '/api/users/me/account', token)).statusCode).toBe(403)
  })

  it('is refused on session-only and bearer-only routes, and by OAuth introspection', async () => {
    const { token } = await made(user, { scopes: ['user:read', 'teams:read', 'account:read', 'mcp:read'] })
    const headers = { authorization: `Bearer ${token}` }
    for (const [method, url] of [['GET', '/api/users/me/tokens'], ['POST', '/api/users/me/tokens'], ['POST', '/api/teams'], ['PUT', '/api/auth/profile/update']] as const) {
      const response = await app.inject({ method, url, headers, payload: method === 'GET' ? undefined : {} })
      expect(response.statusCode, `${method} ${url}`).toBe(401)
    }
    const userinfo = await getWith(app, '/api/oauth2/userinfo', token)
    expect(userinfo.statusCode).toBe(401)
    expect(userinfo.headers['www-authenticate']).toContain('error="invalid_token"')
    const introspected = await app.inject({ method: 'POST', url: '/api/oauth2/introspect', headers: { cookie: admin.cookie }, payload: { token } })
    expect(introspected.statusCode, introspected.body).toBe(200)
    expect(introspected.json()).toMatchObject({ active: false })
    // RFC 7009 revocation knows only OAuth tokens: it answers 200 and the token keeps working.
    const revoked = await app.inject({ method: 'POST', url: '/api/oauth2/revoke', payload: { token, client_id: 'service-gateway-cli' } })
    expect(revoked.statusCode).toBe(200)
    expect((await getWith(app, '/api/users/me', token)).statusCode).toBe(200)
    const unknown = await getWith(app, '/api/users/me', 'service_pat_unknown')
    expect(unknown.statusCode).toBe(401)
    expect(unknown.headers['www-authenticate']).toContain('error="invalid_token"')
  })

  it('a token bound to a team reaches that team only, and only while its owner is a member', async () => {
    const owner = await fresh()
    const member = await fresh()
    const team = await createTeam(call, owner, `Bound ${dialect}`)
    await addMember(call, team.id, owner, member, 'team_user')
    const other = await createTeam(call, member, `Other ${dialect}`)
    const { token } = await made(member, { team_id: team.id, scopes: ['user:read', 'teams:read', 'account:read'] })
    expect((await storedRow(app, (await call('GET', '/api/users/me/tokens', member)).json().data.tokens[0].id))!.teamId).toBe(team.id)

    expect((await getWith(app, `/api/teams/${team.id}`, token)).statusCode).toBe(200)
    const elsewhere = await getWith(app, `/api/teams/${other.id}`, token)
    expect(elsewhere.statusCode).toBe(403)
    expect(elsewhere.json().details).toEqual({ bound_team_id: team.id })
    expect((await getWith(app, '/api/teams/me/default', token)).statusCode).toBe(403)
    expect((await getWith(app, '/api/teams/me', token)).json().data.teams.map((each: { id: string }) => each.id)).toEqual([team.id])
    expect((await getWith(app, '/api/users/me/account', token)).json().data.team_count).toBe(1)

    // Removed from the team: refused everywhere, even on routes that name no team.
    expect((await call('DELETE', `/api/teams/${team.id}/members/${member.id}`, owner)).statusCode).toBe(200)
    const removed = await getWith(app, '/api/users/me', token)
    expect(removed.statusCode).toBe(401)
    expect(removed.headers['www-authenticate']).toContain('error="invalid_token"')
    // Back in the team: the token works again (it was refused, not deleted).
    await addMember(call, team.id, owner, member, 'team_user')
    expect((await getWith(app, '/api/users/me', token)).statusCode).toBe(200)
    // The team deleted: the token goes with it.
    expect((await call('DELETE', `/api/teams/${team.id}`, owner)).statusCode).toBe(200)
    expect((await getWith(app, '/api/users/me', token)).statusCode).toBe(401)
    expect((await call('GET', '/api/users/me/tokens', member)).json().data.tokens).toEqual([])
  })

  it('binds only to a team of the caller', async () => {
    const owner = await fresh()
    const outsider = await fresh()
    const team = await createTeam(call, owner, `Closed ${dialect}`)
    for (const teamId of [team.id, 'no-such-team']) {
      const refused = await createToken(app, outsider, { team_id: teamId })
      expect(refused.statusCode).toBe(400)
      expect(refused.json().code).toBe('INVALID_TEAM')
    }
    expect((await call('GET', '/api/users/me/tokens', outsider)).json().data.tokens).toEqual([])
  })

  it('refuses bad input with 400 and creates nothing', async () => {
    const someone = await fresh()
    const cases: Array<Record<string, unknown>> = [
      { name: '' }, { name: '   ' }, { name: 'x'.repeat(101) }, { name: 7 },
      { scopes: [] }, { scopes: ['offline_access'] }, { scopes: ['user:read', 'user:read'] }, { scopes: 'user:read' }, { scopes: ['admin'] },
      { expires_in_days: 0 }, { expires_in_days: 366 }, { expires_in_days: 1.5 }, { expires_in_days: '30' },
      { team_id: '' }, { extra: true },
    ]
    for (const body of cases) {
      const response = await createToken(app, someone, body)
      expect(response.statusCode, JSON.stringify(body)).toBe(400)
      expect(response.json().code).toBe('VALIDATION_ERROR')
    }
    const missing = await app.inject({ method: 'POST', url: '/api/users/me/tokens', headers: { cookie: someone.cookie }, payload: { name: 'x' } })
    expect(missing.statusCode).toBe(400)
    expect((await app.inject({ method: 'DELETE', url: `/api/users/me/tokens/${'x'.repeat(101)}`, headers: { cookie: someone.cookie } })).statusCode).toBe(400)
    expect((await app.inject({ method: 'GET', url: '/api/users/me/tokens?limit=0', headers: { cookie: someone.cookie } })).statusCode).toBe(400)
    expect((await app.inject({ method: 'GET', url: '/api/admin/tokens?foo=1', headers: { cookie: admin.cookie } })).statusCode).toBe(400)
    expect((await call('GET', '/api/users/me/tokens', someone)).json().data.tokens).toEqual([])
    expect((await createToken(app, { cookie: 'auth_session=nope' })).statusCode).toBe(401)
  })

  it('expires: refused past its lifetime, listed as expired', async () => {
    const someone = await fresh()
    const { token, id } = await made(someone, { expires_in_days: 1 })
    expect((await getWith(app, '/api/users/me', token)).statusCode).toBe(200)
    clock.advance(24 * 3600_000 - 1)
    expect((await getWith(app, '/api/users/me', token)).statusCode).toBe(200)
    clock.advance(1)
    expect((await getWith(app, '/api/users/me', token)).statusCode).toBe(401)
    const listed = (await call('GET', '/api/users/me/tokens', someone)).json().data.tokens
    expect(listed).toEqual([expect.objectContaining({ id, expired: true })])
  })

  it('deleted by its owner: refused at once; another user\'s id is not found', async () => {
    const someone = await fresh()
    const stranger = await fresh()
    const { token, id } = await made(someone, { name: 'laptop', scopes: ['user:read'] })
    const foreign = await call('DELETE', `/api/users/me/tokens/${id}`, stranger)
    expect(foreign.statusCode).toBe(404)
    expect((await getWith(app, '/api/users/me', token)).statusCode).toBe(200)
    expect((await call('DELETE', `/api/users/me/tokens/${id}`, someone)).statusCode).toBe(200)
    expect((await getWith(app, '/api/users/me', token)).statusCode).toBe(401)
    expect((await call('DELETE', `/api/users/me/tokens/${id}`, someone)).statusCode).toBe(404)
    expect(await storedRow(app, id)).toBeUndefined()

    const created = (await auditEvents(app, 'personal_token.created')).find((event) => event.details?.token_id === id)
    expect(created).toMatchObject({ actorId: someone.id, target: someone.id, details: { token_id: id, name: 'laptop', scopes: ['user:read'], team_id: null } })
    const revoked = (await auditEvents(app, 'personal_token.revoked')).filter((event) => event.details?.token_id === id)
    expect(revoked).toHaveLength(1)
    expect(revoked[0]).toMatchObject({ actorId: someone.id, details: { token_id: id, name: 'laptop', reason: 'revoked_by_owner' } })
  })

  it('a password change ends every token of the user, for good', async () => {
    const someone = await fresh()
    const tokens = [await made(someone), await made(someone, { scopes: ['user:read'] })]
    const changed = await app.inject({
      method: 'PUT', url: '/api/auth/email/change-password', headers: { cookie: someone.cookie },
      payload: { current_password: 'correct horse battery', new_password: 'a different horse battery' },
    })
    expect(changed.statusCode, changed.body).toBe(200)
    for (const { token } of tokens) expect((await getWith(app, '/api/users/me', token)).statusCode).toBe(401)
    expect((await call('GET', '/api/users/me/tokens', someone)).json().data.tokens).toEqual([])
    const audit = (await auditEvents(app, 'user.password_changed')).find((event) => event.actorId === someone.id)
    expect(audit?.details).toMatchObject({ personal_tokens_revoked: 2 })
  })

  it('login switched off: a user\'s token gets 403 LOGIN_DISABLED, a global admin\'s keeps working', async () => {
    const { token: userToken } = await made(user)
    const { token: adminToken } = await made(admin)
    await app.services.settings.update([{ key: 'global.enable_login', value: false }])
    try {
      const refused = await getWith(app, '/api/users/me', userToken)
      expect(refused.statusCode).toBe(403)
      expect(refused.json().code).toBe('LOGIN_DISABLED')
      expect((await getWith(app, '/api/users/me', adminToken)).statusCode).toBe(200)
    } finally {
      await app.services.settings.update([{ key: 'global.enable_login', value: true }])
    }
    expect((await getWith(app, '/api/users/me', userToken)).statusCode).toBe(200)
  })

  it('admins list every token with its owner and delete any; others may not', async () => {
    const someone = await fresh()
    const { token, id } = await made(someone, { name: 'runner' })
    const listed = await call('GET', `/api/admin/tokens?user_id=${someone.id}`, admin)
    expect(listed.statusCode, listed.body).toBe(200)
    expect(listed.json().data.tokens).toEqual([expect.objectContaining({ id, name: 'runner', owner: { id: someone.id, username: someone.username, email: someone.email } })])
    expect(listed.body).not.toContain(token)
    const all = (await call('GET', '/api/admin/tokens?limit=100', admin)).json().data
    expect(all.pagination.total).toBeGreaterThan(1)
    expect(new Set(all.tokens.map((each: { owner: { id: string } }) => each.owner.id)).size).toBeGreaterThan(1)

    for (const [method, url, permission] of [['GET', '/api/admin/tokens', 'users.view'], ['DELETE', `/api/admin/tokens/${id}`, 'users.edit']] as const) {
      const refused = await call(method, url, someone)
      expect(refused.statusCode).toBe(403)
      expect(refused.json().details).toEqual({ required_permission: permission })
    }
    // A token, an admin's included, does not reach these session-only routes.
    const { token: adminToken } = await made(admin)
    expect((await getWith(app, '/api/admin/tokens', adminToken)).statusCode).toBe(401)

    expect((await call('DELETE', `/api/admin/tokens/${id}`, admin)).statusCode).toBe(200)
    expect((await getWith(app, '/api/users/me', token)).statusCode).toBe(401)
    expect((await call('DELETE', `/api/admin/tokens/${id}`, admin)).statusCode).toBe(404)
    const revoked = (await auditEvents(app, 'personal_token.revoked')).find((event) => event.details?.token_id === id)
    expect(revoked).toMatchObject({ actorId: admin.id, target: someone.id, details: { reason: 'revoked_by_admin', name: 'runner' } })
  })

  it('deleting the user deletes their tokens', async () => {
    const doomed = await fresh()
    const { token, id } = await made(doomed)
    expect((await call('DELETE', `/api/admin/users/${doomed.id}`, admin)).statusCode).toBe(200)
    expect((await getWith(app, '/api/users/me', token)).statusCode).toBe(401)
    expect(await storedRow(app, id)).toBeUndefined()
  })

  it('no token value or digest in a log line or an audit row', async () => {
    expect(secrets.length).toBeGreaterThan(20)
    const { db, t } = app.services.database
    const audit = JSON.stringify(await db.select().from(t.auditEvents))
    const text = logs.text()
    expect(text.length).toBeGreaterThan(0)
    for (const secret of secrets) {
      expect(text.includes(secret), 'a token or digest in the log').toBe(false)
      expect(audit.includes(secret), 'a token or digest in the audit trail').toBe(false)
    }
  })
})
