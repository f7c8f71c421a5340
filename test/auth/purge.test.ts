import { createHash, randomBytes } from 'node:crypto'
import { eq } from 'drizzle-orm'
import type { FastifyInstance } from 'fastify'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createTestContext, type TestContext } from '../helpers/app.js'
import { manualClock } from '../helpers/clock.js'
import { DIALECTS } from '../helpers/database.js'
import { registerAndLogin } from '../helpers/accounts.js'
import { createToken } from '../helpers/satellites.js'
import { client, signUp } from '../helpers/teams.js'

describe.each(DIALECTS)('purging expired credentials on %s', (dialect) => {
  let ctx: TestContext
  beforeAll(async () => {
    ctx = await createTestContext(dialect)
  })
  afterAll(() => ctx.close())

  it('deletes expired sessions and keeps live ones', async () => {
    const clock = manualClock(Date.now())
    const { app } = await ctx.build({ clock })
    const register = (username: string) => app.inject({
      method: 'POST', url: '/api/auth/email/register',
      payload: { username, email: `${username}@example.test`, password: 'long enough password' },
    })
    await register('early')
    clock.advance(20 * 24 * 60 * 60 * 1000)
    await register('late')
    clock.advance(11 * 24 * 60 * 60 * 1000) // the first session is now 31 days old, the second 11
    const { db, t } = app.services.database
    expect(await db.select().from(t.sessions)).toHaveLength(2)
    await app.services.purgeExpired()
    const left = await db.select({ userId: t.sessions.userId }).from(t.sessions)
    const [late] = await db.select({ id: t.users.id }).from(t.users).where(eq(t.users.username, 'late'))
    expect(left).toEqual([{ userId: late!.id }])
  })

  it('deletes expired OAuth requests, tokens and spent grants, and keeps live ones', async () => {
    const clock = manualClock(Date.now())
    const { app } = await ctx.build({ clock, env: { RATE_LIMIT_ENABLED: 'false' } })
    const { cookie } = await registerAndLogin(app, { username: 'oauth-purge', email: 'oauth-purge@example.test' })
    const { db, t } = app.services.database
    const count = async () => ({
      requests: (await db.select().from(t.oauthRequests)).length,
      grants: (await db.select().from(t.oauthGrants)).length,
      tokens: (await db.select().from(t.oauthTokens)).length,
    })
    await issueTokens(app, cookie) // access + refresh of grant 1
    clock.advance(20 * 24 * 60 * 60 * 1000)
    await issueTokens(app, cookie) // grant 2, 20 days younger
    await app.inject({ url: `/api/oauth2/auth?${authorizeQuery('x'.repeat(43))}` }) // a pending request (no session yet)
    expect(await count()).toEqual({ requests: 1, grants: 2, tokens: 4 })

    clock.advance(11 * 24 * 60 * 60 * 1000) // grant 1's refresh token is 31 days old, grant 2's 11
    await app.services.purgeExpired()
    // Left: grant 2 and its refresh token (its access token lived one hour); the request is gone.
    expect(await count()).toEqual({ requests: 0, grants: 1, tokens: 1 })
    const [token] = await db.select({ kind: t.oauthTokens.kind }).from(t.oauthTokens)
    expect(token).toEqual({ kind: 'refresh' })
  })

  it('keeps registration tokens listable for 7 days after they expire, then deletes them', async () => {
    const clock = manualClock(Date.now())
    const { app } = await ctx.build({ clock, env: { RATE_LIMIT_ENABLED: 'false' } })
    const call = client(app)
    const admin = await signUp(app, 'satellite_purge_admin')
    const { db, t } = app.services.database
    // Earlier tests of this file registered the first user (the global admin) already.
    await db.update(t.users).set({ roleId: 'global_admin' }).where(eq(t.users.id, admin.id))
    const old = await createToken(call, admin, { hours: 1 })
    clock.advance(3 * 24 * 3600_000)
    const recent = await createToken(call, admin, { hours: 72 })
    clock.advance(5 * 24 * 3600_000) // old expired 8 days minus an hour ago; recent expired 2 days ago
    const listed = async () => (await call('GET', '/api/satellites/registration-tokens?limit=100', admin)).json().data.tokens
      .map((token: { id: string; status: string }) => [token.id, token.status])
    expect(await listed()).toEqual([[recent.id, 'expired'], [old.id, 'expired']])
    await app.services.purgeExpired()
    expect(await listed()).toEqual([[recent.id, 'expired']])
  })
})

function authorizeQuery(challenge: string): URLSearchParams {
  return new URLSearchParams({
    response_type: 'code', client_id: 'service-gateway-cli', redirect_uri: 'http://127.0.0.1:8976/oauth/callback',
    state: 's', code_challenge: challenge, code_challenge_method: 'S256',
  })
}

/** Sign-in session → consent (JSON) → code → tokens, for the CLI client with every scope. */
async function issueTokens(app: FastifyInstance, cookie: string): Promise<void> {
  const verifier = randomBytes(32).toString('base64url')
  const authorize = await app.inject({ url: `/api/oauth2/auth?${authorizeQuery(createHash('sha256').update(verifier).digest('base64url'))}`, headers: { cookie } })
  let location = authorize.headers.location as string
  if (location.startsWith('/api/oauth2/consent')) {
    const details = (await app.inject({ url: location, headers: { cookie, accept: 'application/json' } })).json().data
    const decided = await app.inject({
      method: 'POST', url: '/api/oauth2/consent', headers: { cookie },
      payload: { request_id: details.request_id, decision: 'approve', csrf_token: details.csrf_token },
    })
    location = decided.json().data.redirect_url
  }
  const code = new URL(location).searchParams.get('code')!
  const token = await app.inject({
    method: 'POST', url: '/api/oauth2/token',
    payload: { grant_type: 'authorization_code', code, redirect_uri: 'http://127.0.0.1:8976/oauth/callback', client_id: 'service-gateway-cli', code_verifier: verifier },
  })
  expect(token.statusCode).toBe(200)
}
