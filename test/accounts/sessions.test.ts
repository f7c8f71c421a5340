import type { FastifyInstance } from 'fastify'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { DEFAULT_PASSWORD, login, registerAndLogin, sessionCookie, sessionSetCookie, type UserBody } from '../helpers/accounts.js'
import { createTestContext, type TestContext } from '../helpers/app.js'
import { manualClock } from '../helpers/clock.js'
import { DIALECTS } from '../helpers/database.js'

const SECOND = 1000
const DAY = 24 * 60 * 60 * SECOND
const USER_KEYS = ['auth_methods', 'created_at', 'email', 'email_verified', 'first_name', 'id', 'last_name', 'role_id', 'username']

describe.each(DIALECTS)('sessions and the own account on %s', (dialect) => {
  let ctx: TestContext
  let app: FastifyInstance
  const clock = manualClock()
  let seq = 0
  const unique = (prefix = 'user') => {
    seq += 1
    return { username: `${prefix}_${seq}`, email: `${prefix}.${seq}@example.com` }
  }
  const adminAccount = { username: 'the_admin', email: 'the.admin@example.com' }

  const get = (url: string, cookie?: string) => app.inject({ method: 'GET', url, headers: cookie === undefined ? {} : { cookie } })
  const put = (url: string, payload: unknown, cookie?: string) =>
    app.inject({ method: 'PUT', url, payload: payload as object, headers: cookie === undefined ? {} : { cookie } })

  beforeAll(async () => {
    ctx = await createTestContext(dialect)
    app = (await ctx.build({ clock, env: { RATE_LIMIT_ENABLED: 'false' } })).app
    // The database's first user is its global admin.
    await registerAndLogin(app, adminAccount)
  })
  afterAll(() => ctx.close())

  describe('the own profile and account', () => {
    it('GET /api/users/me answers the caller as the public user view', async () => {
      const { user, cookie } = await registerAndLogin(app, unique())
      const response = await get('/api/users/me', cookie)
      expect(response.statusCode).toBe(200)
      const body = response.json()
      expect(Object.keys(body).sort()).toEqual(['data', 'success'])
      expect(body.success).toBe(true)
      expect(Object.keys(body.data).sort()).toEqual(USER_KEYS)
      expect(body.data).toEqual(user)
      expect((await get('/api/users/me')).statusCode).toBe(401)
    })

    it('GET /api/users/me/account: role, the role\'s permissions and one team', async () => {
      const { cookie: userCookie } = await registerAndLogin(app, unique())
      const { cookie: adminCookie } = await login(app, adminAccount.email, DEFAULT_PASSWORD)
      const userAccount = (await get('/api/users/me/account', userCookie)).json().data
      const adminAccountView = (await get('/api/users/me/account', adminCookie)).json().data
      expect(userAccount).toMatchObject({ role_id: 'global_user', team_count: 1, auth_methods: ['email'] })
      expect(userAccount.permissions).toContain('teams.create')
      expect(userAccount.permissions).not.toContain('users.view')
      expect(adminAccountView).toMatchObject({ role_id: 'global_admin', team_count: 1 })
      expect(adminAccountView.permissions).toContain('users.view')
    })
  })

  describe('logout', () => {
    it('deletes the session and clears the cookie; the old cookie then gets 401', async () => {
      const { cookie } = await registerAndLogin(app, unique())
      const response = await app.inject({ method: 'POST', url: '/api/auth/logout', headers: { cookie } })
      expect(response.statusCode).toBe(200)
      expect(response.json()).toMatchObject({ success: true, message: expect.any(String) })
      expect(sessionSetCookie(response)).toMatch(/^auth_session=;/)
      expect(sessionSetCookie(response)).toContain('Max-Age=0')
      const after = await get('/api/users/me', cookie)
      expect(after.statusCode).toBe(401)
      expect(after.json().code).toBe('UNAUTHORIZED')
    })

    it('answers 200 without a cookie too', async () => {
      const response = await app.inject({ method: 'POST', url: '/api/auth/logout' })
      expect(response.statusCode).toBe(200)
      expect(response.json().success).toBe(true)
    })
  })

  describe('lifetime', () => {
    it('a session is refused once 30 days have passed', async () => {
      const { cookie } = await registerAndLogin(app, unique())
      clock.advance(30 * DAY + SECOND)
      const response = await get('/api/users/me', cookie)
      expect(response.statusCode).toBe(401)
      expect(response.json().code).toBe('UNAUTHORIZED')
    })

    it('a session with less than 15 days left is renewed: same id, full lifetime, and it keeps working past its first expiry', async () => {
      const { cookie } = await registerAndLogin(app, unique())
      clock.advance(16 * DAY)
      const renewed = await get('/api/users/me', cookie)
      expect(renewed.statusCode).toBe(200)
      expect(sessionCookie(renewed)).toBe(cookie)
      expect(sessionSetCookie(renewed)).toContain('Max-Age=2592000')

      // 36 days after login, 20 after the renewal.
      clock.advance(20 * DAY)
      expect((await get('/api/users/me', cookie)).statusCode).toBe(200)
    })

    it('a session with more than 15 days left is not renewed: no Set-Cookie', async () => {
      const { cookie } = await registerAndLogin(app, unique())
      clock.advance(14 * DAY)
      const response = await get('/api/users/me', cookie)
      expect(response.statusCode).toBe(200)
      expect(response.headers['set-cookie']).toBeUndefined()
    })
  })

  describe('change password', () => {
    it('refuses a wrong current password with 400 and changes nothing', async () => {
      const account = unique()
      const { cookie } = await registerAndLogin(app, account)
      const other = await login(app, account.email, DEFAULT_PASSWORD)
      const response = await put('/api/auth/email/change-password', { current_password: 'not my password', new_password: 'a brand new password' }, cookie)
      expect(response.statusCode).toBe(400)
      expect(response.json().success).toBe(false)
      expect((await get('/api/users/me', other.cookie)).statusCode).toBe(200)
      expect((await login(app, account.email, DEFAULT_PASSWORD)).response.statusCode).toBe(200)
    })

    it('keeps the current session, ends the others; only the new password logs in', async () => {
      const account = unique()
      const { cookie: current } = await registerAndLogin(app, account)
      const { cookie: other } = await login(app, account.username, DEFAULT_PASSWORD)
      const { cookie: bystander } = await registerAndLogin(app, unique())
      const response = await put('/api/auth/email/change-password', { current_password: DEFAULT_PASSWORD, new_password: 'a brand new password' }, current)
      expect(response.statusCode).toBe(200)
      expect(response.json().success).toBe(true)

      expect((await get('/api/users/me', current)).statusCode).toBe(200)
      expect((await get('/api/users/me', other)).statusCode).toBe(401)
      expect((await get('/api/users/me', bystander)).statusCode).toBe(200)
      expect((await login(app, account.email, DEFAULT_PASSWORD)).response.json().code).toBe('INVALID_CREDENTIALS')
      expect((await login(app, account.email, 'a brand new password')).response.statusCode).toBe(200)
    })

    it('validates the new password', async () => {
      const { cookie } = await registerAndLogin(app, unique())
      const response = await put('/api/auth/email/change-password', { current_password: DEFAULT_PASSWORD, new_password: 'short' }, cookie)
      expect(response.statusCode).toBe(400)
      expect(response.json()).toMatchObject({ code: 'VALIDATION_ERROR', details: [expect.objectContaining({ field: 'new_password' })] })
    })
  })

  describe('profile update', () => {
    it('changes the username and names; the new username then logs in, the old one does not', async () => {
      const account = unique()
      const { cookie } = await registerAndLogin(app, account)
      const renamed = `renamed_${seq}`
      const response = await put('/api/auth/profile/update', { username: renamed, first_name: 'Grace', last_name: 'Hopper' }, cookie)
      expect(response.statusCode).toBe(200)
      expect(response.json()).toMatchObject({ success: true, data: { user: { username: renamed, first_name: 'Grace', last_name: 'Hopper', email: account.email } } })
      expect(Object.keys(response.json().data.user).sort()).toEqual(USER_KEYS)
      expect((await get('/api/users/me', cookie)).json().data.username).toBe(renamed)
      expect((await login(app, renamed.toUpperCase(), DEFAULT_PASSWORD)).response.statusCode).toBe(200)
      expect((await login(app, account.username, DEFAULT_PASSWORD)).response.statusCode).toBe(401)
    })

    it('409 USERNAME_TAKEN for another user\'s username in another case', async () => {
      const { cookie } = await registerAndLogin(app, unique())
      const response = await put('/api/auth/profile/update', { username: adminAccount.username.toUpperCase() }, cookie)
      expect(response.statusCode).toBe(409)
      expect(response.json()).toMatchObject({ success: false, code: 'USERNAME_TAKEN' })
    })

    it.each([
      ['an empty body', {}, undefined],
      ['an unknown field', { email: 'new@example.com' }, 'email'],
      ['a bad username', { username: 'no spaces allowed' }, 'username'],
    ])('400 VALIDATION_ERROR for %s', async (_label, payload, field) => {
      const { cookie } = await registerAndLogin(app, unique())
      const response = await put('/api/auth/profile/update', payload, cookie)
      expect(response.statusCode).toBe(400)
      expect(response.json().code).toBe('VALIDATION_ERROR')
      if (field !== undefined) expect(response.json().details).toEqual([expect.objectContaining({ field })])
    })

    it('refuses a bearer token on this session-only route, even one that a dual route accepts', async () => {
      // A bearer check that accepts the token "x" as this user: the refusal must come from the
      // route's policy, not from the token being unknown.
      let holder: UserBody | undefined
      const { app: withBearer } = await ctx.build({
        clock, env: { RATE_LIMIT_ENABLED: 'false' },
        credentials: {
          bearer: async (token) => token === 'x' && holder !== undefined
            ? { kind: 'user', via: 'bearer', userId: holder.id, role: holder.role_id, scopes: ['user:read', 'account:read'], credentialId: 'token-x' }
            : null,
        },
      })
      holder = (await registerAndLogin(withBearer, unique())).user
      const bearer = { authorization: 'Bearer x' }
      expect((await withBearer.inject({ method: 'GET', url: '/api/users/me', headers: bearer })).json().data.id).toBe(holder!.id)

      const response = await withBearer.inject({ method: 'PUT', url: '/api/auth/profile/update', payload: { first_name: 'Mallory' }, headers: bearer })
      expect(response.statusCode).toBe(401)
      expect(response.json()).toMatchObject({ success: false, code: 'UNAUTHORIZED' })
      expect((await withBearer.services.users.findById(holder!.id))?.firstName).toBeNull()
    })
  })

  describe('role changes', () => {
    it('take effect on the next request with the same cookie', async () => {
      const { user, cookie } = await registerAndLogin(app, unique())
      const before = (await get('/api/users/me/account', cookie)).json().data
      expect(before.role_id).toBe('global_user')
      expect(before.permissions).not.toContain('users.view')

      await app.services.users.update(user.id, { roleId: 'global_admin' })
      const after = (await get('/api/users/me/account', cookie)).json().data
      expect(after.role_id).toBe('global_admin')
      expect(after.permissions).toContain('users.view')
      expect((await get('/api/users/me', cookie)).json().data.role_id).toBe('global_admin')
    })
  })
})
