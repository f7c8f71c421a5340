import { SCOPES } from '../auth/policies.js'
import type { UserRow } from '../db/repositories/users.js'
import { GRANT_TYPES } from './clients.js'

/**
 * RFC 8414 authorization server metadata, with registered values only. Introspection takes a
 * satellite key or a global admin's session, neither an IANA-registered client authentication
 * method, so its auth methods are not advertised (its route documentation says who may call it).
 */
export function serverMetadata(issuer: string) {
  const at = (path: string) => `${issuer}${path}`
  return {
    issuer,
    authorization_endpoint: at('/api/oauth2/auth'),
    token_endpoint: at('/api/oauth2/token'),
    revocation_endpoint: at('/api/oauth2/revoke'),
    introspection_endpoint: at('/api/oauth2/introspect'),
    userinfo_endpoint: at('/api/oauth2/userinfo'),
    registration_endpoint: at('/api/oauth2/register'),
    scopes_supported: [...SCOPES],
    response_types_supported: ['code'],
    response_modes_supported: ['query'],
    grant_types_supported: [...GRANT_TYPES],
    code_challenge_methods_supported: ['S256'],
    token_endpoint_auth_methods_supported: ['none'],
    revocation_endpoint_auth_methods_supported: ['none'],
    authorization_response_iss_parameter_supported: true,
    // draft-ietf-oauth-client-id-metadata-document §6: an https URL client_id is fetched, no registration needed.
    client_id_metadata_document_supported: true,
    service_documentation: at('/documentation'),
  }
}

/** The user as OpenID Connect's userinfo names it. */
export function userinfo(user: UserRow) {
  const name = [user.firstName, user.lastName].filter((part) => part !== null && part !== '').join(' ')
  return {
    sub: user.id,
    email: user.email,
    email_verified: user.emailVerified,
    preferred_username: user.username,
    name: name === '' ? user.username : name,
  }
}
