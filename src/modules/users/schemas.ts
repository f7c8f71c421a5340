import { Type } from 'typebox'

export const UserView = Type.Object({
  id: Type.String(),
  username: Type.String(),
  email: Type.String(),
  first_name: Type.Union([Type.String(), Type.Null()]),
  last_name: Type.Union([Type.String(), Type.Null()]),
  role_id: Type.Union([Type.Literal('global_admin'), Type.Literal('global_user')]),
  email_verified: Type.Boolean(),
  auth_methods: Type.Array(Type.Union([Type.Literal('email'), Type.Literal('provider'), Type.Literal('oidc')])),
  created_at: Type.String({ format: 'date-time' }),
}, { description: 'A user. Never carries a password hash.' })

export const Username = Type.String({ minLength: 3, maxLength: 50, pattern: '^[a-zA-Z0-9_-]+$' })
export const Email = Type.String({ format: 'email', maxLength: 255 })
export const Password = Type.String({ minLength: 8, maxLength: 128 })
export const PersonName = Type.String({ maxLength: 100 })
