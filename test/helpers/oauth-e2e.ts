/**
 * Shared pieces of the OAuth end-to-end tests (test/oauth/cli-flow.test.ts and
 * test/oauth/browser-paths.test.ts): a real listening app whose PUBLIC_URL (the issuer) is its own
 * address, the command-line client as oauth4webapi sees it, form POSTs through the cookie jar of
 * test/helpers/browser.ts, and a small reader for the consent page's HTML forms.
 */
import { createServer, type AddressInfo } from 'node:net'
import type { FastifyInstance } from 'fastify'
import * as oauth from 'oauth4webapi'
import { DEFAULT_PASSWORD } from './accounts.js'
import type { TestContext } from './app.js'
import type { Browser, Hop } from './browser.js'

export const CLI_CLIENT_ID = 'service-gateway-cli'
/** The loopback redirect URI the CLI listens on; nothing listens there in the tests. */
export const CALLBACK = 'http://127.0.0.1:8976/oauth/callback'
export const ALL_SCOPES = 'mcp:read account:read user:read teams:read offline_access'

/** The static public client; `None()` is its (absent) client authentication. */
export const cliClient: oauth.Client = { client_id: CLI_CLIENT_ID, token_endpoint_auth_method: 'none' }
export const noClientAuth = oauth.None()
/** The server under test speaks plain http on loopback; oauth4webapi refuses that unless told. */
export const insecure = { [oauth.allowInsecureRequests]: true } as const

export interface OAuthServer {
  app: FastifyInstance
  /** `http://127.0.0.1:<port>`: where it listens, its PUBLIC_URL and so its issuer. */
  base: string
}

/** A port free right now on 127.0.0.1 (the OS picks it; the probe closes before we use it). */
export async function freePort(): Promise<number> {
  const probe = createServer()
  await new Promise<void>((resolve, reject) => {
    probe.once('error', reject)
    probe.listen(0, '127.0.0.1', resolve)
  })
  const { port } = probe.address() as AddressInfo
  await new Promise<void>((resolve) => probe.close(() => resolve()))
  return port
}

/**
 * An app on `ctx` listening on 127.0.0.1 with PUBLIC_URL set to that very address, because the
 * issuer (and `iss` in redirects) must be where the client reaches it. Rate limits are off.
 * Retries with another port in the unlikely case the probed one was taken in between.
 */
export async function startOAuthServer(ctx: TestContext): Promise<OAuthServer> {
  let lastError: unknown
  for (let attempt = 0; attempt < 5; attempt += 1) {
    const port = await freePort()
    const base = `http://127.0.0.1:${port}`
    const { app } = await ctx.build({ env: { PUBLIC_URL: base, RATE_LIMIT_ENABLED: 'false' } })
    try {
      await app.listen({ host: '127.0.0.1', port })
      return { app, base }
    } catch (error) {
      lastError = error
      await app.close()
      if ((error as NodeJS.ErrnoException).code !== 'EADDRINUSE') throw error
    }
  }
  throw lastError
}

/** RFC 8414 discovery through oauth4webapi, including its issuer check. */
export async function discover(base: string): Promise<oauth.AuthorizationServer> {
  const issuer = new URL(base)
  const response = await oauth.discoveryRequest(issuer, { algorithm: 'oauth2', ...insecure })
  return oauth.processDiscoveryResponse(issuer, response)
}

export interface Registered {
  id: string
  username: string
  email: string
  password: string
  /** The `auth_session=…` pair registration signed the user in with. */
  cookie: string
}

/** POST /api/auth/email/register over HTTP; fails loudly unless 201. */
export async function registerOverHttp(base: string, username: string): Promise<Registered> {
  const email = `${username}@example.com`
  const response = await fetch(`${base}/api/auth/email/register`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ username, email, password: DEFAULT_PASSWORD }),
  })
  const body = await response.text()
  if (response.status !== 201) throw new Error(`registration of ${username} failed: ${response.status} ${body}`)
  const user = (JSON.parse(body) as { data: { user: { id: string } } }).data.user
  const cookie = response.headers.getSetCookie().map((line) => line.split(';')[0]!).find((pair) => pair.startsWith('auth_session=') && pair !== 'auth_session=')
  if (cookie === undefined) throw new Error(`registration of ${username} set no session cookie`)
  return { id: user.id, username, email, password: DEFAULT_PASSWORD, cookie }
}

export interface Authorization {
  url: URL
  state: string
  codeVerifier: string
}

/** The authorization URL the CLI opens: PKCE S256 and a random state, made by oauth4webapi. */
export async function authorizationUrl(as: oauth.AuthorizationServer, scope: string = ALL_SCOPES): Promise<Authorization> {
  const codeVerifier = oauth.generateRandomCodeVerifier()
  const state = oauth.generateRandomState()
  const url = new URL(as.authorization_endpoint!)
  url.searchParams.set('response_type', 'code')
  url.searchParams.set('client_id', CLI_CLIENT_ID)
  url.searchParams.set('redirect_uri', CALLBACK)
  url.searchParams.set('scope', scope)
  url.searchParams.set('state', state)
  url.searchParams.set('code_challenge', await oauth.calculatePKCECodeChallenge(codeVerifier))
  url.searchParams.set('code_challenge_method', 'S256')
  return { url, state, codeVerifier }
}

