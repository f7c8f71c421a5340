import type { FastifyInstance } from 'fastify'
import pg from 'pg'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { registerAndLogin } from '../helpers/accounts.js'
import { createTestContext, type TestContext } from '../helpers/app.js'
import { ADMIN_URL } from '../helpers/database.js'

/**
 * During a failover the database address may lead, for a moment, to a server that takes no
 * writes: the standby before its promotion, or the old primary being demoted. PostgreSQL answers
 * a write there with SQLSTATE 25006 (read_only_sql_transaction), exactly as it does in a session
 * whose transactions are read-only, which is how this test makes one (a real standby is the
 * cluster soak's, `scripts/cluster-soak.ts`). Such a write is a 503 DATABASE_UNAVAILABLE with
 * Retry-After, never a 500; reads still answer; the connection is given up, so once the address
 * leads to a writable server again the same service writes without a restart.
 */
describe('writes reaching a read-only PostgreSQL server', () => {
  let ctx: TestContext
  let app: FastifyInstance
  let admin: pg.Client
  const name = () => new URL(ctx.database.url).pathname.slice(1)

  beforeAll(async () => {
    ctx = await createTestContext('postgresql')
    ;({ app } = await ctx.build({ env: { RATE_LIMIT_ENABLED: 'false' } }))
    admin = new pg.Client({ connectionString: ADMIN_URL })
    await admin.connect()
  })
  afterAll(async () => {
    await admin?.end()
    await ctx?.close()
  })

  /** New sessions of the service's database start read-only (or not), and the open ones end. */
  async function readOnly(on: boolean): Promise<void> {
    await admin.query(on ? `alter database ${name()} set default_transaction_read_only = on` : `alter database ${name()} reset default_transaction_read_only`)
    await admin.query('select pg_terminate_backend(pid) from pg_stat_activity where datname = $1 and pid <> pg_backend_pid()', [name()])
  }

  it('answers 503 with Retry-After for writes, still answers reads, and writes again without a restart', async () => {
    const { cookie } = await registerAndLogin(app, { username: 'standby-user', email: 'standby-user@example.test' })
    const createTeam = (n: number) => app.inject({ method: 'POST', url: '/api/teams', headers: { cookie }, payload: { name: `Team ${n}` } })
    const rename = (n: number) => app.inject({ method: 'PUT', url: '/api/auth/profile/update', headers: { cookie }, payload: { first_name: `Name ${n}` } })
    expect((await app.inject({ method: 'PUT', url: '/api/settings/team.creation_limit', headers: { cookie }, payload: { value: 100 } })).statusCode).toBe(200)
    expect((await createTeam(0)).statusCode).toBe(201)
    expect((await rename(0)).statusCode).toBe(200)

    await readOnly(true)
    try {
      const statuses: number[] = []
      for (let n = 1; n <= 12; n++) {
        for (const response of [await createTeam(n), await rename(n)]) {
          statuses.push(response.statusCode)
          if (response.statusCode === 503) {
            expect(response.json()).toMatchObject({ success: false, code: 'DATABASE_UNAVAILABLE' })
            expect(Number(response.headers['retry-after'])).toBeGreaterThan(0)
          }
        }
        // Reads are served by a read-only server.
        expect((await app.inject({ method: 'GET', url: '/api/teams/me', headers: { cookie } })).statusCode).toBe(200)
      }
      // Right after the connections were cut, a few requests may meet no connection at all (503
      // as well); none is a 500, and the writes are refused.
      expect(statuses.filter((status) => status !== 503)).toEqual([])
    } finally {
      await readOnly(false)
    }

    // Writable again: each connection that met the read-only server was given up, so the service
    // writes again, at worst after the connections opened meanwhile met it too.
    let written = 0
    const afterwards: number[] = []
    for (let n = 100; n < 130 && written < 3; n++) {
      const status = (await createTeam(n)).statusCode
      afterwards.push(status)
      if (status === 201) written++
    }
    expect(written, `answers after the switch: ${afterwards.join(', ')}`).toBe(3)
    expect(afterwards.filter((status) => status !== 201 && status !== 503)).toEqual([])
  })
})
