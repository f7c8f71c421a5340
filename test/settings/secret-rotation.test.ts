import { existsSync } from 'node:fs'
import { join } from 'node:path'
import { eq } from 'drizzle-orm'
import type { FastifyInstance } from 'fastify'
import { describe, expect, it, onTestFinished } from 'vitest'
import { settingsRepository, type SettingRow } from '../../src/db/repositories/settings.js'
import { projectRoot } from '../../src/paths.js'
import { rotateSettingsSecret, RotationRefused, settingsBox } from '../../src/modules/settings/secret-rotation.js'
import { createTestContext, TEST_SECRET, type TestContext } from '../helpers/app.js'
import { runCli } from '../helpers/cli.js'
import { DIALECTS, type TestDialect } from '../helpers/database.js'
import { captureLogs } from '../helpers/log-capture.js'

const NEW_SECRET = 'the-new-secret-after-rotation-0123456789abcdefgh'
const WRONG_SECRET = 'not-the-old-secret-at-all-0123456789abcdefghijkl'
const SMTP_PASSWORD = 'smtp password – ünïcode'
const CLIENT_SECRET = 'provider-client-secret'

const ROTATE_CLI = join(projectRoot, 'dist/src/cli/rotate-secret.js')
const SET_CLI = join(projectRoot, 'dist/src/cli/set-setting.js')
/** The CLIs run built, as `npm run secret:rotate` runs them (`npm test` builds first). */
const built = existsSync(ROTATE_CLI) && existsSync(SET_CLI)

async function freshContext(dialect: TestDialect): Promise<TestContext> {
  const ctx = await createTestContext(dialect, { file: true })
  onTestFinished(() => ctx.close())
  return ctx
}

/** An app on the default test secret with both core secrets set. */
async function withSecretsSet(ctx: TestContext): Promise<FastifyInstance> {
  const { app } = await ctx.build()
  await app.services.settings.update([
    { key: 'smtp.password', value: SMTP_PASSWORD },
    { key: 'provider.oauth.client_secret', value: CLIENT_SECRET },
  ])
  return app
}

/** The encrypted rows as stored, read straight from the table. */
async function sealedRows(app: FastifyInstance): Promise<Record<string, string>> {
  const { db, t } = app.services.database
  const rows = await db.select().from(t.settings).where(eq(t.settings.encrypted, true))
  return Object.fromEntries(rows.map((row) => [row.key, row.value]))
}

/** A second app on the same database with `secret`: what the service sees after a restart. */
async function readBack(ctx: TestContext, secret: string) {
  const logs = captureLogs('warn')
  const { app } = await ctx.build({ env: { ENCRYPTION_SECRET: secret }, logger: logs.logger })
  return {
    password: await app.services.settings.get('smtp.password'),
    clientSecret: await app.services.settings.get('provider.oauth.client_secret'),
    unreadable: app.services.settings.unreadable(),
    warned: logs.text().includes('cannot be decrypted'),
  }
}

