import { eq } from 'drizzle-orm'
import type { FastifyInstance } from 'fastify'
import pg from 'pg'
import { describe, expect, it, onTestFinished } from 'vitest'
import { settingsRepository, type SettingRow } from '../../src/db/repositories/settings.js'
import { AppError } from '../../src/http/errors.js'
import { CORE_SETTINGS, type SettingDefinition } from '../../src/modules/settings/definitions.js'
import { createTestContext, type TestContext } from '../helpers/app.js'
import { manualClock } from '../helpers/clock.js'
import { DIALECTS, type TestDialect } from '../helpers/database.js'
import { until } from '../helpers/until.js'

const DEFINITIONS = Object.entries(CORE_SETTINGS) as Array<[string, SettingDefinition]>

/** A database of its own for one test, dropped when the test ends. */
async function freshContext(dialect: TestDialect, options: { file?: boolean } = {}): Promise<TestContext> {
  const ctx = await createTestContext(dialect, options)
  onTestFinished(() => ctx.close())
  return ctx
}

/** The stored rows, read straight from the table (not through the service's cache). */
async function storedRows(app: FastifyInstance): Promise<Map<string, SettingRow>> {
  const { db, t } = app.services.database
  const rows = await db.select().from(t.settings)
  return new Map(rows.map((row) => [row.key, row]))
}

async function storedRow(app: FastifyInstance, key: string): Promise<SettingRow> {
  const { db, t } = app.services.database
  const [row] = await db.select().from(t.settings).where(eq(t.settings.key, key))
  if (row === undefined) throw new Error(`no row for ${key}`)
  return row
}

async function storedRevision(app: FastifyInstance): Promise<number> {
  return settingsRepository(app.services.database).revision()
}

