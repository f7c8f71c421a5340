import type { FastifyInstance, LightMyRequestResponse } from 'fastify'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { DEFAULT_PASSWORD, sessionCookie } from '../helpers/accounts.js'
import { createTestContext, type TestContext } from '../helpers/app.js'
import { manualClock } from '../helpers/clock.js'
import { DIALECTS } from '../helpers/database.js'
import {
  authorizeParams, CLI_CLIENT_ID, consentDetails, consentRequestId, exchangeCode, htmlElement, htmlTags, inputValue, introspect,
  ISSUER, isHtml, locationOf, pkce, postConsent, postConsentForm, REDIRECT_URI, startAuthorization, unescapeHtml, type Pkce,
} from '../helpers/oauth.js'
import { client, createTeam, signUp, type Account, type Call, type TeamBody } from '../helpers/teams.js'

const MINUTE = 60_000
const FORM = { 'content-type': 'application/x-www-form-urlencoded' }

interface Pending {
  requestId: string
  state: string
  pair: Pkce
}

/** GET/POST /api/oauth2/consent and the sign-in form in front of it. */
describe.each(DIALECTS)('the consent step on %s', (dialect) => {
  let ctx: TestContext
  let app: FastifyInstance
  let call: Call
  const clock = manualClock(Date.now())
  let admin: Account
  let stranger: Account
  let strangerTeam: TeamBody
  let seq = 0

  const fresh = (prefix = 'consenter') => signUp(app, `${prefix}_${++seq}`)

  /** A pending request started without a session (so remembered consent never skips it). */
  async function pending(scope = 'user:read teams:read', state = `state-${++seq}`): Promise<Pending> {
    const pair = pkce()
    const response = await startAuthorization(app, authorizeParams(pair.challenge, { scope, state }))
    const requestId = consentRequestId(locationOf(response))
    if (response.statusCode !== 302 || requestId === undefined) throw new Error(`authorization failed: ${response.statusCode} ${response.body}`)
    return { requestId, state, pair }
  }

  /** The JSON consent details for `cookie`'s session (binding the request to it); answers the CSRF token. */
  async function csrfFor(requestId: string, cookie: string): Promise<string> {
    const response = await consentDetails(app, requestId, cookie)
    expect(response.statusCode, response.body).toBe(200)
    const token = response.json().data.csrf_token
    expect(token).toEqual(expect.any(String))
    return token
  }

  const getHtml = (requestId: string, cookie?: string) =>
    app.inject({ method: 'GET', url: `/api/oauth2/consent?request_id=${encodeURIComponent(requestId)}`, headers: { accept: 'text/html', ...(cookie === undefined ? {} : { cookie }) } })

  const consentLogin = (body: Record<string, string>, headers: Record<string, string> = {}) =>
    app.inject({ method: 'POST', url: '/api/oauth2/consent/login', headers: { ...FORM, ...headers }, payload: new URLSearchParams(body).toString() })

  const defaultTeamId = async (account: Account) => (await call('GET', '/api/teams/me/default', account)).json().data.team.id as string

  function expectRedirect(url: string, expected: Record<string, string | null>) {
    const parsed = new URL(url)
    expect(`${parsed.origin}${parsed.pathname}`).toBe(REDIRECT_URI)
    for (const [key, value] of Object.entries(expected)) {
      if (value === null) expect(parsed.searchParams.get(key), key).toBeNull()
      else expect(parsed.searchParams.get(key), key).toBe(value)
    }
    return parsed.searchParams
  }

  function expectStrictCsp(response: LightMyRequestResponse) {
    const csp = String(response.headers['content-security-policy'] ?? '')
    const directives = new Map(csp.split(';').map((part) => part.trim()).filter(Boolean).map((part) => {
      const [name, ...values] = part.split(/\s+/)
      return [name!.toLowerCase(), values] as const
    }))
    expect(directives.get('default-src')).toEqual(["'none'"])
    expect(directives.get('frame-ancestors')).toEqual(["'none'"])
    expect(directives.get('form-action')).toContain("'self'")
    expect(csp).not.toContain("'unsafe-inline'")
    expect(csp).not.toContain("'unsafe-eval'")
    return directives
  }

  beforeAll(async () => {
    ctx = await createTestContext(dialect)
    app = (await ctx.build({ clock, env: { RATE_LIMIT_ENABLED: 'false' } })).app
    call = client(app)
    admin = await signUp(app, 'consent_admin')
    stranger = await signUp(app, 'consent_stranger')
    strangerTeam = await createTeam(call, stranger, 'Stranger Team')
  })
  afterAll(() => ctx.close())

  describe('GET, JSON variant', () => {
    it('an unknown request: 404 NOT_FOUND (JSON and HTML)', async () => {
      const json = await consentDetails(app, 'no-such-request')
      expect(json.statusCode).toBe(404)
      expect(json.json()).toMatchObject({ success: false, code: 'NOT_FOUND' })
      const html = await getHtml('no-such-request')
      expect(html.statusCode).toBe(404)
      expect(isHtml(html)).toBe(true)
    })

    it('without a session: the details, signed_in false, no teams, no CSRF token', async () => {
      const { requestId } = await pending('user:read teams:read')
      const response = await consentDetails(app, requestId)
      expect(response.statusCode).toBe(200)
      const body = response.json()
      expect(body.success).toBe(true)
      expect(Object.keys(body.data).sort()).toEqual([
        'client_id', 'client_id_document_host', 'client_name', 'client_registered', 'client_uri', 'csrf_token', 'request_id', 'resource',
        'satellite_name', 'scopes', 'signed_in', 'teams',
      ])
      expect(body.data).toMatchObject({
        request_id: requestId, client_id: CLI_CLIENT_ID, client_registered: true, client_id_document_host: null, teams: [], csrf_token: null, signed_in: false,
        resource: null, satellite_name: null,
      })
      expect(body.data.client_name).toEqual(expect.any(String))
      expect(body.data.client_name.length).toBeGreaterThan(0)
      expect(body.data.scopes.map((scope: { name: string }) => scope.name).sort()).toEqual(['teams:read', 'user:read'])
      for (const scope of body.data.scopes) {
        expect(Object.keys(scope).sort()).toEqual(['description', 'name'])
        expect(scope.description.length).toBeGreaterThan(0)
      }
    })

    it('with a session: signed_in, the user\'s teams (default first, and selected), a CSRF token; the request is then bound to that session', async () => {
      const user = await fresh()
      const second = await createTeam(call, user, 'Second Team')
      const { requestId } = await pending()
      const response = await consentDetails(app, requestId, user.cookie)
      expect(response.statusCode).toBe(200)
      const data = response.json().data
      expect(data.signed_in).toBe(true)
      expect(data.csrf_token).toEqual(expect.any(String))
      expect(data.csrf_token.length).toBeGreaterThanOrEqual(16)
      expect(data.teams).toEqual([{ id: await defaultTeamId(user), name: user.username, selected: true }, { id: second.id, name: 'Second Team', selected: false }])

      const other = await consentDetails(app, requestId, stranger.cookie)
      expect(other.statusCode).toBe(403)
      expect(other.json().code).toBe('FORBIDDEN')
    })

    it('a request whose session signed out passes to the next sign-in; while that session lives, another is refused', async () => {
      const user = await fresh()
      const { requestId, state, pair } = await pending()
      await csrfFor(requestId, user.cookie)
      const login = () => app.inject({ method: 'POST', url: '/api/auth/email/login', payload: { login: user.username, password: DEFAULT_PASSWORD } })
      const second = sessionCookie(await login())!
      expect((await consentDetails(app, requestId, second)).statusCode).toBe(403)

      expect((await app.inject({ method: 'POST', url: '/api/auth/logout', headers: { cookie: user.cookie } })).statusCode).toBe(200)
      const csrf = await csrfFor(requestId, second)
      const decided = await postConsent(app, { request_id: requestId, decision: 'approve', csrf_token: csrf }, second)
      expect(decided.statusCode, decided.body).toBe(200)
      const callback = new URL(decided.json().data.redirect_url)
      expect(callback.searchParams.get('state')).toBe(state)
      expect((await exchangeCode(app, { code: callback.searchParams.get('code')!, verifier: pair.verifier })).statusCode).toBe(200)
    })
  })

  describe('GET, HTML variant', () => {
    it('without a session: the sign-in form, with a strict CSP', async () => {
      const { requestId } = await pending()
      const response = await getHtml(requestId)
      expect(response.statusCode).toBe(200)
      expect(isHtml(response)).toBe(true)
      expectStrictCsp(response)
      const forms = htmlTags(response.body, 'form')
      expect(forms).toContainEqual(expect.objectContaining({ action: '/api/oauth2/consent/login' }))
      expect(forms.find((form) => form.action === '/api/oauth2/consent/login')!.method?.toLowerCase()).toBe('post')
      const inputs = htmlTags(response.body, 'input')
      expect(inputs).toContainEqual(expect.objectContaining({ name: 'login' }))
      expect(inputs).toContainEqual(expect.objectContaining({ name: 'password', type: 'password' }))
      expect(inputs).toContainEqual(expect.objectContaining({ name: 'request_id', type: 'hidden', value: requestId }))
      const submits = [...htmlTags(response.body, 'button'), ...inputs.filter((input) => input.type === 'submit')]
      expect(submits.length).toBeGreaterThan(0)
      // No consent decision is offered before sign-in.
      expect(htmlTags(response.body, 'button').filter((button) => button.name === 'decision')).toEqual([])
      expect(response.body).not.toMatch(/<script\b[^>]*>[^<]+<\/script>/i)
    })

    it('with a session: client name, scope descriptions, team select, hidden fields and approve/deny; the form approves', async () => {
      const user = await fresh()
      const second = await createTeam(call, user, 'Team <Two> & Co')
      const { requestId, state, pair } = await pending('user:read teams:read mcp:read')
      // The JSON variant of a twin request for the same user: the page must say what it says.
      const details = (await consentDetails(app, (await pending('user:read teams:read mcp:read')).requestId, user.cookie)).json().data

      const response = await getHtml(requestId, user.cookie)
      expect(response.statusCode).toBe(200)
      expect(isHtml(response)).toBe(true)
      const csp = expectStrictCsp(response)
      expect(csp.get('form-action')).toContain('http://localhost:8976')
      const text = unescapeHtml(response.body)
      expect(text).toContain(details.client_name)
      for (const scope of details.scopes as Array<{ description: string }>) expect(text).toContain(scope.description)
      // Team names are escaped, not injected.
      expect(response.body).not.toContain('Team <Two>')
      expect(text).toContain('Team <Two> & Co')

      const forms = htmlTags(response.body, 'form')
      const consentForm = forms.find((form) => form.action === '/api/oauth2/consent')
      expect(consentForm).toBeDefined()
      expect(consentForm!.method?.toLowerCase()).toBe('post')
      const select = htmlElement(response.body, 'select', 'name', 'team_id')
      expect(select).toBeDefined()
      expect(htmlTags(select!, 'option').map((option) => option.value)).toEqual([await defaultTeamId(user), second.id])
      // Exactly one option preselected: the default team (nothing else names a team for this user yet).
      expect(htmlTags(select!, 'option').filter((option) => 'selected' in option).map((option) => option.value)).toEqual([await defaultTeamId(user)])
      expect(inputValue(response.body, 'request_id')).toBe(requestId)
      const csrf = inputValue(response.body, 'csrf_token')
      expect(csrf).toEqual(expect.any(String))
      expect(htmlTags(response.body, 'input').find((input) => input.name === 'csrf_token')!.type).toBe('hidden')
      const decisions = htmlTags(response.body, 'button').filter((button) => button.name === 'decision').map((button) => button.value).sort()
      expect(decisions).toEqual(['approve', 'deny'])

      // Submitting the page's own form (form-encoded, no Origin) approves: 302 to the client.
      const approved = await postConsentForm(app, { request_id: requestId, decision: 'approve', team_id: second.id, csrf_token: csrf! }, user.cookie)
      expect(approved.statusCode, approved.body).toBe(302)
      const query = expectRedirect(locationOf(approved)!, { state, iss: ISSUER, error: null })
      const exchanged = await exchangeCode(app, { code: query.get('code')!, verifier: pair.verifier })
      expect(exchanged.statusCode, exchanged.body).toBe(200)
    })

    it('with a session that already approved these scopes: 302 straight to the client with a code', async () => {
      const user = await fresh()
      const first = await pending('user:read teams:read')
      const csrf = await csrfFor(first.requestId, user.cookie)
      expect((await postConsent(app, { request_id: first.requestId, decision: 'approve', csrf_token: csrf }, user.cookie)).statusCode).toBe(200)

      const { requestId, state, pair } = await pending('user:read')
      const response = await getHtml(requestId, user.cookie)
      expect(response.statusCode).toBe(302)
      const query = expectRedirect(locationOf(response)!, { state, iss: ISSUER, error: null })
      const exchanged = await exchangeCode(app, { code: query.get('code')!, verifier: pair.verifier })
      expect(exchanged.statusCode, exchanged.body).toBe(200)
      expect(exchanged.json().scope).toBe('user:read')
    })

    it('login disabled: 403 LOGIN_DISABLED', async () => {
      const { requestId } = await pending()
      await app.services.settings.update([{ key: 'global.enable_login', value: false }])
      try {
        const response = await consentDetails(app, requestId)
        expect(response.statusCode).toBe(403)
        expect(response.json().code).toBe('LOGIN_DISABLED')
      } finally {
        await app.services.settings.update([{ key: 'global.enable_login', value: true }])
      }
    })
  })

  describe('POST /api/oauth2/consent/login', () => {
    it('signs in (form-encoded): session cookie, 303 to the consent page, which then knows the user', async () => {
      const user = await fresh()
      const { requestId, state } = await pending()
      const response = await consentLogin({ request_id: requestId, login: user.email, password: DEFAULT_PASSWORD })
      expect(response.statusCode, response.body).toBe(303)
      const location = locationOf(response)!
      expect(consentRequestId(location)).toBe(requestId)
      const cookie = sessionCookie(response)
      expect(cookie).toEqual(expect.any(String))
      expect(cookie).not.toBe(user.cookie)

      const details = await consentDetails(app, requestId, cookie)
      expect(details.statusCode).toBe(200)
      expect(details.json().data.signed_in).toBe(true)
      // The request is bound to the new session: the user's other session is refused.
      expect((await consentDetails(app, requestId, user.cookie)).statusCode).toBe(403)
      const approved = await postConsent(app, { request_id: requestId, decision: 'approve', csrf_token: details.json().data.csrf_token }, cookie)
      expect(approved.statusCode, approved.body).toBe(200)
      expectRedirect(approved.json().data.redirect_url, { state, iss: ISSUER })
      // The session is a real one.
      expect((await call('GET', '/api/users/me', { ...user, cookie: cookie! })).json().data.username).toBe(user.username)
    })

    it('accepts the username and an Origin of PUBLIC_URL', async () => {
      const user = await fresh()
      const { requestId } = await pending()
      const response = await consentLogin({ request_id: requestId, login: user.username, password: DEFAULT_PASSWORD }, { origin: ISSUER })
      expect(response.statusCode, response.body).toBe(303)
      expect(sessionCookie(response)).toEqual(expect.any(String))
    })

    it('a wrong password: the sign-in page again with 401, no session', async () => {
      const user = await fresh()
      const { requestId } = await pending()
      const response = await consentLogin({ request_id: requestId, login: user.email, password: 'not the password' })
      expect(response.statusCode).toBe(401)
      expect(isHtml(response)).toBe(true)
      expect(sessionCookie(response)).toBeUndefined()
      expect(htmlTags(response.body, 'form')).toContainEqual(expect.objectContaining({ action: '/api/oauth2/consent/login' }))
      expect(inputValue(response.body, 'request_id')).toBe(requestId)
    })

    it('a foreign Origin: 403, no session', async () => {
      const user = await fresh()
      const { requestId } = await pending()
      const response = await consentLogin({ request_id: requestId, login: user.email, password: DEFAULT_PASSWORD }, { origin: 'https://evil.example.com' })
      expect(response.statusCode).toBe(403)
      expect(sessionCookie(response)).toBeUndefined()
    })
  })

  describe('POST /api/oauth2/consent', () => {
    it('without a session: 401', async () => {
      const user = await fresh()
      const { requestId } = await pending()
      const csrf = await csrfFor(requestId, user.cookie)
      const response = await postConsent(app, { request_id: requestId, decision: 'approve', csrf_token: csrf })
      expect(response.statusCode).toBe(401)
      expect(response.json().success).toBe(false)
    })

    it('another user\'s session: 403 FORBIDDEN; the owner can still decide', async () => {
      const user = await fresh()
      const { requestId, state } = await pending()
      const csrf = await csrfFor(requestId, user.cookie)
      const response = await postConsent(app, { request_id: requestId, decision: 'approve', csrf_token: csrf }, stranger.cookie)
      expect(response.statusCode).toBe(403)
      expect(response.json().code).toBe('FORBIDDEN')
      const own = await postConsent(app, { request_id: requestId, decision: 'approve', csrf_token: csrf }, user.cookie)
      expect(own.statusCode, own.body).toBe(200)
      expectRedirect(own.json().data.redirect_url, { state })
    })

    it('a wrong CSRF token: 403 INVALID_CSRF_TOKEN (JSON and form); a foreign team: 400 INVALID_TEAM; then the right values approve', async () => {
      const user = await fresh()
      const { requestId, state } = await pending()
      const csrf = await csrfFor(requestId, user.cookie)
      const wrong = `${csrf.slice(0, -2)}${csrf.endsWith('AA') ? 'BB' : 'AA'}`
      const json = await postConsent(app, { request_id: requestId, decision: 'approve', csrf_token: wrong }, user.cookie)
      expect(json.statusCode).toBe(403)
      expect(json.json().code).toBe('INVALID_CSRF_TOKEN')
      const form = await postConsentForm(app, { request_id: requestId, decision: 'approve', csrf_token: 'x' }, user.cookie)
      expect(form.statusCode).toBe(403)
      expect(form.headers.location).toBeUndefined()

      const team = await postConsent(app, { request_id: requestId, decision: 'approve', csrf_token: csrf, team_id: strangerTeam.id }, user.cookie)
      expect(team.statusCode).toBe(400)
      expect(team.json().code).toBe('INVALID_TEAM')

      const approved = await postConsent(app, { request_id: requestId, decision: 'approve', csrf_token: csrf }, user.cookie)
      expect(approved.statusCode, approved.body).toBe(200)
      expectRedirect(approved.json().data.redirect_url, { state, iss: ISSUER })
    })

    it('a cross-site form post (foreign Origin) with the session cookie: 403, the request stays undecided', async () => {
      const user = await fresh()
      const { requestId } = await pending()
      const csrf = await csrfFor(requestId, user.cookie)
      const response = await app.inject({
        method: 'POST', url: '/api/oauth2/consent',
        headers: { ...FORM, cookie: user.cookie, origin: 'https://evil.example.com' },
        payload: new URLSearchParams({ request_id: requestId, decision: 'approve', csrf_token: csrf }).toString(),
      })
      expect(response.statusCode).toBe(403)
      expect(response.headers.location).toBeUndefined()
      expect((await consentDetails(app, requestId, user.cookie)).statusCode).toBe(200)
    })

    it('deny: access_denied with state and iss, no code (JSON → redirect_url, form → 302)', async () => {
      const user = await fresh()
      const first = await pending()
      const csrf = await csrfFor(first.requestId, user.cookie)
      const json = await postConsent(app, { request_id: first.requestId, decision: 'deny', csrf_token: csrf }, user.cookie)
      expect(json.statusCode).toBe(200)
      const query = expectRedirect(json.json().data.redirect_url, { error: 'access_denied', state: first.state, iss: ISSUER, code: null })
      expect(query.get('error_description')).toEqual(expect.any(String))

      const second = await pending()
      const csrf2 = await csrfFor(second.requestId, user.cookie)
      const form = await postConsentForm(app, { request_id: second.requestId, decision: 'deny', csrf_token: csrf2 }, user.cookie)
      expect(form.statusCode).toBe(302)
      expectRedirect(locationOf(form)!, { error: 'access_denied', state: second.state, iss: ISSUER, code: null })
      // Decided: the request is gone.
      expect((await consentDetails(app, second.requestId, user.cookie)).statusCode).toBe(404)
    })

    it('approve (JSON): redirect_url carries code, state and iss; the request is then gone', async () => {
      const user = await fresh()
      const { requestId, state, pair } = await pending('user:read')
      const csrf = await csrfFor(requestId, user.cookie)
      const response = await postConsent(app, { request_id: requestId, decision: 'approve', csrf_token: csrf }, user.cookie)
      expect(response.statusCode).toBe(200)
      expect(response.json()).toMatchObject({ success: true, data: { redirect_url: expect.any(String) } })
      const query = expectRedirect(response.json().data.redirect_url, { state, iss: ISSUER, error: null })
      expect(query.get('code')!.length).toBeGreaterThanOrEqual(20)
      const exchanged = await exchangeCode(app, { code: query.get('code')!, verifier: pair.verifier })
      expect(exchanged.statusCode).toBe(200)
      expect(exchanged.json().scope).toBe('user:read')

      const again = await postConsent(app, { request_id: requestId, decision: 'approve', csrf_token: csrf }, user.cookie)
      expect(again.statusCode).toBe(404)
    })

    it('the chosen team (or, without one, the team chosen last time for this client) is the token\'s team_id in introspection', async () => {
      const user = await fresh()
      const second = await createTeam(call, user, 'Chosen Team')
      const teamOf = async (teamId: string | undefined) => {
        const { requestId, pair } = await pending('user:read teams:read mcp:read account:read')
        const csrf = await csrfFor(requestId, user.cookie)
        const approved = await postConsent(app, { request_id: requestId, decision: 'approve', csrf_token: csrf, ...(teamId === undefined ? {} : { team_id: teamId }) }, user.cookie)
        expect(approved.statusCode, approved.body).toBe(200)
        const code = new URL(approved.json().data.redirect_url).searchParams.get('code')!
        const tokens = await exchangeCode(app, { code, verifier: pair.verifier })
        expect(tokens.statusCode).toBe(200)
        const answer = await introspect(app, tokens.json().access_token, { cookie: admin.cookie })
        expect(answer.statusCode, answer.body).toBe(200)
        expect(answer.json()).toMatchObject({ active: true, sub: user.id })
        return answer.json().team_id
      }
      expect(await teamOf(undefined)).toBe(await defaultTeamId(user))
      expect(await teamOf(second.id)).toBe(second.id)
      expect(await teamOf(undefined)).toBe(second.id)
    })

    it('single use: two concurrent approvals, exactly one succeeds, the other 404', async () => {
      const user = await fresh()
      const { requestId } = await pending()
      const csrf = await csrfFor(requestId, user.cookie)
      const answers = await Promise.all([1, 2].map(() => postConsent(app, { request_id: requestId, decision: 'approve', csrf_token: csrf }, user.cookie)))
      expect(answers.map((answer) => answer.statusCode).sort()).toEqual([200, 404])
    })

    it('login disabled: 403 LOGIN_DISABLED for a non-admin session', async () => {
      const user = await fresh()
      const { requestId } = await pending()
      const csrf = await csrfFor(requestId, user.cookie)
      await app.services.settings.update([{ key: 'global.enable_login', value: false }])
      try {
        const response = await postConsent(app, { request_id: requestId, decision: 'approve', csrf_token: csrf }, user.cookie)
        expect(response.statusCode).toBe(403)
        expect(response.json().code).toBe('LOGIN_DISABLED')
      } finally {
        await app.services.settings.update([{ key: 'global.enable_login', value: true }])
      }
    })

    it('a request older than 10 minutes: 404 on GET and POST', async () => {
      const user = await fresh()
      const { requestId } = await pending()
      const csrf = await csrfFor(requestId, user.cookie)
      clock.advance(11 * MINUTE)
      const details = await consentDetails(app, requestId, user.cookie)
      expect(details.statusCode).toBe(404)
      expect(details.json().code).toBe('NOT_FOUND')
      const response = await postConsent(app, { request_id: requestId, decision: 'approve', csrf_token: csrf }, user.cookie)
      expect(response.statusCode).toBe(404)
    })
  })
})
