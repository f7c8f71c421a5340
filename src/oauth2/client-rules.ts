import { SCOPES, type Scope } from '../auth/policies.js'
import { oauthError } from '../http/errors.js'
import type { ClientMetadata } from '../formats/client-metadata.js'
import { acceptableRedirectUri, CLI_CLIENT, GRANT_TYPES, type GrantType } from './clients.js'
import { invalidClientMetadata } from './errors.js'
import { MALFORMED_SCOPE, scopesOrDefault } from './scopes.js'

/** A client's metadata as RFC 7591 §2 names it: a registration body, or a Client ID Metadata Document. */
export interface ClientDescription extends ClientMetadata {
  redirect_uris: string[]
  client_name?: string
  scope?: string
  grant_types?: string[]
  response_types?: string[]
  token_endpoint_auth_method?: string
}

export interface SettledClient {
  redirectUris: string[]
  grantTypes: GrantType[]
  scopes: Scope[]
}

/**
 * The rules every client's metadata follows, however the client came (registration or a metadata
 * document): public, PKCE-only, the code response type, redirect URIs that are https or http on a
 * loopback host without a fragment. Throws the RFC 7591 §3.2.2 error.
 */
export function settleClient(body: ClientDescription): SettledClient {
  if (body.client_name !== undefined && imitatesCli(body.client_name)) {
    throw invalidClientMetadata(`client_name must not imitate the name of this service's own client (${CLI_CLIENT.name}).`)
  }
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
  // RFC 7591 §3.2.1 lets the server replace requested metadata: the client keeps the scopes this
  // service knows, and one that names none of them gets every scope, as without `scope`.
  const scopes = scopesOrDefault(body.scope, SCOPES)
  if (scopes === null) throw invalidClientMetadata(`${MALFORMED_SCOPE}.`)
  return { redirectUris: [...new Set(body.redirect_uris)], grantTypes: grantTypes as GrantType[], scopes }
}

/** A name reduced to its letters and digits, compatibility-folded and lower-cased (full-width letters, case, spacing and punctuation aside). */
const skeleton = (name: string): string => name.normalize('NFKC').toLowerCase().replace(/[^\p{L}\p{N}]/gu, '')

const CLI_SKELETON = skeleton(CLI_CLIENT.name)

/**
 * The consent page names a client by its `client_name`: a registered client or a metadata document
 * must not pass for the service's own CLI, the one client users have reason to trust on sight.
 * Any name containing it, however spelled, is refused.
 */
export function imitatesCli(name: string): boolean {
  return skeleton(name).includes(CLI_SKELETON)
}
