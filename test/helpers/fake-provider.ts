import { randomBytes } from 'node:crypto'
import type { AddressInfo } from 'node:net'
import Fastify, { type FastifyInstance, type FastifyReply, type FastifyRequest } from 'fastify'
import type { SettingChange } from '../../src/modules/settings/service.js'
import type { UserBody } from './accounts.js'
import type { TestContext } from './app.js'
import type { Browser, Hop } from './browser.js'

/**
 * A GitHub-compatible identity provider on loopback. It implements what a provider login touches:
 * the authorize redirect, the code-for-token exchange, `/user` and `/user/emails`, and answers the
 * way GitHub does — including its quirks (token errors with HTTP 200, form-encoded token answers
 * unless JSON is asked for, `/user/emails` refused when the scope lacks `user:email`).
 */

export interface ProviderEmail {
  email: string
  primary: boolean
  verified: boolean
  visibility: 'public' | 'private' | null
}

export interface ProviderUser {
  id: number
  login: string
  name: string | null
  /** The public email `/user` shows; GitHub leaves it null unless the user made one public. */
  email: string | null
  /** What `/user/emails` answers for this user. */
  emails: ProviderEmail[]
}

export interface FakeProviderOptions {
  clientId: string
  clientSecret: string
  /** The user "signed in" at the provider: the next authorization is for them. */
  user: ProviderUser
  /** The scope the token answer reports as granted (GitHub may grant less than requested). */
  grantedScope: string
  /** The user refuses at the provider: authorize redirects with `error=access_denied`. */
  deny: boolean
  /** GitHub answers token errors with 200; some servers use 401. */
  tokenErrorStatus: 200 | 401
  /** 200 answers the user's emails; 403/404 is what GitHub does without `user:email`. */
  emailsStatus: 200 | 403 | 404
  /** Every answer waits this long first. */
  delayMs: number
  /** Answer 500 at this endpoint. */
  fail: 'token' | 'user' | 'emails' | null
}

export interface RecordedCall {
  method: string
  path: string
  query: Record<string, string>
  headers: Record<string, string | string[] | undefined>
  /** The parsed body (form or JSON), `undefined` when there was none. */
  body: Record<string, unknown> | undefined
}

interface IssuedCode {
  code: string
  clientId: string
  redirectUri: string
  scope: string
  userId: number
}

export interface IssuedToken {
  accessToken: string
  code: string
  userId: number
  scope: string
}

export interface FakeProvider {
  /** `http://127.0.0.1:<port>`, no trailing slash. */
  readonly url: string
  /** Every request received, in order. */
  readonly calls: RecordedCall[]
  /** Every user the provider has seen, by id (the latest version of each). */
  readonly users: Map<number, ProviderUser>
  /** Every authorization code issued. */
  readonly codes: readonly IssuedCode[]
  /** Every access token issued. */
  readonly tokens: readonly IssuedToken[]
  /** Changes options for the requests that follow; `user` also becomes the signed-in user. */
  configure(options: Partial<FakeProviderOptions>): void
  /** The current options. */
  readonly options: Readonly<FakeProviderOptions>
  /** The calls whose Authorization header carries `accessToken`. */
  callsWithToken(accessToken: string): RecordedCall[]
  close(): Promise<void>
}

let userSeq = 0

/** A provider user with unique id, login and a primary verified email (overrides win). */
export function providerUser(overrides: Partial<ProviderUser> = {}): ProviderUser {
  userSeq += 1
  const id = overrides.id ?? 9_000_000 + userSeq * 7 + Math.floor(Math.random() * 5)
  const login = overrides.login ?? `octo-${id}`
  const email = `${login.toLowerCase().replace(/[^a-z0-9-]/g, '')}.${id}@users.provider.test`
  return {
    id,
    login,
    name: `Octo ${id}`,
    email: null,
    emails: [{ email, primary: true, verified: true, visibility: 'private' }],
    ...overrides,
  }
}

/** The email a login with this user is expected to pick (primary verified, else any verified). */
export function expectedEmail(user: ProviderUser): string | undefined {
  return (user.emails.find((e) => e.primary && e.verified) ?? user.emails.find((e) => e.verified))?.email
}

