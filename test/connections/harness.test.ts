import * as oauth from 'oauth4webapi'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { authorize, startAuthorizationServer, type AuthorizationServer } from '../helpers/upstream-oauth.js'

/** The test authorization server itself, driven by a plain oauth4webapi client: what the other tests rely on. */
describe('the upstream authorization server of the tests', () => {
  let as: AuthorizationServer
  beforeAll(async () => { as = await startAuthorizationServer() })
  afterAll(async () => { await as.close() })
  const insecure = { [oauth.allowInsecureRequests]: true } as const

  it('registers a client, signs in through its forms, issues a JWT for the resource, rotates and revokes', async () => {
    const meta = await oauth.processDiscoveryResponse(new URL(as.issuer), await oauth.discoveryRequest(new URL(as.issuer), { algorithm: 'oauth2', ...insecure }))
    const redirect = 'http://127.0.0.1:9/callback'
    const registered = await oauth.processDynamicClientRegistrationResponse(await oauth.dynamicClientRegistrationRequest(meta, {
      redirect_uris: [redirect], grant_types: ['authorization_code', 'refresh_token'], response_types: ['code'], token_endpoint_auth_method: 'none',
    }, insecure))
    const client: oauth.Client = { client_id: registered.client_id as string }
    const verifier = oauth.generateRandomCodeVerifier()
    const url = new URL(meta.authorization_endpoint!)
    url.search = new URLSearchParams({
      client_id: client.client_id, redirect_uri: redirect, response_type: 'code', scope: 'mcp:tools', state: 's1',
      code_challenge: await oauth.calculatePKCECodeChallenge(verifier), code_challenge_method: 'S256', resource: 'http://127.0.0.1:9/mcp',
    }).toString()
    const { callback } = await authorize(url.toString(), { account: 'alice' })
    const params = oauth.validateAuthResponse(meta, client, new URL(callback), 's1')
    const tokens = await oauth.processAuthorizationCodeResponse(meta, client, await oauth.authorizationCodeGrantRequest(
      meta, client, oauth.None(), params, redirect, verifier, { ...insecure, additionalParameters: { resource: 'http://127.0.0.1:9/mcp' } }))
    expect(tokens.access_token.split('.')).toHaveLength(3)
    const claims = JSON.parse(Buffer.from(tokens.access_token.split('.')[1]!, 'base64url').toString()) as Record<string, unknown>
    expect(claims).toMatchObject({ sub: 'alice', aud: 'http://127.0.0.1:9/mcp' })
    expect(tokens.refresh_token).toBeTypeOf('string')
    expect(await as.introspect(tokens.refresh_token!)).toMatchObject({ active: true })
    const refreshed = await oauth.processRefreshTokenResponse(meta, client, await oauth.refreshTokenGrantRequest(meta, client, oauth.None(), tokens.refresh_token!, insecure))
    expect(refreshed.refresh_token).not.toBe(tokens.refresh_token)
    await oauth.processRevocationResponse(await oauth.revocationRequest(meta, client, oauth.None(), refreshed.refresh_token!, insecure))
    expect(await as.introspect(refreshed.refresh_token!)).toMatchObject({ active: false })
    expect(as.requests.get('/reg')).toBe(1)
  })

  it('sends the browser back with access_denied when the user aborts', async () => {
    const meta = await oauth.processDiscoveryResponse(new URL(as.issuer), await oauth.discoveryRequest(new URL(as.issuer), { algorithm: 'oauth2', ...insecure }))
    const redirect = 'http://127.0.0.1:9/callback'
    const registered = await oauth.processDynamicClientRegistrationResponse(await oauth.dynamicClientRegistrationRequest(meta, {
      redirect_uris: [redirect], token_endpoint_auth_method: 'none',
    }, insecure))
    const url = new URL(meta.authorization_endpoint!)
    url.search = new URLSearchParams({
      client_id: registered.client_id as string, redirect_uri: redirect, response_type: 'code', scope: 'mcp:tools', state: 's2',
      code_challenge: await oauth.calculatePKCECodeChallenge(oauth.generateRandomCodeVerifier()), code_challenge_method: 'S256',
    }).toString()
    const { callback } = await authorize(url.toString(), { deny: true })
    expect(new URL(callback).searchParams.get('error')).toBe('access_denied')
    expect(new URL(callback).searchParams.get('iss')).toBe(as.issuer)
  })
})
