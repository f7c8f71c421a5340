import { randomBytes, randomUUID } from 'node:crypto'
import { sql } from 'drizzle-orm'
import type { FastifyInstance, LightMyRequestResponse } from 'fastify'
import { decodeJwt } from 'jose'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createTestContext, type TestContext } from '../helpers/app.js'
import { manualClock } from '../helpers/clock.js'
import { DIALECTS } from '../helpers/database.js'
import { issueTokens } from '../helpers/oauth.js'
import { expectOutcome, fire, warmUp } from '../helpers/races.js'
import {
  createToken, expectRefused, expectValidationError, heartbeat, jwtOf, pair, registerWith, SATELLITE_LIMITS, signRegistrationJwt, SYSTEM_INFO,
  unsignedJwt, type CreatedToken,
} from '../helpers/satellites.js'
import { rawRows } from '../helpers/sql.js'
import { client, createTeam, signUp, type Account, type Call } from '../helpers/teams.js'

const ISSUER = 'http://localhost:3000'
const AUDIENCE = 'satellite-registration'
const TOKENS = '/api/satellites/registration-tokens'

function expectUnauthorized(response: LightMyRequestResponse): void {
  expect(response.statusCode, response.body).toBe(401)
  expect(response.json()).toMatchObject({ success: false, code: 'UNAUTHORIZED' })
}

