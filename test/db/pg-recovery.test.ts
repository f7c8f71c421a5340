import pg from 'pg'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createTestContext, type TestApp, type TestContext } from '../helpers/app.js'

const ADMIN_URL = process.env.TEST_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres'

/**
 * When PostgreSQL drops the service's connections (a restart, a failover), the process
 * does not crash, and it serves again without a restart of its own. Terminating every backend of
 * the test database is what a server restart does to the pool, without disturbing other tests.
 */
describe('PostgreSQL connections dropped under the service', () => {
  let ctx: TestContext
  let subject: TestApp

  beforeAll(async () => {
    ctx = await createTestContext('postgresql')
    subject = await ctx.build()
  })
  afterAll(() => ctx.close())

  async function terminateBackends(): Promise<number> {
    const name = new URL(ctx.database.url).pathname.slice(1)
    const admin = new pg.Client({ connectionString: ADMIN_URL })
    await admin.connect()
    try {
      const result = await admin.query(
        'select pg_terminate_backend(pid) from pg_stat_activity where datname = $1 and pid <> pg_backend_pid()',
        [name],
      )
      return result.rowCount ?? 0
    } finally {
      await admin.end()
    }
  }

  it('survives, and answers ready again without a restart', async () => {
    // Warm the pool so that there are idle connections to lose.
    await Promise.all(Array.from({ length: 4 }, () => subject.app.inject({ method: 'GET', url: '/api/health/ready' })))
    expect(await terminateBackends()).toBeGreaterThan(0)
    await new Promise((resolve) => setTimeout(resolve, 50))

    expect((await subject.app.inject({ method: 'GET', url: '/api/health' })).statusCode).toBe(200)
    const statuses: number[] = []
    for (let attempt = 0; attempt < 5; attempt++) {
      const response = await subject.app.inject({ method: 'GET', url: '/api/health/ready' })
      statuses.push(response.statusCode)
      if (response.statusCode === 200) break
      expect(response.json().code).toBe('DATABASE_UNAVAILABLE')
    }
    expect(statuses.at(-1)).toBe(200)
    // Settings reads (a DB-bound path) work again too.
    await subject.app.services.settings.update([{ key: 'global.page_url', value: 'https://app.example.test' }])
    expect(await subject.app.services.settings.get('global.page_url')).toBe('https://app.example.test')
  })
})