describe.each(DIALECTS)('re-encrypting the secret settings on %s', (dialect) => {
  it('moves every secret value to the new secret in one go: an app with it reads them, without a warning', async () => {
    const ctx = await freshContext(dialect)
    const app = await withSecretsSet(ctx)
    const repository = settingsRepository(app.services.database)
    const before = await sealedRows(app)
    const revision = await repository.revision()

    const report = await rotateSettingsSecret(repository, { from: TEST_SECRET, to: NEW_SECRET })
    expect(report.reencrypted.sort()).toEqual(['oidc.client_secret', 'provider.oauth.client_secret', 'smtp.password'])
    expect(report).toMatchObject({ current: [], defaults: [] })

    const after = await sealedRows(app)
    for (const key of report.reencrypted) {
      expect(after[key]).toMatch(/^v1\./)
      expect(after[key]).not.toBe(before[key])
      // A secret setting nobody set holds its sealed empty default, re-encrypted all the same.
      const expected: Record<string, string> = { 'smtp.password': SMTP_PASSWORD, 'provider.oauth.client_secret': CLIENT_SECRET }
      expect(settingsBox(NEW_SECRET).open(after[key]!)).toBe(JSON.stringify(expected[key] ?? ''))
    }
    // Other instances drop their cache at once.
    expect(await repository.revision()).toBe(revision + 1)
    expect(await readBack(ctx, NEW_SECRET)).toEqual({ password: SMTP_PASSWORD, clientSecret: CLIENT_SECRET, unreadable: [], warned: false })
    expect(await readBack(ctx, TEST_SECRET)).toMatchObject({ password: '', warned: true })
  })

  it('changes nothing when a set value does not open with the old secret', async () => {
    const ctx = await freshContext(dialect)
    const app = await withSecretsSet(ctx)
    const repository = settingsRepository(app.services.database)
    const before = await sealedRows(app)
    const revision = await repository.revision()

    const refused = rotateSettingsSecret(repository, { from: WRONG_SECRET, to: NEW_SECRET })
    await expect(refused).rejects.toBeInstanceOf(RotationRefused)
    await expect(refused).rejects.toMatchObject({ keys: expect.arrayContaining(['smtp.password', 'provider.oauth.client_secret']) })
    await expect(refused).rejects.toThrow(/^Nothing was changed/)

    expect(await sealedRows(app)).toEqual(before)
    expect(await repository.revision()).toBe(revision)
    expect(await readBack(ctx, TEST_SECRET)).toMatchObject({ password: SMTP_PASSWORD, clientSecret: CLIENT_SECRET, unreadable: [] })
  })

  it('leaves values already under the new secret and never-set ones alone, so running it again is harmless', async () => {
    const ctx = await freshContext(dialect)
    const app = await withSecretsSet(ctx)
    const repository = settingsRepository(app.services.database)
    // A removed plugin's secrets: one set under the old secret, one seeded default under a third one.
    const row = (key: string, value: string, setAt: Date | null): SettingRow =>
      ({ key, groupId: 'plugin.gone', type: 'string', value, encrypted: true, setAt, updatedAt: new Date() })
    await repository.seed([
      row('plugin.gone.token', settingsBox(TEST_SECRET).seal('"plugin token"'), new Date()),
      row('plugin.gone.unused', settingsBox(WRONG_SECRET).seal('""'), null),
    ])
    // Set again under the new secret after the change, before anyone rotated.
    const { app: updated } = await ctx.build({ env: { ENCRYPTION_SECRET: NEW_SECRET } })
    await updated.services.settings.update([{ key: 'provider.oauth.client_secret', value: 'set again' }])

    const first = await rotateSettingsSecret(repository, { from: TEST_SECRET, to: NEW_SECRET })
    expect(first.reencrypted.sort()).toEqual(['oidc.client_secret', 'plugin.gone.token', 'smtp.password'])
    expect(first.current).toEqual(['provider.oauth.client_secret'])
    expect(first.defaults).toEqual(['plugin.gone.unused'])
    expect(settingsBox(NEW_SECRET).open((await sealedRows(app))['plugin.gone.token']!)).toBe('"plugin token"')

    const revision = await repository.revision()
    const again = await rotateSettingsSecret(repository, { from: TEST_SECRET, to: NEW_SECRET })
    expect(again.reencrypted).toEqual([])
    expect(again.current.sort()).toEqual(['oidc.client_secret', 'plugin.gone.token', 'provider.oauth.client_secret', 'smtp.password'])
    expect(await repository.revision()).toBe(revision)
    expect(await readBack(ctx, NEW_SECRET)).toEqual({ password: SMTP_PASSWORD, clientSecret: 'set again', unreadable: [], warned: false })
  })

  it('refuses the same secret on both sides', async () => {
    const ctx = await freshContext(dialect)
    const app = await withSecretsSet(ctx)
    await expect(rotateSettingsSecret(settingsRepository(app.services.database), { from: TEST_SECRET, to: TEST_SECRET }))
      .rejects.toThrow(/nothing to re-encrypt/)
  })
})

