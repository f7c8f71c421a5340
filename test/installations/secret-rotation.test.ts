import { existsSync } from 'node:fs'
import { join } from 'node:path'
import { and, eq, isNotNull } from 'drizzle-orm'
import type { FastifyInstance } from 'fastify'
import { describe, expect, it, onTestFinished } from 'vitest'
import { placeName, rotateEncryptionSecret } from '../../src/modules/installations/secret-rotation.js'
import { installationValueBox, type ValuePlace } from '../../src/modules/installations/sealed-values.js'
import { RotationRefused, settingsBox } from '../../src/modules/settings/secret-rotation.js'
import { projectRoot } from '../../src/paths.js'
import { DEFAULT_PASSWORD, login } from '../helpers/accounts.js'
import { createTestContext, TEST_SECRET, type TestContext } from '../helpers/app.js'
import { runCli } from '../helpers/cli.js'
import { DIALECTS, type TestDialect } from '../helpers/database.js'
import { importDocuments, install, installationOf, type InputBody, type InstallationBody } from '../helpers/installations.js'
import { client, crew, ROOMY_LIMITS, signUp, type Account, type Call, type Crew } from '../helpers/teams.js'

const NEW_SECRET = 'the-new-secret-after-rotation-0123456789abcdefgh'
const WRONG_SECRET = 'not-the-old-secret-at-all-0123456789abcdefghijkl'
const SMTP_PASSWORD = 'smtp password for the rotation'
const TEAM_KEY = 'wk-live-team-0f9e8d7c6b5a4938'
const TEAM_TOKEN = 'ghp-team-token-5e4d3c2b1a09'
const PERSONAL_TEAM_KEY = 'wk-live-personal-1a2b3c4d5e6f'
const MEMBER_TOKEN = 'ghp-member-own-7a6b5c4d3e2f'
const LATE_TOKEN = 'ghp-set-under-new-secret-9f8e'
const SECRETS = [TEST_SECRET, NEW_SECRET, WRONG_SECRET, SMTP_PASSWORD, TEAM_KEY, TEAM_TOKEN, PERSONAL_TEAM_KEY, MEMBER_TOKEN, LATE_TOKEN]

const ROTATE_CLI = join(projectRoot, 'dist/src/cli/rotate-secret.js')
/** The CLI runs built, as `npm run secret:rotate` runs it (`npm test` builds first). */
const built = existsSync(ROTATE_CLI)

/** A team with two installations of one server: four secret values sealed under the test secret, and a secret setting. */
interface Fixture {
  ctx: TestContext
  app: FastifyInstance
  call: Call
  a: Crew
  /** Team values WEATHER_API_KEY and PERSONAL_TOKEN. */
  shared: InstallationBody
  /** Team value WEATHER_API_KEY; PERSONAL_TOKEN is each member's own (the team user set theirs). */
  personal: InstallationBody
}

async function installedWithSecrets(dialect: TestDialect): Promise<Fixture> {
  const ctx = await createTestContext(dialect, { file: true })
  onTestFinished(() => ctx.close())
  const { app } = await ctx.build({ limits: ROOMY_LIMITS })
  const call = client(app)
  let seq = 0
  const admin = await signUp(app, 'rot_admin')
  const a = await crew(call, () => signUp(app, `rot_${++seq}`), 'Rotation Team')
  await app.services.settings.update([{ key: 'smtp.password', value: SMTP_PASSWORD }])
  const [serverId] = await importDocuments(call, admin, [weatherServer()])
  const shared = await install(call, a.team.id, a.teamAdmin, {
    server_id: serverId, name: 'weather-shared',
    values: { 'env:WEATHER_API_KEY': TEAM_KEY, 'env:PERSONAL_TOKEN': TEAM_TOKEN, 'arg:data_dir': '/var/cache/weather' },
  })
  const personal = await install(call, a.team.id, a.teamAdmin, {
    server_id: serverId, name: 'weather-personal', user_scoped: ['env:PERSONAL_TOKEN'],
    values: { 'env:WEATHER_API_KEY': PERSONAL_TEAM_KEY, 'arg:data_dir': '/tmp/weather' },
  })
  const mine = await call('PUT', `${installationOf(a.team.id, personal.id)}/my-values`, a.teamUser, { values: { 'env:PERSONAL_TOKEN': MEMBER_TOKEN } })
  expect(mine.statusCode, mine.body).toBe(200)
  return { ctx, app, call, a, shared, personal }
}

