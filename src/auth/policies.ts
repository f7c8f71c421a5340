import type { Permission, TeamPermission } from './permissions.js'

/**
 * SPEC §3.2: every route declares who may call it in `config.auth`. The onRoute guard refuses
 * to boot a route without one; the onRequest hook (auth/authorize.ts) enforces it before the
 * body is read.
 */

export const SCOPES = ['mcp:read', 'account:read', 'user:read', 'teams:read', 'offline_access'] as const
export type Scope = (typeof SCOPES)[number]

interface Requirements {
  /** A global permission (SPEC §3.3). */
  permission?: Permission
  /** A team permission, resolved from the `:teamId` (or `:id`) path parameter. */
  teamPermission?: TeamPermission
}

export type RoutePolicy =
  | { kind: 'public' }
  | ({ kind: 'session' } & Requirements)
  | ({ kind: 'dual'; scope: Scope } & Requirements)
  | { kind: 'satellite' }
  | { kind: 'registration_token' }

export const policy = {
  public: (): RoutePolicy => ({ kind: 'public' }),
  session: (requirements: Requirements = {}): RoutePolicy => ({ kind: 'session', ...requirements }),
  dual: (scope: Scope, requirements: Requirements = {}): RoutePolicy => ({ kind: 'dual', scope, ...requirements }),
  satellite: (): RoutePolicy => ({ kind: 'satellite' }),
  registrationToken: (): RoutePolicy => ({ kind: 'registration_token' }),
}

/** OpenAPI `security` for a policy (SPEC §4.1: dual routes list both schemes). */
export function openApiSecurity(routePolicy: RoutePolicy): Array<Record<string, string[]>> {
  switch (routePolicy.kind) {
    case 'public':
      return []
    case 'session':
      return [{ cookieAuth: [] }]
    case 'dual':
      return [{ cookieAuth: [] }, { bearerAuth: [routePolicy.scope] }]
    case 'satellite':
    case 'registration_token':
      return [{ bearerAuth: [] }]
  }
}
