/**
 * The one table of roles and permissions. Nothing else decides who may do what;
 * GET /api/roles exposes it as it stands here.
 */

export const GLOBAL_ROLES = ['global_admin', 'global_user'] as const
export const TEAM_ROLES = ['team_admin', 'team_user'] as const

export type GlobalRole = (typeof GLOBAL_ROLES)[number]
export type TeamRole = (typeof TEAM_ROLES)[number]

const TEAM_USER = [
  'team.view',
  'team.members.view',
  'mcp.servers.read',
  'mcp.categories.view',
  // The catalogue servers the team runs (its installations).
  'team.installations.view',
] as const

const TEAM_ADMIN = [
  ...TEAM_USER,
  'team.edit',
  'team.delete',
  'team.members.manage',
  'team.satellites.view',
  'team.satellites.manage',
  'team.installations.manage',
  // The catalogue servers only this team sees (its team servers).
  'team.servers.manage',
] as const

const GLOBAL_USER = ['teams.create', 'mcp.servers.read', 'mcp.categories.view'] as const

const GLOBAL_ADMIN = [
  'users.view',
  'users.edit',
  'users.delete',
  'roles.manage',
  'settings.view',
  'settings.edit',
  'audit.view',
  'email.test',
  'plugins.view',
  'teams.create',
  'teams.view_all',
  'mcp.servers.read',
  'mcp.servers.manage',
  'mcp.categories.view',
  'mcp.categories.manage',
  'mcp.versions.manage',
  'satellites.view',
  'satellites.manage',
  // A global admin holds every team permission on every team.
  ...TEAM_ADMIN,
] as const

export type TeamPermission = (typeof TEAM_ADMIN)[number]
export type Permission = (typeof GLOBAL_ADMIN)[number]

const distinct = (permissions: readonly Permission[]): readonly Permission[] => [...new Set(permissions)]

export const ROLE_PERMISSIONS: Readonly<Record<GlobalRole | TeamRole, readonly Permission[]>> = {
  global_admin: distinct(GLOBAL_ADMIN),
  global_user: distinct(GLOBAL_USER),
  team_admin: distinct(TEAM_ADMIN),
  team_user: distinct(TEAM_USER),
}

const granted = new Map(
  Object.entries(ROLE_PERMISSIONS).map(([role, permissions]) => [role, new Set<string>(permissions)]),
)

export function roleHas(role: GlobalRole | TeamRole, permission: Permission): boolean {
  return granted.get(role)?.has(permission) ?? false
}

const globalPermissions = new Set<string>(ROLE_PERMISSIONS.global_admin)
const teamPermissions = new Set<string>(ROLE_PERMISSIONS.team_admin)

/** Whether `value` names a permission (for configuration that is not typed: extension plugins). */
export const isPermission = (value: unknown): value is Permission => typeof value === 'string' && globalPermissions.has(value)
export const isTeamPermission = (value: unknown): value is TeamPermission => typeof value === 'string' && teamPermissions.has(value)