/** Exchanges the code of a validated callback; answers the processed token response. */
export async function exchangeCode(as: oauth.AuthorizationServer, callback: URLSearchParams, codeVerifier: string): Promise<oauth.TokenEndpointResponse> {
  const response = await oauth.authorizationCodeGrantRequest(as, cliClient, noClientAuth, callback, CALLBACK, codeVerifier, insecure)
  return oauth.processAuthorizationCodeResponse(as, cliClient, response)
}

/** A form submitted from a page of `origin`: browsers send that Origin (the CSRF check reads it when present). */
export function postForm(b: Browser, url: string, fields: Record<string, string>, origin: string): Promise<Hop> {
  return b.postForm(url, fields, { origin })
}

export interface HtmlForm {
  method: string | undefined
  action: string | undefined
  /** Values of named `<input>`s (hidden, text, password…), last one wins. */
  inputs: Map<string, string>
  /** Options of each named `<select>`, in document order. */
  selects: Map<string, Array<{ value: string; label: string; selected: boolean }>>
  /** Named submit buttons: `<button name value>`. */
  buttons: Array<{ name: string | undefined; value: string | undefined; type: string | undefined; label: string }>
}

/** The forms of a page, read with regular expressions (the pages are small and server-made). */
export function htmlForms(html: string): HtmlForm[] {
  const forms: HtmlForm[] = []
  for (const match of html.matchAll(/<form\b([^>]*)>([\s\S]*?)<\/form>/gi)) {
    const attributes = attrs(match[1] ?? '')
    const inner = match[2] ?? ''
    const inputs = new Map<string, string>()
    for (const input of inner.matchAll(/<input\b([^>]*)>/gi)) {
      const a = attrs(input[1] ?? '')
      if (a.name !== undefined) inputs.set(a.name, a.value ?? '')
    }
    const selects = new Map<string, Array<{ value: string; label: string; selected: boolean }>>()
    for (const select of inner.matchAll(/<select\b([^>]*)>([\s\S]*?)<\/select>/gi)) {
      const name = attrs(select[1] ?? '').name
      if (name === undefined) continue
      const options = [...(select[2] ?? '').matchAll(/<option\b([^>]*)>([\s\S]*?)(?=<\/option>|<option\b|$)/gi)].map((option) => {
        const a = attrs(option[1] ?? '')
        const label = text(option[2] ?? '')
        return { value: a.value ?? label, label, selected: 'selected' in a }
      })
      selects.set(name, options)
    }
    const buttons = [...inner.matchAll(/<button\b([^>]*)>([\s\S]*?)<\/button>/gi)].map((button) => {
      const a = attrs(button[1] ?? '')
      return { name: a.name, value: a.value, type: a.type, label: text(button[2] ?? '') }
    })
    forms.push({ method: attributes.method?.toLowerCase(), action: attributes.action, inputs, selects, buttons })
  }
  return forms
}

/** The form whose action is `path` (absolute or relative to `base`); throws with the page when absent. */
export function formFor(html: string, path: string, base: string): HtmlForm {
  const form = htmlForms(html).find((candidate) => candidate.action !== undefined && new URL(candidate.action, base).pathname === path)
  if (form === undefined) throw new Error(`no <form action="${path}"> in the page:\n${html}`)
  return form
}

/** The visible text of a fragment: tags dropped, entities decoded, whitespace collapsed. */
export function text(html: string): string {
  return decode(html.replace(/<script\b[\s\S]*?<\/script>|<style\b[\s\S]*?<\/style>/gi, ' ').replace(/<[^>]*>/g, ' ')).replace(/\s+/g, ' ').trim()
}

function attrs(source: string): Record<string, string | undefined> {
  const result: Record<string, string | undefined> = {}
  for (const match of source.matchAll(/([^\s"'=<>/]+)(?:\s*=\s*(?:"([^"]*)"|'([^']*)'|([^\s"'=<>`]+)))?/g)) {
    const name = (match[1] ?? '').toLowerCase()
    const value = match[2] ?? match[3] ?? match[4]
    // A bare attribute (`selected`, `hidden`) is present with the empty string.
    result[name] = value === undefined ? '' : decode(value)
  }
  return result
}

function decode(value: string): string {
  return value.replace(/&(#x[0-9a-f]+|#\d+|amp|lt|gt|quot|apos|nbsp);/gi, (_, entity: string) => {
    const lower = entity.toLowerCase()
    if (lower.startsWith('#x')) return String.fromCodePoint(Number.parseInt(lower.slice(2), 16))
    if (lower.startsWith('#')) return String.fromCodePoint(Number.parseInt(lower.slice(1), 10))
    return ({ amp: '&', lt: '<', gt: '>', quot: '"', apos: "'", nbsp: ' ' } as Record<string, string>)[lower] ?? _
  })
}

/** A JSON API call over HTTP, as the SPA would make it (session cookie, same-origin Origin). */
export async function apiJson(base: string, method: 'GET' | 'POST', path: string, { cookie, body }: { cookie?: string; body?: unknown } = {}): Promise<{ status: number; json: any; text: string }> {
  const response = await fetch(`${base}${path}`, {
    method,
    headers: {
      accept: 'application/json',
      ...(body === undefined ? {} : { 'content-type': 'application/json', origin: base }),
      ...(cookie === undefined ? {} : { cookie }),
    },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  })
  const text = await response.text()
  let json: unknown
  try {
    json = JSON.parse(text)
  } catch {
    json = undefined
  }
  return { status: response.status, json, text }
}