function weatherServer(): Record<string, unknown> {
  return {
    $schema: 'https://static.modelcontextprotocol.io/schemas/2025-12-11/server.schema.json',
    name: 'io.github.example/weather-rotation',
    description: 'Forecasts.',
    version: '1.0.0',
    packages: [{
      registryType: 'npm', identifier: '@example/weather-mcp', version: '1.0.0', transport: { type: 'stdio' },
      packageArguments: [{ type: 'positional', valueHint: 'data_dir', isRequired: true }],
      environmentVariables: [
        { name: 'WEATHER_API_KEY', isRequired: true, isSecret: true },
        { name: 'PERSONAL_TOKEN', isRequired: true, isSecret: true },
      ],
    }],
  }
}

/** Every sealed installation value as stored, by place. */
async function sealedValues(app: FastifyInstance): Promise<Map<string, { place: ValuePlace; sealed: string }>> {
  const { db, t } = app.services.database
  const rows = await db.select().from(t.mcpInstallationValues).where(isNotNull(t.mcpInstallationValues.sealed))
  return new Map(rows.map(({ installationId, userId, key, sealed }) => {
    const place = { installationId, userId, key }
    return [placeName(place), { place, sealed: sealed! }]
  }))
}

const storedText = (values: Map<string, { sealed: string }>) => Object.fromEntries([...values].map(([name, { sealed }]) => [name, sealed]))

async function smtpSealed(app: FastifyInstance): Promise<string> {
  const { db, t } = app.services.database
  const [row] = await db.select().from(t.settings).where(eq(t.settings.key, 'smtp.password'))
  return row!.value
}

/** Overwrites the sealed text of one value row (a copy from elsewhere), or inserts the row. */
async function writeSealed(app: FastifyInstance, place: ValuePlace, sealed: string): Promise<void> {
  const { db, t } = app.services.database
  const values = t.mcpInstallationValues
  const where = and(eq(values.installationId, place.installationId), eq(values.key, place.key))
  const existing = await db.select().from(values).where(where)
  if (existing.some((row) => row.userId === place.userId)) {
    await db.update(values).set({ sealed }).where(and(where, place.userId === null ? undefined : eq(values.userId, place.userId)))
  } else {
    await db.insert(values).values({ ...place, value: null, sealed, updatedAt: new Date() })
  }
}

/** Signs `account` in on `app` (a session of another secret is no longer valid there). */
async function signedIn(app: FastifyInstance, account: Account): Promise<Account> {
  const { response, cookie } = await login(app, account.username, DEFAULT_PASSWORD)
  expect(response.statusCode, response.body).toBe(200)
  return { ...account, cookie: cookie! }
}

const inputOf = (inputs: InputBody[], key: string) => inputs.find((input) => input.key === key)

