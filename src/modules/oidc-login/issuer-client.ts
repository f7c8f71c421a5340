import { LRUCache } from 'lru-cache'
import * as oauth from 'oauth4webapi'
import { OutboundError, type GuardedFetch, type OutboundFetch } from '../../lib/outbound-fetch.js'
import { issuerFailure, issuerUnreachable, tokenInvalid } from './errors.js'

/** Metadata (and with it the JWKS oauth4webapi keeps per metadata object) is read again after this. */
export const METADATA_TTL_MS = 5 * 60_000

/** What one sign-in at the issuer needs, read from the settings. */
export interface IssuerSettings {
  issuer: string
  clientId: string
  clientSecret: string
  redirectUri: string
  scope: string
}

/** The secrets of one pending sign-in (kept server-side between the redirect and the callback). */
export interface PendingSecrets {
  state: string
  nonce: string
  codeVerifier: string
}

/** The verified ID token's claims, and the userinfo claims when they were needed. */
export interface IssuerClaims {
  idToken: oauth.IDToken
  userinfo: oauth.UserInfoResponse | null
}

type RequestOptions = { [oauth.customFetch]: GuardedFetch; [oauth.allowInsecureRequests]?: boolean }

/**
 * This service as an OpenID Connect relying party (OpenID Connect Core 1.0, authorization code
 * flow with PKCE), through oauth4webapi: discovery, the authorization URL, the code exchange with
 * the client secret, the ID token's checks (signature by the issuer's JWKS; iss, aud, exp, iat,
 * azp and nonce) and userinfo. Nothing here is verified by hand. Every request goes through the
 * SSRF guard (plain http only for hosts in OUTBOUND_ALLOWED_HOSTS, no private address otherwise,
 * no redirect followed). The issuer's access token is used for userinfo at most once and dropped.
 */
export class IssuerClient {
  private readonly servers = new LRUCache<string, oauth.AuthorizationServer>({ max: 16, ttl: METADATA_TTL_MS })

  constructor(private readonly outbound: OutboundFetch) {}

  /** The issuer's discovery document (OpenID Connect Discovery 1.0 §4), kept a few minutes per issuer. */
  async metadata(issuer: string): Promise<oauth.AuthorizationServer> {
    const kept = this.servers.get(issuer)
    if (kept !== undefined) return kept
    const url = new URL(issuer)
    let as: oauth.AuthorizationServer
    try {
      as = await oauth.processDiscoveryResponse(url, await oauth.discoveryRequest(url, { algorithm: 'oidc', ...this.options(url) }))
    } catch (error) {
      throw issuerUnreachable('its discovery document', error)
    }
    if (as.authorization_endpoint === undefined || as.token_endpoint === undefined || as.jwks_uri === undefined) {
      throw issuerFailure(502, 'its discovery document names no authorization endpoint, token endpoint or jwks_uri')
    }
    if (!this.reachable(as.authorization_endpoint)) {
      throw issuerFailure(502, 'its authorization endpoint is not an https URL (plain http only for hosts in OUTBOUND_ALLOWED_HOSTS)')
    }
    this.servers.set(issuer, as)
    return as
  }

  /** Where the browser goes to sign in (OpenID Connect Core §3.1.2.1, RFC 7636 S256). */
  async authorizationUrl(settings: IssuerSettings, secrets: PendingSecrets): Promise<string> {
    const as = await this.metadata(settings.issuer)
    const url = new URL(as.authorization_endpoint!)
    url.searchParams.set('response_type', 'code')
    url.searchParams.set('client_id', settings.clientId)
    url.searchParams.set('redirect_uri', settings.redirectUri)
    url.searchParams.set('scope', settings.scope)
    url.searchParams.set('state', secrets.state)
    url.searchParams.set('nonce', secrets.nonce)
    url.searchParams.set('code_challenge', await oauth.calculatePKCECodeChallenge(secrets.codeVerifier))
    url.searchParams.set('code_challenge_method', 'S256')
    return url.toString()
  }

  /**
   * The callback's parameters (their `state` already matched) → the verified claims. RFC 9207:
   * an `iss` parameter must name this issuer. The ID token must carry the nonce this sign-in sent
   * and a signature by a key of the issuer's JWKS. Userinfo is read only when the ID token lacks
   * the address or its verification claim (`wantClaims`), with the `sub` checked to match.
   */
  async signIn(settings: IssuerSettings, secrets: PendingSecrets, callback: URLSearchParams, wantClaims: (idToken: oauth.IDToken) => boolean): Promise<IssuerClaims> {
    const as = await this.metadata(settings.issuer)
    const client: oauth.Client = { client_id: settings.clientId }
    let parameters: URLSearchParams
    try {
      parameters = oauth.validateAuthResponse(as, client, callback, secrets.state)
    } catch (error) {
      throw refusedAtIssuer(error)
    }
    const options = this.options(as.token_endpoint!)
    let response: Response
    try {
      response = await oauth.authorizationCodeGrantRequest(as, client, clientAuthentication(as, settings.clientSecret), parameters, settings.redirectUri, secrets.codeVerifier, options)
    } catch (error) {
      throw issuerUnreachable('its token endpoint', error)
    }
    let tokens: oauth.TokenEndpointResponse
    try {
      tokens = await oauth.processAuthorizationCodeResponse(as, client, response, { expectedNonce: secrets.nonce, requireIdToken: true })
    } catch (error) {
      throw tokenEndpointRefusal(error)
    }
    try {
      await oauth.validateApplicationLevelSignature(as, response, options)
    } catch (error) {
      throw tokenInvalid(error)
    }
    const idToken = oauth.getValidatedIdTokenClaims(tokens)!
    if (!wantClaims(idToken) || as.userinfo_endpoint === undefined) return { idToken, userinfo: null }
    try {
      const answer = await oauth.userInfoRequest(as, client, tokens.access_token, this.options(as.userinfo_endpoint))
      return { idToken, userinfo: await oauth.processUserInfoResponse(as, client, idToken.sub, answer) }
    } catch (error) {
      throw issuerUnreachable('its userinfo endpoint', error)
    }
  }