describe.runIf(built).each(DIALECTS)('the secret CLIs as processes on %s', (dialect) => {
  const env = (ctx: TestContext, extra: Record<string, string>) => ({ DATABASE_URL: ctx.database.url, DATA_DIR: ctx.dataDir, ...extra })

  it('npm run secret:rotate: usage without OLD_ENCRYPTION_SECRET, refuses a wrong one, then re-encrypts; never prints a secret', async () => {
    const ctx = await freshContext(dialect)
    const app = await withSecretsSet(ctx)
    const before = await sealedRows(app)

    const usage = await runCli(ROTATE_CLI, [], env(ctx, { ENCRYPTION_SECRET: NEW_SECRET }))
    expect(usage.code).toBe(2)
    expect(usage.stderr).toContain('OLD_ENCRYPTION_SECRET=<previous secret> npm run secret:rotate')
    // Secrets on the command line would land in shell history and the process list.
    const argument = await runCli(ROTATE_CLI, ['--from', TEST_SECRET], env(ctx, { ENCRYPTION_SECRET: NEW_SECRET, OLD_ENCRYPTION_SECRET: TEST_SECRET }))
    expect(argument.code).toBe(2)
    expect(argument.stderr).not.toContain(TEST_SECRET)

    const wrong = await runCli(ROTATE_CLI, [], env(ctx, { ENCRYPTION_SECRET: NEW_SECRET, OLD_ENCRYPTION_SECRET: WRONG_SECRET }))
    expect(wrong.code).toBe(1)
    expect(wrong.stderr).toMatch(/^Nothing was changed: .*smtp\.password/)
    expect(await sealedRows(app)).toEqual(before)

    const rotated = await runCli(ROTATE_CLI, [], env(ctx, { ENCRYPTION_SECRET: NEW_SECRET, OLD_ENCRYPTION_SECRET: TEST_SECRET }))
    expect(rotated.code, rotated.stderr).toBe(0)
    expect(rotated.stdout).toMatch(/Re-encrypted with ENCRYPTION_SECRET: .*smtp\.password/)
    expect(rotated.stdout).toContain('provider.oauth.client_secret')
    for (const run of [usage, argument, wrong, rotated]) {
      for (const secret of [TEST_SECRET, NEW_SECRET, WRONG_SECRET, SMTP_PASSWORD, CLIENT_SECRET]) {
        expect(run.stdout + run.stderr).not.toContain(secret)
      }
    }
    expect(await readBack(ctx, NEW_SECRET)).toEqual({ password: SMTP_PASSWORD, clientSecret: CLIENT_SECRET, unreadable: [], warned: false })
  })

  it('npm run settings:set works under a changed secret, says what is still unreadable, and makes a secret readable again', async () => {
    const ctx = await freshContext(dialect)
    await withSecretsSet(ctx)

    const host = await runCli(SET_CLI, ['smtp.host', 'mail.example.test'], env(ctx, { ENCRYPTION_SECRET: NEW_SECRET }))
    expect(host.code, host.stderr).toBe(0)
    expect(host.stdout).toContain('smtp.host set')
    expect(host.stderr).toContain('provider.oauth.client_secret')
    expect(host.stderr).toContain('smtp.password')

    const password = await runCli(SET_CLI, ['smtp.password', 'chosen again'], env(ctx, { ENCRYPTION_SECRET: NEW_SECRET }))
    expect(password.code, password.stderr).toBe(0)
    expect(password.stderr).not.toContain('smtp.password')
    expect(await readBack(ctx, NEW_SECRET)).toEqual({ password: 'chosen again', clientSecret: '', unreadable: ['provider.oauth.client_secret'], warned: true })
  })
})
