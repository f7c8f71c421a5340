import { existsSync } from 'node:fs'
import { join } from 'node:path'
import { sql } from 'drizzle-orm'
import type { FastifyPluginAsync, InjectOptions } from 'fastify'
import pg from 'pg'
import { describe, expect, it, onTestFinished } from 'vitest'
import { policy } from '../../src/auth/policies.js'
import { CORE_SETTINGS } from '../../src/modules/settings/definitions.js'
import { createTestContext, type TestApp, type TestContext } from '../helpers/app.js'
import { DIALECTS, type TestDialect } from '../helpers/database.js'
import { rawRows } from '../helpers/sql.js'

const SETUP_MODE = { DATABASE_AUTO_SETUP: 'false' }

/** Public routes: one that never touches the database, one that reads a setting. */
const probe: FastifyPluginAsync = async (app) => {
  app.get('/api/test/static', { config: { auth: policy.public() } }, async () => ({ success: true, data: { static: true } }))
  app.get('/api/test/probe', { config: { auth: policy.public() } }, async () => ({
    success: true,
    data: { login: await app.services.settings.get('global.enable_login') },
  }))
}

async function freshContext(dialect: TestDialect, options: { file?: boolean } = {}): Promise<TestContext> {
  const ctx = await createTestContext(dialect, options)
  onTestFinished(() => ctx.close())
  return ctx
}

async function setupModeApp(ctx: TestContext): Promise<TestApp> {
  return ctx.build({ env: SETUP_MODE, extend: probe })
}

const setup = (app: TestApp['app'], body: unknown) =>
  app.inject({ method: 'POST', url: '/api/db/setup', payload: body as object })

/** Tables in the test database, looked at from outside the app. */
async function pgTables(url: string): Promise<string[]> {
  const client = new pg.Client({ connectionString: url })
  await client.connect()
  try {
    const { rows } = await client.query<{ table_name: string }>(
      `select table_name from information_schema.tables where table_schema not in ('pg_catalog', 'information_schema')`,
    )
    return rows.map((row) => row.table_name)
  } finally {
    await client.end()
  }
}

