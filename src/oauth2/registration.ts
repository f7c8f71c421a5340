import { SCOPES } from '../auth/policies.js'
import { oauthError } from '../http/errors.js'
import { randomToken } from '../lib/tokens.js'
import { pickClientMetadata, type ClientMetadata } from './client-metadata.js'
import { acceptableRedirectUri, GRANT_TYPES, type GrantType } from './clients.js'
import { nowOf, type CallContext, type OAuthDeps } from './deps.js'
import { invalidClientMetadata } from './errors.js'
import { formatScope, parseScope } from './scopes.js'

export interface ClientRegistration extends ClientMetadata {
  redirect_uris: string[]
  client_name?: string
  scope?: string
  grant_types?: string[]
  response_types?: string[]
  token_endpoint_auth_method?: string
}

/**
 * RFC 7591: a public, PKCE-only client. Unknown metadata is ignored (§2); the standard optional
 * metadata is stored and returned; a confidential `token_endpoint_auth_method` is answered with
 * `none` (§3.2.1 lets the server replace values it does not support).
 */
export async function registerClient(deps: OAuthDeps, body: ClientRegistration, context: CallContext) {
  const badUri = body.redirect_uris.find((uri) => !acceptableRedirectUri(uri))
  if (badUri !== undefined) {
    throw oauthError(400, 'invalid_redirect_uri', `Redirect URIs must be https, or http on a loopback host, without a fragment: ${badUri}`)
  }
  if (body.response_types !== undefined && body.response_types.some((type) => type !== 'code')) {
    throw invalidClientMetadata('Only the code response type is supported.')
  }
  const grantTypes = body.grant_types === undefined ? [...GRANT_TYPES] : [...new Set(body.grant_types)]
  if (grantTypes.some((type) => !GRANT_TYPES.includes(type as GrantType)) || !grantTypes.includes('authorization_code')) {
    throw invalidClientMetadata('grant_types must include authorization_code and may add refresh_token.')
  }
  const scopes = body.scope === undefined ? [...SCOPES] : parseScope(body.scope)
  if (scopes === null || scopes.length === 0) throw invalidClientMetadata('scope names an unknown scope.')
  const now = nowOf(deps)
  const redirectUris = [...new Set(body.redirect_uris)]
  const client = {
    id: `client_${randomToken().slice(0, 32)}`,
    name: body.client_name ?? 'Unnamed client',
    redirectUris: redirectUris.join(' '),
    grantTypes: grantTypes.join(' '),
    scope: formatScope(scopes),
    metadata: pickClientMetadata(body),
    createdAt: now,
  }
  // The client and its audit event land together or not at all: no client whose id nobody received.
  await deps.database.transaction(async (tx) => {
    await deps.repository.with(tx).insertClient(client)
    await deps.audit.record('oauth.client_registered', { ip: context.ip, target: client.id, details: { client_name: client.name, redirect_uris: redirectUris } }, tx)
  })
  return {
    client_id: client.id,
    client_id_issued_at: Math.floor(now.getTime() / 1000),
    client_name: client.name,
    redirect_uris: redirectUris,
    grant_types: grantTypes,
    response_types: ['code'],
    token_endpoint_auth_method: 'none',
    scope: client.scope,
    ...client.metadata,
  }
}