export async function startFakeProvider(initial: Partial<FakeProviderOptions> = {}): Promise<FakeProvider> {
  const options: FakeProviderOptions = {
    clientId: 'cid',
    clientSecret: 'csecret',
    user: providerUser(),
    grantedScope: 'user:email',
    deny: false,
    tokenErrorStatus: 200,
    emailsStatus: 200,
    delayMs: 0,
    fail: null,
    ...initial,
  }
  const calls: RecordedCall[] = []
  const users = new Map<number, ProviderUser>([[options.user.id, options.user]])
  const codes: IssuedCode[] = []
  const pendingCodes = new Map<string, IssuedCode>()
  const tokens: IssuedToken[] = []
  const tokensByValue = new Map<string, IssuedToken>()

  const app = Fastify({ logger: false })
  app.addContentTypeParser('application/x-www-form-urlencoded', { parseAs: 'string' }, (_request, body, done) => {
    done(null, Object.fromEntries(new URLSearchParams(String(body))))
  })

  app.addHook('onRequest', async () => {
    if (options.delayMs > 0) await new Promise((resolve) => setTimeout(resolve, options.delayMs))
  })
  app.addHook('preHandler', async (request) => {
    const url = new URL(request.url, 'http://provider.test')
    calls.push({
      method: request.method,
      path: url.pathname,
      query: Object.fromEntries(url.searchParams),
      headers: { ...request.headers },
      body: request.body === undefined || request.body === null ? undefined : (request.body as Record<string, unknown>),
    })
  })

  app.get('/login/oauth/authorize', async (request, reply) => {
    const query = request.query as Record<string, string | undefined>
    // GitHub shows an error page (no redirect) for an unknown client or a missing redirect URI.
    if (query.client_id !== options.clientId) return reply.code(404).type('text/html').send('<h1>Not Found</h1>')
    if (query.redirect_uri === undefined) return reply.code(400).type('text/html').send('<h1>redirect_uri is required</h1>')
    const target = new URL(query.redirect_uri)
    if (options.deny) {
      target.searchParams.set('error', 'access_denied')
      target.searchParams.set('error_description', 'The user has denied your application access.')
      target.searchParams.set('error_uri', 'https://docs.github.com/apps/troubleshooting-authorization-request-errors/#access-denied')
    } else {
      const issued: IssuedCode = {
        code: randomBytes(10).toString('hex'),
        clientId: query.client_id,
        redirectUri: query.redirect_uri,
        scope: query.scope ?? '',
        userId: options.user.id,
      }
      codes.push(issued)
      pendingCodes.set(issued.code, issued)
      target.searchParams.set('code', issued.code)
    }
    if (query.state !== undefined) target.searchParams.set('state', query.state)
    return reply.redirect(target.toString(), 302)
  })

  app.post('/login/oauth/access_token', async (request, reply) => {
    if (options.fail === 'token') return reply.code(500).send({ message: 'Server Error' })
    const params = { ...(request.query as Record<string, string>), ...stringFields(request.body) }
    const basic = basicCredentials(request.headers.authorization)
    const clientId = basic?.id ?? params.client_id
    const clientSecret = basic?.secret ?? params.client_secret
    if (clientId !== options.clientId || clientSecret !== options.clientSecret) {
      return tokenError(request, reply, 'incorrect_client_credentials', 'The client_id and/or client_secret passed are incorrect.')
    }
    const issued = params.code === undefined ? undefined : pendingCodes.get(params.code)
    if (issued === undefined || issued.clientId !== clientId) {
      return tokenError(request, reply, 'bad_verification_code', 'The code passed is incorrect or expired.')
    }
    if (params.redirect_uri !== undefined && params.redirect_uri !== issued.redirectUri) {
      return tokenError(request, reply, 'redirect_uri_mismatch', 'The redirect_uri MUST match the registered callback URL for this application.')
    }
    pendingCodes.delete(issued.code)
    const token: IssuedToken = { accessToken: `gho_${randomBytes(18).toString('base64url')}`, code: issued.code, userId: issued.userId, scope: options.grantedScope }
    tokens.push(token)
    tokensByValue.set(token.accessToken, token)
    return tokenAnswer(request, reply, 200, { access_token: token.accessToken, token_type: 'bearer', scope: token.scope })
  })

  function tokenError(request: FastifyRequest, reply: FastifyReply, error: string, description: string) {
    return tokenAnswer(request, reply, options.tokenErrorStatus, {
      error,
      error_description: description,
      error_uri: `https://docs.github.com/apps/managing-oauth-apps/troubleshooting-oauth-app-access-token-request-errors/#${error.replaceAll('_', '-')}`,
    })
  }

  /** GitHub answers JSON only when asked for it, form-encoded otherwise. */
  function tokenAnswer(request: FastifyRequest, reply: FastifyReply, status: number, body: Record<string, string>) {
    reply.code(status)
    if (String(request.headers.accept ?? '').includes('application/json')) return reply.send(body)
    return reply.type('application/x-www-form-urlencoded; charset=utf-8').send(new URLSearchParams(body).toString())
  }

  /** The user a bearer (or `token`) credential was issued for; answers 401 itself otherwise. */
  function tokenOwner(request: FastifyRequest, reply: FastifyReply): ProviderUser | undefined {
    const match = /^(?:bearer|token)\s+(\S+)$/i.exec(request.headers.authorization ?? '')
    const token = match === null ? undefined : tokensByValue.get(match[1]!)
    if (token === undefined) {
      void reply.code(401).send({ message: 'Bad credentials', documentation_url: 'https://docs.github.com/rest' })
      return undefined
    }
    return users.get(token.userId)
  }

  app.get('/user', async (request, reply) => {
    if (options.fail === 'user') return reply.code(500).send({ message: 'Server Error' })
    const user = tokenOwner(request, reply)
    if (user === undefined) return reply
    return {
      login: user.login,
      id: user.id,
      node_id: `U_${user.id}`,
      avatar_url: `https://avatars.provider.test/u/${user.id}`,
      html_url: `https://provider.test/${user.login}`,
      type: 'User',
      site_admin: false,
      name: user.name,
      email: user.email,
    }
  })

  app.get('/user/emails', async (request, reply) => {
    if (options.fail === 'emails') return reply.code(500).send({ message: 'Server Error' })
    const user = tokenOwner(request, reply)
    if (user === undefined) return reply
    if (options.emailsStatus === 404) return reply.code(404).send({ message: 'Not Found', documentation_url: 'https://docs.github.com/rest' })
    if (options.emailsStatus === 403) return reply.code(403).send({ message: 'Resource not accessible by integration', documentation_url: 'https://docs.github.com/rest' })
    return user.emails
  })

  await app.listen({ port: 0, host: '127.0.0.1' })
  const { port } = app.server.address() as AddressInfo

  return {
    url: `http://127.0.0.1:${port}`,
    calls,
    users,
    codes,
    tokens,
    get options() {
      return options
    },
    configure(changes) {
      Object.assign(options, changes)
      if (changes.user !== undefined) users.set(changes.user.id, changes.user)
    },
    callsWithToken(accessToken) {
      return calls.filter((call) => String(call.headers.authorization ?? '').includes(accessToken))
    },
    close: () => app.close(),
  }
}