describe.each(DIALECTS)('setup mode on %s', (dialect) => {
  const other = dialect === 'sqlite' ? 'postgresql' : 'sqlite'

  it('answers health, db status and documentation, and 503 DATABASE_NOT_CONFIGURED elsewhere', async () => {
    const ctx = await freshContext(dialect, { file: true })
    const { app } = await setupModeApp(ctx)

    const status = await app.inject({ method: 'GET', url: '/api/db/status' })
    expect(status.statusCode).toBe(200)
    expect(status.json()).toEqual({ success: true, data: { configured: false, initialized: false, dialect: null } })

    expect((await app.inject({ method: 'GET', url: '/api/health' })).statusCode).toBe(200)
    const docs = await app.inject({ method: 'GET', url: '/documentation/json' })
    expect(docs.statusCode).toBe(200)
    expect(docs.json()).toMatchObject({ openapi: '3.0.0' })

    for (const url of ['/api/health/ready', '/api/test/static', '/api/test/probe']) {
      const response = await app.inject({ method: 'GET', url })
      expect(response.statusCode, url).toBe(503)
      expect(response.json(), url).toEqual({ success: false, error: expect.any(String), code: 'DATABASE_NOT_CONFIGURED' })
    }
    // An unknown route is still a 404, not a 503.
    expect((await app.inject({ method: 'GET', url: '/api/nowhere' })).statusCode).toBe(404)
    expect(() => app.services).toThrow(expect.objectContaining({ code: 'DATABASE_NOT_CONFIGURED' }))

    // Nothing was created or migrated before setup.
    if (dialect === 'sqlite') expect(existsSync(join(ctx.dataDir, 'test.db'))).toBe(false)
    else expect(await pgTables(ctx.database.url)).toEqual([])
  })

  describe('POST /api/db/setup refuses bad requests and stays unconfigured', () => {
    const cases: Array<[string, InjectOptions, number, string]> = [
      ['the dialect DATABASE_URL does not name', { payload: { type: other } }, 400, 'VALIDATION_ERROR'],
      ['an unknown dialect', { payload: { type: 'mysql' } }, 400, 'VALIDATION_ERROR'],
      ['a type that is not a string', { payload: { type: 42 } }, 400, 'VALIDATION_ERROR'],
      ['no type', { payload: {} }, 400, 'VALIDATION_ERROR'],
      ['connection details in the body', { payload: { type: dialect, url: 'postgres://evil@example.com/db' } }, 400, 'VALIDATION_ERROR'],
      ['text/plain', { payload: `{"type":"${dialect}"}`, headers: { 'content-type': 'text/plain' } }, 415, 'UNSUPPORTED_MEDIA_TYPE'],
      ['malformed JSON', { payload: '{"type":', headers: { 'content-type': 'application/json' } }, 400, 'INVALID_JSON'],
    ]

    it.each(cases)('%s', async (_case, request, status, code) => {
      const ctx = await freshContext(dialect)
      const { app } = await setupModeApp(ctx)

      const response = await app.inject({ method: 'POST', url: '/api/db/setup', ...request })
      expect(response.statusCode).toBe(status)
      expect(response.json()).toMatchObject({ success: false, code })
      if (code === 'VALIDATION_ERROR') expect(response.json().details).toEqual(expect.arrayContaining([expect.objectContaining({ field: expect.any(String) })]))

      expect((await app.inject({ method: 'GET', url: '/api/db/status' })).json().data).toEqual({ configured: false, initialized: false, dialect: null })
      expect(existsSync(join(ctx.dataDir, 'database-setup.json'))).toBe(false)
      // A refused attempt does not block the real setup.
      expect((await setup(app, { type: dialect })).statusCode).toBe(200)
    })

    it('names the type field when the dialect does not match DATABASE_URL', async () => {
      const ctx = await freshContext(dialect)
      const { app } = await setupModeApp(ctx)
      const response = await setup(app, { type: other })
      expect(response.json().details).toEqual([expect.objectContaining({ field: 'type' })])
    })
  })

  it('sets up the database: migrations, seeded settings, every route serving, then 409 ALREADY_CONFIGURED', async () => {
    const ctx = await freshContext(dialect)
    const { app } = await setupModeApp(ctx)

    const response = await setup(app, { type: dialect })
    expect(response.statusCode).toBe(200)
    expect(response.json()).toEqual({
      success: true,
      message: expect.any(String),
      data: { configured: true, initialized: true, dialect },
    })
    expect((await app.inject({ method: 'GET', url: '/api/db/status' })).json()).toEqual({
      success: true,
      data: { configured: true, initialized: true, dialect },
    })

    const ready = await app.inject({ method: 'GET', url: '/api/health/ready' })
    expect(ready.statusCode).toBe(200)
    expect(ready.json()).toEqual({ success: true, data: { status: 'ready', dialect } })
    expect((await app.inject({ method: 'GET', url: '/api/test/static' })).statusCode).toBe(200)
    const probed = await app.inject({ method: 'GET', url: '/api/test/probe' })
    expect(probed.statusCode).toBe(200)
    expect(probed.json()).toEqual({ success: true, data: { login: true } })

    const rows = await rawRows(app.services.database, sql`select key from settings`)
    // The core's settings and those of the plugins loaded at start (the example, plugins/notes).
    expect(rows.map(([key]) => key).sort()).toEqual([...Object.keys(CORE_SETTINGS), 'plugin.notes.greeting'].sort())

    const again = await setup(app, { type: dialect })
    expect(again.statusCode).toBe(409)
    expect(again.json()).toEqual({ success: false, error: expect.any(String), code: 'ALREADY_CONFIGURED' })
  })

  it('lets exactly one of two concurrent setup calls through', async () => {
    const ctx = await freshContext(dialect)
    const { app } = await setupModeApp(ctx)

    const responses = await Promise.all([setup(app, { type: dialect }), setup(app, { type: dialect })])
    expect(responses.map((response) => response.statusCode).sort()).toEqual([200, 409])
    expect(responses.find((response) => response.statusCode === 409)!.json()).toMatchObject({ code: 'ALREADY_CONFIGURED' })
    expect((await app.inject({ method: 'GET', url: '/api/test/probe' })).statusCode).toBe(200)
  })

  it('remembers the choice in DATA_DIR across a restart', async () => {
    const ctx = await freshContext(dialect, { file: true })
    const first = await setupModeApp(ctx)
    expect((await setup(first.app, { type: dialect })).statusCode).toBe(200)
    await first.app.services.settings.update([{ key: 'team.member_limit', value: 33 }])
    await first.app.close()

    const { app } = await setupModeApp(ctx)
    expect((await app.inject({ method: 'GET', url: '/api/db/status' })).json()).toEqual({
      success: true,
      data: { configured: true, initialized: true, dialect },
    })
    expect((await app.inject({ method: 'GET', url: '/api/health/ready' })).statusCode).toBe(200)
    expect((await app.inject({ method: 'GET', url: '/api/test/probe' })).statusCode).toBe(200)
    expect(await app.services.settings.get('team.member_limit')).toBe(33)
    expect((await setup(app, { type: dialect })).statusCode).toBe(409)
  })
})
