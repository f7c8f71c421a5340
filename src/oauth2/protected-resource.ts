import { Type } from 'typebox'
import { SCOPES, type Scope } from '../auth/policies.js'

/** Where RFC 9728 puts protected-resource metadata: inserted before the resource's path (RFC 9728 §3.1). */
export const PROTECTED_RESOURCE_PATH = '/.well-known/oauth-protected-resource'

/**
 * The resources this service protects with its own access tokens: the service as a whole
 * (`PUBLIC_URL`) and its API (`PUBLIC_URL/api`). The satellite routes are not among them: they take
 * satellite keys and registration tokens, which no authorization server issues.
 */
export type ResourcePath = '' | '/api'

/**
 * RFC 9728 metadata of one of this service's resources. `publicUrl` has no trailing slash; this
 * service is the resource's only authorization server, its issuer being that same URL.
 */
export function protectedResourceMetadata(publicUrl: string, path: ResourcePath) {
  return {
    resource: `${publicUrl}${path}`,
    authorization_servers: [publicUrl],
    scopes_supported: [...SCOPES],
    // RFC 6750 §2.1 only: no form body (the policy hook runs before the body is read) and no query token.
    bearer_methods_supported: ['header'],
    resource_documentation: `${publicUrl}/documentation`,
  }
}

const url = (description: string) => Type.String({ format: 'uri', description })

/** Protocol answer: the RFC 9728 fields at the top level, next to `success`. */
export const ProtectedResourceAnswer = Type.Object({
  success: Type.Literal(true),
  resource: url('This resource\'s identifier: PUBLIC_URL, or PUBLIC_URL/api'),
  authorization_servers: Type.Array(url('An issuer whose RFC 8414 metadata is at /.well-known/oauth-authorization-server')),
  scopes_supported: Type.Array(Type.String()),
  bearer_methods_supported: Type.Array(Type.String(), { description: 'Only `header` (Authorization: Bearer)' }),
  resource_name: Type.Optional(Type.String()),
  resource_documentation: url('The API documentation (Swagger UI, when enabled)'),
}, { description: 'RFC 9728 protected-resource metadata' })

/** The `WWW-Authenticate` values of the policy hook's bearer refusals. */
export interface BearerChallenges {
  /** 401 without any credential. */
  missing: string
  /** 401 for a credential that is not valid here. */
  invalidToken: string
  /** 403 for an access token without the route's scope, per scope. */
  insufficientScope: Readonly<Record<Scope, string>>
}

/**
 * Challenges of an OAuth-protected route: each names the resource's metadata (RFC 9728 §5.1), so a
 * client that meets a 401 finds the authorization server from it.
 */
export function resourceChallenges(publicUrl: string): BearerChallenges {
  // Serialized by URL: ASCII only (punycode, percent-encoding), so never a `"` or a character a header may not hold.
  const metadata = `resource_metadata="${new URL(`${publicUrl}${PROTECTED_RESOURCE_PATH}`).href}"`
  return {
    missing: `Bearer ${metadata}`,
    invalidToken: `Bearer error="invalid_token", ${metadata}`,
    insufficientScope: Object.fromEntries(
      SCOPES.map((scope) => [scope, `Bearer error="insufficient_scope", scope="${scope}", ${metadata}`]),
    ) as Record<Scope, string>,
  }
}