function stringFields(body: unknown): Record<string, string> {
  if (typeof body !== 'object' || body === null) return {}
  return Object.fromEntries(Object.entries(body).filter((entry): entry is [string, string] => typeof entry[1] === 'string'))
}

/** RFC 6749 §2.3.1: HTTP Basic with form-urlencoded id and secret. */
function basicCredentials(header: string | undefined): { id: string; secret: string } | undefined {
  const match = /^basic\s+(\S+)$/i.exec(header ?? '')
  if (match === null) return undefined
  const decoded = Buffer.from(match[1]!, 'base64').toString('utf8')
  const colon = decoded.indexOf(':')
  if (colon < 0) return undefined
  const unescape = (value: string) => decodeURIComponent(value.replaceAll('+', ' '))
  return { id: unescape(decoded.slice(0, colon)), secret: unescape(decoded.slice(colon + 1)) }
}

// ---------------------------------------------------------------------------------------------
// The provider login of the app under test, driven over real HTTP against this fake.

export const PAGE_URL = 'https://app.example.test'
export const CALLBACK_PATH = '/api/auth/provider/callback'

/** The settings that switch provider login on against `provider` for an app at `base`. */
export function providerSettings(base: string): SettingChange[] {
  return [
    { key: 'provider.oauth.enabled', value: true },
    { key: 'provider.oauth.client_id', value: 'cid' },
    { key: 'provider.oauth.client_secret', value: 'csecret' },
    { key: 'provider.oauth.callback_url', value: `${base}${CALLBACK_PATH}` },
    { key: 'global.page_url', value: PAGE_URL },
  ]
}

