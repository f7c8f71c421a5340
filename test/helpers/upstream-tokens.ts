import * as oauth from 'oauth4webapi'
import type { ConnectionTokens } from '../../src/modules/connections/tokens-box.js'
import { authorize, type AuthorizationServer } from './upstream-oauth.js'

/**
 * Real tokens from the test authorization server, got as a client would: a public client
 * registered dynamically, the authorization code flow with PKCE and a resource indicator through
 * the server's own login and consent forms, and the code exchanged with oauth4webapi. The tests of
 * what uses connections (the refresher) store them without going through the backend's connect flow.
 */

const REDIRECT_URI = 'http://127.0.0.1:9/callback'
const http = { [oauth.allowInsecureRequests]: true }

export interface UpstreamGrant {
  clientId: string
  tokens: ConnectionTokens
}

/** A public client of the server (token endpoint authentication `none`), refresh grant allowed. */
export async function registerPublicClient(server: AuthorizationServer): Promise<{ as: oauth.AuthorizationServer; client: oauth.Client }> {
  const issuer = new URL(server.issuer)
  const as = await oauth.processDiscoveryResponse(issuer, await oauth.discoveryRequest(issuer, { algorithm: 'oidc', ...http }))
  const client = await oauth.processDynamicClientRegistrationResponse(await oauth.dynamicClientRegistrationRequest(as, {
    redirect_uris: [REDIRECT_URI], grant_types: ['authorization_code', 'refresh_token'], response_types: ['code'], token_endpoint_auth_method: 'none',
  }, http))
  return { as, client }
}

/** Signs `account` in at the server and answers its tokens for `resource`, issued to `client`. */
export async function grantFor(server: AuthorizationServer, registered: { as: oauth.AuthorizationServer; client: oauth.Client }, resource: string, account = 'alice'): Promise<UpstreamGrant> {
  const { as, client } = registered
  const verifier = oauth.generateRandomCodeVerifier()
  const state = oauth.generateRandomState()
  const url = new URL(as.authorization_endpoint!)
  url.search = new URLSearchParams({
    client_id: client.client_id, redirect_uri: REDIRECT_URI, response_type: 'code', scope: 'openid mcp:tools', state, resource,
    code_challenge: await oauth.calculatePKCECodeChallenge(verifier), code_challenge_method: 'S256',
  }).toString()
  const { callback } = await authorize(url.toString(), { account })
  const parameters = oauth.validateAuthResponse(as, client, new URL(callback), state)
  const response = await oauth.authorizationCodeGrantRequest(as, client, oauth.None(), parameters, REDIRECT_URI, verifier, { ...http, additionalParameters: { resource } })
  const answer = await oauth.processAuthorizationCodeResponse(as, client, response)
  if (answer.refresh_token === undefined) throw new Error('the authorization server issued no refresh token')
  return {
    clientId: client.client_id,
    tokens: {
      access_token: answer.access_token, refresh_token: answer.refresh_token, token_type: answer.token_type,
      expires_at: answer.expires_in === undefined ? null : new Date(Date.now() + answer.expires_in * 1000).toISOString(),
      scope: answer.scope ?? '', account,
    },
  }
}
