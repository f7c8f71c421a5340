import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { policy } from '../../auth/policies.js'
import { currentUser } from '../../http/current-user.js'
import { oauthError } from '../../http/errors.js'
import { userinfo } from '../metadata.js'
import { PROTECTED_RESOURCE_PATH, ProtectedResourceAnswer, protectedResourceMetadata, type ResourcePath } from '../protected-resource.js'
import { MetadataAnswer, RegisterAnswer, RegisterBody, tags, UserinfoAnswer } from '../schemas.js'
import { describeValidation } from './shared.js'

/** Metadata (RFC 8414, RFC 9728), userinfo and dynamic client registration (RFC 7591). JSON only. */
export const discoveryRoutes: FastifyPluginAsyncTypebox = async (app) => {
  const oauth = () => app.services.oauth

  app.get('/.well-known/oauth-authorization-server', {
    config: { auth: policy.public() },
    schema: { tags, summary: 'Authorization server metadata (RFC 8414)', response: { 200: MetadataAnswer } },
  }, async () => ({ success: true as const, ...oauth().metadata() }))

  // RFC 9728 §3.1: the well-known path goes before the resource's path, so PUBLIC_URL/api has its own document.
  const resources: Array<[ResourcePath, string]> = [['', 'PUBLIC_URL, the service'], ['/api', 'PUBLIC_URL/api, the API']]
  for (const [path, resource] of resources) {
    app.get(`${PROTECTED_RESOURCE_PATH}${path}`, {
      config: { auth: policy.public() },
      schema: {
        tags, summary: `Protected resource metadata of ${resource} (RFC 9728)`,
        description: 'The authorization server (this service), scopes and bearer methods of the routes that take an OAuth access token. ' +
          'Their 401s name the service\'s document in `WWW-Authenticate: Bearer resource_metadata="PUBLIC_URL/.well-known/oauth-protected-resource"`. ' +
          'The satellite routes are not OAuth resources: their keys and registration tokens come from no authorization server.',
        response: { 200: ProtectedResourceAnswer },
      },
    }, async () => ({ success: true as const, ...protectedResourceMetadata(oauth().issuer, path) }))
  }

  app.get('/api/oauth2/userinfo', {
    config: { auth: policy.bearer('user:read'), oauthErrors: { unauthorized: 'invalid_token' } },
    schema: {
      tags, summary: 'The signed-in user, for an access token with user:read',
      description: 'Bearer only (a session cookie is refused). Fields at the top level, as OpenID Connect clients expect.',
      response: { 200: UserinfoAnswer },
    },
  }, async (request) => {
    return { success: true as const, ...userinfo(await currentUser(request, app.services.users)) }
  })

  app.post('/api/oauth2/register', {
    config: { auth: policy.public(), limit: 'clientRegistration', oauthErrors: { invalid: 'invalid_client_metadata' }, unknownParameters: 'ignore' },
    attachValidation: true,
    schema: {
      tags, summary: 'Register a public client (RFC 7591)',
      description: 'JSON. Clients are public and PKCE-only; redirect URIs must be https, or http on a loopback host (localhost, 127.0.0.1, [::1]), ' +
        'without a fragment (else `invalid_redirect_uri`). Other bad metadata → `invalid_client_metadata`, a `client_name` imitating the CLI\'s own ' +
        '("Service Gateway CLI", whatever the case, spacing or punctuation) included. `scope` keeps the scopes this service knows and drops the rest ' +
        '(RFC 7591 §3.2.1; MCP clients copy a resource\'s own `scopes_supported` here); with none known left, or none sent, the client gets every scope. ' +
        'The answer\'s `scope` is what was registered; a malformed scope (characters outside RFC 6749 §3.3 scope-token) → `invalid_client_metadata`. ' +
        'Rate-limited per IP.',
      body: RegisterBody,
      response: { 201: RegisterAnswer },
    },
  }, async (request, reply) => {
    if (request.validationError) throw oauthError(400, 'invalid_client_metadata', describeValidation(request.validationError))
    return reply.code(201).send({ success: true as const, ...(await oauth().register(request.body, { ip: request.ip })) })
  })
}
