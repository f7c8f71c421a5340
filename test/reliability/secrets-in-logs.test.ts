import { randomBytes } from 'node:crypto'
import { sql } from 'drizzle-orm'
import type { FastifyInstance, InjectOptions, LightMyRequestResponse } from 'fastify'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { sessionCookie } from '../helpers/accounts.js'
import { createTestContext, TEST_SECRET, type TestApp, type TestContext } from '../helpers/app.js'
import { DIALECTS } from '../helpers/database.js'
import { keyPair, unseal } from '../helpers/hpke.js'
import { captureLogs, type LogCapture } from '../helpers/log-capture.js'
import {
  ALL_SCOPES, authorizeParams, consentDetails, consentRequestId, exchangeCode, getWithBearer, inputValue, introspect, locationOf,
  pkce, postConsent, postConsentForm, refresh, revoke, startAuthorization, type TokenSet,
} from '../helpers/oauth.js'
import { operationsOf, servedDocument } from '../helpers/openapi-document.js'
import { smtpSettings, startSmtpSink, type ReceivedMail, type SmtpSink } from '../helpers/smtp-sink.js'
import { rawRows } from '../helpers/sql.js'
import { sweepAccounts, type SweepAccounts } from '../helpers/sweep-fixtures.js'
import { callback, connectionsOf, remoteServer, startConnect, startResourceServer, type ResourceServer } from '../helpers/connections.js'
import { install } from '../helpers/installations.js'
import { client, crew as makeCrew, signUp } from '../helpers/teams.js'
import { authorize, startAuthorizationServer, type AuthorizationServer } from '../helpers/upstream-oauth.js'
import { runSweep } from '../helpers/sweep.js'

/**
 * Secrets never reach the log, even at LOG_LEVEL=trace: every line the app writes while the
 * bad-input sweep, the account and mail flows and the OAuth flows run is captured, and no
 * password, session cookie, token, code, PKCE verifier, CSRF token, mailed link token, SMTP or
 * provider secret, encryption secret, satellite registration token or satellite API key, secret
 * value of an installation (the team's or a member's own), or Argon2 hash the test saw may appear
 * in it. Registration tokens and API keys are kept whole and without their prefix (the JWT, the
 * key's secret), so a log line holding either part is caught. The installation secret values,
 * write-only, must moreover appear in no answer — a satellite's desired-state document holds them
 * sealed to its key only — nor in the instance log lines a satellite reports (they are stored
 * masked), and no secret in the audit log.
 */

const secretText = (label: string) => `${label}${randomBytes(12).toString('hex')}`
const FORM = { 'content-type': 'application/x-www-form-urlencoded' }

/** The token of the first `?token=…` link in a mail. */
function linkToken(mail: ReceivedMail): string {
  const token = /[?&]token=([A-Za-z0-9_-]+)/.exec(mail.text)?.[1]
  if (token === undefined) throw new Error(`no link token in the mail "${mail.subject}": ${mail.text}`)
  return token
}

