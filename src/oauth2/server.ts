import { trustedOrigins } from '../http/origins.js'
import { AuthorizationEndpoint } from './authorize.js'
import { Consent } from './consent.js'
import { issuerOf, type CallContext, type OAuthDeps } from './deps.js'
import { serverMetadata } from './metadata.js'
import { registerClient, type ClientRegistration } from './registration.js'
import { TokenEndpoint } from './token-endpoint.js'
import { Tokens } from './tokens.js'

/**
 * The OAuth 2.0 authorization server: authorization code with PKCE S256 for public
 * clients, consent, refresh rotation with reuse detection, revocation, introspection, dynamic
 * registration. Built once at boot; the routes in ./routes call its parts.
 */
export class OAuthServer {
  readonly issuer: string
  readonly consent: Consent
  readonly authorization: AuthorizationEndpoint
  readonly tokens: Tokens
  readonly tokenEndpoint: TokenEndpoint
  private readonly origins: ReadonlySet<string>

  constructor(private readonly deps: OAuthDeps) {
    this.issuer = issuerOf(deps.config)
    this.consent = new Consent(deps)
    this.authorization = new AuthorizationEndpoint(deps, this.consent)
    this.tokens = new Tokens(deps)
    this.tokenEndpoint = new TokenEndpoint(deps, this.tokens)
    this.origins = trustedOrigins(deps.config)
  }

  /** This service's own origin or a configured CORS origin (the sign-in form's login-CSRF check). */
  isAllowedOrigin(origin: string): boolean {
    return this.origins.has(origin)
  }

  register(body: ClientRegistration, context: CallContext) {
    return registerClient(this.deps, body, context)
  }

  metadata() {
    return serverMetadata(this.issuer)
  }
}
