/**
 * Issue 6, point 7: the whole command-line login driven by a real OAuth client library
 * (oauth4webapi) playing `service-gateway-cli` against a real listening server — discovery, an
 * authorization URL with PKCE, sign-in and consent over real HTTP through a cookie jar, callback
 * validation (state and RFC 9207 `iss`), code exchange, bearer calls, refresh, revocation —
 * plus deny and remembered consent.
 */
import * as oauth from 'oauth4webapi'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createTestContext, type TestContext } from '../helpers/app.js'
import { browser, type Browser, type Hop } from '../helpers/browser.js'
import { DIALECTS } from '../helpers/database.js'
import {
  ALL_SCOPES, CALLBACK, CLI_CLIENT_ID, apiJson, authorizationUrl, cliClient, discover, exchangeCode, formFor, insecure,
  noClientAuth, postForm, registerOverHttp, startOAuthServer, text, type Authorization, type HtmlForm, type OAuthServer, type Registered,
} from '../helpers/oauth-e2e.js'

const sameScopes = (scope: string | undefined) => (scope ?? '').split(' ').filter(Boolean).sort()
const isCallback = (url: URL | string) => String(url).startsWith(`${CALLBACK}?`)

interface ConsentDetails {
  request_id: string
  client_id: string
  client_name: string
  scopes: Array<{ name: string; description: string }>
  teams: Array<{ id: string; name: string }>
  csrf_token: string | null
  signed_in: boolean
}

