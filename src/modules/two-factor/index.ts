import type { AbuseLimits } from '../../auth/limits.js'
import type { Passwords } from '../../auth/passwords.js'
import type { SessionService } from '../../auth/sessions.js'
import type { Config } from '../../config.js'
import type { SessionsRepository } from '../../db/repositories/sessions.js'
import type { TwoFactorRepository } from '../../db/repositories/two-factor.js'
import type { UsersRepository } from '../../db/repositories/users.js'
import type { Database } from '../../db/types.js'
import type { Clock } from '../../lib/clock.js'
import type { Digester } from '../../lib/tokens.js'
import type { AuditLog } from '../audit/service.js'
import { PRODUCT_NAME } from '../mail/templates.js'
import type { SettingsService } from '../settings/service.js'
import { Failures } from './failures.js'
import { Proofs } from './proofs.js'
import { totpSecretBox } from './sealed-secret.js'
import { TwoFactorEnrolment } from './service.js'
import { TwoFactorSignIn } from './sign-in.js'

/** Two-factor authentication: a user's own settings (`enrolment`) and the second step of a sign-in (`signIn`). */
export interface TwoFactor {
  enrolment: TwoFactorEnrolment
  signIn: TwoFactorSignIn
}

/** What the two-factor services are built from (services.ts). */
export interface TwoFactorOptions {
  database: Database
  users: UsersRepository
  repository: TwoFactorRepository
  sessionRows: SessionsRepository
  sessions: SessionService
  passwords: Passwords
  settings: SettingsService
  audit: AuditLog
  limits: AbuseLimits
  clock: Clock
  digest: Digester
  config: Pick<Config, 'encryptionSecret' | 'publicUrl'>
  metrics?: { lockedOut(): void }
}

/**
 * The label authenticator apps show above the account: the product and this deployment's host,
 * so that two deployments' entries are told apart.
 */
export const issuerFor = (publicUrl: string): string => `${PRODUCT_NAME} (${new URL(publicUrl).hostname})`

/** Builds the two-factor services once, at boot. */
export function createTwoFactor(options: TwoFactorOptions): TwoFactor {
  const { database, users, repository, audit, clock, digest, config } = options
  const box = totpSecretBox(config.encryptionSecret)
  const proofs = new Proofs({ repository, box, digest })
  const failures = new Failures({ users, audit, limits: options.limits, metrics: options.metrics })
  return {
    enrolment: new TwoFactorEnrolment({
      database, users, repository, passwords: options.passwords, audit, clock, box, proofs, failures, issuer: issuerFor(config.publicUrl),
    }),
    signIn: new TwoFactorSignIn({
      database, users, repository, sessionRows: options.sessionRows, sessions: options.sessions, settings: options.settings, audit, clock, digest, proofs, failures,
    }),
  }
}
