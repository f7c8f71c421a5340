import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { GLOBAL_ROLES, ROLE_PERMISSIONS, TEAM_ROLES } from '../../auth/permissions.js'
import { policy } from '../../auth/policies.js'
import { RolesEnvelope } from './schemas.js'

/** The one table of roles and permissions, as the code enforces it. */
const ROLES = [
  ...GLOBAL_ROLES.map((id) => ({ id, scope: 'global' as const, permissions: [...ROLE_PERMISSIONS[id]] })),
  ...TEAM_ROLES.map((id) => ({ id, scope: 'team' as const, permissions: [...ROLE_PERMISSIONS[id]] })),
]

export const rolesRoutes: FastifyPluginAsyncTypebox = async (app) => {
  app.get('/api/roles', {
    config: { auth: policy.session({ permission: 'roles.manage' }) },
    schema: {
      tags: ['Admin'], summary: 'The roles with their permissions',
      description: 'Global roles sit on the user, team roles on a membership. A global admin holds every team permission on every team.',
      response: { 200: RolesEnvelope },
    },
  }, async () => ({ success: true as const, data: { roles: ROLES } }))
}