describe.each(DIALECTS)('the CLI login with oauth4webapi over real HTTP on %s', (dialect) => {
  let ctx: TestContext
  let server: OAuthServer
  let base: string
  let as: oauth.AuthorizationServer
  let admin: Registered
  let member: Registered
  let other: Registered

  beforeAll(async () => {
    ctx = await createTestContext(dialect)
    server = await startOAuthServer(ctx)
    base = server.base
    as = await discover(base)
    admin = await registerOverHttp(base, 'cli_admin') // the first user: global admin
    member = await registerOverHttp(base, 'cli_member')
    other = await registerOverHttp(base, 'cli_other')
  })
  afterAll(() => ctx?.close())

  /** GET the authorization URL and follow the server's redirects (never into the callback). */
  function open(b: Browser, auth: Authorization): Promise<Hop[]> {
    return b.follow(auth.url.toString(), { stopAt: (next) => next.origin !== base })
  }

  /**
   * From the authorization URL to the consent page of a signed-in browser: sign-in page, the
   * sign-in form POST, the consent page. Answers the consent page's form and its JSON details.
   */
  async function signInToConsent(b: Browser, auth: Authorization, user: Registered): Promise<{ form: HtmlForm; page: Hop; details: ConsentDetails }> {
    const hops = await open(b, auth)
    expect(hops.map((hop) => hop.status), hops.map((hop) => `${hop.url} → ${hop.location ?? hop.body.slice(0, 300)}`).join('\n')).toEqual([302, 200])
    const consentUrl = new URL(hops[0]!.location!)
    expect(consentUrl.origin + consentUrl.pathname).toBe(`${base}/api/oauth2/consent`)
    const requestId = consentUrl.searchParams.get('request_id')
    expect(requestId).toMatch(/\S/)

    const signInPage = hops[1]!
    expect(signInPage.headers.get('content-type')).toMatch(/^text\/html/)
    const signIn = formFor(signInPage.body, '/api/oauth2/consent/login', base)
    expect(signIn.method).toBe('post')
    expect([...signIn.inputs.keys()]).toEqual(expect.arrayContaining(['login', 'password', 'request_id']))
    expect(signIn.inputs.get('request_id')).toBe(requestId)

    const signedIn = await postForm(b, `${base}/api/oauth2/consent/login`, {
      request_id: requestId!, login: user.email, password: user.password,
    }, base)
    expect(signedIn.status, signedIn.body).toBe(303)
    expect(signedIn.location).toBe(`${base}/api/oauth2/consent?request_id=${encodeURIComponent(requestId!)}`)
    expect(b.cookie(base, 'auth_session'), 'the sign-in sets the session cookie').toBeDefined()

    // The JSON variant (for a separate frontend) describes what the HTML page must show.
    const asJson = await b.get(signedIn.location!, { accept: 'application/json' })
    expect(asJson.status, asJson.body).toBe(200)
    const details = (JSON.parse(asJson.body) as { data: ConsentDetails }).data
    expect(details).toMatchObject({ request_id: requestId, client_id: CLI_CLIENT_ID, signed_in: true, csrf_token: expect.any(String) })

    const page = await b.get(signedIn.location!)
    expect(page.status, page.body).toBe(200)
    expect(page.headers.get('content-type')).toMatch(/^text\/html/)
    const csp = page.headers.get('content-security-policy') ?? ''
    expect(csp).toMatch(/default-src 'none'/)
    expect(csp).toMatch(/frame-ancestors 'none'/)
    expect(csp).toMatch(/form-action [^;]*'self'/)
    expect(csp).toMatch(/form-action [^;]*http:\/\/127\.0\.0\.1:8976/)

    const words = text(page.body)
    expect(words).toContain(details.client_name)
    for (const scope of details.scopes) expect(words).toContain(text(scope.description))
    expect(details.scopes.map((scope) => scope.name).sort()).toEqual(sameScopes(auth.url.searchParams.get('scope') ?? ALL_SCOPES))

    const form = formFor(page.body, '/api/oauth2/consent', base)
    expect(form.method).toBe('post')
    expect(form.inputs.get('request_id')).toBe(requestId)
    expect(form.inputs.get('csrf_token')).toMatch(/\S/)
    expect(form.buttons.filter((button) => button.name === 'decision').map((button) => button.value).sort()).toEqual(['approve', 'deny'])
    return { form, page, details }
  }

  /** POSTs the consent form as the browser would (the chosen button's name=value), answers the hop. */
  function decide(b: Browser, form: HtmlForm, decision: 'approve' | 'deny', teamId?: string): Promise<Hop> {
    return postForm(b, `${base}/api/oauth2/consent`, {
      request_id: form.inputs.get('request_id')!,
      csrf_token: form.inputs.get('csrf_token')!,
      ...(teamId === undefined ? {} : { team_id: teamId }),
      decision,
    }, base)
  }

  /** The caller's default team, by session. */
  async function defaultTeamOf(user: Registered): Promise<{ id: string; name: string }> {
    const response = await apiJson(base, 'GET', '/api/teams/me/default', { cookie: user.cookie })
    expect(response.status, response.text).toBe(200)
    return response.json.data.team
  }

  /** RFC 7662 through the admin's session. */
  async function introspect(token: string) {
    const response = await apiJson(base, 'POST', '/api/oauth2/introspect', { cookie: admin.cookie, body: { token } })
    expect(response.status, response.text).toBe(200)
    return response.json
  }

  async function bearer(token: string, path: string): Promise<Response> {
    return oauth.protectedResourceRequest(token, 'GET', new URL(`${base}${path}`), undefined, undefined, insecure)
  }

  /** The library's verdict on a refused bearer token: a 401 challenge `Bearer error="invalid_token"`. */
  async function expectRefused(token: string, path: string): Promise<void> {
    const error = await bearer(token, path).then(
      (response) => new Error(`expected 401 on ${path}, got ${response.status}`),
      (rejection: unknown) => rejection,
    )
    expect(error).toBeInstanceOf(oauth.WWWAuthenticateChallengeError)
    const challenge = error as oauth.WWWAuthenticateChallengeError
    expect(challenge.status).toBe(401)
    expect(challenge.cause.find((c) => c.scheme === 'bearer')?.parameters.error).toBe('invalid_token')
  }

  it('discovery: RFC 8414 metadata at /.well-known/oauth-authorization-server, issuer = PUBLIC_URL', async () => {
    // processDiscoveryResponse already checked the issuer against the URL we asked; the rest by hand.
    expect(as.issuer).toBe(base)
    expect(as).toMatchObject({
      authorization_endpoint: `${base}/api/oauth2/auth`,
      token_endpoint: `${base}/api/oauth2/token`,
      revocation_endpoint: `${base}/api/oauth2/revoke`,
      introspection_endpoint: `${base}/api/oauth2/introspect`,
      userinfo_endpoint: `${base}/api/oauth2/userinfo`,
      registration_endpoint: `${base}/api/oauth2/register`,
      response_types_supported: ['code'],
      code_challenge_methods_supported: ['S256'],
      token_endpoint_auth_methods_supported: ['none'],
      authorization_response_iss_parameter_supported: true,
    })
    expect([...(as.grant_types_supported ?? [])].sort()).toEqual(['authorization_code', 'refresh_token'])
    expect([...(as.scopes_supported ?? [])].sort()).toEqual(sameScopes(ALL_SCOPES))
  })

  it('sign-in, consent with a chosen team, code exchange, bearer calls, refresh, revocation', async () => {
    const ops = await apiJson(base, 'POST', '/api/teams', { cookie: admin.cookie, body: { name: 'Ops CLI' } })
    expect(ops.status, ops.text).toBe(201)
    const opsTeam: { id: string } = ops.json.data.team
    const defaultTeam = await defaultTeamOf(admin)

    const b = browser()
    const auth = await authorizationUrl(as)
    const { form, details } = await signInToConsent(b, auth, admin)
    const teamOptions = form.selects.get('team_id') ?? []
    expect(teamOptions[0]?.value, 'the default team comes first').toBe(defaultTeam.id)
    expect(teamOptions.map((option) => option.value).sort()).toEqual([defaultTeam.id, opsTeam.id].sort())
    expect(details.teams.map((team) => team.id).sort()).toEqual([defaultTeam.id, opsTeam.id].sort())

    const approved = await decide(b, form, 'approve', opsTeam.id)
    expect(approved.status, approved.body).toBe(302)
    expect(isCallback(approved.location!), approved.location).toBe(true)

    // The CLI's loopback listener would receive this; the library checks state and iss.
    const callback = oauth.validateAuthResponse(as, cliClient, new URL(approved.location!), auth.state)
    expect(callback.get('code')).toMatch(/\S/)
    expect(callback.get('iss')).toBe(base)

    const tokens = await exchangeCode(as, callback, auth.codeVerifier)
    expect(tokens).toMatchObject({ token_type: 'bearer', expires_in: 3600, access_token: expect.any(String), refresh_token: expect.any(String) })
    expect(sameScopes(tokens.scope)).toEqual(sameScopes(ALL_SCOPES))

    const me = await bearer(tokens.access_token, '/api/users/me')
    expect(me.status).toBe(200)
    expect(((await me.json()) as { data: { id: string; username: string } }).data).toMatchObject({ id: admin.id, username: admin.username })
    // The token reaches the team chosen at consent only: its teams are that one, and the
    // default team is another team's route.
    const teams = await bearer(tokens.access_token, '/api/teams/me')
    expect(teams.status).toBe(200)
    expect(((await teams.json()) as { data: { teams: Array<{ id: string }> } }).data.teams.map((team) => team.id)).toEqual([opsTeam.id])
    const otherTeam = await bearer(tokens.access_token, '/api/teams/me/default')
    expect(otherTeam.status).toBe(403)
    expect(await otherTeam.json()).toMatchObject({ code: 'FORBIDDEN', details: { bound_team_id: opsTeam.id } })
    expect(await introspect(tokens.access_token)).toMatchObject({
      active: true, client_id: CLI_CLIENT_ID, sub: admin.id, username: admin.username, team_id: opsTeam.id,
    })

    // Refresh: rotation gives a new pair, and the new access token works.
    const refreshed = await oauth.processRefreshTokenResponse(as, cliClient,
      await oauth.refreshTokenGrantRequest(as, cliClient, noClientAuth, tokens.refresh_token!, insecure))
    expect(refreshed).toMatchObject({ token_type: 'bearer', expires_in: 3600, access_token: expect.any(String), refresh_token: expect.any(String) })
    expect(refreshed.access_token).not.toBe(tokens.access_token)
    expect(refreshed.refresh_token).not.toBe(tokens.refresh_token)
    expect(sameScopes(refreshed.scope)).toEqual(sameScopes(ALL_SCOPES))
    expect((await bearer(refreshed.access_token, `/api/teams/${opsTeam.id}`)).status).toBe(200)
    expect((await bearer(refreshed.access_token, `/api/teams/${defaultTeam.id}`)).status, 'a refreshed token keeps the binding').toBe(403)

    // RFC 7009: revoking the refresh token revokes the whole grant.
    const revoked = await oauth.revocationRequest(as, cliClient, noClientAuth, refreshed.refresh_token!, {
      ...insecure, additionalParameters: { token_type_hint: 'refresh_token' },
    })
    await expect(oauth.processRevocationResponse(revoked)).resolves.toBeUndefined()
    for (const token of [tokens.access_token, refreshed.access_token]) {
      await expectRefused(token, '/api/teams/me/default')
      await expectRefused(token, '/api/users/me')
      expect(await introspect(token)).toMatchObject({ active: false })
    }
    const refreshAgain = await oauth.refreshTokenGrantRequest(as, cliClient, noClientAuth, refreshed.refresh_token!, insecure)
    const refusal = await oauth.processRefreshTokenResponse(as, cliClient, refreshAgain).then(() => undefined, (error: unknown) => error)
    expect(refusal).toBeInstanceOf(oauth.ResponseBodyError)
    expect(refusal).toMatchObject({ status: 400, error: 'invalid_grant' })

    // Revoking an already revoked token is still a success (RFC 7009 §2.2).
    await expect(oauth.processRevocationResponse(
      await oauth.revocationRequest(as, cliClient, noClientAuth, refreshed.refresh_token!, insecure))).resolves.toBeUndefined()
  })

  it('Deny sends access_denied to the callback (with state and iss); the library reports it; the request is spent', async () => {
    const b = browser()
    const auth = await authorizationUrl(as)
    const { form } = await signInToConsent(b, auth, other)

    const denied = await decide(b, form, 'deny')
    expect(denied.status, denied.body).toBe(302)
    expect(isCallback(denied.location!), denied.location).toBe(true)
    const params = new URL(denied.location!).searchParams
    expect(params.get('code')).toBeNull()
    expect(params.get('iss')).toBe(base)

    let error: unknown
    try {
      oauth.validateAuthResponse(as, cliClient, new URL(denied.location!), auth.state)
    } catch (caught) {
      error = caught
    }
    expect(error).toBeInstanceOf(oauth.AuthorizationResponseError)
    expect(error).toMatchObject({ error: 'access_denied' })
    expect((error as oauth.AuthorizationResponseError).cause.get('state')).toBe(auth.state)

    // A decided request cannot be approved afterwards.
    const late = await decide(b, form, 'approve')
    expect(late.status, late.body).toBe(404)
    expect(late.location).toBeUndefined()
  })

  it('a second authorization with the same scopes skips the consent page (remembered consent, same team)', async () => {
    const b = browser()
    const first = await authorizationUrl(as)
    const { form } = await signInToConsent(b, first, member)
    const approved = await decide(b, form, 'approve')
    expect(approved.status, approved.body).toBe(302)
    const firstTokens = await exchangeCode(as, oauth.validateAuthResponse(as, cliClient, new URL(approved.location!), first.state), first.codeVerifier)
    const memberDefault = await defaultTeamOf(member)
    expect(await introspect(firstTokens.access_token), 'team_id omitted → the default team').toMatchObject({ active: true, sub: member.id, team_id: memberDefault.id })

    const second = await authorizationUrl(as)
    const hops = await open(b, second)
    expect(hops.map((hop) => `${hop.status} ${hop.location ?? ''}`), 'straight from /auth to the callback, no page').toHaveLength(1)
    expect(hops[0]!.status).toBe(302)
    expect(isCallback(hops[0]!.location!), hops[0]!.location).toBe(true)

    const callback = oauth.validateAuthResponse(as, cliClient, new URL(hops[0]!.location!), second.state)
    expect(callback.get('code')).not.toBe(new URL(approved.location!).searchParams.get('code'))
    const tokens = await exchangeCode(as, callback, second.codeVerifier)
    expect(sameScopes(tokens.scope)).toEqual(sameScopes(ALL_SCOPES))
    expect(tokens.refresh_token).toEqual(expect.any(String))
    const team = await bearer(tokens.access_token, '/api/teams/me/default')
    expect(team.status).toBe(200)
    expect(((await team.json()) as { data: { team: { id: string } } }).data.team.id).toBe(memberDefault.id)
    expect(await introspect(tokens.access_token)).toMatchObject({ active: true, sub: member.id, team_id: memberDefault.id })

    // The remembered consent belongs to that user: another user's browser still sees the page.
    const stranger = await signInToConsent(browser(), await authorizationUrl(as), other)
    expect(stranger.details.signed_in).toBe(true)
  })
})