describe.each(DIALECTS)('POST /api/satellites/register: who may register, on %s', (dialect) => {
  let ctx: TestContext
  let app: FastifyInstance
  let call: Call
  const clock = manualClock(Date.now())
  /** The first account: global_admin. */
  let admin: Account
  /** Owner (team_admin) of team A. */
  let adminA: Account
  /** Owner (team_admin) of team B. */
  let adminB: Account
  let teamA: string
  let teamB: string
  let seq = 0

  const name = (prefix = 'sat') => `${prefix}-${dialect.slice(0, 2)}-${++seq}`
  const register = (token: string, payload: object = { name: name(), system_info: SYSTEM_INFO }) => registerWith(app, `Bearer ${token}`, payload)
  const globalToken = () => createToken(call, admin)
  const teamToken = (teamId: string = teamA) => createToken(call, admin, { teamId })
  const tokenStatus = async (id: string) => {
    const response = await call('GET', `${TOKENS}?limit=100`, admin)
    expect(response.statusCode, response.body).toBe(200)
    return (response.json().data.tokens as Array<{ id: string; status: string; used_by_satellite_id: string | null }>).find((token) => token.id === id)
  }
  const satelliteCount = async (): Promise<number> =>
    Number((await rawRows(app.services.database, sql`select count(*) from satellites`))[0]![0])
  /** Claims as the service signs them, for the jti of `created`. */
  const claimsOf = (created: CreatedToken): Record<string, unknown> => decodeJwt(jwtOf(created.token)) as Record<string, unknown>
  const now = () => Math.floor(clock.now() / 1000)

  beforeAll(async () => {
    ctx = await createTestContext(dialect)
    app = (await ctx.build({ clock, limits: SATELLITE_LIMITS })).app
    call = client(app)
    admin = await signUp(app, 'reg_admin')
    adminA = await signUp(app, 'reg_admin_a')
    adminB = await signUp(app, 'reg_admin_b')
    teamA = (await createTeam(call, adminA, 'Register Team A')).id
    teamB = (await createTeam(call, adminB, 'Register Team B')).id
  })
  afterAll(() => ctx.close())

  describe('credentials', () => {
    it('admits only a registration token: none, a session, an OAuth access token, a satellite key → 401 UNAUTHORIZED', async () => {
      const spare = await globalToken()
      const paired = await pair(app, (await globalToken()).token, name())
      const { access_token: accessToken } = await issueTokens(app, admin.cookie)
      const payload = { name: name(), system_info: SYSTEM_INFO }

      const none = await registerWith(app, undefined, payload)
      expectUnauthorized(none)
      expect(none.headers['www-authenticate']).toBe('Bearer')
      expectUnauthorized(await app.inject({ method: 'POST', url: '/api/satellites/register', headers: { cookie: admin.cookie }, payload }))
      expectUnauthorized(await registerWith(app, `Bearer ${accessToken}`, payload))
      expectUnauthorized(await registerWith(app, `Bearer ${paired.apiKey}`, payload))
      // A registration token in another scheme, or under a prefix that names no scope.
      expectUnauthorized(await registerWith(app, `Basic ${spare.token}`, payload))
      expectUnauthorized(await registerWith(app, spare.token, payload))
      expectUnauthorized(await registerWith(app, `Bearer service_satellite_bogus_${jwtOf(spare.token)}`, payload))
      expectUnauthorized(await registerWith(app, `Bearer service_satellite_${jwtOf(spare.token)}`, payload))
      expectUnauthorized(await registerWith(app, `Bearer ${jwtOf(spare.token)}`, payload))
      expectUnauthorized(await registerWith(app, 'Bearer ', payload))
      // The session and the token together: the session does not matter, the token does.
      expect(await satelliteCount()).toBe(1)
      expect((await tokenStatus(spare.id))?.status).toBe('active')
      const both = await app.inject({ method: 'POST', url: '/api/satellites/register', headers: { cookie: admin.cookie, authorization: `Bearer ${spare.token}` }, payload })
      expect(both.statusCode, both.body).toBe(201)
    })
  })

  describe('refused registration tokens (401 INVALID_REGISTRATION_TOKEN)', () => {
    it('a token forged with the right key and the exact claims is accepted (so the refusals below are about what they change)', async () => {
      const created = await globalToken()
      const forged = await signRegistrationJwt(claimsOf(created))
      // HS256 is deterministic: the same header and claims with the same key give the very same JWT.
      expect(forged).toBe(jwtOf(created.token))
      const response = await register(`service_satellite_global_${forged}`)
      expect(response.statusCode, response.body).toBe(201)
    })

    it.each([
      ['a word', 'garbage'],
      ['three dots-separated words', 'a.b.c'],
      ['two parts', 'eyJhbGciOiJIUzI1NiJ9.eyJqdGkiOiJ4In0'],
      ['a header that is not JSON', `${Buffer.from('nope').toString('base64url')}.e30.c2ln`],
      ['5000 characters', 'a'.repeat(5000)],
    ])('malformed: %s', async (_label, jwt) => {
      for (const scope of ['global', 'team']) expectRefused(await register(`service_satellite_${scope}_${jwt}`), 'malformed')
    })

    it('malformed: a real token padded past 4096 characters, which is then still usable', async () => {
      const created = await globalToken()
      const jwt = jwtOf(created.token)
      expectRefused(await register(`service_satellite_global_${jwt}${'A'.repeat(4097 - jwt.length)}`), 'malformed')
      expect((await register(created.token)).statusCode).toBe(201)
    })

    it('bad_signature: the right claims signed with another key, or a payload changed under the signature', async () => {
      const created = await globalToken()
      const otherKey = new Uint8Array(randomBytes(32))
      expectRefused(await register(`service_satellite_global_${await signRegistrationJwt(claimsOf(created), { key: otherKey })}`), 'bad_signature')
      const [header, , signature] = jwtOf(created.token).split('.')
      const tampered = Buffer.from(JSON.stringify({ ...claimsOf(created), exp: now() + 72 * 3600 })).toString('base64url')
      expectRefused(await register(`service_satellite_global_${header}.${tampered}.${signature}`), 'bad_signature')
      expect((await tokenStatus(created.id))?.status).toBe('active')
    })

    it.each(['HS384', 'HS512'])('algorithm_not_allowed: %s with the right key', async (alg) => {
      const created = await globalToken()
      expectRefused(await register(`service_satellite_global_${await signRegistrationJwt(claimsOf(created), { alg })}`), 'algorithm_not_allowed')
      expect((await tokenStatus(created.id))?.status).toBe('active')
    })

    it('alg none: an unsigned token is refused', async () => {
      const created = await globalToken()
      const response = await register(`service_satellite_global_${unsignedJwt(claimsOf(created))}`)
      expectRefused(response, ['malformed', 'algorithm_not_allowed'])
      // The same with a signature part made up.
      expectRefused(await register(`service_satellite_global_${unsignedJwt(claimsOf(created))}c2ln`), ['malformed', 'algorithm_not_allowed', 'bad_signature'])
      expect((await tokenStatus(created.id))?.status).toBe('active')
    })

    it.each([
      ['wrong_issuer', { iss: 'http://evil.example' }],
      ['wrong_issuer', { iss: `${ISSUER}/` }],
      ['wrong_audience', { aud: 'something-else' }],
      ['wrong_audience', { aud: ['mcp'] }],
    ] as const)('%s: the right key, claims %o', async (reason, change) => {
      const created = await globalToken()
      expectRefused(await register(`service_satellite_global_${await signRegistrationJwt({ ...claimsOf(created), ...change })}`), reason)
      expect((await tokenStatus(created.id))?.status).toBe('active')
      // The genuine token still works: nothing was spent.
      expect((await register(created.token)).statusCode).toBe(201)
    })

    it.each([
      ['without created_by', (claims: Record<string, unknown>) => ({ ...claims, created_by: undefined })],
      ['with a numeric created_by', (claims: Record<string, unknown>) => ({ ...claims, created_by: 42 })],
      ['without scope', (claims: Record<string, unknown>) => ({ ...claims, scope: undefined })],
      ['with an unknown scope', (claims: Record<string, unknown>) => ({ ...claims, scope: 'planet' })],
      ['with a team_id on a global token', (claims: Record<string, unknown>) => ({ ...claims, team_id: 'some-team' })],
      ['without jti', (claims: Record<string, unknown>) => ({ ...claims, jti: undefined })],
      ['without exp', (claims: Record<string, unknown>) => ({ ...claims, exp: undefined })],
      ['without iat', (claims: Record<string, unknown>) => ({ ...claims, iat: undefined })],
    ])('invalid_claims: a global token %s', async (_label, change) => {
      const created = await globalToken()
      const claims = JSON.parse(JSON.stringify(change(claimsOf(created))))
      expectRefused(await register(`service_satellite_global_${await signRegistrationJwt(claims)}`), 'invalid_claims')
      expect((await tokenStatus(created.id))?.status).toBe('active')
    })

    it('invalid_claims: a team token without team_id, naming another team than its row, or claiming team scope for a global row', async () => {
      const team = await teamToken(teamA)
      const { team_id: _teamId, ...withoutTeam } = claimsOf(team)
      expectRefused(await register(`service_satellite_team_${await signRegistrationJwt(withoutTeam)}`), 'invalid_claims')
      expectRefused(await register(`service_satellite_team_${await signRegistrationJwt({ ...claimsOf(team), team_id: teamB })}`), 'invalid_claims')
      const global = await globalToken()
      expectRefused(await register(`service_satellite_team_${await signRegistrationJwt({ ...claimsOf(global), scope: 'team', team_id: teamA })}`), 'invalid_claims')
      expect((await tokenStatus(team.id))?.status).toBe('active')
      expect((await tokenStatus(global.id))?.status).toBe('active')
    })

    it('scope_mismatch: a global token under the team prefix, a team token under the global prefix', async () => {
      const global = await globalToken()
      const team = await teamToken()
      expectRefused(await register(`service_satellite_team_${jwtOf(global.token)}`), 'scope_mismatch')
      expectRefused(await register(`service_satellite_global_${jwtOf(team.token)}`), 'scope_mismatch')
      expect((await tokenStatus(global.id))?.status).toBe('active')
      expect((await tokenStatus(team.id))?.status).toBe('active')
    })

    it('unknown: a validly signed token whose jti has no row', async () => {
      const iat = now()
      const claims = { iss: ISSUER, aud: AUDIENCE, jti: randomUUID(), scope: 'global', created_by: admin.id, iat, exp: iat + 3600 }
      expectRefused(await register(`service_satellite_global_${await signRegistrationJwt(claims)}`), 'unknown')
      const teamClaims = { ...claims, jti: randomUUID(), scope: 'team', team_id: teamA }
      expectRefused(await register(`service_satellite_team_${await signRegistrationJwt(teamClaims)}`), 'unknown')
    })

    it('used: a token registers one satellite, once; a second use is refused, for another name as for the same', async () => {
      const created = await teamToken()
      const first = await pair(app, created.token, name())
      expectRefused(await register(created.token), 'used')
      expectRefused(await register(created.token, { name: first.name }), 'used')
      expect(await tokenStatus(created.id)).toMatchObject({ status: 'used', used_by_satellite_id: first.id })
      // The satellite it made keeps its key.
      expect((await heartbeat(app, first.id, first.apiKey)).statusCode).toBe(200)
    })

    it("unknown: a team token whose team was deleted (its row went with the team)", async () => {
      const doomed = await createTeam(call, adminB, 'Register Doomed Team')
      const created = await createToken(call, adminB, { teamId: doomed.id })
      const deleted = await call('DELETE', `/api/teams/${doomed.id}`, adminB)
      expect(deleted.statusCode, deleted.body).toBe(200)
      expect(await rawRows(app.services.database, sql`select id from satellite_registration_tokens where id = ${created.id}`)).toEqual([])
      expectRefused(await register(created.token), 'unknown')
    })

    it('used, under concurrent use: of 6 registrations with one token exactly one succeeds, for distinct names as for one name', async () => {
      await warmUp(app, 6)
      for (const sameName of [false, true]) {
        const created = await teamToken()
        const before = await satelliteCount()
        const shared = name('race')
        const responses = await fire(6, () => register(created.token, { name: sameName ? shared : name('race') }))
        expectOutcome(responses, { 201: 1, '401 INVALID_REGISTRATION_TOKEN': 5 })
        for (const response of responses.filter((candidate) => candidate.statusCode === 401)) expect(response.json().details).toEqual({ reason: 'used' })
        expect(await satelliteCount()).toBe(before + 1)
        const winner = responses.find((response) => response.statusCode === 201)!.json().data
        expect(await tokenStatus(created.id)).toMatchObject({ status: 'used', used_by_satellite_id: winner.satellite.id })
        expect((await heartbeat(app, winner.satellite.id, winner.api_key)).statusCode).toBe(200)
      }
    })

    it('revoked: a revoked token is refused', async () => {
      const created = await globalToken()
      expect((await call('DELETE', `${TOKENS}/${created.id}`, admin)).statusCode).toBe(200)
      expectRefused(await register(created.token), 'revoked')
    })

    it('never answers 5xx, whatever follows the prefix', async () => {
      const created = await globalToken()
      const jwt = jwtOf(created.token)
      const [header, payload] = jwt.split('.')
      const part = (value: unknown) => Buffer.from(JSON.stringify(value)).toString('base64url')
      const odd = [
        '.', '..', '...', 'a..', '.b.', '..c', `${header}..`, `.${payload}.`, `${header}.${payload}`, `${jwt}.`, `${jwt}.x`,
        `${part({ alg: 'HS256' })}.${part('string')}.c2ln`, `${part({ alg: 'HS256' })}.${part([1, 2])}.c2ln`,
        `${part({ alg: 'HS256', crit: ['b64'], b64: false })}.${payload}.c2ln`, `${part({ alg: 'RS256' })}.${payload}.c2ln`,
        `${part({ alg: 'dir', enc: 'A256GCM' })}.${payload}.c2ln.x.y`, `${part({})}.${payload}.c2ln`, '~~~', 'a+b/c=',
        `${header}.${part({ ...claimsOf(created), exp: 'tomorrow' })}.c2ln`,
      ]
      for (const scope of ['global', 'team']) {
        for (const rest of odd) {
          const response = await register(`service_satellite_${scope}_${rest}`)
          expect(response.statusCode, `${rest}: ${response.body}`).toBe(401)
          expect(['INVALID_REGISTRATION_TOKEN', 'UNAUTHORIZED']).toContain(response.json().code)
        }
      }
      expect((await tokenStatus(created.id))?.status).toBe('active')
    })

    it('expired: refused once the clock passes exp, not a second before', async () => {
      const global = await globalToken()
      const team = await teamToken()
      const expiry = claimsOf(global).exp as number
      clock.advance(expiry * 1000 - clock.now() - 1000)
      // A second before, the token passes authentication: the request gets as far as body validation (which does not spend it).
      expectValidationError(await register(global.token, { name: 'x' }))
      clock.advance(1000)
      expectRefused(await register(global.token), 'expired')
      // The team token (24 h) is still good; past its exp it is refused too.
      const teamExpiry = claimsOf(team).exp as number
      clock.advance(teamExpiry * 1000 - clock.now() + 1000)
      expectRefused(await register(team.token), 'expired')
      expect((await tokenStatus(global.id))?.status).toBe('expired')
      expect((await tokenStatus(team.id))?.status).toBe('expired')
    })
  })
})
