import type { FastifyInstance, InjectOptions, LightMyRequestResponse } from 'fastify'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { ownOrigins } from '../../src/http/origins.js'
import { DEFAULT_PASSWORD, sessionCookie } from '../helpers/accounts.js'
import { createTestContext, type TestContext } from '../helpers/app.js'
import { DIALECTS } from '../helpers/database.js'
import {
  authorizeParams, consentDetails, consentRequestId, isHtml, locationOf, pkce, REDIRECT_URI, startAuthorization, unescapeHtml,
} from '../helpers/oauth.js'
import { signUp, type Account } from '../helpers/teams.js'

/**
 * Loopback spellings of a loopback PUBLIC_URL are this service's own origin, and the refusals a
 * browser can meet by following links or sending forms are pages for it, JSON for API clients.
 * The app runs with PUBLIC_URL http://localhost:3000 (test/helpers/app.ts).
 */

const BROWSER = { accept: 'text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8' }
const API = { accept: 'application/json' }
const FORM = { 'content-type': 'application/x-www-form-urlencoded' }
const FOREIGN = 'https://evil.example'

const textOf = (response: LightMyRequestResponse) => unescapeHtml(response.body.replace(/<[^>]+>/g, ' ')).replace(/\s+/g, ' ')

function expectRefusalPage(response: LightMyRequestResponse, status: number, text: string) {
  expect(response.statusCode, response.body).toBe(status)
  expect(isHtml(response), response.body).toBe(true)
  expect(String(response.headers['content-security-policy'])).toContain("default-src 'none'")
  expect(textOf(response)).toContain(text)
}

function expectEnvelope(response: LightMyRequestResponse, status: number, code: string) {
  expect(response.statusCode, response.body).toBe(status)
  expect(response.headers['content-type']).toMatch(/^application\/json/)
  expect(response.json()).toMatchObject({ success: false, code })
}

describe('ownOrigins', () => {
  it.each([
    ['http://localhost:3000', ['http://localhost:3000', 'http://127.0.0.1:3000', 'http://[::1]:3000']],
    ['http://127.0.0.1:8080', ['http://127.0.0.1:8080', 'http://localhost:8080', 'http://[::1]:8080']],
    ['https://[::1]', ['https://[::1]', 'https://localhost', 'https://127.0.0.1']],
    ['http://localhost:3000/base', ['http://localhost:3000', 'http://127.0.0.1:3000', 'http://[::1]:3000']],
    ['https://api.example.test', ['https://api.example.test']],
    ['http://127.0.0.2:3000', ['http://127.0.0.2:3000']],
  ])('%s → %j', (publicUrl, expected) => {
    expect(ownOrigins(publicUrl)).toEqual(expected)
  })
})

