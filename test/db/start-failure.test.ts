import { randomBytes } from 'node:crypto'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { DatabaseStartError } from '../../src/db/drivers/start-failure.js'
import { createTestContext, type TestContext } from '../helpers/app.js'
import { captureLogs } from '../helpers/log-capture.js'

/**
 * PostgreSQL refusing the service, seen from inside the process (the built server's exit is in
 * test/system/startup.test.ts): the log line names host, port, database and user, never the
 * password, and says what to do; the start gives up after DATABASE_CONNECT_TIMEOUT, setup at once.
 */

const ADMIN_URL = process.env.TEST_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres'

type Entry = Record<string, any>

/** The test server's URL with another user or database, and a password the log must not show. */
function variantUrl({ user, database }: { user?: string; database?: string }): { url: string; password: string } {
  const url = new URL(ADMIN_URL)
  if (user !== undefined) url.username = user
  if (database !== undefined) url.pathname = `/${database}`
  if (url.password === '') url.password = `never-logged-${randomBytes(6).toString('hex')}`
  return { url: url.toString(), password: decodeURIComponent(url.password) }
}

describe('PostgreSQL refusing the service', () => {
  let ctx: TestContext
  const admin = new URL(ADMIN_URL)
  const host = admin.hostname
  const port = admin.port === '' ? 5432 : Number(admin.port)

  beforeAll(async () => {
    ctx = await createTestContext('postgresql')
  })
  afterAll(() => ctx.close())

  it('an unknown role: the start gives up after DATABASE_CONNECT_TIMEOUT with one line naming the role, and what to do', async () => {
    const role = `no_such_role_${randomBytes(4).toString('hex')}`
    const { url, password } = variantUrl({ user: role, database: 'postgres' })
    const logs = captureLogs('info')
    const started = Date.now()
    const failure = await ctx.build({ env: { DATABASE_URL: url, DATABASE_CONNECT_TIMEOUT: '1' }, logger: logs.logger }).then(
      () => null,
      (error: unknown) => error,
    )
    expect(failure).toBeInstanceOf(DatabaseStartError)
    // Tried again meanwhile: not given up before the timeout.
    expect(Date.now() - started).toBeGreaterThanOrEqual(1000)
    const entries = logs.lines.map((line) => JSON.parse(line) as Entry)
    const errors = entries.filter((entry) => entry.level >= 50)
    expect(errors).toEqual([
      expect.objectContaining({
        host, port, user: role, database: 'postgres', code: '28000',
        msg: expect.stringMatching(new RegExp(`^PostgreSQL at ${host}:${port} refused user "${role}" for database postgres: .*role "${role}" does not exist.*; create the role \\(createuser\\) or allow the connection in pg_hba\\.conf; gave up after 1 s \\(DATABASE_CONNECT_TIMEOUT\\)$`)),
      }),
    ])
    expect(entries.filter((entry) => entry.level === 40 && String(entry.msg).includes(role))).toHaveLength(1)
    expect(logs.text()).not.toContain(password)
    expect(logs.text()).not.toContain('"stack"')
  })

  it('setup mode: POST /api/db/setup against a missing database answers 503 at once and logs the createdb hint', async () => {
    const database = `svc_missing_${randomBytes(4).toString('hex')}`
    const { url, password } = variantUrl({ database })
    const logs = captureLogs('info')
    const { app } = await ctx.build({ env: { DATABASE_URL: url, DATABASE_AUTO_SETUP: 'false' }, logger: logs.logger })
    const response = await app.inject({ method: 'POST', url: '/api/db/setup', payload: { type: 'postgresql' } })
    expect(response.statusCode).toBe(503)
    expect(response.json()).toMatchObject({ success: false, code: 'DATABASE_UNAVAILABLE' })
    const user = decodeURIComponent(admin.username)
    const line = logs.lines.map((entry) => JSON.parse(entry) as Entry).find((entry) => entry.level === 50)
    expect(line).toMatchObject({
      host, port, database, user, code: '3D000',
      msg: `database setup failed: PostgreSQL database "${database}" does not exist on ${host}:${port} (user ${user}); create it with: createdb -h ${host} -p ${port} -U ${user} ${database}`,
    })
    expect(logs.text()).not.toContain(password)
    // Still in setup mode: the call may be made again once the database exists.
    expect((await app.inject({ method: 'GET', url: '/api/db/status' })).json().data).toMatchObject({ configured: false })
  })
})
