import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { Type } from 'typebox'
import { currentUser, userCaller } from '../../http/current-user.js'
import { ROLE_PERMISSIONS } from '../../auth/permissions.js'
import { policy } from '../../auth/policies.js'
import { boundTeam } from '../../http/team-reach.js'
import { Ok } from '../../http/envelope.js'
import { UserView } from './schemas.js'
import { authMethods, userView } from './view.js'
import { isoTime } from '../../lib/iso-time.js'

const tags = ['Users']

const Account = Ok(Type.Object({
  role_id: Type.Union([Type.Literal('global_admin'), Type.Literal('global_user')]),
  permissions: Type.Array(Type.String()),
  email_verified: Type.Boolean(),
  auth_methods: Type.Array(Type.Union([Type.Literal('email'), Type.Literal('provider'), Type.Literal('oidc')])),
  created_at: Type.String({ format: 'date-time' }),
  team_count: Type.Integer(),
  two_factor_enabled: Type.Boolean({ description: 'Whether signing in with the password also asks for a code (two-factor authentication).' }),
}))

/** The caller's own profile and account. */
export const meRoutes: FastifyPluginAsyncTypebox = async (app) => {
  app.get('/api/users/me', {
    config: { auth: policy.dual('user:read'), twoFactorExempt: true },
    schema: {
      tags, summary: "The caller's profile",
      description: 'Stays open to a global admin held back by `global.require_2fa_for_admins` (403 TWO_FACTOR_REQUIRED everywhere else until they set up two-factor).',
      response: { 200: Ok(UserView) },
    },
  }, async (request) => ({ success: true as const, data: userView(await currentUser(request, app.services.users)) }))

  app.get('/api/users/me/account', {
    config: { auth: policy.dual('account:read') },
    schema: {
      tags, summary: "The caller's role, permissions and account facts",
      description: '`team_count`: for a bearer token bound to a team at consent, the teams it reaches (1, or 0 once the caller has left it), like GET /api/teams/me.',
      response: { 200: Account },
    },
  }, async (request) => {
    const user = await currentUser(request, app.services.users)
    const bound = boundTeam(userCaller(request))
    return {
      success: true as const,
      data: {
        role_id: user.roleId,
        permissions: [...ROLE_PERMISSIONS[user.roleId]],
        email_verified: user.emailVerified,
        auth_methods: authMethods(user),
        created_at: isoTime(user.createdAt),
        team_count: bound === null ? await app.services.teams.countMemberships(user.id) : Number((await app.services.teams.roleOf(user.id, bound)) !== null),
        two_factor_enabled: user.twoFactorEnabledAt !== null,
      },
    }
  })
}
