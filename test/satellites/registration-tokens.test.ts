import { sql } from 'drizzle-orm'
import type { FastifyInstance, LightMyRequestResponse } from 'fastify'
import { decodeJwt, decodeProtectedHeader, jwtVerify } from 'jose'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createTestContext, type TestContext } from '../helpers/app.js'
import { manualClock } from '../helpers/clock.js'
import { DIALECTS } from '../helpers/database.js'
import { rawRows } from '../helpers/sql.js'
import {
  createToken, expectValidationError, jwtOf, pair, registerWith, registrationKey, SATELLITE_LIMITS, SYSTEM_INFO, type CreatedToken,
} from '../helpers/satellites.js'
import { addMember, client, createTeam, signUp, type Account, type Call } from '../helpers/teams.js'

interface AuditEvent { id: string; type: string; actor_id: string | null; target: string | null; details: Record<string, unknown> }

interface TokenItem {
  id: string
  scope: 'global' | 'team'
  team_id: string | null
  created_by: string
  status: 'active' | 'used' | 'revoked' | 'expired'
  expires_at: string
  used_at: string | null
  used_by_satellite_id: string | null
  revoked_at: string | null
  created_at: string
}

const ISSUER = 'http://localhost:3000'
const HOUR_MS = 3_600_000
const GLOBAL_TOKENS = '/api/satellites/global/registration-tokens'
const LIST = '/api/satellites/registration-tokens'
const teamTokens = (teamId: string) => `/api/teams/${teamId}/satellites/registration-tokens`
const TOKEN_ITEM_KEYS = ['created_at', 'created_by', 'expires_at', 'id', 'revoked_at', 'scope', 'status', 'team_id', 'used_at', 'used_by_satellite_id']

function expectNotFound(response: LightMyRequestResponse): void {
  expect(response.statusCode, response.body).toBe(404)
  expect(response.json()).toMatchObject({ success: false, code: 'NOT_FOUND' })
}

function expectForbidden(response: LightMyRequestResponse): void {
  expect(response.statusCode, response.body).toBe(403)
  expect(response.json()).toMatchObject({ success: false, code: 'FORBIDDEN' })
}

/** Neither the token, nor its JWT, nor the JWT's payload or signature appear anywhere in `text`. */
function expectNoSecret(text: string, token: string): void {
  const jwt = jwtOf(token)
  const [, payload, signature] = jwt.split('.')
  expect(text).not.toContain(token)
  expect(text).not.toContain(jwt)
  expect(text).not.toContain(payload)
  expect(text).not.toContain(signature)
}

