import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createTestContext, type TestApp, type TestContext } from '../helpers/app.js'
import { DIALECTS } from '../helpers/database.js'
import { policyTestRoutes, tableCredentials } from '../helpers/test-routes.js'

const cookie = (id: string) => ({ cookie: `auth_session=${id}` })
const bearer = (token: string) => ({ authorization: `Bearer ${token}` })
const json = { 'content-type': 'application/json' }
/** RFC 9728 §5.1: an OAuth route's challenge names the protected-resource metadata (PUBLIC_URL is the test default). */
const RESOURCE_METADATA = 'resource_metadata="http://localhost:3000/.well-known/oauth-protected-resource"'

describe.each(DIALECTS)('route policies on %s', (dialect) => {
  let ctx: TestContext
  let subject: TestApp
  const call = (method: 'GET' | 'POST', url: string, headers: Record<string, string> = {}, payload?: string) =>
    subject.app.inject({ method, url, headers, ...(payload === undefined ? {} : { payload }) })

  beforeAll(async () => {
    ctx = await createTestContext(dialect)
    subject = await ctx.build({ credentials: tableCredentials, extend: policyTestRoutes })
  })
  afterAll(() => ctx.close())

  describe('public', () => {
    it('answers without any credential', async () => {
      const response = await call('GET', '/api/test/public')
      expect(response.statusCode).toBe(200)
      expect(response.json().data).toEqual({ kind: 'none', id: 'anonymous' })
    })
  })

  describe('session', () => {
    it('401 without a cookie, in the envelope, with the required text', async () => {
      const response = await call('GET', '/api/test/session')
      expect(response.statusCode).toBe(401)
      const body = response.json()
      expect(body).toMatchObject({ success: false, code: 'UNAUTHORIZED' })
      expect(body.error.startsWith('Unauthorized: Authentication required.')).toBe(true)
    })

    it('401 for an unknown session id', async () => {
      expect((await call('GET', '/api/test/session', cookie('forged'))).statusCode).toBe(401)
    })

    it('identifies the caller from a valid session', async () => {
      const response = await call('GET', '/api/test/session', cookie('user-session'))
      expect(response.statusCode).toBe(200)
      expect(response.json().data).toEqual({ kind: 'user', id: 'alice' })
    })

    it('never accepts a bearer token, even a valid one', async () => {
      const response = await call('GET', '/api/test/session', bearer('teams-token'))
      expect(response.statusCode).toBe(401)
      expect(response.json().code).toBe('UNAUTHORIZED')
    })
  })

  describe('dual', () => {
    it('accepts a session cookie', async () => {
      expect((await call('GET', '/api/test/dual', cookie('user-session'))).json().data).toEqual({ kind: 'user', id: 'alice' })
    })

    it('accepts a bearer token carrying the route scope', async () => {
      const response = await call('GET', '/api/test/dual', bearer('teams-token'))
      expect(response.statusCode).toBe(200)
      expect(response.json().data.id).toBe('alice')
    })

    it('403 insufficient_scope with WWW-Authenticate when the scope is missing', async () => {
      const response = await call('GET', '/api/test/dual', bearer('mcp-token'))
      expect(response.statusCode).toBe(403)
      expect(response.json()).toMatchObject({ code: 'FORBIDDEN', details: { required_scope: 'teams:read' } })
      expect(response.headers['www-authenticate']).toBe(`Bearer error="insufficient_scope", scope="teams:read", ${RESOURCE_METADATA}`)
    })

    it('401 invalid_token for an unknown token, even with a valid cookie beside it', async () => {
      const response = await call('GET', '/api/test/dual', { ...bearer('nope'), ...cookie('user-session') })
      expect(response.statusCode).toBe(401)
      expect(response.headers['www-authenticate']).toBe(`Bearer error="invalid_token", ${RESOURCE_METADATA}`)
    })

    it('401 with a Bearer challenge naming the resource metadata when nothing is presented', async () => {
      const response = await call('GET', '/api/test/dual')
      expect(response.statusCode).toBe(401)
      expect(response.headers['www-authenticate']).toBe(`Bearer ${RESOURCE_METADATA}`)
    })

    it('401 for a malformed Authorization header', async () => {
      expect((await call('GET', '/api/test/dual', { authorization: 'Basic dXNlcjpwYXNz' })).statusCode).toBe(401)
    })

    it('refuses satellite credentials', async () => {
      expect((await call('GET', '/api/test/dual', bearer('service_satkey_good-key'))).statusCode).toBe(401)
    })
  })

  describe('global permission', () => {
    it('403 with required_permission for a global_user', async () => {
      const response = await call('GET', '/api/test/admin', cookie('user-session'))
      expect(response.statusCode).toBe(403)
      expect(response.json()).toMatchObject({ success: false, code: 'FORBIDDEN', details: { required_permission: 'users.view' } })
    })

    it('200 for a global_admin', async () => {
      expect((await call('GET', '/api/test/admin', cookie('admin-session'))).statusCode).toBe(200)
    })
  })

  describe('team permission from the path parameter', () => {
    it('404 for a non-member (no disclosure)', async () => {
      const response = await call('GET', '/api/test/teams/team-1/view', cookie('carol-session'))
      expect(response.statusCode).toBe(404)
      expect(response.json().code).toBe('NOT_FOUND')
    })

    it('403 for a team_user on a management route, 200 on a view route', async () => {
      expect((await call('GET', '/api/test/teams/team-1/manage', cookie('bob-session'))).statusCode).toBe(403)
      expect((await call('GET', '/api/test/teams/team-1/view', cookie('bob-session'))).statusCode).toBe(200)
    })

    it('200 for a team_admin', async () => {
      expect((await call('GET', '/api/test/teams/team-1/manage', cookie('user-session'))).statusCode).toBe(200)
    })

    it('a global admin acts on any team, member or not', async () => {
      expect((await call('GET', '/api/test/teams/team-1/manage', cookie('admin-session'))).statusCode).toBe(200)
      expect((await call('GET', '/api/test/teams/other-team/manage', cookie('admin-session'))).statusCode).toBe(200)
    })

    it('a bearer caller on a dual team route needs both the scope and the membership', async () => {
      expect((await call('GET', '/api/test/teams/team-1/view', bearer('teams-token'))).statusCode).toBe(200)
      expect((await call('GET', '/api/test/teams/team-2/view', bearer('teams-token'))).statusCode).toBe(404)
      expect((await call('GET', '/api/test/teams/team-1/view', bearer('mcp-token'))).statusCode).toBe(403)
    })
  })

  describe('satellite and registration token', () => {
    it('a satellite route admits only a valid satellite key', async () => {
      expect((await call('GET', '/api/test/satellite', bearer('service_satkey_good-key'))).json().data).toEqual({ kind: 'satellite', id: 'sat-1' })
      expect((await call('GET', '/api/test/satellite', bearer('service_satkey_bad'))).statusCode).toBe(401)
      expect((await call('GET', '/api/test/satellite', bearer('teams-token'))).statusCode).toBe(401)
      expect((await call('GET', '/api/test/satellite', cookie('admin-session'))).statusCode).toBe(401)
    })

    it('satellite and registration routes are no OAuth resources: their challenges name no resource metadata', async () => {
      expect((await call('GET', '/api/test/satellite')).headers['www-authenticate']).toBe('Bearer')
      expect((await call('GET', '/api/test/satellite', bearer('service_satkey_bad'))).headers['www-authenticate']).toBe('Bearer error="invalid_token"')
      expect((await call('GET', '/api/test/satellite', bearer('teams-token'))).headers['www-authenticate']).toBe('Bearer error="invalid_token"')
      const body = JSON.stringify({ name: 'edge-1' })
      expect((await call('POST', '/api/test/register', json, body)).headers['www-authenticate']).toBe('Bearer')
      expect((await call('POST', '/api/test/register', { ...json, ...bearer('service_satellite_global_bad.jwt') }, body)).headers['www-authenticate'])
        .toBe('Bearer error="invalid_token"')
    })

    it('a registration route admits only a registration token', async () => {
      const body = JSON.stringify({ name: 'edge-1' })
      const ok = await call('POST', '/api/test/register', { ...json, ...bearer('service_satellite_global_good.jwt.value') }, body)
      expect(ok.statusCode).toBe(200)
      expect(ok.json().data).toEqual({ kind: 'registration', id: 'reg-1' })
      for (const headers of [bearer('service_satellite_global_bad.jwt'), bearer('service_satellite_other_x'), bearer('teams-token'), bearer('service_satkey_good-key'), cookie('admin-session')]) {
        expect((await call('POST', '/api/test/register', { ...json, ...headers }, body)).statusCode).toBe(401)
      }
    })
  })

  describe('authorization comes before the body is read', () => {
    const cases: Array<[string, Record<string, string>, string]> = [
      ['malformed JSON', json, '{"name": '],
      ['an invalid body', json, '{"unknown": true}'],
      ['a wrong content type', { 'content-type': 'text/plain' }, 'hello'],
      ['an oversized body', json, JSON.stringify({ name: 'x'.repeat(2 * 1024 * 1024) })],
    ]

    it.each(cases)('401 for an anonymous caller with %s', async (_label, headers, payload) => {
      const response = await call('POST', '/api/test/session', headers, payload)
      expect(response.statusCode).toBe(401)
      expect(response.json().code).toBe('UNAUTHORIZED')
    })

    it.each(cases)('403 for an unpermitted caller with %s', async (_label, headers, payload) => {
      const response = await call('POST', '/api/test/admin', { ...headers, ...cookie('user-session') }, payload)
      expect(response.statusCode).toBe(403)
      expect(response.json().code).toBe('FORBIDDEN')
    })

    it('the same requests by a permitted caller reach body handling', async () => {
      const [malformed, invalid, wrongType, oversized] = await Promise.all(
        cases.map(([, headers, payload]) => call('POST', '/api/test/admin', { ...headers, ...cookie('admin-session') }, payload)),
      )
      expect(malformed!.json().code).toBe('INVALID_JSON')
      expect(invalid!.json().code).toBe('VALIDATION_ERROR')
      expect(wrongType!.statusCode).toBe(415)
      expect(oversized!.statusCode).toBe(413)
    })
  })

  describe('Enable Login switched off', () => {
    it('refuses non-admin sessions and tokens with 403 LOGIN_DISABLED, keeps admin sessions working', async () => {
      await subject.app.services.settings.update([{ key: 'global.enable_login', value: false }])
      try {
        for (const headers of [cookie('user-session'), bearer('teams-token')]) {
          const response = await call('GET', '/api/test/dual', headers)
          expect(response.statusCode).toBe(403)
          expect(response.json().code).toBe('LOGIN_DISABLED')
        }
        expect((await call('GET', '/api/test/dual', cookie('admin-session'))).statusCode).toBe(200)
        expect((await call('GET', '/api/test/satellite', bearer('service_satkey_good-key'))).statusCode).toBe(200)
      } finally {
        await subject.app.services.settings.update([{ key: 'global.enable_login', value: true }])
      }
      expect((await call('GET', '/api/test/dual', cookie('user-session'))).statusCode).toBe(200)
    })
  })
})
