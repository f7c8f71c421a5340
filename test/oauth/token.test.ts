import { sql } from 'drizzle-orm'
import type { FastifyInstance, LightMyRequestResponse } from 'fastify'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createTestContext, type TestContext } from '../helpers/app.js'
import { manualClock } from '../helpers/clock.js'
import { DIALECTS } from '../helpers/database.js'
import {
  authorizeAndApprove, bearer, CLI_CLIENT_ID, exchangeCode, getWithBearer, issueTokens, LOOPBACK_REDIRECT_URI, pkce, REDIRECT_URI, refresh,
  registerClient, tokenRequest, type TokenSet,
} from '../helpers/oauth.js'
import { rawRows } from '../helpers/sql.js'
import { signUp, type Account } from '../helpers/teams.js'

const MINUTE = 60_000
const DAY = 24 * 60 * MINUTE
const scopeSet = (scope: string) => scope.split(' ').filter(Boolean).sort()

/** POST /api/oauth2/token, RFC 6749 §4.1.3, §5, §6 and the Security BCP's refresh rotation. */
describe.each(DIALECTS)('POST /api/oauth2/token on %s', (dialect) => {
  let ctx: TestContext
  let app: FastifyInstance
  const clock = manualClock(Date.now())
  let user: Account
  let seq = 0

  const me = (token: string) => getWithBearer(app, '/api/users/me', token)

  function expectOAuthError(response: LightMyRequestResponse, status: number, error: string) {
    expect(response.statusCode, response.body).toBe(status)
    expect(response.headers['cache-control']).toContain('no-store')
    const body = response.json()
    expect(body).toMatchObject({ success: false, error, error_description: expect.any(String), code: expect.any(String) })
    expect(body.code).toMatch(/^[A-Z_]+$/)
    return body
  }

  const expectDead = async (token: string) => {
    const response = await me(token)
    expect(response.statusCode).toBe(401)
    expect(response.headers['www-authenticate']).toContain('invalid_token')
  }

  const auditCount = async (type: string) =>
    Number((await rawRows(app.services.database, sql`select count(*) from audit_events where type = ${type}`))[0]![0])

  beforeAll(async () => {
    ctx = await createTestContext(dialect)
    app = (await ctx.build({ clock, env: { RATE_LIMIT_ENABLED: 'false' } })).app
    await signUp(app, 'token_admin')
    user = await signUp(app, 'token_user')
  })
  afterAll(() => ctx.close())

  describe('authorization_code', () => {
    it('form-encoded: 200 with the token set, Cache-Control no-store; the access token works', async () => {
      const { code, verifier } = await authorizeAndApprove(app, user.cookie, { scope: 'user:read teams:read offline_access' })
      const response = await exchangeCode(app, { code, verifier })
      expect(response.statusCode, response.body).toBe(200)
      expect(response.headers['cache-control']).toContain('no-store')
      const body = response.json()
      expect(Object.keys(body).sort()).toEqual(['access_token', 'expires_in', 'refresh_token', 'scope', 'success', 'token_type'])
      expect(body).toEqual({
        success: true, access_token: expect.any(String), token_type: 'Bearer', expires_in: 3600, refresh_token: expect.any(String), scope: expect.any(String),
      })
      expect(scopeSet(body.scope)).toEqual(['offline_access', 'teams:read', 'user:read'])
      expect(body.access_token).not.toBe(body.refresh_token)
      expect(body.access_token.length).toBeGreaterThanOrEqual(43)
      const profile = await me(body.access_token)
      expect(profile.statusCode).toBe(200)
      expect(profile.json().data.id).toBe(user.id)
    })

    it('JSON body works too', async () => {
      const { code, verifier } = await authorizeAndApprove(app, user.cookie, { scope: 'user:read' })
      const response = await exchangeCode(app, { code, verifier }, { json: true })
      expect(response.statusCode, response.body).toBe(200)
      expect(response.headers['cache-control']).toContain('no-store')
      expect(response.json()).toMatchObject({ success: true, token_type: 'Bearer', expires_in: 3600, scope: 'user:read' })
    })

    it('no refresh token without offline_access', async () => {
      const tokens = await issueTokens(app, user.cookie, 'user:read teams:read')
      expect(tokens.refresh_token).toBeUndefined()
      expect('refresh_token' in tokens).toBe(false)
      expect(scopeSet(tokens.scope)).toEqual(['teams:read', 'user:read'])
    })

    it('the code is bound to the redirect URI it was issued for (127.0.0.1 variant)', async () => {
      const { code, verifier } = await authorizeAndApprove(app, user.cookie, { scope: 'user:read', redirectUri: LOOPBACK_REDIRECT_URI })
      const response = await exchangeCode(app, { code, verifier, redirectUri: LOOPBACK_REDIRECT_URI })
      expect(response.statusCode, response.body).toBe(200)
    })
  })

  describe('errors (RFC 6749 §5.2)', () => {
    it.each([
      ['grant_type missing', { code: 'x', client_id: CLI_CLIENT_ID }],
      ['code missing', { grant_type: 'authorization_code', redirect_uri: REDIRECT_URI, client_id: CLI_CLIENT_ID, code_verifier: 'v'.repeat(43) }],
      ['code_verifier missing', { grant_type: 'authorization_code', code: 'x', redirect_uri: REDIRECT_URI, client_id: CLI_CLIENT_ID }],
      ['redirect_uri missing', { grant_type: 'authorization_code', code: 'x', client_id: CLI_CLIENT_ID, code_verifier: 'v'.repeat(43) }],
      ['refresh_token missing', { grant_type: 'refresh_token', client_id: CLI_CLIENT_ID }],
    ])('%s → 400 invalid_request', async (_, body) => {
      expectOAuthError(await tokenRequest(app, body), 400, 'invalid_request')
      expectOAuthError(await tokenRequest(app, body, { json: true }), 400, 'invalid_request')
    })

    it('an unknown field is ignored (RFC 6749 §3.2): the grant is judged on the known ones (400 invalid_grant)', async () => {
      const body = { grant_type: 'authorization_code', code: 'x', redirect_uri: REDIRECT_URI, client_id: CLI_CLIENT_ID, code_verifier: 'v'.repeat(43), extra: '1', resource: 'https://mcp.example.com/' }
      expectOAuthError(await tokenRequest(app, body), 400, 'invalid_grant')
      expectOAuthError(await tokenRequest(app, body, { json: true }), 400, 'invalid_grant')
    })

    it('malformed JSON → 400 invalid_request, no-store', async () => {
      const response = await app.inject({ method: 'POST', url: '/api/oauth2/token', headers: { 'content-type': 'application/json' }, payload: '{"grant_type":' })
      expect(response.statusCode).toBe(400)
      expect(response.headers['cache-control']).toContain('no-store')
      expect(response.json().success).toBe(false)
    })

    it.each(['password', 'client_credentials', 'implicit'])('grant_type %s → 400 unsupported_grant_type', async (grantType) => {
      const body = expectOAuthError(await tokenRequest(app, { grant_type: grantType, client_id: CLI_CLIENT_ID }), 400, 'unsupported_grant_type')
      expect(body.code).toBe('UNSUPPORTED_GRANT_TYPE')
    })

    it.each([
      ['missing', undefined],
      ['unknown', 'no-such-client'],
    ])('client_id %s → 401 invalid_client', async (_, clientId) => {
      const { code, verifier } = await authorizeAndApprove(app, user.cookie, { scope: 'user:read' })
      const response = await tokenRequest(app, { grant_type: 'authorization_code', code, redirect_uri: REDIRECT_URI, code_verifier: verifier, client_id: clientId })
      expectOAuthError(response, 401, 'invalid_client')
    })

    it('client_id unknown on refresh → 401 invalid_client', async () => {
      expectOAuthError(await tokenRequest(app, { grant_type: 'refresh_token', refresh_token: 'x', client_id: 'no-such-client' }), 401, 'invalid_client')
    })

    it('an unknown code → 400 invalid_grant', async () => {
      const response = await exchangeCode(app, { code: 'not-a-code-at-all-0123456789', verifier: pkce().verifier })
      const body = expectOAuthError(response, 400, 'invalid_grant')
      expect(body.code).toBe('INVALID_GRANT')
    })

    it('a wrong code_verifier → 400 invalid_grant', async () => {
      const { code } = await authorizeAndApprove(app, user.cookie, { scope: 'user:read' })
      expectOAuthError(await exchangeCode(app, { code, verifier: pkce().verifier }), 400, 'invalid_grant')
    })

    it('the challenge itself as verifier (plain) → 400 invalid_grant', async () => {
      const pair = pkce()
      const { code } = await authorizeAndApprove(app, user.cookie, { scope: 'user:read', pkce: pair })
      expectOAuthError(await exchangeCode(app, { code, verifier: pair.challenge }), 400, 'invalid_grant')
    })

    it('another registered redirect_uri than the code\'s → 400 invalid_grant', async () => {
      const { code, verifier } = await authorizeAndApprove(app, user.cookie, { scope: 'user:read' })
      expectOAuthError(await exchangeCode(app, { code, verifier, redirectUri: LOOPBACK_REDIRECT_URI }), 400, 'invalid_grant')
    })

    it('another client\'s code → 400 invalid_grant', async () => {
      const redirectUri = `https://client-${++seq}.example.com/callback`
      const clientId = await registerClient(app, { client_name: 'Other', redirect_uris: [redirectUri], scope: 'user:read' })
      const { code, verifier } = await authorizeAndApprove(app, user.cookie, { scope: 'user:read', clientId, redirectUri })
      // The CLI client presents the other client's code (with that client's redirect URI).
      expectOAuthError(await exchangeCode(app, { code, verifier, redirectUri }), 400, 'invalid_grant')
    })

    it('the CLI client\'s code presented by another client → 400 invalid_grant', async () => {
      const redirectUri = `https://client-${++seq}.example.com/callback`
      const clientId = await registerClient(app, { client_name: 'Other', redirect_uris: [redirectUri, REDIRECT_URI], scope: 'user:read' })
      const { code, verifier } = await authorizeAndApprove(app, user.cookie, { scope: 'user:read' })
      expectOAuthError(await exchangeCode(app, { code, verifier, clientId }), 400, 'invalid_grant')
    })
  })

  describe('code reuse', () => {
    it('a code used twice: invalid_grant, and the tokens from the first exchange are revoked', async () => {
      const { code, verifier } = await authorizeAndApprove(app, user.cookie, { scope: 'user:read offline_access' })
      const first = await exchangeCode(app, { code, verifier })
      expect(first.statusCode).toBe(200)
      const tokens: TokenSet = first.json()
      expect((await me(tokens.access_token)).statusCode).toBe(200)

      expectOAuthError(await exchangeCode(app, { code, verifier }), 400, 'invalid_grant')
      await expectDead(tokens.access_token)
      expectOAuthError(await refresh(app, tokens.refresh_token!), 400, 'invalid_grant')
    })

    it('five concurrent exchanges of one code: exactly one 200, the rest invalid_grant', async () => {
      const { code, verifier } = await authorizeAndApprove(app, user.cookie, { scope: 'user:read' })
      const answers = await Promise.all([1, 2, 3, 4, 5].map(() => exchangeCode(app, { code, verifier })))
      expect(answers.filter((answer) => answer.statusCode === 200)).toHaveLength(1)
      for (const answer of answers.filter((answer) => answer.statusCode !== 200)) expectOAuthError(answer, 400, 'invalid_grant')
    })
  })

  describe('refresh_token', () => {
    it('rotates: new tokens differ, both work, the old refresh token is spent', async () => {
      const first = await issueTokens(app, user.cookie, 'user:read teams:read offline_access')
      const response = await refresh(app, first.refresh_token!)
      expect(response.statusCode, response.body).toBe(200)
      expect(response.headers['cache-control']).toContain('no-store')
      const second: TokenSet = response.json()
      expect(second).toEqual({
        success: true, access_token: expect.any(String), token_type: 'Bearer', expires_in: 3600, refresh_token: expect.any(String), scope: expect.any(String),
      })
      expect(scopeSet(second.scope)).toEqual(['offline_access', 'teams:read', 'user:read'])
      expect(second.access_token).not.toBe(first.access_token)
      expect(second.refresh_token).not.toBe(first.refresh_token)
      expect((await me(second.access_token)).statusCode).toBe(200)
      // JSON body for refresh too.
      const third = await tokenRequest(app, { grant_type: 'refresh_token', refresh_token: second.refresh_token, client_id: CLI_CLIENT_ID }, { json: true })
      expect(third.statusCode, third.body).toBe(200)
      expect((await me(third.json().access_token)).statusCode).toBe(200)
    })

    it('reuse of a spent refresh token: invalid_grant, the whole grant dies, and it is audit-logged', async () => {
      const before = await auditCount('oauth.refresh_token_reused')
      const first = await issueTokens(app, user.cookie, 'user:read offline_access')
      const second: TokenSet = (await refresh(app, first.refresh_token!)).json()
      const third: TokenSet = (await refresh(app, second.refresh_token!)).json()
      expect((await me(third.access_token)).statusCode).toBe(200)

      expectOAuthError(await refresh(app, first.refresh_token!), 400, 'invalid_grant')
      for (const token of [first.access_token, second.access_token, third.access_token]) await expectDead(token)
      expectOAuthError(await refresh(app, third.refresh_token!), 400, 'invalid_grant')
      expect(await auditCount('oauth.refresh_token_reused')).toBe(before + 1)
      const rows = await rawRows(app.services.database, sql`select actor_id from audit_events where type = 'oauth.refresh_token_reused'`)
      expect(rows.map((row) => row[0])).toContain(user.id)
    })

    it('another grant of the same user survives one grant\'s reuse', async () => {
      const mine = await issueTokens(app, user.cookie, 'user:read offline_access')
      const other = await issueTokens(app, user.cookie, 'user:read offline_access')
      await refresh(app, mine.refresh_token!)
      await refresh(app, mine.refresh_token!)
      expect((await me(other.access_token)).statusCode).toBe(200)
      expect((await refresh(app, other.refresh_token!)).statusCode).toBe(200)
    })

    it.each([2, 5])('%i concurrent refreshes of one token: exactly one 200, and the grant ends revoked', async (n) => {
      const tokens = await issueTokens(app, user.cookie, 'user:read offline_access')
      const answers = await Promise.all(Array.from({ length: n }, () => refresh(app, tokens.refresh_token!)))
      const winners = answers.filter((answer) => answer.statusCode === 200)
      expect(winners).toHaveLength(1)
      for (const answer of answers.filter((answer) => answer.statusCode !== 200)) expectOAuthError(answer, 400, 'invalid_grant')
      const won: TokenSet = winners[0]!.json()
      await expectDead(won.access_token)
      await expectDead(tokens.access_token)
      expectOAuthError(await refresh(app, won.refresh_token!), 400, 'invalid_grant')
    })

    it('may narrow the scope: the narrowed token lacks the dropped scope; no offline_access → no new refresh token', async () => {
      const tokens = await issueTokens(app, user.cookie, 'user:read teams:read offline_access')
      const narrowed = await refresh(app, tokens.refresh_token!, { scope: 'teams:read offline_access' })
      expect(narrowed.statusCode, narrowed.body).toBe(200)
      const body: TokenSet = narrowed.json()
      expect(scopeSet(body.scope)).toEqual(['offline_access', 'teams:read'])
      expect((await getWithBearer(app, '/api/teams/me', body.access_token)).statusCode).toBe(200)
      const refused = await me(body.access_token)
      expect(refused.statusCode).toBe(403)
      expect(refused.headers['www-authenticate']).toContain('insufficient_scope')

      const last = await refresh(app, body.refresh_token!, { scope: 'teams:read' })
      expect(last.statusCode, last.body).toBe(200)
      expect(last.json().scope).toBe('teams:read')
      expect('refresh_token' in last.json()).toBe(false)
    })

    it('may not widen the scope: 400 invalid_scope', async () => {
      const tokens = await issueTokens(app, user.cookie, 'user:read offline_access')
      expectOAuthError(await refresh(app, tokens.refresh_token!, { scope: 'user:read teams:read offline_access' }), 400, 'invalid_scope')
      const other = await issueTokens(app, user.cookie, 'user:read offline_access')
      // Malformed (a double quote is no scope-token character); an unknown but well-formed name is dropped instead (test/oauth/unknown-scopes.test.ts).
      expectOAuthError(await refresh(app, other.refresh_token!, { scope: 'user:read "nonsense"' }), 400, 'invalid_scope')
    })

    it('an unknown refresh token → 400 invalid_grant; an access token is not a refresh token', async () => {
      expectOAuthError(await refresh(app, 'not-a-refresh-token-0123456789'), 400, 'invalid_grant')
      const tokens = await issueTokens(app, user.cookie, 'user:read offline_access')
      expectOAuthError(await refresh(app, tokens.access_token), 400, 'invalid_grant')
    })

    it('another client\'s refresh token → 400 invalid_grant', async () => {
      const tokens = await issueTokens(app, user.cookie, 'user:read offline_access')
      const redirectUri = `https://client-${++seq}.example.com/callback`
      const clientId = await registerClient(app, { client_name: 'Other', redirect_uris: [redirectUri], scope: 'user:read offline_access' })
      expectOAuthError(await refresh(app, tokens.refresh_token!, { clientId }), 400, 'invalid_grant')
    })
  })

  describe('storage', () => {
    it('codes and tokens are stored only as digests: no raw value in any column of oauth_tokens, oauth_grants, oauth_requests', async () => {
      const authorized = await authorizeAndApprove(app, user.cookie, { scope: 'user:read offline_access' })
      const exchanged = await exchangeCode(app, { code: authorized.code, verifier: authorized.verifier })
      const tokens: TokenSet = exchanged.json()
      const rotated: TokenSet = (await refresh(app, tokens.refresh_token!)).json()
      const secrets = [authorized.code, authorized.verifier, tokens.access_token, tokens.refresh_token!, rotated.access_token, rotated.refresh_token!]
      let cells = 0
      for (const table of ['oauth_tokens', 'oauth_grants', 'oauth_requests']) {
        for (const row of await rawRows(app.services.database, sql`select * from ${sql.identifier(table)}`)) {
          for (const cell of row) {
            cells += 1
            const text = cell instanceof Date ? cell.toISOString() : String(cell)
            for (const secret of secrets) expect(text).not.toContain(secret)
          }
        }
      }
      expect(cells).toBeGreaterThan(0)
      const digests = await rawRows(app.services.database, sql`select count(*) from oauth_tokens`)
      expect(Number(digests[0]![0])).toBeGreaterThanOrEqual(4)
    })
  })

  describe('login disabled', () => {
    it('403 access_denied LOGIN_DISABLED on both grants', async () => {
      const { code, verifier } = await authorizeAndApprove(app, user.cookie, { scope: 'user:read' })
      const tokens = await issueTokens(app, user.cookie, 'user:read offline_access')
      await app.services.settings.update([{ key: 'global.enable_login', value: false }])
      try {
        for (const response of [await exchangeCode(app, { code, verifier }), await refresh(app, tokens.refresh_token!)]) {
          expect(response.statusCode).toBe(403)
          expect(response.headers['cache-control']).toContain('no-store')
          expect(response.json()).toMatchObject({ success: false, error: 'access_denied', code: 'LOGIN_DISABLED' })
        }
      } finally {
        await app.services.settings.update([{ key: 'global.enable_login', value: true }])
      }
    })
  })

  describe('abuse limit', () => {
    it('the token endpoint is limited per IP: 429 with Retry-After past the limit', async () => {
      const limited = (await ctx.build({ limits: { token: { max: 3, windowMs: 60_000 } } })).app
      const call = () => tokenRequest(limited, { grant_type: 'refresh_token', refresh_token: 'nothing-0123456789', client_id: CLI_CLIENT_ID }, {})
      for (let i = 0; i < 3; i += 1) expect((await call()).statusCode).toBe(400)
      const refused = await call()
      expect(refused.statusCode).toBe(429)
      expect(refused.json()).toMatchObject({ success: false, code: 'RATE_LIMITED' })
      expect(Number(refused.headers['retry-after'])).toBeGreaterThan(0)
      // Another client address has its own budget.
      const elsewhere = await limited.inject({
        method: 'POST', url: '/api/oauth2/token', remoteAddress: '10.1.2.3',
        payload: { grant_type: 'refresh_token', refresh_token: 'nothing-0123456789', client_id: CLI_CLIENT_ID },
      })
      expect(elsewhere.statusCode).toBe(400)
    })
  })

  describe('lifetimes (manual clock)', () => {
    it('a code older than 10 minutes → invalid_grant', async () => {
      const { code, verifier } = await authorizeAndApprove(app, user.cookie, { scope: 'user:read' })
      clock.advance(11 * MINUTE)
      expectOAuthError(await exchangeCode(app, { code, verifier }), 400, 'invalid_grant')
    })

    it('an access token older than an hour → 401 invalid_token; its refresh token still works', async () => {
      const tokens = await issueTokens(app, user.cookie, 'user:read offline_access')
      clock.advance(59 * MINUTE)
      expect((await me(tokens.access_token)).statusCode).toBe(200)
      clock.advance(2 * MINUTE)
      await expectDead(tokens.access_token)
      const refreshed = await refresh(app, tokens.refresh_token!)
      expect(refreshed.statusCode, refreshed.body).toBe(200)
      expect((await me(refreshed.json().access_token)).statusCode).toBe(200)
    })

    it('a refresh token older than 30 days → invalid_grant', async () => {
      const holder = await signUp(app, 'token_late')
      const tokens = await issueTokens(app, holder.cookie, 'user:read offline_access')
      clock.advance(31 * DAY)
      expectOAuthError(await refresh(app, tokens.refresh_token!), 400, 'invalid_grant')
      expect((await app.inject({ method: 'GET', url: '/api/users/me', headers: bearer(tokens.access_token) })).statusCode).toBe(401)
    })
  })
})
