import { createHash, randomBytes } from 'node:crypto'
import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { projectRoot } from '../src/paths.js'

/** The service as the bench starts and uses it: its start command, a user, their credentials. */

export const SECRET = 'bench-secret-0123456789-abcdefghijklmnopqrstuvwxyz'
export const PASSWORD = 'bench password 123'

/** A new user and a session cookie for them; the first one is an admin. */
export async function signUp(url: string, username = 'bench'): Promise<string> {
  const response = await fetch(`${url}/api/auth/email/register`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ username, email: `${username}@example.test`, password: PASSWORD }),
  })
  if (response.status !== 201) throw new Error(`registration failed: ${response.status} ${await response.text()}`)
  return response.headers.getSetCookie()[0]!.split(';')[0]!
}

/**
 * An access token for the CLI client with `scope`, through the real authorization code flow with
 * PKCE; for `resource` (RFC 8707) and bound to `teamId` at consent when given.
 */
export async function bearerToken(url: string, cookie: string, scope = 'teams:read', { resource, teamId }: { resource?: string; teamId?: string } = {}): Promise<string> {
  const verifier = randomBytes(32).toString('base64url')
  const redirectUri = 'http://127.0.0.1:8976/oauth/callback'
  const query = new URLSearchParams({
    response_type: 'code', client_id: 'service-gateway-cli', redirect_uri: redirectUri, scope, state: 'bench',
    code_challenge: createHash('sha256').update(verifier).digest('base64url'), code_challenge_method: 'S256',
    ...(resource === undefined ? {} : { resource }),
  })
  const authorize = await fetch(`${url}/api/oauth2/auth?${query}`, { headers: { cookie }, redirect: 'manual' })
  const location = authorize.headers.get('location')!
  let code: string
  if (location.startsWith(redirectUri)) {
    // A consent given before is remembered: the code comes at once.
    code = new URL(location).searchParams.get('code')!
  } else {
    const details = await (await fetch(new URL(location, url), { headers: { cookie, accept: 'application/json' } })).json() as { data: { request_id: string; csrf_token: string } }
    const decided = await fetch(`${url}/api/oauth2/consent`, {
      method: 'POST',
      headers: { cookie, 'content-type': 'application/json' },
      body: JSON.stringify({ request_id: details.data.request_id, decision: 'approve', csrf_token: details.data.csrf_token, ...(teamId === undefined ? {} : { team_id: teamId }) }),
    })
    code = new URL(((await decided.json()) as { data: { redirect_url: string } }).data.redirect_url).searchParams.get('code')!
  }
  const token = await fetch(`${url}/api/oauth2/token`, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams({ grant_type: 'authorization_code', code, redirect_uri: redirectUri, client_id: 'service-gateway-cli', code_verifier: verifier }),
  })
  if (token.status !== 200) throw new Error(`token exchange failed: ${token.status} ${await token.text()}`)
  return ((await token.json()) as { access_token: string }).access_token
}

/**
 * The `npm start` script of package.json, split into its environment and Node's arguments, so
 * that the bench starts the service exactly as a user does (its flags, its allocator setting).
 */
export function startCommand(): { env: Record<string, string>; args: string[] } {
  const scripts = (JSON.parse(readFileSync(join(projectRoot, 'package.json'), 'utf8')) as { scripts: Record<string, string> }).scripts
  const words = scripts.start!.split(/\s+/)
  const node = words.indexOf('node')
  if (node === -1) throw new Error(`npm start does not run node: ${scripts.start}`)
  const env = Object.fromEntries(words.slice(0, node).map((word) => word.split('=', 2) as [string, string]))
  return { env, args: words.slice(node + 1).map((word) => (word.startsWith('dist/') ? join(projectRoot, word) : word)) }
}

/** The installations one team may place on one global satellite, for the bench's seeding (the default is 20). */
export const BENCH_QUOTA = 1_000
