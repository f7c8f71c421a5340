import { Type } from 'typebox'
import { Ok, Pagination, PaginationQuery } from '../../http/envelope.js'
import { Email, PersonName, Username, UserView } from '../users/schemas.js'

const closed = { additionalProperties: false } as const

export const GlobalRoleId = Type.Union([Type.Literal('global_admin'), Type.Literal('global_user')])

export const IdParams = Type.Object({ id: Type.String({ maxLength: 100 }) })

export const UserListQuery = Type.Object({
  ...PaginationQuery,
  q: Type.Optional(Type.String({ minLength: 1, maxLength: 255, description: 'Case-insensitive substring of the username or the email.' })),
  role_id: Type.Optional(GlobalRoleId),
  auth_method: Type.Optional(Type.Union([Type.Literal('email'), Type.Literal('provider'), Type.Literal('oidc')], {
    description: 'email: has a password; provider: linked to the identity provider; oidc: linked to the OpenID Connect issuer.',
  })),
}, closed)

export const UserPatchBody = Type.Object({
  username: Type.Optional(Username),
  email: Type.Optional(Email),
  first_name: Type.Optional(Type.Union([PersonName, Type.Null()])),
  last_name: Type.Optional(Type.Union([PersonName, Type.Null()])),
  email_verified: Type.Optional(Type.Boolean()),
}, { ...closed, minProperties: 1 })

export const RoleBody = Type.Object({ role_id: GlobalRoleId }, closed)

export const UserEnvelope = Ok(Type.Object({ user: UserView }))
export const UserPage = Ok(Type.Object({ users: Type.Array(UserView), pagination: Pagination }))

export const AuditQuery = Type.Object({
  ...PaginationQuery,
  type: Type.Optional(Type.String({ minLength: 1, maxLength: 100, description: 'Exact event type, e.g. `user.login`.' })),
  actor_id: Type.Optional(Type.String({ minLength: 1, maxLength: 100 })),
  since: Type.Optional(Type.String({ format: 'date-time', description: 'Only events at or after this instant.' })),
}, closed)

const NullableString = Type.Union([Type.String(), Type.Null()])

export const AuditEvent = Type.Object({
  id: Type.String(),
  type: Type.String(),
  actor_id: NullableString,
  ip: NullableString,
  target: NullableString,
  details: Type.Record(Type.String(), Type.Unknown()),
  created_at: Type.String({ format: 'date-time' }),
})

export const AuditPage = Ok(Type.Object({ events: Type.Array(AuditEvent), pagination: Pagination }))

export const Role = Type.Object({
  id: Type.String(),
  scope: Type.Union([Type.Literal('global'), Type.Literal('team')]),
  permissions: Type.Array(Type.String()),
})

export const RolesEnvelope = Ok(Type.Object({ roles: Type.Array(Role) }))
