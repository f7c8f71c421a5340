import { randomToken } from '../lib/tokens.js'
import { pickClientMetadata } from '../formats/client-metadata.js'
import { settleClient, type ClientDescription } from './client-rules.js'
import { nowOf, type CallContext, type OAuthDeps } from './deps.js'
import { formatScope } from './scopes.js'

export type ClientRegistration = ClientDescription

/**
 * RFC 7591: a public, PKCE-only client. Unknown metadata is ignored (§2); the standard optional
 * metadata is stored and returned; a confidential `token_endpoint_auth_method` is answered with
 * `none` (§3.2.1 lets the server replace values it does not support).
 */
export async function registerClient(deps: OAuthDeps, body: ClientRegistration, context: CallContext) {
  const { redirectUris, grantTypes, scopes } = settleClient(body)
  const now = nowOf(deps)
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