describe.each(DIALECTS)('re-encrypting the installation values on %s', (dialect) => {
  it('moves team and member values to the new secret with the settings; an app on it sees them set; a second run leaves them', async () => {
    const { ctx, app, a, shared, personal } = await installedWithSecrets(dialect)
    // A member's own value set on an instance already on the new secret, before anyone rotated.
    const { app: early } = await ctx.build({ env: { ENCRYPTION_SECRET: NEW_SECRET }, limits: ROOMY_LIMITS })
    const late = await client(early)('PUT', `${installationOf(a.team.id, personal.id)}/my-values`, await signedIn(early, a.teamAdmin), {
      values: { 'env:PERSONAL_TOKEN': LATE_TOKEN },
    })
    expect(late.statusCode, late.body).toBe(200)
    const before = await sealedValues(app)
    expect(before.size).toBe(5)

    const report = await rotateEncryptionSecret(app.services.database, { from: TEST_SECRET, to: NEW_SECRET })
    expect(report.installationValues).toEqual({ reencrypted: 4, current: 1 })
    expect(report.settings.reencrypted).toContain('smtp.password')
    expect(settingsBox(NEW_SECRET).open(await smtpSealed(app))).toBe(JSON.stringify(SMTP_PASSWORD))

    const after = await sealedValues(app)
    const plaintexts = {
      [placeName({ installationId: shared.id, userId: null, key: 'env:WEATHER_API_KEY' })]: TEAM_KEY,
      [placeName({ installationId: shared.id, userId: null, key: 'env:PERSONAL_TOKEN' })]: TEAM_TOKEN,
      [placeName({ installationId: personal.id, userId: null, key: 'env:WEATHER_API_KEY' })]: PERSONAL_TEAM_KEY,
      [placeName({ installationId: personal.id, userId: a.teamUser.id, key: 'env:PERSONAL_TOKEN' })]: MEMBER_TOKEN,
      [placeName({ installationId: personal.id, userId: a.teamAdmin.id, key: 'env:PERSONAL_TOKEN' })]: LATE_TOKEN,
    }
    expect([...after.keys()].sort()).toEqual(Object.keys(plaintexts).sort())
    for (const [name, { place, sealed }] of after) {
      expect(installationValueBox(NEW_SECRET).open(sealed, place)).toBe(plaintexts[name])
      expect(() => installationValueBox(TEST_SECRET).open(sealed, place)).toThrow()
      if (name.includes(a.teamAdmin.id)) expect(sealed).toBe(before.get(name)!.sealed)
      else expect(sealed).not.toBe(before.get(name)!.sealed)
    }

    // An instance started on the new secret: every value still set, none shown.
    const { app: next } = await ctx.build({ env: { ENCRYPTION_SECRET: NEW_SECRET }, limits: ROOMY_LIMITS })
    const call = client(next)
    const member = await signedIn(next, a.teamUser)
    const read = await call('GET', installationOf(a.team.id, shared.id), member)
    expect(read.statusCode, read.body).toBe(200)
    const inputs = (read.json().data.installation as InstallationBody).inputs
    expect(inputOf(inputs, 'env:WEATHER_API_KEY')).toMatchObject({ secret: true, is_set: true })
    expect(inputOf(inputs, 'env:PERSONAL_TOKEN')).toMatchObject({ secret: true, is_set: true })
    const own = await call('GET', `${installationOf(a.team.id, personal.id)}/my-values`, member)
    expect(own.json().data.values).toEqual([expect.objectContaining({ key: 'env:PERSONAL_TOKEN', is_set: true })])
    for (const secret of SECRETS) expect(read.body + own.body).not.toContain(secret)

    const again = await rotateEncryptionSecret(app.services.database, { from: TEST_SECRET, to: NEW_SECRET })
    expect(again.installationValues).toEqual({ reencrypted: 0, current: 5 })
    expect(again.settings.reencrypted).toEqual([])
    expect(storedText(await sealedValues(app))).toEqual(storedText(after))
  })

  it('refuses a sealed value copied into another row (other installation, key or member), naming its place; nothing changes', async () => {
    const { app, a, shared, personal } = await installedWithSecrets(dialect)
    const sharedKey = { installationId: shared.id, userId: null, key: 'env:WEATHER_API_KEY' }
    const memberToken = { installationId: personal.id, userId: a.teamUser.id, key: 'env:PERSONAL_TOKEN' }
    const copies: Array<{ from: ValuePlace; to: ValuePlace }> = [
      { from: sharedKey, to: { installationId: personal.id, userId: null, key: 'env:WEATHER_API_KEY' } },
      { from: sharedKey, to: { installationId: shared.id, userId: null, key: 'env:PERSONAL_TOKEN' } },
      { from: memberToken, to: { installationId: personal.id, userId: a.owner.id, key: 'env:PERSONAL_TOKEN' } },
    ]
    for (const { from, to } of copies) {
      const original = await sealedValues(app)
      await writeSealed(app, to, original.get(placeName(from))!.sealed)
      const copied = await sealedValues(app)
      const smtp = await smtpSealed(app)

      const refused = rotateEncryptionSecret(app.services.database, { from: TEST_SECRET, to: NEW_SECRET })
      await expect(refused).rejects.toBeInstanceOf(RotationRefused)
      await expect(refused).rejects.toMatchObject({ keys: [], elsewhere: [placeName(to)] })
      const message = await refused.catch((error: Error) => error.message)
      expect(message).toMatch(/^Nothing was changed: /)
      expect(message).toContain(to.installationId)
      expect(message).toContain(to.key)
      for (const secret of SECRETS) expect(message).not.toContain(secret)

      // Not a single value moved, settings included.
      expect(storedText(await sealedValues(app))).toEqual(storedText(copied))
      expect(await smtpSealed(app)).toBe(smtp)
      expect(settingsBox(TEST_SECRET).open(smtp)).toBe(JSON.stringify(SMTP_PASSWORD))
      // Put back as it was, for the next copy.
      const before = original.get(placeName(to))
      if (before === undefined) {
        const { db, t } = app.services.database
        await db.delete(t.mcpInstallationValues).where(and(eq(t.mcpInstallationValues.installationId, to.installationId), eq(t.mcpInstallationValues.userId, to.userId!)))
      } else await writeSealed(app, to, before.sealed)
    }
    // Back as it was, the rotation goes through.
    const report = await rotateEncryptionSecret(app.services.database, { from: TEST_SECRET, to: NEW_SECRET })
    expect(report.installationValues).toEqual({ reencrypted: 4, current: 0 })
  })

  it('refuses every value when the old secret is wrong, settings and installation values named together', async () => {
    const { app, a, personal } = await installedWithSecrets(dialect)
    const before = storedText(await sealedValues(app))
    const smtp = await smtpSealed(app)

    const refused = rotateEncryptionSecret(app.services.database, { from: WRONG_SECRET, to: NEW_SECRET })
    await expect(refused).rejects.toBeInstanceOf(RotationRefused)
    const error = await refused.then(() => { throw new Error('rotated') }, (caught: RotationRefused) => caught)
    expect(error.keys).toEqual(['smtp.password'])
    expect([...error.elsewhere].sort()).toEqual(Object.keys(before).sort())
    expect(error.elsewhere).toContain(placeName({ installationId: personal.id, userId: a.teamUser.id, key: 'env:PERSONAL_TOKEN' }))
    for (const secret of SECRETS) expect(error.message).not.toContain(secret)

    expect(storedText(await sealedValues(app))).toEqual(before)
    expect(await smtpSealed(app)).toBe(smtp)
  })
})

