import type { FastifyInstance, LightMyRequestResponse } from 'fastify'
import { Secret, TOTP } from 'otpauth'
import { DEFAULT_PASSWORD, sessionCookie, setCookieLines } from '../helpers/accounts.js'
import type { Account } from '../helpers/teams.js'

/** One TOTP step (RFC 6238: 30 seconds). */
export const STEP_MS = 30_000

/** The code an authenticator app shows for `secret` at `at` (ms), computed with the same library an app would use. */
export function codeAt(secret: string, at: number): string {
  return new TOTP({ algorithm: 'SHA1', digits: 6, period: 30, secret: Secret.fromBase32(secret) }).generate({ timestamp: at })
}

/** A code that is none of the codes of the steps around `at` (so it is certainly wrong). */
export function wrongCodeAt(secret: string, at: number): string {
  const near = new Set([-2, -1, 0, 1, 2].map((offset) => codeAt(secret, at + offset * STEP_MS)))
  for (let n = 0; ; n++) {
    const candidate = String((123_456 + n * 7_919) % 1_000_000).padStart(6, '0')
    if (!near.has(candidate)) return candidate
  }
}

/** The `two_factor_challenge=<value>` pair a login answer set, if any. */
export function challengeCookie(response: LightMyRequestResponse): string | undefined {
  const pair = setCookieLines(response).find((line) => line.startsWith('two_factor_challenge='))?.split(';')[0]
  return pair === undefined || pair === 'two_factor_challenge=' ? undefined : pair
}

export const post = (app: FastifyInstance, url: string, cookie: string | undefined, payload?: object) =>
  app.inject({ method: 'POST', url, headers: cookie === undefined ? {} : { cookie }, ...(payload === undefined ? {} : { payload }) })

/** Setup and enable for `account` at the app clock's `now`; fails loudly. Answers the secret and the recovery codes. */
export async function enrol(app: FastifyInstance, account: Account, now: number): Promise<{ secret: string; uri: string; recoveryCodes: string[] }> {
  const setup = await post(app, '/api/auth/2fa/setup', account.cookie)
  if (setup.statusCode !== 200) throw new Error(`setup failed: ${setup.statusCode} ${setup.body}`)
  const { secret, otpauth_uri: uri } = setup.json().data
  const enabled = await post(app, '/api/auth/2fa/enable', account.cookie, { code: codeAt(secret, now) })
  if (enabled.statusCode !== 200) throw new Error(`enable failed: ${enabled.statusCode} ${enabled.body}`)
  return { secret, uri, recoveryCodes: enabled.json().data.recovery_codes }
}

/** The password step for an account with two-factor on; answers the challenge cookie. Fails loudly. */
export async function passwordStep(app: FastifyInstance, login: string, password = DEFAULT_PASSWORD): Promise<string> {
  const response = await app.inject({ method: 'POST', url: '/api/auth/email/login', payload: { login, password } })
  const cookie = challengeCookie(response)
  if (response.statusCode !== 200 || cookie === undefined || response.json().data?.two_factor_required !== true) {
    throw new Error(`password step failed: ${response.statusCode} ${response.body}`)
  }
  return cookie
}

/** POST /api/auth/2fa/verify with a challenge cookie. */
export const verify = (app: FastifyInstance, challenge: string | undefined, body: { code?: string; recovery_code?: string }) =>
  post(app, '/api/auth/2fa/verify', challenge, body)

export { sessionCookie }
export { pageBrowser } from '../helpers/page-browser.js'

/** The value of the hidden input `name` in a page. */
export function hiddenValue(html: string, name: string): string | undefined {
  return new RegExp(`<input type="hidden" name="${name}" value="([^"]*)">`).exec(html)?.[1]
}
