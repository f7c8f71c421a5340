import formBody from '@fastify/formbody'
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { policy } from '../../auth/policies.js'
import { oauthError } from '../../http/errors.js'
import type { Introspector } from '../token-endpoint.js'
import { IntrospectAnswer, IntrospectBody, RevokeAnswer, RevokeBody, tags, TokenAnswer, TokenBody } from '../schemas.js'
import { describeValidation } from './shared.js'

const FORM_OR_JSON = ['application/x-www-form-urlencoded', 'application/json']

/** The endpoints clients call directly. Bodies are form-encoded (RFC 6749) or JSON. */
export const protocolRoutes: FastifyPluginAsyncTypebox = async (app) => {
  const endpoint = () => app.services.oauth.tokenEndpoint
  await app.register(formBody)

  // Schema failures become RFC 6749 `invalid_request` rather than the API's VALIDATION_ERROR.
  const refuseInvalid = (error: Parameters<typeof describeValidation>[0] | undefined) => {
    if (error) throw oauthError(400, 'invalid_request', describeValidation(error))
  }

  app.post('/api/oauth2/token', {
    config: { auth: policy.public(), limit: 'token', oauthErrors: {}, unknownParameters: 'ignore' },
    attachValidation: true,
    schema: {
      tags, summary: 'Token endpoint: authorization code or refresh token grant',
      description: 'Form-encoded or JSON. `grant_type=authorization_code` needs `code, redirect_uri, client_id, code_verifier`; ' +
        '`grant_type=refresh_token` needs `refresh_token, client_id` and may narrow `scope` (unknown names ignored, RFC 6749 §3.3; none known left → ' +
        'the granted scope; wider or malformed → `invalid_scope`). The answer\'s `scope` is always exactly what the tokens carry: the scopes kept at ' +
        'authorization (unknown ones dropped there too) or by the refresh. Refresh tokens rotate: presenting a used one ' +
        'revokes every token of its authorization. A code used twice revokes the tokens issued from it. A grant whose user is no longer a member of ' +
        'its team answers `invalid_grant` and is revoked. Errors per RFC 6749 §5.2 ' +
        '(`invalid_request`, `invalid_client` 401, `invalid_grant`, `unauthorized_client`, `unsupported_grant_type`, `invalid_scope`); ' +
        '403 `access_denied` / LOGIN_DISABLED while login is off. Always `Cache-Control: no-store`.',
      consumes: FORM_OR_JSON,
      body: TokenBody,
      response: { 200: TokenAnswer },
    },
    onRequest: (_request, reply, done) => {
      reply.header('cache-control', 'no-store').header('pragma', 'no-cache')
      done()
    },
  }, async (request) => {
    refuseInvalid(request.validationError)
    return { success: true as const, ...(await endpoint().token(request.body, { ip: request.ip })) }
  })

  app.post('/api/oauth2/revoke', {
    config: { auth: policy.public(), limit: 'token', oauthErrors: {}, unknownParameters: 'ignore' },
    attachValidation: true,
    schema: {
      tags, summary: 'Revoke an access or refresh token (RFC 7009)',
      description: 'Always 200 for any token string: unknown, already revoked or another client\'s tokens change nothing. ' +
        'Revoking a refresh token revokes its whole authorization (every access and refresh token issued from it).',
      consumes: FORM_OR_JSON,
      body: RevokeBody,
      response: { 200: RevokeAnswer },
    },
  }, async (request) => {
    refuseInvalid(request.validationError)
    await endpoint().revoke(request.body, { ip: request.ip })
    return { success: true as const }
  })

  app.post('/api/oauth2/introspect', {
    config: { auth: policy.satellite({ orAdminSession: true }), oauthErrors: { unauthorized: 'invalid_token' }, unknownParameters: 'ignore' },
    attachValidation: true,
    schema: {
      tags, summary: 'Introspect a token (RFC 7662)',
      description: 'For a satellite (its API key; 403 SATELLITE_DISABLED while an admin has it disabled) or a global admin (session). Answers `{active: false}` for unknown, expired, revoked or spent tokens, ' +
        'for tokens whose user is no longer a member of their `team_id` (removed, or the team deleted), and, while login is switched off, for tokens of users other than global admins. ' +
        'A satellite learns only of the tokens it may admit: to its key, anything but a live access token whose resource (`aud`) is exactly that satellite\'s own ' +
        '`<satellite_url>/mcp` is `{active: false}` alone — refresh tokens, tokens for the API or for another satellite, and everything when it registered no URL. ' +
        'A global admin\'s session sees every token as it is (refresh tokens with `token_type: "refresh_token"`). Active access tokens carry `token_type: "Bearer"`. ' +
        'Callers authenticate with a satellite\'s API key as a bearer token (`Authorization: Bearer service_satkey_…`) or, for a global admin, with a session cookie; ' +
        'neither is a registered client authentication method, so the server metadata advertises none.',
      consumes: FORM_OR_JSON,
      body: IntrospectBody,
      response: { 200: IntrospectAnswer },
    },
  }, async (request) => {
    refuseInvalid(request.validationError)
    if (request.body.token === undefined) throw oauthError(400, 'invalid_request', 'token is required.')
    // The policy admits a satellite's key or a global admin's session, nobody else.
    const caller = request.caller
    const asker: Introspector = caller?.kind === 'satellite'
      ? { kind: 'satellite', resource: await app.services.satellites.mcpResource(caller.satelliteId) }
      : { kind: 'admin' }
    return { success: true as const, ...(await endpoint().introspect(request.body.token, asker)) }
  })
}
