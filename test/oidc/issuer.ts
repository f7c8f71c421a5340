/**
 * A real OpenID Connect issuer on loopback for the sign-in tests: oidc-provider (the library, not
 * a fake) over http on 127.0.0.1, with one static confidential client (this service, redirect URI
 * `<PUBLIC_URL>/api/auth/oidc/callback`), PKCE required, its development login and consent forms,
 * and accounts whose claims each test sets (email, email_verified, preferred_username …). Its
 * signing key is generated per instance; `publishForeignKeys` makes it publish another key under
 * the same key id, so that the tokens it signs no longer verify against its JWKS. Tests put
 * `127.0.0.1:<port>` in OUTBOUND_ALLOWED_HOSTS so that the service may reach it.
 */
import { createServer, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { exportJWK, generateKeyPair } from 'jose'
import Provider from 'oidc-provider'

export const CLIENT_ID = 'service-backend'
export const CLIENT_SECRET = 'the-client-secret-of-the-oidc-tests-0123456789'

/** The claims an account has at the issuer, besides `sub` (its id). */
export type IssuerAccount = Record<string, unknown>

export interface IssuerOptions {
  /** `<PUBLIC_URL>/api/auth/oidc/callback` of the service under test. */
  redirectUri: string
  /**
   * Scope claims in the ID token too (default false: as oidc-provider and many issuers do for the
   * code flow, they are then only at userinfo).
   */
  claimsInIdToken?: boolean
  /** The only client authentication the issuer takes (default client_secret_basic). */
  tokenEndpointAuthMethod?: 'client_secret_basic' | 'client_secret_post'
}

export interface TestIssuer {
  /** `http://127.0.0.1:<port>`. */
  issuer: string
  /** `127.0.0.1:<port>`, for OUTBOUND_ALLOWED_HOSTS. */
  host: string
  /** Accounts by id (the login typed into the development form, and the `sub`). */
  accounts: Map<string, IssuerAccount>
  /** Requests by path (discovery, jwks, token, userinfo …). */
  requests: Map<string, number>
  /** Every request the issuer received: method, path and query, and the scheme of its Authorization header. */
  received: Array<{ method: string; url: string; authorization: string | null }>
  /** The token endpoint's successful answers (access and ID tokens), to look for them where they must not be. */
  issued: Array<Record<string, unknown>>
  /** Publish another key under the signing key's id (true) or the real one again (false). */
  publishForeignKeys(foreign: boolean): void
  close(): Promise<void>
}

async function signingKeys(kid: string) {
  const { privateKey, publicKey } = await generateKeyPair('RS256', { extractable: true })
  return {
    private: { ...(await exportJWK(privateKey)), kid, alg: 'RS256', use: 'sig' },
    public: { ...(await exportJWK(publicKey)), kid, alg: 'RS256', use: 'sig' },
  }
}

export async function startIssuer(options: IssuerOptions): Promise<TestIssuer> {
  const server: Server = createServer()
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const { port } = server.address() as AddressInfo
  const issuer = `http://127.0.0.1:${port}`
  const accounts = new Map<string, IssuerAccount>()
  const requests = new Map<string, number>()
  const received: TestIssuer['received'] = []
  const own = await signingKeys('signing-key')
  const foreign = await signingKeys('signing-key')
  const issued: Array<Record<string, unknown>> = []
  let publishForeign = false
  const method = options.tokenEndpointAuthMethod ?? 'client_secret_basic'

  const provider = new Provider(issuer, {
    clients: [{
      client_id: CLIENT_ID, client_secret: CLIENT_SECRET, redirect_uris: [options.redirectUri],
      grant_types: ['authorization_code'], response_types: ['code'], token_endpoint_auth_method: method,
    }],
    clientAuthMethods: [method],
    jwks: { keys: [own.private] },
    scopes: ['openid', 'email', 'profile'],
    claims: {
      openid: ['sub'],
      email: ['email', 'email_verified', 'xms_edov'],
      profile: ['preferred_username', 'given_name', 'family_name', 'name'],
    },
    conformIdTokenClaims: options.claimsInIdToken !== true,
    findAccount: async (_ctx: unknown, id: string) => {
      const claims = accounts.get(id)
      return claims === undefined ? undefined : { accountId: id, claims: async () => ({ ...claims, sub: id }) }
    },
    pkce: { required: () => true },
    ttl: { AccessToken: 600, AuthorizationCode: 60, Grant: 3600, IdToken: 600, Interaction: 600, Session: 3600 },
    cookies: { keys: ['test-cookie-key-of-the-oidc-issuer'] },
    features: { devInteractions: { enabled: true }, userinfo: { enabled: true } },
  })
  provider.use(async (ctx, next) => {
    const request = (ctx as unknown as { request: { url: string; method: string; headers: Record<string, string | undefined> } }).request
    requests.set(ctx.path, (requests.get(ctx.path) ?? 0) + 1)
    received.push({ method: request.method, url: request.url, authorization: request.headers.authorization?.split(' ')[0]?.toLowerCase() ?? null })
    if (publishForeign && ctx.path === '/jwks') {
      ctx.body = { keys: [foreign.public] }
      return
    }
    await next()
    if (ctx.path === '/token' && ctx.status === 200) issued.push(ctx.body as Record<string, unknown>)
  })
  server.on('request', provider.callback())

  return {
    issuer,
    host: `127.0.0.1:${port}`,
    accounts,
    requests,
    received,
    issued,
    publishForeignKeys(on) {
      publishForeign = on
    },
    close: () => new Promise<void>((resolve) => {
      server.closeAllConnections()
      server.close(() => resolve())
    }),
  }
}
