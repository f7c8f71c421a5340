import { eq } from 'drizzle-orm'
import { createHash, randomBytes } from 'node:crypto'
import type { FastifyInstance, LightMyRequestResponse } from 'fastify'

/** The static command-line client. */
export const CLI_CLIENT_ID = 'service-gateway-cli'
export const REDIRECT_URI = 'http://localhost:8976/oauth/callback'
export const LOOPBACK_REDIRECT_URI = 'http://127.0.0.1:8976/oauth/callback'
/** PUBLIC_URL of the test configuration (test/helpers/app.ts). */
export const ISSUER = 'http://localhost:3000'
export const ALL_SCOPES = ['mcp:read', 'account:read', 'user:read', 'teams:read', 'offline_access'] as const

const FORM = { 'content-type': 'application/x-www-form-urlencoded' }

export interface Pkce {
  verifier: string
  challenge: string
}

/** RFC 7636: a 43-character verifier of unreserved characters and its S256 challenge. */
export function pkce(): Pkce {
  const verifier = randomBytes(32).toString('base64url')
  return { verifier, challenge: s256(verifier) }
}

export function s256(verifier: string): string {
  return createHash('sha256').update(verifier).digest('base64url')
}

export function randomState(): string {
  return randomBytes(12).toString('base64url')
}

export type AuthorizeParams = Record<string, string | undefined>

/** A complete, valid set of authorization parameters for the CLI client; `overrides` set to undefined are left out. */
export function authorizeParams(challenge: string, overrides: AuthorizeParams = {}): AuthorizeParams {
  return {
    response_type: 'code',
    client_id: CLI_CLIENT_ID,
    redirect_uri: REDIRECT_URI,
    scope: ALL_SCOPES.join(' '),
    state: randomState(),
    code_challenge: challenge,
    code_challenge_method: 'S256',
    ...overrides,
  }
}

/** `/api/oauth2/auth?…` with exactly the defined parameters. */
export function authorizeUrl(params: AuthorizeParams): string {
  const query = new URLSearchParams()
  for (const [key, value] of Object.entries(params)) if (value !== undefined) query.set(key, value)
  return `/api/oauth2/auth?${query.toString()}`
}

/** The query parameters of a Location (absolute or relative). */
export function locationParams(location: string): URLSearchParams {
  return new URL(location, ISSUER).searchParams
}

/** The request id of a `/api/oauth2/consent?request_id=…` Location, or undefined for anything else. */
export function consentRequestId(location: string | undefined): string | undefined {
  if (location === undefined) return undefined
  const url = new URL(location, ISSUER)
  if (url.origin !== ISSUER || url.pathname !== '/api/oauth2/consent') return undefined
  return url.searchParams.get('request_id') ?? undefined
}

export function locationOf(response: LightMyRequestResponse): string | undefined {
  const location = response.headers.location
  return location === undefined ? undefined : String(location)
}

/** GET /api/oauth2/auth, with the session cookie when given. */
export function startAuthorization(app: FastifyInstance, params: AuthorizeParams, cookie?: string): Promise<LightMyRequestResponse> {
  return app.inject({ method: 'GET', url: authorizeUrl(params), headers: cookie === undefined ? {} : { cookie } })
}

/** GET /api/oauth2/consent (JSON variant). */
export function consentDetails(app: FastifyInstance, requestId: string, cookie?: string): Promise<LightMyRequestResponse> {
  return app.inject({
    method: 'GET',
    url: `/api/oauth2/consent?request_id=${encodeURIComponent(requestId)}`,
    headers: { accept: 'application/json', ...(cookie === undefined ? {} : { cookie }) },
  })
}

export interface ConsentDecision {
  request_id: string
  decision: 'approve' | 'deny'
  csrf_token: string
  team_id?: string
}

/** POST /api/oauth2/consent as JSON. */
export function postConsent(app: FastifyInstance, body: ConsentDecision | Record<string, unknown>, cookie?: string): Promise<LightMyRequestResponse> {
  return app.inject({
    method: 'POST',
    url: '/api/oauth2/consent',
    headers: { accept: 'application/json', ...(cookie === undefined ? {} : { cookie }) },
    payload: body,
  })
}

/** POST /api/oauth2/consent form-encoded, as the HTML page submits it. */
export function postConsentForm(app: FastifyInstance, body: Record<string, string>, cookie?: string): Promise<LightMyRequestResponse> {
  return app.inject({
    method: 'POST',
    url: '/api/oauth2/consent',
    headers: { ...FORM, ...(cookie === undefined ? {} : { cookie }) },
    payload: new URLSearchParams(body).toString(),
  })
}