describe.each(DIALECTS)('settings core on %s', (dialect) => {
  describe('seeding', () => {
    it('seeds every core definition with its typed default at start', async () => {
      const ctx = await freshContext(dialect)
      const { app, config } = await ctx.build()
      const rows = await storedRows(app)

      // The core's settings; the example plugin's (plugins/notes) are tested with the plugins.
      expect([...rows.keys()].filter((key) => !key.startsWith('plugin.')).sort()).toEqual(DEFINITIONS.map(([key]) => key).sort())
      for (const [key, definition] of DEFINITIONS) {
        const expected = typeof definition.default === 'function' ? definition.default(config) : definition.default
        const row = rows.get(key)!
        expect(row, key).toMatchObject({ groupId: definition.group, type: definition.type, encrypted: definition.encrypted === true, setAt: null })
        const value = await app.services.settings.value(key)
        expect(typeof value, key).toBe(definition.type)
        expect(value, key).toBe(expected)
      }
      // Spot checks of the typed defaults.
      expect(await app.services.settings.get('global.enable_login')).toBe(true)
      expect(await app.services.settings.get('global.send_mail')).toBe(false)
      expect(await app.services.settings.get('team.creation_limit')).toBe(3)
      expect(await app.services.settings.get('smtp.port')).toBe(587)
      expect(await app.services.settings.get('provider.oauth.scope')).toBe('user:email')
      expect(rows.get('team.member_limit')!.value).toBe('10')
      expect(rows.get('global.enable_swagger_docs')!.value).toBe('true')
    })

    it('derives provider.oauth.callback_url from PUBLIC_URL', async () => {
      const ctx = await freshContext(dialect)
      const { app } = await ctx.build({ env: { PUBLIC_URL: 'https://api.example.org/' } })
      expect(await app.services.settings.get('provider.oauth.callback_url')).toBe('https://api.example.org/api/auth/provider/callback')
    })

    it('never overwrites a stored value when another app seeds the same database', async () => {
      const ctx = await freshContext(dialect, { file: true })
      const first = await ctx.build()
      await first.app.services.settings.update([
        { key: 'team.member_limit', value: 25 },
        { key: 'global.enable_login', value: false },
        { key: 'smtp.from_name', value: 'Ops' },
      ])

      const second = await ctx.build()
      expect(await second.app.services.settings.get('team.member_limit')).toBe(25)
      expect(await second.app.services.settings.get('global.enable_login')).toBe(false)
      expect(await second.app.services.settings.get('smtp.from_name')).toBe('Ops')
      expect((await storedRow(second.app, 'team.member_limit')).value).toBe('25')
    })
  })

  describe('typed updates', () => {
    const refused: Array<[string, string, unknown]> = [
      ['a boolean given the string "true"', 'global.enable_login', 'true'],
      ['a boolean given "maybe"', 'global.enable_login', 'maybe'],
      ['a boolean given 1', 'smtp.secure', 1],
      ['a boolean given null', 'global.send_mail', null],
      ['a number below its minimum', 'team.member_limit', 0],
      ['a number above its maximum', 'smtp.port', 65_536],
      ['a number that is not an integer', 'team.creation_limit', 2.5],
      ['a number given as a string', 'team.creation_limit', '4'],
      ['a string given a number', 'smtp.host', 42],
      ['a string over its length bound', 'provider.oauth.client_id', 'x'.repeat(256)],
      ['an unknown key', 'global.no_such_setting', true],
    ]

    it.each(refused)('refuses %s with 400 VALIDATION_ERROR naming the key, writing nothing', async (_case, key, value) => {
      const ctx = await freshContext(dialect)
      const { app } = await ctx.build()
      const before = await storedRows(app)
      const revision = await storedRevision(app)

      const attempt = app.services.settings.update([{ key, value }])
      await expect(attempt).rejects.toBeInstanceOf(AppError)
      await expect(attempt).rejects.toMatchObject({
        statusCode: 400,
        code: 'VALIDATION_ERROR',
        details: [expect.objectContaining({ field: key, message: expect.any(String) })],
      })

      expect(await storedRows(app)).toEqual(before)
      expect(await storedRevision(app)).toBe(revision)
    })

    it('accepts values of the right type and stores them as typed JSON', async () => {
      const ctx = await freshContext(dialect)
      const { app } = await ctx.build()
      const revision = await storedRevision(app)
      await app.services.settings.update([
        { key: 'global.enable_login', value: false },
        { key: 'team.member_limit', value: 1 },
        { key: 'smtp.host', value: 'mail.example.com' },
      ])
      expect(await app.services.settings.get('global.enable_login')).toBe(false)
      expect(await app.services.settings.get('team.member_limit')).toBe(1)
      expect(await app.services.settings.get('smtp.host')).toBe('mail.example.com')
      const rows = await storedRows(app)
      expect(rows.get('global.enable_login')).toMatchObject({ value: 'false', setAt: expect.any(Date) })
      expect(rows.get('team.member_limit')!.value).toBe('1')
      expect(rows.get('smtp.host')!.value).toBe('"mail.example.com"')
      expect(await storedRevision(app)).toBe(revision + 1)
    })
  })

  describe('bulk updates', () => {
    it('changes nothing when one entry among good ones is bad', async () => {
      const ctx = await freshContext(dialect)
      const { app } = await ctx.build()
      const before = await storedRows(app)
      const revision = await storedRevision(app)

      await expect(
        app.services.settings.update([
          { key: 'team.creation_limit', value: 7 },
          { key: 'smtp.host', value: 'mail.example.com' },
          { key: 'global.enable_login', value: 'maybe' },
          { key: 'smtp.password', value: 'secret' },
        ]),
      ).rejects.toMatchObject({ statusCode: 400, code: 'VALIDATION_ERROR', details: [expect.objectContaining({ field: 'global.enable_login' })] })

      expect(await storedRows(app)).toEqual(before)
      expect(await storedRevision(app)).toBe(revision)
      expect(await app.services.settings.get('team.creation_limit')).toBe(3)
      expect(await app.services.settings.get('smtp.host')).toBe('')
    })

    it('refuses the same key twice in one update', async () => {
      const ctx = await freshContext(dialect)
      const { app } = await ctx.build()
      await expect(
        app.services.settings.update([
          { key: 'team.creation_limit', value: 7 },
          { key: 'team.creation_limit', value: 8 },
        ]),
      ).rejects.toMatchObject({ code: 'VALIDATION_ERROR', details: [expect.objectContaining({ field: 'team.creation_limit' })] })
      expect((await storedRow(app, 'team.creation_limit')).value).toBe('3')
    })

    it('rolls back earlier writes when a later write fails in the database', async () => {
      const ctx = await freshContext(dialect)
      const { app } = await ctx.build()
      const before = await storedRows(app)
      const revision = await storedRevision(app)
      const repository = settingsRepository(app.services.database)

      // `value` is NOT NULL: the second statement fails after the first has run.
      await expect(
        repository.write(
          [
            { key: 'team.creation_limit', value: '7' },
            { key: 'smtp.host', value: null as unknown as string },
          ],
          new Date(),
        ),
      ).rejects.toThrow()

      expect(await storedRows(app)).toEqual(before)
      expect(await storedRevision(app)).toBe(revision)
    })
  })

  describe('encrypted settings', () => {
    it.each(['smtp.password', 'provider.oauth.client_secret'] as const)('stores %s sealed and reads it back in plaintext', async (key) => {
      const ctx = await freshContext(dialect)
      const { app } = await ctx.build()
      // An OAuth client secret is visible ASCII only (RFC 6749 Appendix A); a mail password may be any text.
      const plaintext = key === 'smtp.password' ? 'p@ss w0rd – ünïcode' : 'p@ss w0rd ~ "visible" ASCII'

      // Even the seeded empty default is sealed.
      expect((await storedRow(app, key)).value).toMatch(/^v1\./)

      await app.services.settings.update([{ key, value: plaintext }])
      const first = (await storedRow(app, key)).value
      expect(first).toMatch(/^v1\.[\w-]+\.[\w-]+\.[\w-]+$/)
      expect(first).not.toContain(plaintext)
      expect(first).not.toContain(JSON.stringify(plaintext))
      expect(first).not.toContain(Buffer.from(plaintext).toString('base64url'))
      expect(first).not.toContain(Buffer.from(JSON.stringify(plaintext)).toString('base64url'))
      expect(await app.services.settings.get(key)).toBe(plaintext)

      // A random IV: sealing the same plaintext again gives a different stored value.
      await app.services.settings.update([{ key, value: plaintext }])
      const second = (await storedRow(app, key)).value
      expect(second).toMatch(/^v1\./)
      expect(second).not.toBe(first)
      expect(second.split('.')[1]).not.toBe(first.split('.')[1])
      expect(await app.services.settings.get(key)).toBe(plaintext)
    })

    it('is readable by another app sharing ENCRYPTION_SECRET', async () => {
      const ctx = await freshContext(dialect, { file: true })
      const writer = await ctx.build()
      await writer.app.services.settings.update([{ key: 'smtp.password', value: 'shared-secret' }])
      const reader = await ctx.build()
      expect(await reader.app.services.settings.get('smtp.password')).toBe('shared-secret')
    })
  })

  describe('cache across instances', () => {
    it('SQLite: another instance\'s change is seen at the next read (the file\'s change stamp), with no clock moving', async () => {
      if (dialect !== 'sqlite') return
      const ctx = await freshContext(dialect, { file: true })
      const clockA = manualClock()
      const clockB = manualClock()
      const a = (await ctx.build({ clock: clockA })).app
      const b = (await ctx.build({ clock: clockB })).app
      expect(await b.services.settings.get('team.member_limit')).toBe(10)

      await a.services.settings.update([{ key: 'team.member_limit', value: 42 }])
      expect(await a.services.settings.get('team.member_limit')).toBe(42)

      // B keeps the settings, yet sees A's commit at its next read.
      expect(await b.services.settings.get('team.member_limit')).toBe(42)
      await a.services.settings.update([{ key: 'global.enable_login', value: false }])
      expect(await b.services.settings.get('global.enable_login')).toBe(false)
      expect(await b.services.settings.get('team.member_limit')).toBe(42)
    })

    it('with change notifications (PostgreSQL), serves a cached value with no query until the other instance\'s change is announced, then that change, without any clock moving', async () => {
      if (dialect !== 'postgresql') return
      const ctx = await freshContext(dialect, { file: true })
      const a = (await ctx.build({ clock: manualClock() })).app
      const b = (await ctx.build({ clock: manualClock() })).app
      await until(() => a.services.database.changes.up && b.services.database.changes.up, { what: 'the change feeds' })
      expect(await b.services.settings.get('team.member_limit')).toBe(10)

      await a.services.settings.update([{ key: 'team.member_limit', value: 42 }])
      await until(async () => (await b.services.settings.get('team.member_limit')) === 42, { what: 'B seeing the change' })
      await a.services.settings.update([{ key: 'global.enable_login', value: false }])
      await until(async () => (await b.services.settings.get('global.enable_login')) === false, { what: 'B seeing the login switch' })
      // A change written past the service (a command-line tool's connection) is announced by the database itself.
      const other = new pg.Client({ connectionString: ctx.database.url })
      await other.connect()
      try {
        await other.query(`update settings set value = '7' where key = 'team.member_limit'`)
        await other.query('update settings_revision set revision = revision + 1')
      } finally {
        await other.end()
      }
      await until(async () => (await b.services.settings.get('team.member_limit')) === 7, { what: 'B seeing the other connection\'s change' })
    })

    it('shows an instance its own change at once', async () => {
      const ctx = await freshContext(dialect, { file: true })
      const clockA = manualClock()
      const clockB = manualClock()
      const a = (await ctx.build({ clock: clockA })).app
      const b = (await ctx.build({ clock: clockB })).app

      await a.services.settings.update([{ key: 'smtp.host', value: 'a.example.com' }])
      await b.services.settings.update([{ key: 'smtp.port', value: 2525 }])
      expect(await a.services.settings.get('smtp.host')).toBe('a.example.com')
      expect(await b.services.settings.get('smtp.port')).toBe(2525)
      // B's write reloaded everything, so it also has A's earlier change.
      expect(await b.services.settings.get('smtp.host')).toBe('a.example.com')
      // A sees B's change at its next read on SQLite (the file's change stamp moved); on PostgreSQL
      // once the database's notification arrives.
      await until(async () => (await a.services.settings.get('smtp.port')) === 2525, { what: "B's change on A" })
    })
  })

  describe('environment seeds', () => {
    const SMTP_URL = 'smtp://user:p%40ss@mail.example.com:2525'

    it('SMTP_URL configures the SMTP settings and switches mail on for a fresh database', async () => {
      const ctx = await freshContext(dialect)
      const { app } = await ctx.build({ env: { SMTP_URL } })
      const settings = app.services.settings
      expect(await settings.get('smtp.host')).toBe('mail.example.com')
      expect(await settings.get('smtp.port')).toBe(2525)
      expect(await settings.get('smtp.username')).toBe('user')
      expect(await settings.get('smtp.password')).toBe('p@ss')
      expect(await settings.get('smtp.secure')).toBe(false)
      expect(await settings.get('global.send_mail')).toBe(true)
      const password = await storedRow(app, 'smtp.password')
      expect(password.value).toMatch(/^v1\./)
      expect(password.value).not.toContain('p@ss')
      expect(password.setAt).toBeInstanceOf(Date)
    })

    it('smtps:// without a port means TLS from the start on 465', async () => {
      const ctx = await freshContext(dialect)
      const { app } = await ctx.build({ env: { SMTP_URL: 'smtps://mailer:pw@secure.example.com' } })
      expect(await app.services.settings.get('smtp.secure')).toBe(true)
      expect(await app.services.settings.get('smtp.port')).toBe(465)
      expect(await app.services.settings.get('smtp.host')).toBe('secure.example.com')
    })

    it('SMTP_URL does not overwrite a setting chosen through the service', async () => {
      const ctx = await freshContext(dialect, { file: true })
      const first = await ctx.build()
      await first.app.services.settings.update([{ key: 'smtp.host', value: 'operator.example.com' }])
      await first.app.close()

      const { app } = await ctx.build({ env: { SMTP_URL } })
      expect(await app.services.settings.get('smtp.host')).toBe('operator.example.com')
      expect((await storedRow(app, 'smtp.host')).value).toBe('"operator.example.com"')
      // The keys nobody set are still seeded.
      expect(await app.services.settings.get('smtp.port')).toBe(2525)
      expect(await app.services.settings.get('smtp.password')).toBe('p@ss')
      expect(await app.services.settings.get('global.send_mail')).toBe(true)
    })

    it('PROVIDER_OAUTH_CLIENT_ID/SECRET configure and enable provider login for a fresh database', async () => {
      const ctx = await freshContext(dialect)
      const { app } = await ctx.build({ env: { PROVIDER_OAUTH_CLIENT_ID: 'client-123', PROVIDER_OAUTH_CLIENT_SECRET: 'shh-456' } })
      expect(await app.services.settings.get('provider.oauth.client_id')).toBe('client-123')
      expect(await app.services.settings.get('provider.oauth.client_secret')).toBe('shh-456')
      expect(await app.services.settings.get('provider.oauth.enabled')).toBe(true)
      const secret = (await storedRow(app, 'provider.oauth.client_secret')).value
      expect(secret).toMatch(/^v1\./)
      expect(secret).not.toContain('shh-456')
    })

    it('PROVIDER_OAUTH_* do not overwrite settings chosen through the service', async () => {
      const ctx = await freshContext(dialect, { file: true })
      const first = await ctx.build()
      await first.app.services.settings.update([
        { key: 'provider.oauth.client_id', value: 'operator-client' },
        { key: 'provider.oauth.enabled', value: false },
      ])
      await first.app.close()

      const { app } = await ctx.build({ env: { PROVIDER_OAUTH_CLIENT_ID: 'client-123', PROVIDER_OAUTH_CLIENT_SECRET: 'shh-456' } })
      expect(await app.services.settings.get('provider.oauth.client_id')).toBe('operator-client')
      expect(await app.services.settings.get('provider.oauth.enabled')).toBe(false)
      expect(await app.services.settings.get('provider.oauth.client_secret')).toBe('shh-456')
    })
  })

  describe('global.enable_swagger_docs', () => {
    it('switches /documentation off (404 envelope) and on again', async () => {
      const ctx = await freshContext(dialect)
      const { app } = await ctx.build()

      expect((await app.inject({ method: 'GET', url: '/documentation/json' })).statusCode).toBe(200)

      await app.services.settings.update([{ key: 'global.enable_swagger_docs', value: false }])
      for (const url of ['/documentation/json', '/documentation/yaml', '/documentation']) {
        const response = await app.inject({ method: 'GET', url })
        expect(response.statusCode, url).toBe(404)
        expect(response.json(), url).toEqual({ success: false, error: expect.any(String), code: 'NOT_FOUND' })
      }

      await app.services.settings.update([{ key: 'global.enable_swagger_docs', value: true }])
      const response = await app.inject({ method: 'GET', url: '/documentation/json' })
      expect(response.statusCode).toBe(200)
      expect(response.json()).toMatchObject({ openapi: '3.0.0' })
    })
  })
})
