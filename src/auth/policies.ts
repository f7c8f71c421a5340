import { isPermission, isTeamPermission, type Permission, type TeamPermission } from './permissions.js'

/**
 * Every route declares who may call it in `config.auth`. The onRoute guard refuses
 * to boot a route without one; the onRequest hook (system/authorize.ts) enforces it before the
 * body is read.
 */

export const SCOPES = ['mcp:read', 'account:read', 'user:read', 'teams:read', 'offline_access'] as const
export type Scope = (typeof SCOPES)[number]

interface Requirements {
  /** A global permission. */
  permission?: Permission
  /** A team permission, resolved from the `:teamId` (or `:id`) path parameter. */
  teamPermission?: TeamPermission
}

interface DualOptions extends Requirements {
  /**
   * A boolean setting that opens the route to anonymous callers while it is true (the
   * sub-registry API when the operator makes it public). A caller who presents a credential is
   * still identified and checked as usual, so a bad one is refused (401) even then. The key is
   * checked when the request comes: one that names no boolean setting keeps the route closed.
   * Core routes write `'<key>' satisfies BooleanSettingKey` (from the settings definitions).
   */
  publicWhen?: string
}

interface SatelliteOptions {
  orAdminSession?: boolean
  self?: string
}

export type RoutePolicy =
  | { kind: 'public' }
  | ({ kind: 'session' } & Requirements)
  | ({ kind: 'dual'; scope: Scope } & DualOptions)
  /** An OAuth access token only (a session cookie is refused), e.g. /api/oauth2/userinfo. */
  | { kind: 'bearer'; scope: Scope }
  /**
   * A satellite API key; `orAdminSession` also admits a global admin's session (introspection);
   * `self` names the path parameter that must be the key's own satellite id (403 otherwise).
   */
  | ({ kind: 'satellite' } & SatelliteOptions)
  | { kind: 'registration_token' }
  /** The Prometheus scraper: METRICS_TOKEN as a bearer token, or a global admin's session. */
  | { kind: 'metrics' }

export const policy = {
  public: (): RoutePolicy => ({ kind: 'public' }),
  session: (requirements: Requirements = {}): RoutePolicy => ({ kind: 'session', ...requirements }),
  dual: (scope: Scope, options: DualOptions = {}): RoutePolicy => ({ kind: 'dual', scope, ...options }),
  bearer: (scope: Scope): RoutePolicy => ({ kind: 'bearer', scope }),
  satellite: (options: SatelliteOptions = {}): RoutePolicy => ({ kind: 'satellite', ...options }),
  registrationToken: (): RoutePolicy => ({ kind: 'registration_token' }),
  metrics: (): RoutePolicy => ({ kind: 'metrics' }),
}

/** OpenAPI `security` for a policy. */
export function openApiSecurity(routePolicy: RoutePolicy): Array<Record<string, string[]>> {
  switch (routePolicy.kind) {
    case 'public':
      return []
    case 'session':
      return [{ cookieAuth: [] }]
    case 'dual':
      // The empty requirement: no credential at all, while the route's setting admits anonymous callers.
      return [{ cookieAuth: [] }, { bearerAuth: [routePolicy.scope] }, ...(routePolicy.publicWhen === undefined ? [] : [{}])]
    case 'bearer':
      return [{ bearerAuth: [routePolicy.scope] }]
    case 'satellite':
      return routePolicy.orAdminSession === true ? [{ satelliteKey: [] }, { cookieAuth: [] }] : [{ satelliteKey: [] }]
    case 'registration_token':
      return [{ registrationToken: [] }]
    case 'metrics':
      return [{ metricsToken: [] }, { cookieAuth: [] }]
  }
}

/** `metrics` is left out: the scraper's token reads the core's metrics, nothing of a plugin. */
const KINDS = new Set(['public', 'session', 'dual', 'bearer', 'satellite', 'registration_token'])

/**
 * Whether `value` is a policy the hook can enforce: a known kind, known scopes and permissions.
 * Core routes are typed; this checks what extension plugins put in their route config.
 */
export function isRoutePolicy(value: unknown): value is RoutePolicy {
  if (typeof value !== 'object' || value === null) return false
  const { kind, scope, permission, teamPermission, publicWhen } = value as Record<string, unknown>
  if (typeof kind !== 'string' || !KINDS.has(kind)) return false
  if (publicWhen !== undefined && (kind !== 'dual' || typeof publicWhen !== 'string' || publicWhen.length === 0)) return false
  if ((kind === 'dual' || kind === 'bearer') !== (scope !== undefined)) return false
  if (scope !== undefined && !(SCOPES as readonly unknown[]).includes(scope)) return false
  if (permission !== undefined && !isPermission(permission)) return false
  return teamPermission === undefined || isTeamPermission(teamPermission)
}
