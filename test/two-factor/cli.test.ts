import { existsSync } from 'node:fs'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { projectRoot } from '../../src/paths.js'
import { DEFAULT_PASSWORD, sessionCookie } from '../helpers/accounts.js'
import { createTestContext, TEST_SECRET, type TestApp, type TestContext } from '../helpers/app.js'
import { runCli } from '../helpers/cli.js'
import { DIALECTS } from '../helpers/database.js'
import { signUp } from '../helpers/teams.js'
import { enrol } from './helpers.js'

/**
 * `npm run 2fa:reset -- <login>` as an operator runs it (the built command, a real process on the
 * server's database): the way back in for an admin who lost the authenticator and the recovery
 * codes when no other admin can reset it.
 */
const CLI = join(projectRoot, 'dist/src/cli/reset-two-factor.js')

describe.skipIf(!existsSync(CLI)).each(DIALECTS)('npm run 2fa:reset on %s', (dialect) => {
  let ctx: TestContext
  let subject: TestApp
  const env = () => ({ DATABASE_URL: ctx.database.url, DATA_DIR: ctx.dataDir, ENCRYPTION_SECRET: TEST_SECRET })

  beforeAll(async () => {
    ctx = await createTestContext(dialect, { file: true })
    subject = await ctx.build({ env: { RATE_LIMIT_ENABLED: 'false' } })
  })
  afterAll(() => ctx.close())

  it('switches two-factor off for the named user, who then signs in with the password; audited', async () => {
    const { app } = subject
    const admin = await signUp(app, `cli_${dialect.slice(0, 2)}_admin`)
    await enrol(app, admin, Date.now())
    const run = await runCli(CLI, [admin.username], env())
    expect(run.code, run.stderr).toBe(0)
    expect(run.stdout).toContain(`Two-factor authentication is off for ${admin.username}`)
    const login = await app.inject({ method: 'POST', url: '/api/auth/email/login', payload: { login: admin.email, password: DEFAULT_PASSWORD } })
    expect(sessionCookie(login)).toBeDefined()
    const [event] = (await app.services.auditEvents.list({ type: 'user.two_factor_disabled', limit: 10, offset: 0 })).rows
    expect(event).toMatchObject({ target: admin.id, actorId: null, details: { method: 'cli' } })

    const again = await runCli(CLI, [admin.email], env())
    expect([again.code, again.stdout.trim()]).toEqual([0, `Two-factor authentication was not on for ${admin.username}; nothing changed.`])
    const unknown = await runCli(CLI, ['nobody@example.com'], env())
    expect(unknown.code).toBe(1)
    expect((await runCli(CLI, [], env())).code).toBe(2)
  })
})