describe.runIf(built).each(DIALECTS)('npm run secret:rotate with installations on %s', (dialect) => {
  it('prints the counts, names a value it cannot open by its place, and never prints a secret', async () => {
    const { ctx, app, shared, personal } = await installedWithSecrets(dialect)
    const env = (old: string) => ({ DATABASE_URL: ctx.database.url, DATA_DIR: ctx.dataDir, ENCRYPTION_SECRET: NEW_SECRET, OLD_ENCRYPTION_SECRET: old })
    // A copy of the shared installation's key in the other installation's row.
    const original = await sealedValues(app)
    const target = { installationId: personal.id, userId: null, key: 'env:WEATHER_API_KEY' }
    await writeSealed(app, target, original.get(placeName({ installationId: shared.id, userId: null, key: 'env:WEATHER_API_KEY' }))!.sealed)

    const copied = await runCli(ROTATE_CLI, [], env(TEST_SECRET))
    expect(copied.code).toBe(1)
    expect(copied.stderr).toMatch(/^Nothing was changed: /)
    expect(copied.stderr).toContain(placeName(target))

    await writeSealed(app, target, original.get(placeName(target))!.sealed)
    const rotated = await runCli(ROTATE_CLI, [], env(TEST_SECRET))
    expect(rotated.code, rotated.stderr).toBe(0)
    expect(rotated.stdout).toContain('Installation secret values: 4 re-encrypted, 0 already under ENCRYPTION_SECRET.')
    const again = await runCli(ROTATE_CLI, [], env(TEST_SECRET))
    expect(again.code, again.stderr).toBe(0)
    expect(again.stdout).toContain('Installation secret values: 0 re-encrypted, 4 already under ENCRYPTION_SECRET.')
    for (const run of [copied, rotated, again]) {
      for (const secret of SECRETS) expect(run.stdout + run.stderr).not.toContain(secret)
    }
  })
})
