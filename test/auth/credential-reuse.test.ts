import BetterSqlite3 from 'better-sqlite3'
import type { FastifyInstance } from 'fastify'
import pg from 'pg'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { registerAndLogin } from '../helpers/accounts.js'
import { createTestContext, type TestContext } from '../helpers/app.js'
import { manualClock, type ManualClock } from '../helpers/clock.js'
import { DIALECTS } from '../helpers/database.js'
import { bearer, issueTokens, revoke } from '../helpers/oauth.js'

/**
 * On SQLite the session and access-token lookups answer again from the last read while nothing in
 * the database has changed (src/db/row-reader.ts). Every change must still count at the very next
 * request: one made by this instance, by another instance on the same database, or by any other
 * connection (a command-line tool). Two apps on one database stand for two instances; the same
 * tests run on PostgreSQL, where every request reads the database.
 */
describe.each(DIALECTS)('credential checks after a change, on %s', (dialect) => {
  let ctx: TestContext
  let a: FastifyInstance
  let b: FastifyInstance
  let clock: ManualClock
  let admin: { cookie: string }
  let counter = 0

  beforeAll(async () => {
    ctx = await createTestContext(dialect, { file: true })
    clock = manualClock(Date.now())
    a = (await ctx.build({ clock, env: { RATE_LIMIT_ENABLED: 'false' } })).app
    b = (await ctx.build({ clock, env: { RATE_LIMIT_ENABLED: 'false' } })).app
    admin = await registerAndLogin(a, { username: 'reuse-admin', email: 'reuse-admin@example.test' })
  })
  afterAll(() => ctx?.close())

  const someone = () => {
    counter++
    return { username: `reuse-${counter}`, email: `reuse-${counter}@example.test` }
  }
  const me = (app: FastifyInstance, headers: Record<string, string>) => app.inject({ method: 'GET', url: '/api/users/me', headers })
  /** Two reads, so that the second can be answered again from the first. */
  const readTwice = async (app: FastifyInstance, headers: Record<string, string>) => {
    expect((await me(app, headers)).statusCode).toBe(200)
    const second = await me(app, headers)
    expect(second.statusCode).toBe(200)
    return second.json().data
  }

  /** A plain connection of its own, as a command-line tool would open. */
  async function otherConnection(statement: string, values: unknown[]): Promise<number> {
    if (dialect === 'sqlite') {
      const client = new BetterSqlite3(ctx.database.url.slice('sqlite:'.length))
      try {
        return client.prepare(statement.replace(/\$\d/g, '?')).run(...values).changes
      } finally {
        client.close()
      }
    }
    const client = new pg.Client({ connectionString: ctx.database.url })
    await client.connect()
    try {
      return (await client.query(statement, values)).rowCount ?? 0
    } finally {
      await client.end()
    }
  }

  it('a logout on one instance ends the session on the other at its next request', async () => {
    const { cookie } = await registerAndLogin(a, someone())
    await readTwice(b, { cookie })
    expect((await a.inject({ method: 'POST', url: '/api/auth/logout', headers: { cookie } })).statusCode).toBe(200)
    expect((await me(b, { cookie })).statusCode).toBe(401)
  })

  it('a logout on the same instance ends the session at the next request', async () => {
    const { cookie } = await registerAndLogin(b, someone())
    await readTwice(b, { cookie })
    expect((await b.inject({ method: 'POST', url: '/api/auth/logout', headers: { cookie } })).statusCode).toBe(200)
    expect((await me(b, { cookie })).statusCode).toBe(401)
  })

  it('a role change on one instance is the role on the other at the next request', async () => {
    const { user, cookie } = await registerAndLogin(a, someone())
    expect(await readTwice(b, { cookie })).toMatchObject({ role_id: 'global_user' })
    const changed = await a.inject({ method: 'PUT', url: `/api/admin/users/${user.id}/role`, headers: { cookie: admin.cookie }, payload: { role_id: 'global_admin' } })
    expect(changed.statusCode).toBe(200)
    const after = await me(b, { cookie })
    expect(after.statusCode).toBe(200)
    expect(after.json().data).toMatchObject({ role_id: 'global_admin' })
  })

  it('a session deleted by another connection is refused at the next request', async () => {
    const { user, cookie } = await registerAndLogin(a, someone())
    await readTwice(b, { cookie })
    expect(await otherConnection('delete from sessions where user_id = $1', [user.id])).toBeGreaterThan(0)
    expect((await me(b, { cookie })).statusCode).toBe(401)
  })

  it('a name changed by another connection is shown at the next request', async () => {
    const { user, cookie } = await registerAndLogin(a, someone())
    await readTwice(b, { cookie })
    expect(await otherConnection('update users set first_name = $1 where id = $2', ['Renamed', user.id])).toBe(1)
    expect((await me(b, { cookie })).json().data).toMatchObject({ first_name: 'Renamed' })
  })

  it('an access token revoked on one instance is refused on the other at its next request', async () => {
    const { cookie } = await registerAndLogin(a, someone())
    const tokens = await issueTokens(a, cookie, 'user:read')
    await readTwice(b, bearer(tokens.access_token))
    expect((await revoke(a, { token: tokens.access_token, client_id: 'service-gateway-cli' })).statusCode).toBe(200)
    const after = await me(b, bearer(tokens.access_token))
    expect(after.statusCode).toBe(401)
    expect(after.headers['www-authenticate']).toContain('invalid_token')
  })

  it('a session or token past its expiry is refused although nothing was written since', async () => {
    const { cookie } = await registerAndLogin(a, someone())
    const tokens = await issueTokens(a, cookie, 'user:read')
    await readTwice(b, { cookie })
    await readTwice(b, bearer(tokens.access_token))
    // Past the access token's lifetime (an hour at most) but not the session's.
    clock.advance(2 * 60 * 60 * 1000)
    expect((await me(b, bearer(tokens.access_token))).statusCode).toBe(401)
    expect((await me(b, { cookie })).statusCode).toBe(200)
    // Past the session's 30 days.
    clock.advance(31 * 24 * 60 * 60 * 1000)
    expect((await me(b, { cookie })).statusCode).toBe(401)
  })
})
