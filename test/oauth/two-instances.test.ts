import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { FastifyInstance } from 'fastify'
import { createTestContext, type TestContext } from '../helpers/app.js'
import { DIALECTS } from '../helpers/database.js'
import {
  authorizeParams, bearer, CLI_CLIENT_ID, consentDetails, consentRequestId, exchangeCode, locationOf, pkce, postConsent, refresh, revoke,
  startAuthorization, type TokenSet,
} from '../helpers/oauth.js'
import { signUp, type Account } from '../helpers/teams.js'

/**
 * Pending authorizations, codes and tokens live in the database, so an authorization on
 * one instance is exchanged and used on another.
 */
describe.each(DIALECTS)('OAuth2 across two instances on one %s database', (dialect) => {
  let ctx: TestContext
  let first: FastifyInstance
  let second: FastifyInstance
  let user: Account

  beforeAll(async () => {
    ctx = await createTestContext(dialect, { file: true })
    first = (await ctx.build({ env: { RATE_LIMIT_ENABLED: 'false' } })).app
    second = (await ctx.build({ env: { RATE_LIMIT_ENABLED: 'false' } })).app
    await signUp(first, 'instances_admin')
    user = await signUp(first, 'instances_user')
  })
  afterAll(() => ctx.close())

  it('authorize and consent on one, exchange and call on the other; refresh and revoke cross over too', async () => {
    const pair = pkce()
    const started = await startAuthorization(first, authorizeParams(pair.challenge, { scope: 'user:read offline_access', state: 'two' }), user.cookie)
    const requestId = consentRequestId(locationOf(started))!
    expect(requestId).toEqual(expect.any(String))

    // The consent page on the second instance, the decision on the first.
    const details = await consentDetails(second, requestId, user.cookie)
    expect(details.statusCode, details.body).toBe(200)
    const approved = await postConsent(first, { request_id: requestId, decision: 'approve', csrf_token: details.json().data.csrf_token }, user.cookie)
    expect(approved.statusCode, approved.body).toBe(200)
    const redirect = new URL(approved.json().data.redirect_url)
    expect(redirect.searchParams.get('state')).toBe('two')

    const exchanged = await exchangeCode(second, { code: redirect.searchParams.get('code')!, verifier: pair.verifier })
    expect(exchanged.statusCode, exchanged.body).toBe(200)
    const tokens: TokenSet = exchanged.json()
    for (const app of [first, second]) {
      const me = await app.inject({ method: 'GET', url: '/api/users/me', headers: bearer(tokens.access_token) })
      expect(me.statusCode).toBe(200)
      expect(me.json().data.id).toBe(user.id)
    }

    const refreshed = await refresh(first, tokens.refresh_token!)
    expect(refreshed.statusCode, refreshed.body).toBe(200)
    const rotated: TokenSet = refreshed.json()
    expect((await refresh(second, tokens.refresh_token!)).json().error).toBe('invalid_grant')
    // Reuse on the second instance revoked the grant for the first one too.
    expect((await first.inject({ method: 'GET', url: '/api/users/me', headers: bearer(rotated.access_token) })).statusCode).toBe(401)
    // The code is spent for every instance.
    expect((await exchangeCode(first, { code: redirect.searchParams.get('code')!, verifier: pair.verifier })).json().error).toBe('invalid_grant')

    const again = await startAuthorization(second, authorizeParams(pkce().challenge, { scope: 'user:read teams:read' }))
    expect(consentRequestId(locationOf(again))).toEqual(expect.any(String))
  })

  it('a token revoked on one instance is refused by the other', async () => {
    const pair = pkce()
    const started = await startAuthorization(second, authorizeParams(pair.challenge, { scope: 'user:read teams:read' }))
    const requestId = consentRequestId(locationOf(started))!
    const details = await consentDetails(first, requestId, user.cookie)
    const approved = await postConsent(second, { request_id: requestId, decision: 'approve', csrf_token: details.json().data.csrf_token }, user.cookie)
    expect(approved.statusCode, approved.body).toBe(200)
    const code = new URL(approved.json().data.redirect_url).searchParams.get('code')!
    const tokens: TokenSet = (await exchangeCode(first, { code, verifier: pair.verifier })).json()
    expect((await second.inject({ method: 'GET', url: '/api/teams/me', headers: bearer(tokens.access_token) })).statusCode).toBe(200)
    expect((await revoke(second, { token: tokens.access_token, client_id: CLI_CLIENT_ID })).statusCode).toBe(200)
    expect((await first.inject({ method: 'GET', url: '/api/teams/me', headers: bearer(tokens.access_token) })).statusCode).toBe(401)
  })
})