describe.each(DIALECTS)('secrets never logged on %s', (dialect) => {
  let ctx: TestContext
  let subject: TestApp
  let app: FastifyInstance
  let logs: LogCapture
  let sink: SmtpSink
  let accounts: SweepAccounts
  /** A real authorization server and a resource it protects, for the connection tokens. */
  let upstream: AuthorizationServer
  let resource: ResourceServer
  /** Every secret value the test saw, with what it is. */
  const secrets = new Map<string, string>()
  const keep = (label: string, value: string | undefined | null) => {
    if (typeof value !== 'string' || value.length < 8) throw new Error(`expected a secret for ${label}, got ${String(value)}`)
    secrets.set(value, label)
    return value
  }
  const smtpPassword = secretText('smtp')
  const providerSecret = secretText('provider')

  const inject = (options: InjectOptions) => app.inject(options)
  const expectStatus = (response: LightMyRequestResponse, status: number, step: string) =>
    expect(response.statusCode, `${step}: ${response.body.slice(0, 300)}`).toBe(status)
  const cookieOf = (response: LightMyRequestResponse, step: string) => keep(`session cookie (${step})`, sessionCookie(response)?.slice('auth_session='.length))
  const keepTokens = (tokens: TokenSet, step: string) => {
    keep(`access token (${step})`, tokens.access_token)
    if (tokens.refresh_token !== undefined) keep(`refresh token (${step})`, tokens.refresh_token)
  }

  beforeAll(async () => {
    ctx = await createTestContext(dialect)
    sink = await startSmtpSink({ auth: { user: 'mailer', pass: smtpPassword } })
    logs = captureLogs('trace')
    upstream = await startAuthorizationServer()
    resource = await startResourceServer(upstream.issuer)
    subject = await ctx.build({ env: { RATE_LIMIT_ENABLED: 'false', LOG_LEVEL: 'trace', OUTBOUND_ALLOWED_HOSTS: `${upstream.host},${resource.host}` }, logger: logs.logger })
    app = subject.app
    keep('ENCRYPTION_SECRET', TEST_SECRET)
    keep('SMTP password', smtpPassword)
    keep('provider client secret', providerSecret)
    // The sweep's accounts come first: their admin is the first user, the global admin.
    accounts = await sweepAccounts(app, () => secretText('pw'))
  })
  afterAll(async () => {
    await ctx?.close()
    await sink?.close()
    await upstream?.close()
    await resource?.close()
  })

  it('captures the app\'s log lines', async () => {
    const response = await inject({ method: 'GET', url: '/api/health', headers: { 'x-request-id': 'log-capture-check' } })
    expectStatus(response, 200, 'health')
    const lines = logs.lines.filter((line) => line.includes('"log-capture-check"'))
    expect(lines.length).toBeGreaterThanOrEqual(2)
    for (const line of lines) expect(JSON.parse(line)).toMatchObject({ level: expect.any(Number), reqId: 'log-capture-check' })
  })

  it('no secret of the account, mail, OAuth and sweep flows reaches the log', { timeout: 300_000 }, async () => {
    const admin = { cookie: accounts.admin.cookie }
    const settings = smtpSettings(sink, {
      'smtp.username': 'mailer', 'smtp.password': smtpPassword, 'global.require_email_verification': true, 'global.page_url': '',
    })
    // Secret settings go through the HTTP API, as an admin would set them.
    expectStatus(await inject({ method: 'PUT', url: '/api/settings', headers: admin, payload: { settings } }), 200, 'SMTP settings')
    expectStatus(await inject({ method: 'PUT', url: '/api/settings/provider.oauth.client_secret', headers: admin, payload: { value: providerSecret } }), 200, 'provider secret')

    // Registration with verification, login, forgot and reset password, change password, logout.
    const email = 'mailflow@example.com'
    const first = keep('password (registration)', secretText('pw'))
    expectStatus(await inject({ method: 'POST', url: '/api/auth/email/register', payload: { username: 'mailflow', email, password: first } }), 201, 'register')
    const verification = keep('verification token', linkToken((await sink.waitFor(1))[0]!))
    expectStatus(await inject({ method: 'GET', url: `/api/auth/email/verify?token=${verification}` }), 200, 'verify')
    const login = (password: string) => inject({ method: 'POST', url: '/api/auth/email/login', payload: { login: email, password } })
    const loggedIn = await login(first)
    expectStatus(loggedIn, 200, 'login')
    cookieOf(loggedIn, 'login')
    expectStatus(await login(keep('wrong password', secretText('pw'))), 401, 'wrong password')

    sink.clear()
    expectStatus(await inject({ method: 'POST', url: '/api/auth/email/forgot-password', payload: { email } }), 200, 'forgot password')
    const reset = keep('reset token', linkToken((await sink.waitFor(1))[0]!))
    const second = keep('password (reset)', secretText('pw'))
    expectStatus(await inject({ method: 'POST', url: '/api/auth/email/reset-password', payload: { token: reset, new_password: second } }), 200, 'reset')
    const afterReset = await login(second)
    expectStatus(afterReset, 200, 'login after reset')
    const resetCookie = cookieOf(afterReset, 'after reset')
    const third = keep('password (changed)', secretText('pw'))
    expectStatus(await inject({
      method: 'PUT', url: '/api/auth/email/change-password', headers: { cookie: `auth_session=${resetCookie}` },
      payload: { current_password: second, new_password: third },
    }), 200, 'change password')
    const current = await login(third)
    expectStatus(current, 200, 'login after change')
    const cookie = `auth_session=${cookieOf(current, 'after change')}`
    const leaving = await login(third)
    expectStatus(await inject({ method: 'POST', url: '/api/auth/logout', headers: { cookie: `auth_session=${cookieOf(leaving, 'logout')}` } }), 200, 'logout')
    expectStatus(await inject({ method: 'POST', url: '/api/admin/email/test', headers: admin, payload: { email: 'admin-test@example.com' } }), 200, 'test mail')

    // OAuth, JSON consent: authorize, consent, code exchange, userinfo, refresh, introspect, revoke, replays.
    const pair = pkce()
    keep('code_verifier', pair.verifier)
    const started = await startAuthorization(app, authorizeParams(pair.challenge, { scope: 'user:read teams:read offline_access' }), cookie)
    const requestId = consentRequestId(locationOf(started))!
    const details = await consentDetails(app, requestId, cookie)
    expectStatus(details, 200, 'consent details')
    const csrf = keep('consent CSRF token', details.json().data.csrf_token)
    const decided = await postConsent(app, { request_id: requestId, decision: 'approve', csrf_token: csrf }, cookie)
    expectStatus(decided, 200, 'consent')
    const code = keep('authorization code', new URL(decided.json().data.redirect_url).searchParams.get('code'))
    const exchanged = await exchangeCode(app, { code, verifier: pair.verifier })
    expectStatus(exchanged, 200, 'code exchange')
    const tokens: TokenSet = exchanged.json()
    keepTokens(tokens, 'code exchange')
    expectStatus(await getWithBearer(app, '/api/oauth2/userinfo', tokens.access_token), 200, 'userinfo')
    const refreshed = await refresh(app, tokens.refresh_token!)
    expectStatus(refreshed, 200, 'refresh')
    const next: TokenSet = refreshed.json()
    keepTokens(next, 'refresh')
    const introspected = await introspect(app, next.access_token, admin)
    expectStatus(introspected, 200, 'introspect')
    expect(introspected.json().active).toBe(true)
    expectStatus(await revoke(app, { token: next.refresh_token!, client_id: 'service-gateway-cli' }), 200, 'revoke')
    expectStatus(await exchangeCode(app, { code, verifier: pair.verifier }), 400, 'code replay')
    expectStatus(await refresh(app, tokens.refresh_token!), 400, 'refresh token replay')

    // OAuth, the browser's way: no session yet, the consent page's sign-in form, the HTML consent form.
    const browserPair = pkce()
    keep('code_verifier (browser)', browserPair.verifier)
    const anonymous = await startAuthorization(app, authorizeParams(browserPair.challenge, { scope: ALL_SCOPES.join(' ') }))
    const browserRequest = consentRequestId(locationOf(anonymous))!
    const signInForm = (password: string) => inject({
      method: 'POST', url: '/api/oauth2/consent/login', headers: FORM,
      payload: new URLSearchParams({ request_id: browserRequest, login: email, password }).toString(),
    })
    expectStatus(await signInForm(keep('wrong password (consent sign-in)', secretText('pw'))), 401, 'consent sign-in, wrong password')
    const signedIn = await signInForm(third)
    expectStatus(signedIn, 303, 'consent sign-in')
    const browserCookie = `auth_session=${cookieOf(signedIn, 'consent sign-in')}`
    const page = await inject({ method: 'GET', url: `/api/oauth2/consent?request_id=${browserRequest}`, headers: { cookie: browserCookie } })
    expectStatus(page, 200, 'consent page')
    const pageCsrf = keep('consent CSRF token (page)', inputValue(page.body, 'csrf_token'))
    const approved = await postConsentForm(app, { request_id: browserRequest, decision: 'approve', csrf_token: pageCsrf }, browserCookie)
    expectStatus(approved, 302, 'consent form')
    const browserCode = keep('authorization code (browser)', new URL(locationOf(approved)!).searchParams.get('code'))
    const browserTokens = await exchangeCode(app, { code: browserCode, verifier: browserPair.verifier }, { json: true })
    expectStatus(browserTokens, 200, 'code exchange (JSON)')
    keepTokens(browserTokens.json(), 'browser')

    // Satellites: registration tokens (global and team), pairing, heartbeats, a re-registration
    // that replaces the key, a replayed token, a revoked one, a disabled satellite, a forged key.
    const keepRegistration = (response: LightMyRequestResponse, step: string) => {
      expectStatus(response, 201, step)
      const { id, token } = response.json().data as { id: string; token: string }
      keep(`registration token (${step})`, token)
      keep(`registration JWT (${step})`, token.replace(/^service_satellite_(global|team)_/, ''))
      return { id, token }
    }
    const keepKey = (response: LightMyRequestResponse, step: string) => {
      expectStatus(response, 201, step)
      const { satellite, api_key: apiKey } = response.json().data as { satellite: { id: string }; api_key: string }
      keep(`satellite API key (${step})`, apiKey)
      keep(`satellite key secret (${step})`, apiKey.replace(/^service_satkey_/, ''))
      return { id: satellite.id, apiKey }
    }
    const newToken = async (url: string, step: string) => keepRegistration(await inject({ method: 'POST', url, headers: admin, payload: { expires_in_hours: 2 } }), step)
    const registerSatellite = (token: string, name: string) => inject({
      method: 'POST', url: '/api/satellites/register', headers: { authorization: `Bearer ${token}` },
      payload: { name, capabilities: ['logs'], satellite_url: 'https://satellite.example.com', system_info: { os: 'linux', arch: 'arm64', node_version: 'v22.1.0', memory_mb: 2048 } },
    })
    const beat = (id: string, apiKey: string) => inject({
      method: 'POST', url: `/api/satellites/${id}/heartbeat`, headers: { authorization: `Bearer ${apiKey}` },
      payload: { status: 'active', system_metrics: { cpu_usage_percent: 7, memory_usage_mb: 300, uptime_seconds: 12 }, version: '1.2.3' },
    })
    const globalToken = await newToken('/api/satellites/global/registration-tokens', 'global')
    const logged = keepKey(await registerSatellite(globalToken.token, 'log-satellite'), 'register')
    expectStatus(await beat(logged.id, logged.apiKey), 200, 'heartbeat')
    expectStatus(await registerSatellite(globalToken.token, 'log-satellite-replay'), 401, 'registration token replay')
    const teamUrl = `/api/teams/${accounts.teamId}/satellites/registration-tokens`
    const teamSatellite = keepKey(await registerSatellite((await newToken(teamUrl, 'team')).token, 'log-team-satellite'), 'team register')
    const reRegistered = keepKey(await registerSatellite((await newToken(teamUrl, 'team, again')).token, 'log-team-satellite'), 're-register')
    expect(reRegistered.id).toBe(teamSatellite.id)
    expectStatus(await beat(teamSatellite.id, teamSatellite.apiKey), 401, 'replaced key')
    expectStatus(await beat(reRegistered.id, reRegistered.apiKey), 200, 'heartbeat with the new key')
    const revoked = await newToken('/api/satellites/global/registration-tokens', 'revoked')
    expectStatus(await inject({ method: 'DELETE', url: `/api/satellites/registration-tokens/${revoked.id}`, headers: admin }), 200, 'revoke')
    expectStatus(await registerSatellite(revoked.token, 'log-satellite-revoked'), 401, 'revoked token')
    expectStatus(await inject({ method: 'PUT', url: `/api/satellites/${logged.id}`, headers: admin, payload: { status: 'disabled' } }), 200, 'disable')
    expectStatus(await beat(logged.id, logged.apiKey), 403, 'disabled satellite')
    expectStatus(await beat(logged.id, keep('forged satellite key', `service_satkey_${randomBytes(32).toString('base64url')}`)), 401, 'forged key')
    expectStatus(await inject({ method: 'GET', url: '/api/satellites/registration-tokens', headers: admin }), 200, 'token list')
    expectStatus(await inject({ method: 'GET', url: `/api/satellites/${logged.id}`, headers: admin }), 200, 'satellite')

    // Installations: a secret team value set at creation and changed, a member's own secret value,
    // and every read of them; each answer is kept to be searched for the values.
    const answers: Array<{ step: string; text: string }> = []
    const seen = (response: LightMyRequestResponse, status: number, step: string) => {
      expectStatus(response, status, step)
      answers.push({ step, text: `${JSON.stringify(response.headers)}\n${response.body}` })
      return response
    }
    const member = { cookie: accounts.user.cookie }
    const installations = `/api/teams/${accounts.teamId}/mcp/installations`
    const listed = seen(await inject({ method: 'GET', url: installations, headers: admin }), 200, 'installation list')
    const serverId: string = listed.json().data.installations[0].server.id
    const created = seen(await inject({
      method: 'POST', url: installations, headers: admin,
      payload: {
        server_id: serverId, name: 'log-weather', user_scoped: ['env:PERSONAL_TOKEN'],
        values: { 'env:WEATHER_API_KEY': keep('installation team secret value (created)', secretText('teamvalue')), 'arg:data_dir': '/var/cache/log' },
      },
    }), 201, 'install')
    const installation = `${installations}/${created.json().data.installation.id as string}`
    seen(await inject({
      method: 'PUT', url: `${installation}/values`, headers: admin,
      payload: { values: { 'env:WEATHER_API_KEY': keep('installation team secret value (changed)', secretText('teamvalue')), 'env:LOG_LEVEL': 'debug' } },
    }), 200, 'team values')
    seen(await inject({
      method: 'PUT', url: `${installation}/my-values`, headers: member,
      payload: { values: { 'env:PERSONAL_TOKEN': keep("installation member's own secret value", secretText('ownvalue')) } },
    }), 200, 'my values')
    seen(await inject({ method: 'PUT', url: `${installation}/values`, headers: admin, payload: { values: { 'env:PERSONAL_TOKEN': secretText('refused') } } }), 400, 'a user value as a team value')
    for (const [as, headers] of [['admin', admin], ['member', member]] as const) {
      seen(await inject({ method: 'GET', url: installation, headers }), 200, `installation (${as})`)
      seen(await inject({ method: 'GET', url: `${installation}/my-values`, headers }), 200, `my values (${as})`)
      seen(await inject({ method: 'GET', url: installations, headers }), 200, `installation list (${as})`)
      seen(await inject({ method: 'GET', url: '/api/users/me/mcp/installations', headers }), 200, `my installations (${as})`)
      seen(await inject({ method: 'GET', url: '/api/users/me/mcp/client-config', headers }), 200, `client config (${as})`)
      seen(await inject({ method: 'GET', url: `${installation}/logs`, headers }), 200, `installation logs (${as})`)
    }
    seen(await inject({ method: 'PATCH', url: installation, headers: admin, payload: { desired: 'stopped' } }), 200, 'stop')
    seen(await inject({ method: 'POST', url: `${installation}/restart`, headers: admin }), 200, 'restart')

    // A satellite with a public key runs it: its document holds the values sealed (they open with
    // its private key, and only there), and the log lines it reports are stored with them masked.
    const satelliteKeys = await keyPair()
    const runner = keepKey(await inject({
      method: 'POST', url: '/api/satellites/register', headers: { authorization: `Bearer ${(await newToken('/api/satellites/global/registration-tokens', 'runner')).token}` },
      payload: { name: 'log-runner', public_key: satelliteKeys.publicKey },
    }), 'runner')
    expectStatus(await beat(runner.id, runner.apiKey), 200, 'runner heartbeat')
    const installationId = created.json().data.installation.id as string
    seen(await inject({ method: 'PATCH', url: installation, headers: admin, payload: { satellite_id: runner.id, desired: 'running' } }), 200, 'place on the runner')
    const asRunner = { authorization: `Bearer ${runner.apiKey}` }
    const desiredState = seen(await inject({ method: 'GET', url: `/api/satellites/${runner.id}/desired-state`, headers: asRunner }), 200, 'desired state')
    const instanceId = `${installationId}.${accounts.user.id}`
    const instance = (desiredState.json().data.instances as Array<{ instance_id: string; secrets: Array<{ target: string; sealed: string }> }>)
      .find((each) => each.instance_id === instanceId)
    expect(instance, desiredState.body).toBeDefined()
    const teamValue = [...secrets].find(([, label]) => label === 'installation team secret value (changed)')![0]
    const ownValue = [...secrets].find(([, label]) => label === "installation member's own secret value")![0]
    const opened = Object.fromEntries(await Promise.all(instance!.secrets.map(async (secret) => [secret.target, await unseal(satelliteKeys.privateKey, instanceId, secret.target, secret.sealed)])))
    expect(opened).toEqual({ 'env:WEATHER_API_KEY': teamValue, 'env:PERSONAL_TOKEN': ownValue })
    const logsUrl = `/api/satellites/${runner.id}/instances/${instanceId}/logs`
    seen(await inject({
      method: 'POST', url: logsUrl, headers: asRunner,
      payload: { lines: [
        { at: new Date().toISOString(), stream: 'stderr', text: `auth failed for key=${teamValue} token=${ownValue}` },
        { at: new Date().toISOString(), stream: 'event', text: `env WEATHER_API_KEY=${teamValue}` },
      ] },
    }), 200, 'instance log lines')
    for (const [as, headers] of [['admin', admin], ['member', member]] as const) {
      const read = seen(await inject({ method: 'GET', url: `${installation}/logs`, headers }), 200, `reported log lines (${as})`)
      expect((read.json().data.logs as Array<{ text: string }>).map((line) => line.text)).toEqual([
        'env WEATHER_API_KEY=[secret]', 'auth failed for key=[secret] token=[secret]',
      ])
    }
    const stored = (await rawRows(app.services.database, sql`select text from mcp_instance_logs`)).map((row) => String(row[0])).join('\n')
    expect(stored).toContain('[secret]')
    expect([teamValue, ownValue].filter((value) => stored.includes(value))).toEqual([])
    const installationSecrets = () => [...secrets].filter(([, label]) => label.startsWith('installation')).map(([value]) => value).concat(accounts.installationSecrets)

    // The bad-input sweep, with every credential that carries a secret (anonymous calls of
    // protected routes carry none and are left out to keep the time bounded). It reaches the
    // sweep team's installations, whose secret values must show in none of its answers either.
    await inject({ method: 'PUT', url: '/api/settings/global.require_email_verification', headers: admin, payload: { value: false } })
    const document = await servedDocument(app)
    const writeOnly = installationSecrets()
    const swept = await runSweep(app, document, operationsOf(document), {
      pathValue: accounts.pathValue,
      knownValue: accounts.knownValue,
      headersFor: accounts.headersFor,
      select: (operation, _case, credential) => credential !== 'anonymous' || (operation.operation.security ?? []).length === 0,
      onAnswer: (response, operation, credential) => {
        const text = `${JSON.stringify(response.headers)}\n${response.body}`
        if (writeOnly.some((value) => text.includes(value))) answers.push({ step: `sweep ${operation.method} ${operation.path} [${credential}]`, text })
      },
    })
    expect(swept.requests).toBeGreaterThan(1000)
    for (const value of accounts.secrets()) keep('sweep account password, cookie, token, satellite key or registration token', value)

    // Every Argon2 hash the flows stored.
    const hashes = await rawRows(app.services.database, sql`select username, password_hash from users where password_hash is not null`)
    expect(hashes.length).toBeGreaterThanOrEqual(4)
    for (const [username, hash] of hashes) {
      keep(`Argon2 hash of ${String(username)}`, String(hash))
      keep(`Argon2 digest of ${String(username)}`, String(hash).split('$').pop())
    }

    // Passwords, cookies, tokens, codes, verifiers, CSRF and link tokens, settings secrets,
    // registration tokens and satellite keys, hashes.
    expect(secrets.size).toBeGreaterThanOrEqual(50)
    expect([...secrets.values()].filter((label) => /registration|satellite/.test(label)).length).toBeGreaterThanOrEqual(15)
    const text = logs.text()
    console.info(`[${dialect}] secrets in logs: ${swept.requests} sweep requests, ${logs.lines.length} log lines, ${secrets.size} secrets checked`)
    // The capture saw these flows: the token endpoint's requests were logged.
    expect(text).toContain('/api/oauth2/token')
    expect(logs.lines.length).toBeGreaterThan(swept.requests)
    expect(leaks(text)).toEqual([])
    expect(text).not.toContain('$argon2')

    // The installation secret values in no answer.
    expect(writeOnly.length).toBeGreaterThanOrEqual(7)
    expect(answers.length).toBeGreaterThanOrEqual(17)
    const shown = answers.flatMap(({ step, text: answer }) =>
      writeOnly.filter((value) => answer.includes(value)).map((value) => `${step}: ${secrets.get(value) ?? 'sweep installation secret value'}`))
    expect(shown).toEqual([])

    // No secret in the audit log, which recorded the installation changes (by key).
    const audit = (await rawRows(app.services.database, sql`select type, actor_id, ip, target, details from audit_events`)).map((row) => JSON.stringify(row)).join('\n')
    expect(audit).toContain('installation.values_set')
    expect(audit).toContain('installation.my_values_set')
    expect(audit).toContain('env:WEATHER_API_KEY')
    const audited = [...secrets].filter(([value]) => audit.includes(value)).map(([, label]) => label)
    expect(audited).toEqual([])
    expect(audit).not.toContain('$argon2')
  })

  it('no connection token, code or state reaches the log, an answer or the audit log', { timeout: 60_000 }, async () => {
    const call = client(app)
    let n = 0
    const fresh = () => signUp(app, `logconn_${++n}`)
    const crew = await makeCrew(call, fresh, 'Log connections')
    const serverId = await remoteServer(call, accounts.admin, 'Logged remote', resource.url)
    const id = (await install(call, crew.team.id, crew.teamAdmin, { server_id: serverId, name: 'logged-remote' })).id
    const upstreamSecrets = new Map<string, string>()
    const keepUpstream = (label: string, value: string | undefined | null) => { if (typeof value === 'string' && value.length >= 8) upstreamSecrets.set(value, label) }
    const { callback: back } = await authorize(await startConnect(app, crew.team.id, id, crew.teamUser), { account: 'logged-alice' })
    keepUpstream('authorization code', new URL(back).searchParams.get('code'))
    keepUpstream('state', new URL(back).searchParams.get('state'))
    const page = await callback(app, back, crew.teamUser)
    expect(page.statusCode, page.body).toBe(200)
    const sealed = ((await rawRows(app.services.database, sql`select sealed from oauth_connections`)) as string[][])[0]![0]!
    const tokens = app.services.connectionTokens.openTokens({ installationId: id, userId: crew.teamUser.id, inputKey: `oauth:${resource.url}` }, sealed)
    keepUpstream('upstream access token', tokens.access_token)
    keepUpstream('upstream refresh token', tokens.refresh_token)
    const answers = [page.body, (await call('GET', connectionsOf(crew.team.id, id), crew.teamUser)).body, (await call('GET', '/api/users/me/connections', crew.teamUser)).body]
    expect((await call('DELETE', `${connectionsOf(crew.team.id, id)}/${encodeURIComponent(`oauth:${resource.url}`)}`, crew.teamUser)).statusCode).toBe(204)
    expect(upstreamSecrets.size).toBe(4)
    const text = logs.text()
    expect(text).toContain('/api/oauth/upstream/callback')
    const audit = (await rawRows(app.services.database, sql`select type, details from audit_events where type like 'connection.%'`)).map((row) => JSON.stringify(row)).join('\n')
    expect(audit).toContain('connection.created')
    expect(audit).toContain('connection.deleted')
    for (const [where, haystack] of [['log', text], ['answers', answers.join('\n')], ['audit', audit]] as const) {
      expect([...upstreamSecrets].filter(([value]) => haystack.includes(value)).map(([, label]) => `${label} in the ${where}`)).toEqual([])
    }
  })

  it('a failed users insert logs the failure without the password or its hash', async () => {
    const password = secretText('pw')
    const { database } = app.services
    const [block, unblock] = dialect === 'postgresql'
      ? ['alter table users add constraint test_no_inserts check (false) not valid', 'alter table users drop constraint test_no_inserts']
      : ["create trigger test_no_inserts before insert on users begin select raise(abort, 'inserts refused by the test'); end", 'drop trigger test_no_inserts']
    await rawRows(database, sql.raw(block))
    const from = logs.lines.length
    let response: LightMyRequestResponse
    try {
      response = await inject({
        method: 'POST', url: '/api/auth/email/register', headers: { 'x-request-id': 'failed-insert' },
        payload: { username: 'faultuser', email: 'faultuser@example.com', password },
      })
    } finally {
      await rawRows(database, sql.raw(unblock))
    }
    expect(response.statusCode, response.body).toBeGreaterThanOrEqual(400)
    expect(response.json()).toEqual({ success: false, error: expect.any(String), code: expect.any(String) })
    if (response.statusCode >= 500) expect(response.json().code).toBe('INTERNAL_ERROR')

    const lines = logs.lines.slice(from)
    // The failure itself is logged, with the request id, at error level.
    expect(lines.some((line) => line.includes('"failed-insert"') && JSON.parse(line).level >= 50), lines.join('')).toBe(true)
    const text = lines.join('')
    expect(text).not.toContain(password)
    expect(text).not.toContain('$argon2')
    // The database still takes the same registration once the fault is gone.
    expectStatus(await inject({ method: 'POST', url: '/api/auth/email/register', payload: { username: 'faultuser', email: 'faultuser@example.com', password } }), 201, 'register after the fault')
  })

  /** Each secret found in the log, with what it is and the first line that holds it. */
  function leaks(text: string): string[] {
    const found: string[] = []
    for (const [value, label] of secrets) {
      if (!text.includes(value)) continue
      const line = logs.lines.find((each) => each.includes(value)) ?? ''
      found.push(`${label}: ${line.slice(0, 400)}`)
    }
    return found
  }
})
