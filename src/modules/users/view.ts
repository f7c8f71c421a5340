import type { UserRow } from '../../db/repositories/users.js'
import { isoTime } from '../../lib/iso-time.js'

/** The user as every route shows it. Never a hash. */
export function userView(user: UserRow) {
  return {
    id: user.id,
    username: user.username,
    email: user.email,
    first_name: user.firstName,
    last_name: user.lastName,
    role_id: user.roleId,
    email_verified: user.emailVerified,
    auth_methods: authMethods(user),
    created_at: isoTime(user.createdAt),
  }
}

export function authMethods(user: UserRow): Array<'email' | 'provider' | 'oidc'> {
  const methods: Array<'email' | 'provider' | 'oidc'> = []
  if (user.passwordHash !== null) methods.push('email')
  if (user.providerUserId !== null) methods.push('provider')
  if (user.oidcSubject !== null) methods.push('oidc')
  return methods
}