describe.each(DIALECTS)('loopback origins and browser refusals on %s', (dialect) => {
  let ctx: TestContext
  let app: FastifyInstance
  let user: Account
  let seq = 0

  const inject = (options: InjectOptions) => app.inject(options)
  /** A pending authorization request of the CLI client, started without a session. */
  async function pending(): Promise<string> {
    const response = await startAuthorization(app, authorizeParams(pkce().challenge))
    const requestId = consentRequestId(locationOf(response))
    if (requestId === undefined) throw new Error(`authorization failed: ${response.statusCode} ${response.body}`)
    return requestId
  }
  const consentLogin = (requestId: string, headers: Record<string, string>, remoteAddress?: string) => inject({
    method: 'POST', url: '/api/oauth2/consent/login', headers: { ...FORM, ...headers },
    payload: new URLSearchParams({ request_id: requestId, login: user.username, password: DEFAULT_PASSWORD }).toString(),
    ...(remoteAddress === undefined ? {} : { remoteAddress }),
  })
  const updateProfile = (origin: string) => inject({
    method: 'PUT', url: '/api/auth/profile/update', headers: { cookie: user.cookie, origin }, payload: { first_name: `Name${++seq}` },
  })

  beforeAll(async () => {
    ctx = await createTestContext(dialect)
    ;({ app } = await ctx.build({ limits: { loginOrRegister: { max: 5, windowMs: 60_000 } } }))
    await signUp(app, 'origins_admin')
    user = await signUp(app, 'origins_user')
  })
  afterAll(() => ctx?.close())

  describe('the loopback spellings of PUBLIC_URL', () => {
    it.each(['http://localhost:3000', 'http://127.0.0.1:3000', 'http://[::1]:3000'])('a cookie-authenticated request from %s is accepted', async (origin) => {
      expect((await updateProfile(origin)).statusCode).toBe(200)
    })

    it.each([FOREIGN, 'http://127.0.0.1:3001', 'https://localhost:3000', 'http://127.0.0.2:3000', 'null'])('one from %s is still refused', async (origin) => {
      expectEnvelope(await updateProfile(origin), 403, 'FORBIDDEN')
    })

    it('the consent sign-in form sent from http://127.0.0.1:3000 signs in; from a foreign origin it is refused with a page', async () => {
      const requestId = await pending()
      const accepted = await consentLogin(requestId, { ...BROWSER, origin: 'http://127.0.0.1:3000' }, '10.0.0.1')
      expect(accepted.statusCode, accepted.body).toBe(303)
      expect(sessionCookie(accepted)).toBeDefined()

      const refused = await consentLogin(await pending(), { ...BROWSER, origin: FOREIGN }, '10.0.0.2')
      expectRefusalPage(refused, 403, `the form was sent from ${FOREIGN}`)
      expect(sessionCookie(refused)).toBeUndefined()
      expectEnvelope(await consentLogin(await pending(), { ...API, origin: FOREIGN }, '10.0.0.3'), 403, 'FORBIDDEN')
    })

    it('the consent decision form sent from http://127.0.0.1:3000 reaches the client; from a foreign origin a page refuses it', async () => {
      const decide = async (origin: string, headers: Record<string, string>) => {
        const requestId = await pending()
        const details = await consentDetails(app, requestId, user.cookie)
        const csrf = details.json().data.csrf_token as string
        return inject({
          method: 'POST', url: '/api/oauth2/consent', headers: { ...FORM, ...headers, cookie: user.cookie, origin },
          payload: new URLSearchParams({ request_id: requestId, decision: 'approve', csrf_token: csrf }).toString(),
        })
      }
      const approved = await decide('http://127.0.0.1:3000', BROWSER)
      expect(approved.statusCode, approved.body).toBe(302)
      expect(String(approved.headers.location)).toMatch(new RegExp(`^${REDIRECT_URI}\\?code=`))

      const refused = await decide(FOREIGN, BROWSER)
      expectRefusalPage(refused, 403, 'Cross-site request refused')
      expect(refused.headers.location).toBeUndefined()
      expectEnvelope(await decide(FOREIGN, API), 403, 'FORBIDDEN')
    })

    it('Swagger UI opened at http://127.0.0.1:3000 sends "Try it out" to that address; at PUBLIC_URL or another host, the document is unchanged', async () => {
      const documentAt = async (host: string) => (await inject({ method: 'GET', url: '/documentation/json', headers: { host } })).json()
      const aliased = await documentAt('127.0.0.1:3000')
      expect(aliased.servers.map((server: { url: string }) => server.url)).toEqual(['http://127.0.0.1:3000', 'http://localhost:3000'])
      expect((await documentAt('localhost:3000')).servers).toEqual([expect.objectContaining({ url: 'http://localhost:3000' })])
      expect((await documentAt('evil.example:3000')).servers).toEqual([expect.objectContaining({ url: 'http://localhost:3000' })])
      expect((await documentAt('127.0.0.1:3001')).servers).toHaveLength(1)
    })
  })

  describe('refusals a browser meets are pages; API clients keep the envelope', () => {
    it('an unknown or finished authorization request: a 404 page, or NOT_FOUND', async () => {
      const url = '/api/oauth2/consent?request_id=unknown-request'
      expectRefusalPage(await inject({ method: 'GET', url, headers: BROWSER }), 404, 'Start the sign-in again from your client')
      expectEnvelope(await inject({ method: 'GET', url, headers: API }), 404, 'NOT_FOUND')
    })

    it('the consent decision without a session: a 401 page, or UNAUTHORIZED', async () => {
      const body = new URLSearchParams({ request_id: await pending(), decision: 'approve', csrf_token: 'x' }).toString()
      expectRefusalPage(await inject({ method: 'POST', url: '/api/oauth2/consent', headers: { ...FORM, ...BROWSER }, payload: body }), 401, 'Please sign in')
      expectEnvelope(await inject({ method: 'POST', url: '/api/oauth2/consent', headers: { ...FORM, ...API }, payload: body }), 401, 'UNAUTHORIZED')
    })

    it('the sign-in form past the per-IP limit: a 429 page with Retry-After, or RATE_LIMITED', async () => {
      const requestId = await pending()
      const address = '10.9.9.9'
      for (let i = 0; i < 5; i++) await consentLogin(requestId, API, address)
      const page = await consentLogin(requestId, BROWSER, address)
      expectRefusalPage(page, 429, 'Too many requests')
      expect(page.headers['retry-after']).toBeDefined()
      expectEnvelope(await consentLogin(requestId, API, address), 429, 'RATE_LIMITED')
    })

    it('provider sign-in while login is switched off: a 403 page, or LOGIN_DISABLED', async () => {
      await app.services.settings.update([{ key: 'global.enable_login', value: false }])
      try {
        const url = '/api/auth/provider/login'
        expectRefusalPage(await inject({ method: 'GET', url, headers: BROWSER, remoteAddress: '10.1.1.1' }), 403, 'Sign-in is switched off')
        expectEnvelope(await inject({ method: 'GET', url, headers: API, remoteAddress: '10.1.1.1' }), 403, 'LOGIN_DISABLED')
      } finally {
        await app.services.settings.update([{ key: 'global.enable_login', value: true }])
      }
    })

    it.each([
      ['a browser', BROWSER.accept, 'html'],
      ['text/html only', 'text/html', 'html'],
      ['text/* over a lesser JSON', 'application/json;q=0.5, text/*', 'html'],
      ['JSON', 'application/json', 'json'],
      ['JSON first, HTML equal', 'application/json, text/html', 'json'],
      ['HTML ranked lower', 'text/html;q=0.4, application/json', 'json'],
      ['*/*', '*/*', 'json'],
      ['no Accept', undefined, 'json'],
    ])('Accept of %s → %s', async (_label, accept, expected) => {
      const response = await inject({ method: 'GET', url: '/api/auth/email/verify?token=nothing', headers: accept === undefined ? {} : { accept } })
      expect(response.statusCode).toBe(400)
      expect(isHtml(response) ? 'html' : 'json').toBe(expected)
    })

    it('API routes stay JSON, even for a browser', async () => {
      expectEnvelope(await inject({ method: 'GET', url: '/api/users/me', headers: BROWSER }), 401, 'UNAUTHORIZED')
      expectEnvelope(await inject({ method: 'GET', url: '/api/nowhere', headers: BROWSER }), 404, 'NOT_FOUND')
      expectEnvelope(await inject({ method: 'POST', url: '/api/auth/email/login', headers: BROWSER, payload: { login: user.username, password: 'wrong password' } }), 401, 'INVALID_CREDENTIALS')
    })
  })
})
