import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import type { FastifyRequest } from 'fastify'
import { userCaller } from '../../http/current-user.js'
import { policy } from '../../auth/policies.js'
import { OkMessage, paginate } from '../../http/envelope.js'
import { errors } from '../../http/errors.js'
import { userView } from '../users/view.js'
import { IdParams, RoleBody, UserEnvelope, UserListQuery, UserPage, UserPatchBody } from './schemas.js'
import type { Actor } from './service.js'

const tags = ['Admin']

const actorOf = (request: FastifyRequest): Actor => ({ id: userCaller(request).userId, ip: request.ip })

/** The administration of users by global admins. */
export const adminUserRoutes: FastifyPluginAsyncTypebox = async (app) => {
  const administration = () => app.services.administration

  app.get('/api/admin/users', {
    config: { auth: policy.session({ permission: 'users.view' }) },
    schema: {
      tags, summary: 'List users, filtered and paginated',
      description: 'Newest first. `q` matches a substring of the username or the email, case-insensitively.',
      querystring: UserListQuery, response: { 200: UserPage },
    },
  }, async (request) => {
    const { limit = 20, offset = 0, q, role_id: roleId, auth_method: authMethod } = request.query
    const { rows, total } = await administration().list({ q, roleId, authMethod, limit, offset })
    return { success: true as const, data: { users: rows.map(userView), pagination: paginate(total, limit, offset) } }
  })

  app.get('/api/admin/users/:id', {
    config: { auth: policy.session({ permission: 'users.view' }) },
    schema: { tags, summary: 'One user', params: IdParams, response: { 200: UserEnvelope } },
  }, async (request) => ({ success: true as const, data: { user: userView(await administration().get(request.params.id)) } }))

  app.put('/api/admin/users/:id', {
    config: { auth: policy.session({ permission: 'users.edit' }) },
    schema: {
      tags, summary: "Edit a user's profile, email or verification state",
      description: 'At least one field. The email is stored lowercased. 409 EMAIL_TAKEN / USERNAME_TAKEN. `null` clears a name.',
      params: IdParams, body: UserPatchBody, response: { 200: UserEnvelope },
    },
  }, async (request) => {
    const user = await administration().update(request.params.id, request.body, actorOf(request))
    return { success: true as const, message: 'User updated.', data: { user: userView(user) } }
  })

  app.put('/api/admin/users/:id/role', {
    config: { auth: policy.session({ permission: 'roles.manage' }) },
    schema: {
      tags, summary: "Change a user's global role",
      description:
        'Takes effect on the user\'s next request. 409 CANNOT_CHANGE_OWN_ROLE for the caller\'s own account; 409 ' +
        'LAST_ADMIN when the change would leave no global admin (also under concurrent changes).',
      params: IdParams, body: RoleBody, response: { 200: UserEnvelope },
    },
  }, async (request) => {
    const user = await administration().changeRole(request.params.id, request.body.role_id, actorOf(request))
    return { success: true as const, message: 'Role updated.', data: { user: userView(user) } }
  })

  app.delete('/api/admin/users/:id', {
    config: { auth: policy.session({ permission: 'users.delete' }) },
    schema: {
      tags, summary: 'Delete a user',
      description:
        'Deletes the user with their sessions, email tokens, team memberships and default team, in one transaction. ' +
        '409 CANNOT_DELETE_SELF for the caller\'s own account; 409 LAST_ADMIN for the last global admin.',
      params: IdParams, response: { 200: OkMessage },
    },
  }, async (request) => {
    await administration().remove(request.params.id, actorOf(request))
    return { success: true as const, message: 'User deleted.' }
  })
}
