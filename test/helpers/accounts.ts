import type { FastifyInstance, LightMyRequestResponse } from 'fastify'

export const DEFAULT_PASSWORD = 'correct horse battery'

export interface NewAccount {
  username: string
  email: string
  password?: string
  first_name?: string
  last_name?: string
}

/** A user as the API shows it. */
export interface UserBody {
  id: string
  username: string
  email: string
  first_name: string | null
  last_name: string | null
  role_id: 'global_admin' | 'global_user'
  email_verified: boolean
  auth_methods: Array<'email' | 'provider' | 'oidc'>
  created_at: string
}

export interface Origin {
  /** The client address the request comes from (per-IP limits). */
  remoteAddress?: string
}

/** POST /api/auth/email/register; the password defaults to DEFAULT_PASSWORD. */
export function register(app: FastifyInstance, { password = DEFAULT_PASSWORD, ...account }: NewAccount, origin: Origin = {}): Promise<LightMyRequestResponse> {
  return app.inject({ method: 'POST', url: '/api/auth/email/register', payload: { ...account, password }, ...origin })
}

/** POST /api/auth/email/login; `cookie` is the `auth_session=<value>` pair it set, if any. */
export async function login(app: FastifyInstance, loginName: string, password: string, origin: Origin = {}): Promise<{ response: LightMyRequestResponse; cookie: string | undefined }> {
  const response = await app.inject({ method: 'POST', url: '/api/auth/email/login', payload: { login: loginName, password }, ...origin })
  return { response, cookie: sessionCookie(response) }
}

/** Registers, then logs in; fails loudly when either step does not succeed. */
export async function registerAndLogin(app: FastifyInstance, account: NewAccount, origin: Origin = {}): Promise<{ user: UserBody; cookie: string }> {
  const registered = await register(app, account, origin)
  if (registered.statusCode !== 201) throw new Error(`registration failed: ${registered.statusCode} ${registered.body}`)
  const { response, cookie } = await login(app, account.email, account.password ?? DEFAULT_PASSWORD, origin)
  if (response.statusCode !== 200 || cookie === undefined) throw new Error(`login failed: ${response.statusCode} ${response.body}`)
  return { user: response.json().data.user, cookie }
}

/** The raw Set-Cookie lines of a response. */
export function setCookieLines(response: LightMyRequestResponse): string[] {
  const header = response.headers['set-cookie']
  if (header === undefined) return []
  return Array.isArray(header) ? header : [String(header)]
}

/** The Set-Cookie line for the session cookie, if the response sent one. */
export function sessionSetCookie(response: LightMyRequestResponse): string | undefined {
  return setCookieLines(response).find((line) => line.startsWith('auth_session='))
}

/** The `auth_session=<value>` pair to send back, when the response set a non-empty session cookie. */
export function sessionCookie(response: LightMyRequestResponse): string | undefined {
  const pair = sessionSetCookie(response)?.split(';')[0]
  return pair === undefined || pair === 'auth_session=' ? undefined : pair
}
