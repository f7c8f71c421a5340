import type { AuthorizationCode } from 'simple-oauth2'
import { AppError } from '../../http/errors.js'

/** How long the provider may take for any one call. */
const PROVIDER_TIMEOUT_MS = 10_000

export interface ProviderCredentials {
  clientId: string
  clientSecret: string
  callbackUrl: string
  scope: string
}

export interface ProviderIdentity {
  id: string
  login: string
  name: string | null
  /** The primary verified email, else any verified one, else null. */
  email: string | null
}

interface ProviderEmail {
  email: string
  primary?: boolean
  verified?: boolean
}

export const providerFailed = (status: 400 | 502, reason: string) =>
  new AppError(status, 'PROVIDER_OAUTH_FAILED', `Sign-in with the identity provider failed: ${reason}`)
export const emailNotAvailable = () =>
  new AppError(400, 'PROVIDER_EMAIL_NOT_AVAILABLE', 'The identity provider gave no verified email address (the scope must include user:email).')

/**
 * A GitHub-compatible identity provider: the authorization-code client is simple-oauth2 (the
 * library under @fastify/oauth2), built per call because the credentials are settings that may
 * change at run time; /user and /user/emails are read with the access token once, and the token
 * is then dropped.
 */
export class ProviderClient {
  constructor(private readonly oauthUrl: string, private readonly apiUrl: string) {}

  async authorizeUrl(credentials: ProviderCredentials, state: string): Promise<string> {
    return (await this.oauth(credentials)).authorizeURL({ redirect_uri: credentials.callbackUrl, scope: credentials.scope, state })
  }

  async identify(credentials: ProviderCredentials, code: string): Promise<ProviderIdentity> {
    const { accessToken, scope } = await this.exchange(credentials, code)
    // Without user:email the emails cannot be read, whatever /user says.
    if (!scope.split(/[ ,]+/).includes('user:email')) throw emailNotAvailable()
    const user = await this.api<{ id: number | string; login: string; name?: string | null }>('/user', accessToken)
    const emails = await this.api<ProviderEmail[]>('/user/emails', accessToken, true)
    const verified = (emails ?? []).filter((entry) => entry.verified === true && typeof entry.email === 'string')
    const chosen = verified.find((entry) => entry.primary === true) ?? verified[0]
    return { id: String(user!.id), login: String(user!.login), name: user!.name ?? null, email: chosen?.email.toLowerCase() ?? null }
  }

  /** simple-oauth2 (and its HTTP stack) loads on the first provider login, not at every start. */
  private async oauth(credentials: ProviderCredentials): Promise<AuthorizationCode> {
    const { AuthorizationCode } = await import('simple-oauth2')
    return new AuthorizationCode({
      client: { id: credentials.clientId, secret: credentials.clientSecret },
      auth: { tokenHost: this.oauthUrl, tokenPath: '/login/oauth/access_token', authorizePath: '/login/oauth/authorize' },
      options: { authorizationMethod: 'body' },
      http: { timeout: PROVIDER_TIMEOUT_MS, json: 'force' },
    })
  }

  private async exchange(credentials: ProviderCredentials, code: string): Promise<{ accessToken: string; scope: string }> {
    let token: Record<string, unknown>
    try {
      token = (await (await this.oauth(credentials)).getToken({ code, redirect_uri: credentials.callbackUrl })).token
    } catch (error) {
      const status = (error as { output?: { statusCode?: number } }).output?.statusCode
      throw providerFailed(status !== undefined && status < 500 ? 400 : 502, status !== undefined ? `the token endpoint answered ${status}` : 'the token endpoint did not answer')
    }
    // GitHub answers a refused code with 200 and an `error` field.
    if (typeof token.error === 'string' || typeof token.access_token !== 'string') {
      throw providerFailed(400, typeof token.error === 'string' ? token.error : 'no access token')
    }
    return { accessToken: token.access_token, scope: typeof token.scope === 'string' ? token.scope : '' }
  }

  private async api<T>(path: string, accessToken: string, emailsOptional = false): Promise<T | null> {
    let response: Response
    try {
      response = await fetch(`${this.apiUrl}${path}`, {
        headers: { authorization: `Bearer ${accessToken}`, accept: 'application/vnd.github+json', 'user-agent': 'service-backend' },
        signal: AbortSignal.timeout(PROVIDER_TIMEOUT_MS),
      })
    } catch {
      throw providerFailed(502, `${path} did not answer`)
    }
    // Without the user:email grant GitHub answers 403/404 on /user/emails.
    if (emailsOptional && (response.status === 403 || response.status === 404)) throw emailNotAvailable()
    if (!response.ok) throw providerFailed(502, `${path} answered ${response.status}`)
    try {
      return (await response.json()) as T
    } catch {
      throw providerFailed(502, `${path} answered something that is not JSON`)
    }
  }
}