describe.each(DIALECTS)('satellite registration tokens on %s', (dialect) => {
  let ctx: TestContext
  let app: FastifyInstance
  let call: Call
  const clock = manualClock(Date.now())
  /** The first account: global_admin. */
  let admin: Account
  /** Owner (team_admin) of team A. */
  let adminA: Account
  /** team_user of team A. */
  let userA: Account
  /** Owner (team_admin) of team B. */
  let adminB: Account
  /** A global_user in no team but their default one. */
  let plain: Account
  let teamA: string
  let teamB: string
  let seq = 0

  const name = (prefix = 'sat') => `${prefix}-${dialect}-${++seq}`
  const auditEvents = async (type: string): Promise<AuditEvent[]> => {
    const response = await call('GET', `/api/admin/audit-log?type=${type}&limit=100`, admin)
    expect(response.statusCode, response.body).toBe(200)
    return response.json().data.events
  }
  const list = async (url: string, account: Account = admin): Promise<{ tokens: TokenItem[]; pagination: { total: number; limit: number; offset: number; has_more: boolean } }> => {
    const response = await call('GET', url, account)
    expect(response.statusCode, response.body).toBe(200)
    expect(response.json().success).toBe(true)
    return response.json().data
  }
  /** The token as the global list shows it (found among the newest 100 with the filter). */
  const listed = async (id: string, query = ''): Promise<TokenItem | undefined> =>
    (await list(`${LIST}?limit=100${query}`)).tokens.find((token) => token.id === id)
  const tokenRow = async (id: string): Promise<unknown[] | undefined> =>
    (await rawRows(app.services.database, sql`select * from satellite_registration_tokens where id = ${id}`))[0]

  beforeAll(async () => {
    ctx = await createTestContext(dialect)
    app = (await ctx.build({ clock, limits: SATELLITE_LIMITS })).app
    call = client(app)
    admin = await signUp(app, 'rt_admin')
    adminA = await signUp(app, 'rt_admin_a')
    userA = await signUp(app, 'rt_user_a')
    adminB = await signUp(app, 'rt_admin_b')
    plain = await signUp(app, 'rt_plain')
    teamA = (await createTeam(call, adminA, 'Token Team A')).id
    teamB = (await createTeam(call, adminB, 'Token Team B')).id
    await addMember(call, teamA, adminA, userA, 'team_user')
  })
  afterAll(() => ctx.close())

  describe('POST /api/satellites/global/registration-tokens', () => {
    it('answers 201 with a service_satellite_global_ HS256 JWT holding exactly the registration claims, 1 h by default', async () => {
      const response = await call('POST', GLOBAL_TOKENS, admin, {})
      expect(response.statusCode, response.body).toBe(201)
      const body = response.json()
      expect(body.success).toBe(true)
      expect(typeof body.message).toBe('string')
      expect(Object.keys(body.data).sort()).toEqual(['expires_at', 'id', 'scope', 'team_id', 'token'])
      const { token, id, scope, team_id: teamId, expires_at: expiresAt } = body.data as CreatedToken
      expect(scope).toBe('global')
      expect(teamId).toBeNull()
      expect(token).toMatch(/^service_satellite_global_[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+$/)

      const jwt = jwtOf(token)
      expect(decodeProtectedHeader(jwt)).toEqual({ alg: 'HS256', typ: 'JWT' })
      const claims = decodeJwt(jwt)
      expect(Object.keys(claims).sort()).toEqual(['aud', 'created_by', 'exp', 'iat', 'iss', 'jti', 'scope'])
      const iat = Math.floor(clock.now() / 1000)
      expect(claims).toEqual({ iss: ISSUER, aud: 'satellite-registration', jti: id, scope: 'global', created_by: admin.id, iat, exp: iat + 3600 })
      expect(expiresAt).toBe(new Date((iat + 3600) * 1000).toISOString())
      // Signed with the key derived from ENCRYPTION_SECRET for this purpose.
      const verified = await jwtVerify(jwt, registrationKey(), { algorithms: ['HS256'], currentDate: new Date(clock.now()) })
      expect(verified.payload.jti).toBe(id)
      expect((await listed(id))?.status).toBe('active')
    })

    it('honours expires_in_hours from 1 to 72', async () => {
      for (const hours of [1, 2, 72]) {
        const created = await createToken(call, admin, { hours })
        const claims = decodeJwt(jwtOf(created.token))
        expect(claims.exp! - claims.iat!).toBe(hours * 3600)
        expect(Date.parse(created.expires_at)).toBe(claims.exp! * 1000)
      }
    })

    it('records satellite.token_created with the creator as actor and the token id as target', async () => {
      const created = await createToken(call, admin, { hours: 5 })
      const event = (await auditEvents('satellite.token_created')).find((candidate) => candidate.target === created.id)
      expect(event).toBeDefined()
      expect(event).toMatchObject({ type: 'satellite.token_created', actor_id: admin.id, target: created.id })
      expect(event!.details).toMatchObject({ scope: 'global', team_id: null, expires_at: created.expires_at })
      expectNoSecret(JSON.stringify(event), created.token)
    })

    it.each([
      ['0', { expires_in_hours: 0 }],
      ['73', { expires_in_hours: 73 }],
      ['-1', { expires_in_hours: -1 }],
      ['1.5', { expires_in_hours: 1.5 }],
      ['the string "2"', { expires_in_hours: '2' }],
      ['null', { expires_in_hours: null }],
      ['an extra property', { expires_in_hours: 2, scope: 'team' }],
      ['an unknown property alone', { team_id: 'x' }],
    ])('answers 400 VALIDATION_ERROR to expires_in_hours %s, on both creation routes, creating nothing', async (_label, payload) => {
      const before = (await list(`${LIST}?limit=1`)).pagination.total
      expectValidationError(await call('POST', GLOBAL_TOKENS, admin, payload))
      expectValidationError(await call('POST', teamTokens(teamA), adminA, payload))
      expect((await list(`${LIST}?limit=1`)).pagination.total).toBe(before)
    })

    it('is for global admins only: 403 to a team_admin and a global_user, 401 without a session', async () => {
      for (const account of [adminA, plain]) {
        const response = await call('POST', GLOBAL_TOKENS, account, {})
        expectForbidden(response)
        expect(response.json().details).toMatchObject({ required_permission: 'satellites.manage' })
      }
      const anonymous = await call('POST', GLOBAL_TOKENS, undefined, {})
      expect(anonymous.statusCode).toBe(401)
      expect(anonymous.json()).toMatchObject({ success: false, code: 'UNAUTHORIZED' })
    })
  })

  describe('POST /api/teams/:teamId/satellites/registration-tokens', () => {
    it("answers 201 to the team's team_admin with a service_satellite_team_ JWT naming the team, 24 h by default", async () => {
      const response = await call('POST', teamTokens(teamA), adminA, {})
      expect(response.statusCode, response.body).toBe(201)
      const { token, id, scope, team_id: teamId, expires_at: expiresAt } = response.json().data as CreatedToken
      expect(response.json().success).toBe(true)
      expect(scope).toBe('team')
      expect(teamId).toBe(teamA)
      expect(token.startsWith('service_satellite_team_')).toBe(true)
      const jwt = jwtOf(token)
      expect(decodeProtectedHeader(jwt)).toEqual({ alg: 'HS256', typ: 'JWT' })
      const claims = decodeJwt(jwt)
      expect(Object.keys(claims).sort()).toEqual(['aud', 'created_by', 'exp', 'iat', 'iss', 'jti', 'scope', 'team_id'])
      const iat = Math.floor(clock.now() / 1000)
      expect(claims).toEqual({ iss: ISSUER, aud: 'satellite-registration', jti: id, scope: 'team', team_id: teamA, created_by: adminA.id, iat, exp: iat + 24 * 3600 })
      expect(expiresAt).toBe(new Date((iat + 24 * 3600) * 1000).toISOString())
      await jwtVerify(jwt, registrationKey(), { algorithms: ['HS256'], currentDate: new Date(clock.now()) })

      const event = (await auditEvents('satellite.token_created')).find((candidate) => candidate.target === id)
      expect(event).toMatchObject({ actor_id: adminA.id, target: id, details: { scope: 'team', team_id: teamA } })
    })

    it('answers 201 to a global admin for any team, with the admin as created_by', async () => {
      const created = await createToken(call, admin, { teamId: teamB, hours: 3 })
      expect(created).toMatchObject({ scope: 'team', team_id: teamB })
      const claims = decodeJwt(jwtOf(created.token))
      expect(claims).toMatchObject({ scope: 'team', team_id: teamB, created_by: admin.id })
      expect(claims.exp! - claims.iat!).toBe(3 * 3600)
    })

    it("answers 404 to another team's admin and a non-member, 403 to a team_user, 404 to a global admin for an unknown team", async () => {
      expectNotFound(await call('POST', teamTokens(teamA), adminB, {}))
      expectNotFound(await call('POST', teamTokens(teamA), plain, {}))
      const asUser = await call('POST', teamTokens(teamA), userA, {})
      expectForbidden(asUser)
      expect(asUser.json().details).toMatchObject({ required_permission: 'team.satellites.manage' })
      expectNotFound(await call('POST', teamTokens('no-such-team-id'), admin, {}))
      expectNotFound(await call('POST', teamTokens('no-such-team-id'), adminA, {}))
      const anonymous = await call('POST', teamTokens(teamA), undefined, {})
      expect(anonymous.statusCode).toBe(401)
      // Nothing was created by any of these.
      expect((await list(`${LIST}?limit=100&team_id=${teamA}`)).tokens.every((token) => token.created_by === adminA.id)).toBe(true)
    })
  })

  describe('storage', () => {
    it('keeps the jti as the row id and never the token, its JWT, payload or signature', async () => {
      const global = await createToken(call, admin)
      const team = await createToken(call, adminA, { teamId: teamA })
      for (const created of [global, team]) {
        const row = await tokenRow(created.id)
        expect(row).toBeDefined()
        expect(row).toContain(decodeJwt(jwtOf(created.token)).jti)
        for (const cell of row!) expectNoSecret(String(cell), created.token)
      }
      const everything = await rawRows(app.services.database, sql`select * from satellite_registration_tokens`)
      expectNoSecret(JSON.stringify(everything), global.token)
      expectNoSecret(JSON.stringify(everything), team.token)
    })
  })

  describe('GET /api/satellites/registration-tokens', () => {
    it('paginates newest first with total and has_more, and never shows a token', async () => {
      const teamC = (await createTeam(call, admin, 'Token Team C')).id
      const created: CreatedToken[] = []
      for (let i = 0; i < 5; i++) {
        created.push(await createToken(call, admin, { teamId: teamC }))
        clock.advance(1000)
      }
      const newestFirst = created.map((token) => token.id).reverse()
      const pages = []
      for (const offset of [0, 2, 4]) {
        const response = await call('GET', `${LIST}?team_id=${teamC}&limit=2&offset=${offset}`, admin)
        expect(response.statusCode, response.body).toBe(200)
        for (const token of created) expectNoSecret(response.body, token.token)
        pages.push(response.json().data)
      }
      expect(pages.map((page) => page.pagination)).toEqual([
        { total: 5, limit: 2, offset: 0, has_more: true },
        { total: 5, limit: 2, offset: 2, has_more: true },
        { total: 5, limit: 2, offset: 4, has_more: false },
      ])
      expect(pages.flatMap((page) => page.tokens.map((token: TokenItem) => token.id))).toEqual(newestFirst)
      const item: TokenItem = pages[0].tokens[0]
      expect(Object.keys(item).sort()).toEqual(TOKEN_ITEM_KEYS)
      expect(item).toMatchObject({
        id: created[4]!.id, scope: 'team', team_id: teamC, created_by: admin.id, status: 'active',
        expires_at: created[4]!.expires_at, used_at: null, used_by_satellite_id: null, revoked_at: null,
      })
      // Defaults: 20 from 0.
      const defaults = await list(`${LIST}?team_id=${teamC}`)
      expect(defaults.pagination).toEqual({ total: 5, limit: 20, offset: 0, has_more: false })
      // Past the end: empty, total kept.
      const past = await list(`${LIST}?team_id=${teamC}&offset=10`)
      expect(past.tokens).toEqual([])
      expect(past.pagination.total).toBe(5)
    })

    it('filters by scope, team_id and status', async () => {
      const global = await createToken(call, admin)
      const team = await createToken(call, adminB, { teamId: teamB })
      const globals = (await list(`${LIST}?scope=global&limit=100`)).tokens
      expect(globals.map((token) => token.id)).toContain(global.id)
      expect(globals.every((token) => token.scope === 'global' && token.team_id === null)).toBe(true)
      const teams = (await list(`${LIST}?scope=team&limit=100`)).tokens
      expect(teams.map((token) => token.id)).toContain(team.id)
      expect(teams.every((token) => token.scope === 'team')).toBe(true)
      const ofB = (await list(`${LIST}?team_id=${teamB}&limit=100`)).tokens
      expect(ofB.map((token) => token.id)).toContain(team.id)
      expect(ofB.every((token) => token.team_id === teamB)).toBe(true)
      const active = (await list(`${LIST}?status=active&limit=100`)).tokens
      expect(active.map((token) => token.id)).toEqual(expect.arrayContaining([global.id, team.id]))
      expect(active.every((token) => token.status === 'active')).toBe(true)
      const revoked = (await list(`${LIST}?status=revoked&limit=100`)).tokens
      expect(revoked.map((token) => token.id)).not.toContain(global.id)
    })

    it.each([
      ['status=unknown'], ['scope=planet'], ['limit=0'], ['limit=abc'], ['offset=-1'], ['token=x'],
    ])('answers 400 VALIDATION_ERROR to %s', async (query) => {
      expectValidationError(await call('GET', `${LIST}?${query}`, admin))
    })

    it('is for global admins only: 403 to a team_admin and a global_user, 401 without a session', async () => {
      expectForbidden(await call('GET', LIST, adminA))
      expectForbidden(await call('GET', LIST, plain))
      expect((await call('GET', LIST)).statusCode).toBe(401)
    })
  })

  describe('GET /api/teams/:teamId/satellites/registration-tokens', () => {
    it("lists only that team's tokens to its team_admin and to a global admin, never the token", async () => {
      const ofA = await createToken(call, adminA, { teamId: teamA })
      const ofB = await createToken(call, adminB, { teamId: teamB })
      const global = await createToken(call, admin)
      for (const account of [adminA, admin]) {
        const response = await call('GET', `${teamTokens(teamA)}?limit=100`, account)
        expect(response.statusCode, response.body).toBe(200)
        for (const created of [ofA, ofB, global]) expectNoSecret(response.body, created.token)
        const { tokens, pagination } = response.json().data as { tokens: TokenItem[]; pagination: { total: number } }
        expect(tokens.map((token) => token.id)).toContain(ofA.id)
        expect(tokens.map((token) => token.id)).not.toContain(ofB.id)
        expect(tokens.map((token) => token.id)).not.toContain(global.id)
        expect(tokens.every((token) => token.team_id === teamA && token.scope === 'team')).toBe(true)
        expect(pagination.total).toBe(tokens.length)
      }
      const active = (await list(`${teamTokens(teamA)}?status=active&limit=100`, adminA)).tokens
      expect(active.map((token) => token.id)).toContain(ofA.id)
      expect(active.every((token) => token.status === 'active')).toBe(true)
    })

    it("answers 404 to another team's admin and a non-member, 403 to a team_user, 404 for an unknown team", async () => {
      expectNotFound(await call('GET', teamTokens(teamA), adminB))
      expectNotFound(await call('GET', teamTokens(teamA), plain))
      expectForbidden(await call('GET', teamTokens(teamA), userA))
      expectNotFound(await call('GET', teamTokens('no-such-team-id'), adminA))
      expect((await call('GET', teamTokens(teamA))).statusCode).toBe(401)
    })

    it('accepts no scope or team_id filter (400)', async () => {
      expectValidationError(await call('GET', `${teamTokens(teamA)}?scope=global`, adminA))
      expectValidationError(await call('GET', `${teamTokens(teamA)}?team_id=${teamB}`, adminA))
    })
  })

  describe('DELETE /api/satellites/registration-tokens/:id', () => {
    it('a global admin revokes a token: 200, shown revoked, audited, then refused for registration with reason revoked', async () => {
      const created = await createToken(call, admin)
      const response = await call('DELETE', `${LIST}/${created.id}`, admin)
      expect(response.statusCode, response.body).toBe(200)
      expect(response.json()).toMatchObject({ success: true })
      const item = await listed(created.id)
      expect(item).toMatchObject({ status: 'revoked', revoked_at: new Date(clock.now()).toISOString(), used_at: null, used_by_satellite_id: null })
      expect((await listed(created.id, '&status=revoked'))?.id).toBe(created.id)
      expect(await listed(created.id, '&status=active')).toBeUndefined()

      const event = (await auditEvents('satellite.token_revoked')).find((candidate) => candidate.target === created.id)
      expect(event).toMatchObject({ type: 'satellite.token_revoked', actor_id: admin.id, target: created.id, details: { scope: 'global', team_id: null } })

      const refused = await registerWith(app, `Bearer ${created.token}`, { name: name(), system_info: SYSTEM_INFO })
      expect(refused.statusCode, refused.body).toBe(401)
      expect(refused.json()).toMatchObject({ success: false, code: 'INVALID_REGISTRATION_TOKEN', details: { reason: 'revoked' } })
      expect(refused.headers['www-authenticate']).toBe('Bearer error="invalid_token"')
    })

    it('revoking twice answers 409 TOKEN_ALREADY_REVOKED and records one event', async () => {
      const created = await createToken(call, admin)
      expect((await call('DELETE', `${LIST}/${created.id}`, admin)).statusCode).toBe(200)
      const again = await call('DELETE', `${LIST}/${created.id}`, admin)
      expect(again.statusCode, again.body).toBe(409)
      expect(again.json()).toMatchObject({ success: false, code: 'TOKEN_ALREADY_REVOKED' })
      expect((await auditEvents('satellite.token_revoked')).filter((event) => event.target === created.id)).toHaveLength(1)
    })

    it('a used token answers 409 TOKEN_ALREADY_USED and stays used', async () => {
      const created = await createToken(call, admin)
      const satellite = await pair(app, created.token, name())
      const response = await call('DELETE', `${LIST}/${created.id}`, admin)
      expect(response.statusCode, response.body).toBe(409)
      expect(response.json()).toMatchObject({ success: false, code: 'TOKEN_ALREADY_USED' })
      expect(await listed(created.id)).toMatchObject({ status: 'used', used_by_satellite_id: satellite.id, revoked_at: null })
      expect((await auditEvents('satellite.token_revoked')).some((event) => event.target === created.id)).toBe(false)
    })

    it("a team_admin revokes their team's token, not another team's nor a global one (404)", async () => {
      const ofA = await createToken(call, adminA, { teamId: teamA })
      const ofB = await createToken(call, adminB, { teamId: teamB })
      const global = await createToken(call, admin)

      expectNotFound(await call('DELETE', `${LIST}/${ofB.id}`, adminA))
      expectNotFound(await call('DELETE', `${LIST}/${global.id}`, adminA))
      expect((await listed(ofB.id))?.status).toBe('active')
      expect((await listed(global.id))?.status).toBe('active')

      const response = await call('DELETE', `${LIST}/${ofA.id}`, adminA)
      expect(response.statusCode, response.body).toBe(200)
      expect((await listed(ofA.id))?.status).toBe('revoked')
      const event = (await auditEvents('satellite.token_revoked')).find((candidate) => candidate.target === ofA.id)
      expect(event).toMatchObject({ actor_id: adminA.id, details: { scope: 'team', team_id: teamA } })

      // A global admin revokes a team's token as well.
      expect((await call('DELETE', `${LIST}/${ofB.id}`, admin)).statusCode).toBe(200)
      expect((await listed(ofB.id))?.status).toBe('revoked')
    })

    it('answers 404 to a global_user and a team_user, 404 for an unknown id, 401 without a session', async () => {
      const global = await createToken(call, admin)
      const ofA = await createToken(call, adminA, { teamId: teamA })
      expectNotFound(await call('DELETE', `${LIST}/${global.id}`, plain))
      expectNotFound(await call('DELETE', `${LIST}/${ofA.id}`, plain))
      expectNotFound(await call('DELETE', `${LIST}/${ofA.id}`, userA))
      expectNotFound(await call('DELETE', `${LIST}/no-such-token-id`, admin))
      const anonymous = await call('DELETE', `${LIST}/${global.id}`)
      expect(anonymous.statusCode).toBe(401)
      expect((await listed(global.id))?.status).toBe('active')
      expect((await listed(ofA.id))?.status).toBe('active')
    })
  })

  describe('status', () => {
    it('goes from active to used when a satellite registers, naming the satellite', async () => {
      const created = await createToken(call, adminA, { teamId: teamA })
      expect((await listed(created.id))?.status).toBe('active')
      const satellite = await pair(app, created.token, name('used'))
      const item = await listed(created.id)
      expect(item).toMatchObject({ status: 'used', used_by_satellite_id: satellite.id, used_at: new Date(clock.now()).toISOString(), revoked_at: null })
      expect((await listed(created.id, '&status=used'))?.id).toBe(created.id)
      expect(await listed(created.id, '&status=active')).toBeUndefined()
      expect((await list(`${teamTokens(teamA)}?status=used&limit=100`, adminA)).tokens.map((token) => token.id)).toContain(created.id)
    })

    it('goes from active to expired once the clock passes expires_at; registration is then refused with reason expired', async () => {
      const global = await createToken(call, admin)
      const team = await createToken(call, adminA, { teamId: teamA, hours: 1 })
      clock.advance(HOUR_MS - 1000)
      expect((await listed(global.id))?.status).toBe('active')
      clock.advance(1000)
      // expires_at is exclusive: at that instant the token has expired.
      for (const created of [global, team]) {
        const item = await listed(created.id)
        expect(item).toMatchObject({ status: 'expired', used_at: null, revoked_at: null })
        expect((await listed(created.id, '&status=expired'))?.id).toBe(created.id)
        expect(await listed(created.id, '&status=active')).toBeUndefined()
      }
      clock.advance(1000)
      for (const created of [global, team]) {
        const refused = await registerWith(app, `Bearer ${created.token}`, { name: name(), system_info: SYSTEM_INFO })
        expect(refused.statusCode, refused.body).toBe(401)
        expect(refused.json()).toMatchObject({ code: 'INVALID_REGISTRATION_TOKEN', details: { reason: 'expired' } })
        expect((await listed(created.id))?.status).toBe('expired')
      }
    })
  })
})
