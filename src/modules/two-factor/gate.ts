import type { UserCaller } from '../../auth/caller.js'
import type { UsersRepository } from '../../db/repositories/users.js'
import type { SettingsService } from '../settings/service.js'
import { twoFactorRequired } from './errors.js'

declare module 'fastify' {
  interface FastifyContextConfig {
    /**
     * Stays open to a global admin without two-factor authentication while
     * `global.require_2fa_for_admins` is on: what they need to enrol (their profile, the setup
     * routes). Extension plugins' routes cannot claim it.
     */
    twoFactorExempt?: boolean
  }
}

/** What the rule reads: the cached setting, and the user row only when the credential check did not load it. */
export interface GateServices {
  settings: Pick<SettingsService, 'get' | 'peek'>
  users: Pick<UsersRepository, 'findById'>
}

/**
 * `global.require_2fa_for_admins`: a global admin without two-factor authentication gets 403
 * TWO_FACTOR_REQUIRED on every route that is not exempt, with a session or a bearer token alike.
 * Runs in the authorization hook on the user row the credential check loaded, so an admin with
 * two-factor on (and everyone else) costs nothing; the setting comes from the settings cache.
 */
export function secondFactorRule<C extends UserCaller>(caller: C, route: { twoFactorExempt?: boolean; plugin?: unknown }, services: GateServices, next: () => C | Promise<C>): C | Promise<C> {
  if (caller.role !== 'global_admin' || caller.user?.twoFactorEnabledAt != null) return next()
  if (route.twoFactorExempt === true && route.plugin === undefined) return next()
  // The setting as cached, without a promise while the cache is current (the common case: off).
  if (services.settings.peek('global.require_2fa_for_admins') === false) return next()
  return services.settings.get('global.require_2fa_for_admins').then(async (required) => {
    if (required) {
      const user = caller.user ?? (await services.users.findById(caller.userId))
      if (user?.twoFactorEnabledAt == null) throw twoFactorRequired()
    }
    return next()
  })
}
