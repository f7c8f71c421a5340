import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createTestContext, type TestApp, type TestContext } from '../helpers/app.js'
import { DIALECTS } from '../helpers/database.js'

describe.each(DIALECTS)('CSRF origin check on %s', (dialect) => {
  let ctx: TestContext
  let subject: TestApp
  let cookie: string

  beforeAll(async () => {
    ctx = await createTestContext(dialect)
    subject = await ctx.build({ env: { CORS_ORIGINS: 'https://app.example.test' } })
    const registered = await subject.app.inject({
      method: 'POST',
      url: '/api/auth/email/register',
      payload: { username: 'owner', email: 'owner@example.test', password: 'long enough password' },
    })
    cookie = String(registered.headers['set-cookie']).split(';')[0]!
  })
  afterAll(() => ctx.close())

  const update = (headers: Record<string, string>, first_name: string) =>
    subject.app.inject({ method: 'PUT', url: '/api/auth/profile/update', headers: { cookie, ...headers }, payload: { first_name } })

  it('refuses a cookie-authenticated unsafe request from a foreign origin, and changes nothing', async () => {
    const response = await update({ origin: 'https://evil.example' }, 'Mallory')
    expect(response.statusCode).toBe(403)
    expect(response.json()).toMatchObject({ success: false, code: 'FORBIDDEN', details: { origin: 'https://evil.example' } })
    const me = await subject.app.inject({ method: 'GET', url: '/api/users/me', headers: { cookie, origin: 'https://evil.example' } })
    expect(me.statusCode).toBe(200)
    expect(me.json().data.first_name).toBeNull()
  })

  it('accepts the service origin, a configured origin, and requests without Origin (non-browser clients)', async () => {
    expect((await update({ origin: 'http://localhost:3000' }, 'Own')).statusCode).toBe(200)
    expect((await update({ origin: 'https://app.example.test' }, 'Frontend')).statusCode).toBe(200)
    expect((await update({}, 'Cli')).json().data.user.first_name).toBe('Cli')
  })

  it('also guards public unsafe routes that act on the cookie (logout)', async () => {
    const refused = await subject.app.inject({ method: 'POST', url: '/api/auth/logout', headers: { cookie, origin: 'https://evil.example' } })
    expect(refused.statusCode).toBe(403)
    expect((await subject.app.inject({ method: 'GET', url: '/api/users/me', headers: { cookie } })).statusCode).toBe(200)
  })

  it('CORS answers a preflight only for a configured origin, with credentials', async () => {
    const preflight = (origin: string) => subject.app.inject({
      method: 'OPTIONS',
      url: '/api/users/me',
      headers: { origin, 'access-control-request-method': 'PUT', 'access-control-request-headers': 'content-type' },
    })
    const allowed = await preflight('https://app.example.test')
    expect(allowed.statusCode).toBeLessThan(300)
    expect(allowed.headers['access-control-allow-origin']).toBe('https://app.example.test')
    expect(allowed.headers['access-control-allow-credentials']).toBe('true')
    expect((await preflight('https://evil.example')).headers['access-control-allow-origin']).toBeUndefined()
  })

  it('does not apply to requests without the session cookie', async () => {
    const response = await subject.app.inject({
      method: 'POST',
      url: '/api/auth/email/login',
      headers: { origin: 'https://evil.example' },
      payload: { login: 'owner', password: 'long enough password' },
    })
    expect(response.statusCode).toBe(200)
  })
})