  /**
   * Why the outbound rules would refuse `issuer` (a settings check, at write time): plain http to
   * a host outside OUTBOUND_ALLOWED_HOSTS, or a name resolving to a private or loopback address.
   * Null when it would be fetched.
   */
  async refusal(issuer: string): Promise<string | null> {
    if (issuer === '') return null
    try {
      await this.outbound.check(new URL(issuer), { allowHttp: true })
      return null
    } catch (error) {
      if (error instanceof OutboundError) return `is not fetched: ${error.message}`
      throw error
    }
  }

  /** oauth4webapi's options for requests about `url`: the guarded fetch, plain http only where the guard allows it. */
  private options(url: string | URL): RequestOptions {
    return { [oauth.customFetch]: this.outbound.fetcher({ allowHttp: true }), ...(this.reachable(url) && new URL(url).protocol === 'http:' ? { [oauth.allowInsecureRequests]: true } : {}) }
  }

  /** https, or plain http to a host in OUTBOUND_ALLOWED_HOSTS. */
  private reachable(url: string | URL): boolean {
    const parsed = new URL(url)
    return parsed.protocol === 'https:' || (parsed.protocol === 'http:' && this.outbound.isAllowedHost(parsed))
  }
}

/**
 * RFC 8414 §2: without `token_endpoint_auth_methods_supported` an issuer takes client_secret_basic;
 * client_secret_post only when that is all it lists.
 */
function clientAuthentication(as: oauth.AuthorizationServer, secret: string): oauth.ClientAuth {
  const methods = as.token_endpoint_auth_methods_supported
  return methods !== undefined && !methods.includes('client_secret_basic') && methods.includes('client_secret_post')
    ? oauth.ClientSecretPost(secret)
    : oauth.ClientSecretBasic(secret)
}

/** The issuer answered the browser with an error (RFC 6749 §4.1.2.1), or a response from another issuer (RFC 9207). */
function refusedAtIssuer(error: unknown): Error {
  if (error instanceof oauth.AuthorizationResponseError) {
    // RFC 6749 §4.1.2.1 limits both to printable ASCII; anything else came from somewhere else.
    const code = /^[\w.-]{1,64}$/.test(error.error) ? error.error : 'an error'
    const description = error.error_description !== undefined && /^[\x20\x21\x23-\x5b\x5d-\x7e]{1,300}$/.test(error.error_description) ? ` (${error.error_description})` : ''
    return issuerFailure(400, `the issuer refused the sign-in: ${code}${description}`)
  }
  if (error instanceof oauth.OperationProcessingError) return issuerFailure(400, `the issuer's answer to the browser was refused: ${error.message}`)
  return issuerUnreachable('its answer to the browser', error)
}

/** Failures of the ID token's own checks (claims, timestamps), as opposed to a malformed token response. */
const ID_TOKEN_CHECKS = new Set<string>([oauth.JWT_CLAIM_COMPARISON, oauth.JWT_TIMESTAMP_CHECK])

/** A refused code is the sign-in's failure; refused client credentials are the operator's to fix. */
function tokenEndpointRefusal(error: unknown): Error {
  // RFC 6749 §5.2: a client that failed to authenticate with a Basic header gets a 401 challenge.
  if (error instanceof oauth.WWWAuthenticateChallengeError && error.status === 401) {
    return issuerFailure(502, 'the issuer refused this service\'s client credentials (401): an administrator must check oidc.client_id and oidc.client_secret')
  }
  if (error instanceof oauth.ResponseBodyError) {
    const code = /^[\w.-]{1,64}$/.test(error.error) ? error.error : 'an error'
    if (code === 'invalid_client' || code === 'unauthorized_client') {
      return issuerFailure(502, `the issuer refused this service's client credentials (${code}): an administrator must check oidc.client_id and oidc.client_secret`)
    }
    return issuerFailure(400, `the issuer's token endpoint refused the code (${code})`)
  }
  if (error instanceof oauth.OperationProcessingError && (ID_TOKEN_CHECKS.has(error.code ?? '') || /JWT|ID Token/.test(error.message))) return tokenInvalid(error)
  return issuerUnreachable('its token endpoint', error)
}
