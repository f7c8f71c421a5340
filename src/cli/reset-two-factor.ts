import { loadConfig } from '../config.js'
import { openDatabase } from '../db/drivers/client.js'
import { auditRepository } from '../db/repositories/audit.js'
import { twoFactorRepository } from '../db/repositories/two-factor.js'
import { usersRepository } from '../db/repositories/users.js'
import { systemClock } from '../lib/clock.js'
import { AuditLog } from '../modules/audit/service.js'
import { removeTwoFactor } from '../modules/two-factor/removal.js'

/**
 * `npm run 2fa:reset -- <email or username>`: switches a user's two-factor authentication off
 * straight in the database named by DATABASE_URL, for an admin who lost both the authenticator
 * and the recovery codes when no other admin can do it (DELETE /api/admin/users/:id/two-factor).
 * The user then signs in with the password alone and may set it up again. Audited as
 * `user.two_factor_disabled` with `method: cli`.
 */
const [login] = process.argv.slice(2)
if (login === undefined || process.argv.length > 3) {
  console.error('usage: npm run 2fa:reset -- <email or username>')
  process.exit(2)
}
try {
  const config = loadConfig()
  const database = openDatabase(config.database, { poolSize: 1, onPoolError: (error) => console.error(error.message) })
  try {
    await database.migrate()
    const users = usersRepository(database)
    const user = await users.findByLogin(login)
    if (user === undefined) {
      console.error(`No user with the email or username ${login}.`)
      process.exitCode = 1
    } else {
      const outcome = await removeTwoFactor(
        { database, users, repository: twoFactorRepository(database), audit: new AuditLog(auditRepository(database), systemClock), clock: systemClock },
        user.id, { actorId: null, ip: null, method: 'cli' },
      )
      console.info(outcome === 'done'
        ? `Two-factor authentication is off for ${user.username}: they sign in with their password and may set it up again.`
        : `Two-factor authentication was not on for ${user.username}; nothing changed.`)
    }
  } finally {
    await database.close()
  }
} catch (error) {
  console.error(error instanceof Error ? error.message : error)
  process.exitCode = 1
}
