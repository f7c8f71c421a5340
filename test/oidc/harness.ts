/**
 * The service under test beside a real OpenID Connect issuer (issuer.ts): an app listening on
 * 127.0.0.1 whose PUBLIC_URL is its own address (the redirect URI registered at the issuer), the
 * issuer's host in OUTBOUND_ALLOWED_HOSTS, and the `oidc.*` settings pointing at it. `oidcSignIn`
 * walks a sign-in as a browser does: the service's login route, the issuer's development forms,
 * and the callback, with one cookie jar.
 */
import type { FastifyInstance } from 'fastify'
import { createTestContext, type TestContext } from '../helpers/app.js'
import { browser, type Browser, type Hop } from '../helpers/browser.js'
import type { TestDialect } from '../helpers/database.js'
import { freePort } from '../helpers/oauth-e2e.js'
import { authorize } from '../helpers/upstream-oauth.js'
import { CLIENT_ID, CLIENT_SECRET, startIssuer, type IssuerOptions, type TestIssuer } from './issuer.js'

export const CALLBACK_PATH = '/api/auth/oidc/callback'

export interface OidcHarness {
  ctx: TestContext
  app: FastifyInstance
  /** `http://127.0.0.1:<port>`: PUBLIC_URL, and where the app listens. */
  base: string
  issuer: TestIssuer
  /** Another instance on the same database and PUBLIC_URL, listening elsewhere (with `second: true`). */
  second?: { app: FastifyInstance; base: string }
  close(): Promise<void>
}

export interface HarnessOptions extends Omit<IssuerOptions, 'redirectUri'> {
  /** Configure and switch on OpenID Connect sign-in (default true). */
  configure?: boolean
  second?: boolean
  env?: Record<string, string>
  build?: Parameters<TestContext['build']>[0]
}

export async function startOidcHarness(dialect: TestDialect, { configure = true, second = false, env = {}, build = {}, ...issuerOptions }: HarnessOptions = {}): Promise<OidcHarness> {
  const ctx = await createTestContext(dialect, { file: second })
  const port = await freePort()
  const base = `http://127.0.0.1:${port}`
  const issuer = await startIssuer({ redirectUri: `${base}${CALLBACK_PATH}`, ...issuerOptions })
  const appEnv = { PUBLIC_URL: base, OUTBOUND_ALLOWED_HOSTS: issuer.host, RATE_LIMIT_ENABLED: 'false', ...env }
  const { app } = await ctx.build({ ...build, env: appEnv })
  await app.listen({ host: '127.0.0.1', port })
  if (configure) await app.services.settings.update(oidcSettings(issuer))
  let other: OidcHarness['second']
  if (second) {
    const built = await ctx.build({ ...build, env: appEnv })
    other = { app: built.app, base: await built.app.listen({ host: '127.0.0.1', port: 0 }) }
  }
  return {
    ctx, app, base, issuer, second: other,
    async close() {
      await ctx.close()
      await issuer.close()
    },
  }
}

/** The settings that point the service at `issuer`, switched on. */
export function oidcSettings(issuer: Pick<TestIssuer, 'issuer'>, overrides: Record<string, unknown> = {}) {
  const values: Record<string, unknown> = {
    'oidc.issuer': issuer.issuer, 'oidc.client_id': CLIENT_ID, 'oidc.client_secret': CLIENT_SECRET, 'oidc.enabled': true, ...overrides,
  }
  return Object.entries(values).map(([key, value]) => ({ key, value }))
}

export interface OidcSignIn {
  /** The service's answer to the login route (302 to the issuer, or a refusal). */
  start: Hop
  /** The issuer's redirect back to the service (the callback URL with code, state and iss, or an error). */
  callbackUrl?: string
  /** The service's answer to the callback. */
  callback?: Hop
  /** `auth_session=<value>` when the callback signed the browser in. */
  session?: string
}

export interface SignInOptions {
  /** The account id typed into the issuer's login form. */
  account: string
  returnTo?: string
  agent?: Browser
  /** Changes the authorization URL before the browser follows it (a tampered request). */
  tamper?: (url: URL) => void
  /** Decline at the issuer's consent form. */
  deny?: boolean
  /** Deliver the callback to this base instead (another instance). */
  callbackBase?: string
  /** Stop before the callback. */
  stopBeforeCallback?: boolean
  headers?: Record<string, string>
}

export async function oidcSignIn(base: string, { account, returnTo, agent = browser(), tamper, deny, callbackBase, stopBeforeCallback, headers = {} }: SignInOptions): Promise<OidcSignIn> {
  const start = await agent.get(`${base}/api/auth/oidc/login${returnTo === undefined ? '' : `?return_to=${encodeURIComponent(returnTo)}`}`, headers)
  if (start.status !== 302 || start.location === undefined) return { start }
  const url = new URL(start.location)
  tamper?.(url)
  const { callback: callbackUrl } = await authorize(url.toString(), { account, deny, agent })
  if (stopBeforeCallback) return { start, callbackUrl }
  const target = callbackBase === undefined ? callbackUrl : `${callbackBase}${new URL(callbackUrl).pathname}${new URL(callbackUrl).search}`
  const callback = await agent.get(target, headers)
  const line = callback.setCookie.find((cookie) => cookie.startsWith('auth_session=') && !/max-age=0/i.test(cookie))
  return { start, callbackUrl, callback, session: line?.split(';')[0] }
}

/** GET /api/users/me with a session cookie. */
export async function whoAmI(base: string, session: string): Promise<{ status: number; user?: Record<string, unknown> & { id: string } }> {
  const response = await fetch(`${base}/api/users/me`, { headers: { cookie: session } })
  const body = (await response.json()) as { data?: Record<string, unknown> & { id: string } }
  return { status: response.status, user: body.data }
}

/** The first user (a global admin) through email registration: the first-user rule is met afterwards. */
export async function registerFirstAdmin(app: FastifyInstance, username = 'first_admin'): Promise<{ id: string; cookie: string }> {
  const response = await app.inject({ method: 'POST', url: '/api/auth/email/register', payload: { username, email: `${username}@example.com`, password: 'correct horse battery' } })
  if (response.statusCode !== 201) throw new Error(`registration failed: ${response.body}`)
  return { id: response.json().data.user.id, cookie: String(response.headers['set-cookie']).split(';')[0]! }
}