export interface AuthorizeOptions {
  scope?: string | undefined
  clientId?: string
  redirectUri?: string
  teamId?: string
  pkce?: Pkce
  state?: string
  decision?: 'approve' | 'deny'
  /** RFC 8707 resource indicator. */
  resource?: string
}

export interface Authorized {
  code: string
  state: string
  redirectUrl: string
  verifier: string
  /** True when remembered consent skipped the consent page. */
  skipped: boolean
  requestId: string | undefined
}

/** Runs /auth and, unless remembered consent skips it, the JSON consent step; fails loudly otherwise. */
export async function authorizeAndApprove(app: FastifyInstance, cookie: string, options: AuthorizeOptions = {}): Promise<Authorized> {
  const pair = options.pkce ?? pkce()
  const state = options.state ?? randomState()
  const params = authorizeParams(pair.challenge, {
    client_id: options.clientId ?? CLI_CLIENT_ID,
    redirect_uri: options.redirectUri ?? REDIRECT_URI,
    state,
    ...('scope' in options ? { scope: options.scope } : {}),
    ...(options.resource === undefined ? {} : { resource: options.resource }),
  })
  const started = await startAuthorization(app, params, cookie)
  const location = locationOf(started)
  if (started.statusCode !== 302 || location === undefined) throw new Error(`authorization failed: ${started.statusCode} ${started.body}`)
  const requestId = consentRequestId(location)
  let redirectUrl: string
  if (requestId === undefined) {
    redirectUrl = location
  } else {
    const details = await consentDetails(app, requestId, cookie)
    if (details.statusCode !== 200) throw new Error(`consent page failed: ${details.statusCode} ${details.body}`)
    const csrf = details.json().data.csrf_token as string
    const decided = await postConsent(app, {
      request_id: requestId,
      decision: options.decision ?? 'approve',
      csrf_token: csrf,
      ...(options.teamId === undefined ? {} : { team_id: options.teamId }),
    }, cookie)
    if (decided.statusCode !== 200) throw new Error(`consent failed: ${decided.statusCode} ${decided.body}`)
    redirectUrl = decided.json().data.redirect_url
  }
  const query = new URL(redirectUrl).searchParams
  const code = query.get('code')
  if (code === null && (options.decision ?? 'approve') === 'approve') throw new Error(`no code in ${redirectUrl}`)
  return { code: code ?? '', state: query.get('state') ?? '', redirectUrl, verifier: pair.verifier, skipped: requestId === undefined, requestId }
}

/** POST /api/oauth2/token form-encoded. */
export function tokenRequest(app: FastifyInstance, body: Record<string, string | undefined>, { json = false } = {}): Promise<LightMyRequestResponse> {
  const defined: Record<string, string> = {}
  for (const [key, value] of Object.entries(body)) if (value !== undefined) defined[key] = value
  return json
    ? app.inject({ method: 'POST', url: '/api/oauth2/token', payload: defined })
    : app.inject({ method: 'POST', url: '/api/oauth2/token', headers: FORM, payload: new URLSearchParams(defined).toString() })
}

export interface ExchangeInput {
  code: string
  verifier: string
  redirectUri?: string
  clientId?: string
}

/** grant_type=authorization_code, form-encoded. */
export function exchangeCode(app: FastifyInstance, { code, verifier, redirectUri = REDIRECT_URI, clientId = CLI_CLIENT_ID }: ExchangeInput, options: { json?: boolean } = {}): Promise<LightMyRequestResponse> {
  return tokenRequest(app, { grant_type: 'authorization_code', code, redirect_uri: redirectUri, client_id: clientId, code_verifier: verifier }, options)
}

/** grant_type=refresh_token, form-encoded. */
export function refresh(app: FastifyInstance, refreshToken: string, { clientId = CLI_CLIENT_ID, scope }: { clientId?: string; scope?: string } = {}): Promise<LightMyRequestResponse> {
  return tokenRequest(app, { grant_type: 'refresh_token', refresh_token: refreshToken, client_id: clientId, scope })
}

export interface TokenSet {
  access_token: string
  token_type: string
  expires_in: number
  refresh_token?: string
  scope: string
}

/** Authorization, consent and code exchange for `scope` (the client's defaults when undefined); fails loudly. */
export async function issueTokens(app: FastifyInstance, cookie: string, scope?: string, options: Omit<AuthorizeOptions, 'scope'> = {}): Promise<TokenSet> {
  const authorized = await authorizeAndApprove(app, cookie, { ...options, scope })
  const response = await exchangeCode(app, {
    code: authorized.code,
    verifier: authorized.verifier,
    redirectUri: options.redirectUri ?? REDIRECT_URI,
    clientId: options.clientId ?? CLI_CLIENT_ID,
  })
  if (response.statusCode !== 200) throw new Error(`code exchange failed: ${response.statusCode} ${response.body}`)
  return response.json()
}