export interface ProviderLoginApp {
  app: FastifyInstance
  /** Where the app listens, e.g. `http://127.0.0.1:41234`. */
  base: string
  provider: FakeProvider
}

/**
 * A fake provider, and an app on `ctx` pointed at it, listening on loopback, with provider login
 * switched on. Per-IP limits are off: a flow makes several calls to rate-limited routes.
 */
export async function startProviderLoginApp(ctx: TestContext, provider?: FakeProvider): Promise<ProviderLoginApp & { ownProvider: boolean }> {
  const fake = provider ?? (await startFakeProvider())
  const { app } = await ctx.build({ env: { PROVIDER_OAUTH_URL: fake.url, PROVIDER_API_URL: fake.url, RATE_LIMIT_ENABLED: 'false' } })
  const base = await app.listen({ port: 0, host: '127.0.0.1' })
  await app.services.settings.update(providerSettings(base))
  return { app, base, provider: fake, ownProvider: provider === undefined }
}

export interface SignIn {
  hops: Hop[]
  /** The answer of `GET /api/auth/provider/login`. */
  login: Hop
  /** The provider's authorize answer, if the flow got there. */
  authorize: Hop | undefined
  /** The answer of the callback, if the flow got there. */
  callback: Hop | undefined
  /** The `auth_session=<value>` pair the callback set, if any. */
  session: string | undefined
  /** Where the callback finally sends the browser. */
  landing: string | undefined
}

/** `GET /api/auth/provider/login` in `b`, then through the provider back to the callback (not beyond). */
export async function providerSignIn(b: Browser, { base, provider }: Pick<ProviderLoginApp, 'base' | 'provider'>, returnTo?: string): Promise<SignIn> {
  const start = `${base}/api/auth/provider/login${returnTo === undefined ? '' : `?return_to=${encodeURIComponent(returnTo)}`}`
  const inFlow = (url: URL) => url.origin === provider.url || (url.origin === base && url.pathname.startsWith('/api/auth/provider/'))
  const hops = await b.follow(start, { stopAt: (next) => !inFlow(next) })
  return describeFlow(hops, base, provider)
}

/** Reads a flow's hops: which one was the login, the authorize, the callback. */
export function describeFlow(hops: Hop[], base: string, provider: FakeProvider): SignIn {
  const path = (hop: Hop) => new URL(hop.url)
  const callback = hops.find((hop) => path(hop).origin === base && path(hop).pathname === CALLBACK_PATH)
  return {
    hops,
    login: hops[0]!,
    authorize: hops.find((hop) => path(hop).origin === provider.url),
    callback,
    session: callback === undefined ? undefined : sessionPair(callback.setCookie),
    landing: callback?.location,
  }
}

/** The non-empty `auth_session=<value>` pair among Set-Cookie lines. */
export function sessionPair(setCookie: string[]): string | undefined {
  const pair = setCookie.find((line) => line.startsWith('auth_session='))?.split(';')[0]
  return pair === undefined || pair === 'auth_session=' ? undefined : pair
}

/** `GET /api/users/me` over HTTP with a session pair; the status and the user, if any. */
export async function whoAmI(base: string, session: string): Promise<{ status: number; user: UserBody | undefined }> {
  const response = await fetch(`${base}/api/users/me`, { headers: { cookie: session } })
  const body = (await response.json()) as { data?: UserBody }
  return { status: response.status, user: body.data }
}

/** Every users row (a test database holds a handful). */
export async function userRows(app: FastifyInstance) {
  const { db, t } = app.services.database
  return db.select().from(t.users)
}