/**
 * Tokens bound to no team, as those issued before consent chose one: consent binds every new
 * grant to a team (the default one when none is chosen), so the new grant's binding is removed
 * in the database. They reach every team of the user.
 */
export async function issueUnboundTokens(app: FastifyInstance, account: { id: string; cookie: string }, scope?: string): Promise<TokenSet> {
  const { db, t } = app.services.database
  const grantsOf = async () => (await db.select({ id: t.oauthGrants.id }).from(t.oauthGrants).where(eq(t.oauthGrants.userId, account.id))).map((grant) => grant.id)
  const before = new Set(await grantsOf())
  const tokens = await issueTokens(app, account.cookie, scope)
  const [grantId] = (await grantsOf()).filter((id) => !before.has(id))
  await db.update(t.oauthGrants).set({ teamId: null }).where(eq(t.oauthGrants.id, grantId!))
  await db.update(t.oauthTokens).set({ teamId: null }).where(eq(t.oauthTokens.grantId, grantId!))
  return tokens
}

/** POST /api/oauth2/revoke form-encoded. */
export function revoke(app: FastifyInstance, body: Record<string, string>): Promise<LightMyRequestResponse> {
  return app.inject({ method: 'POST', url: '/api/oauth2/revoke', headers: FORM, payload: new URLSearchParams(body).toString() })
}

/** POST /api/oauth2/introspect form-encoded, with the given headers (a cookie or a satellite key). */
export function introspect(app: FastifyInstance, token: string, headers: Record<string, string> = {}): Promise<LightMyRequestResponse> {
  return app.inject({ method: 'POST', url: '/api/oauth2/introspect', headers: { ...FORM, ...headers }, payload: new URLSearchParams({ token }).toString() })
}

/** POST /api/oauth2/register; fails loudly unless 201, answers the client id. */
export async function registerClient(app: FastifyInstance, metadata: Record<string, unknown>): Promise<string> {
  const response = await app.inject({ method: 'POST', url: '/api/oauth2/register', payload: metadata })
  if (response.statusCode !== 201) throw new Error(`client registration failed: ${response.statusCode} ${response.body}`)
  return response.json().client_id
}

export const bearer = (token: string) => ({ authorization: `Bearer ${token}` })

/** GET with a bearer token. */
export function getWithBearer(app: FastifyInstance, url: string, token: string): Promise<LightMyRequestResponse> {
  return app.inject({ method: 'GET', url, headers: bearer(token) })
}

const ENTITIES: Record<string, string> = { '&amp;': '&', '&quot;': '"', '&#39;': "'", '&#x27;': "'", '&lt;': '<', '&gt;': '>' }

export function unescapeHtml(text: string): string {
  return text.replace(/&(?:amp|quot|#39|#x27|lt|gt);/g, (entity) => ENTITIES[entity] ?? entity)
}

/** The start tags `<name …>` of an HTML fragment, each as its attributes (names lower-cased, values unescaped). */
export function htmlTags(html: string, name: string): Array<Record<string, string>> {
  const tags: Array<Record<string, string>> = []
  for (const match of html.matchAll(new RegExp(`<${name}\\b([^>]*)>`, 'gi'))) {
    const attributes: Record<string, string> = {}
    for (const attribute of match[1]!.matchAll(/([a-zA-Z_:][-a-zA-Z0-9_:.]*)(?:\s*=\s*(?:"([^"]*)"|'([^']*)'|([^\s"'=<>`]+)))?/g)) {
      attributes[attribute[1]!.toLowerCase()] = unescapeHtml(attribute[2] ?? attribute[3] ?? attribute[4] ?? '')
    }
    tags.push(attributes)
  }
  return tags
}

/** The inside of the first `<name …>…</name>` element whose start tag has `attribute="value"`. */
export function htmlElement(html: string, name: string, attribute: string, value: string): string | undefined {
  for (const match of html.matchAll(new RegExp(`<${name}\\b([^>]*)>([\\s\\S]*?)</${name}>`, 'gi'))) {
    const [tag] = htmlTags(`<${name}${match[1]}>`, name)
    if (tag?.[attribute] === value) return match[2]
  }
  return undefined
}

/** The value of the input named `name`, if the page has one. */
export function inputValue(html: string, name: string): string | undefined {
  return htmlTags(html, 'input').find((input) => input.name === name)?.value
}

export function isHtml(response: LightMyRequestResponse): boolean {
  return /^text\/html/.test(String(response.headers['content-type'] ?? ''))
}
