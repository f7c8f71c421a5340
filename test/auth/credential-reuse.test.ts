import BetterSqlite3 from 'better-sqlite3'
import type { FastifyInstance } from 'fastify'
import pg from 'pg'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { DEFAULT_PASSWORD, login, registerAndLogin } from '../helpers/accounts.js'
import { createTestContext, type TestContext } from '../helpers/app.js'
import { manualClock, type ManualClock } from '../helpers/clock.js'
import { DIALECTS } from '../helpers/database.js'
import { bearer, issueTokens, revoke } from '../helpers/oauth.js'
import { createToken, heartbeat, pair } from '../helpers/satellites.js'
import { client, type Account } from '../helpers/teams.js'
import { until } from '../helpers/until.js'

/**
 * The session, access-token and satellite-key lookups answer repeat credentials from memory: on
 * SQLite while nothing in the database has changed (a change stamp read per request), on
 * PostgreSQL until a change notification names what the answer depends on (kept-answers.ts; the
 * database's own triggers send them for every writer). Every change must still count: on the
 * instance that made it at the very next request, on another instance (a second app on the same
 * database) at its next request on SQLite and as soon as the notification arrives on PostgreSQL
 * (a generous bound here; the bench measures it), and the same for a change made by any other
 * connection (a command-line tool, an operator's SQL).
 */
describe.each(DIALECTS)('credential checks after a change, on %s', (dialect) => {
  let ctx: TestContext
  let a: FastifyInstance
  let b: FastifyInstance
  let clock: ManualClock
  let admin: { user: { id: string }; cookie: string }
  let counter = 0

  beforeAll(async () => {
    ctx = await createTestContext(dialect, { file: true })
    clock = manualClock(Date.now())
    a = (await ctx.build({ clock, env: { RATE_LIMIT_ENABLED: 'false' } })).app
    b = (await ctx.build({ clock, env: { RATE_LIMIT_ENABLED: 'false' } })).app
    admin = await registerAndLogin(a, { username: 'reuse-admin', email: 'reuse-admin@example.test' })
    // On PostgreSQL, answers are kept only while change notifications are received.
    if (dialect === 'postgresql') await until(() => a.services.database.changes.up && b.services.database.changes.up, { what: 'the change feeds' })
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
  /**
   * What another instance answers after a change: at its next request on SQLite; on PostgreSQL
   * once the change's notification has arrived, so the request is repeated until `accepted`
   * (within 5 s) — an answer kept past the notification would never be.
   */
  async function onOther<T>(request: () => Promise<T>, accepted: (answer: T) => boolean): Promise<T> {
    const deadline = Date.now() + 5_000
    for (;;) {
      const answer = await request()
      if (accepted(answer) || dialect === 'sqlite' || Date.now() > deadline) return answer
      await new Promise((resolve) => setTimeout(resolve, 5))
    }
  }
  /** A plain connection of its own, as a command-line tool would open. */
  async function otherConnection(statement: string, values: unknown[]): Promise<number> {
    if (dialect === 'sqlite') {
      const connection = new BetterSqlite3(ctx.database.url.slice('sqlite:'.length))
      try {
        return connection.prepare(statement.replace(/\$\d/g, '?')).run(...values).changes
      } finally {
        connection.close()
      }
    }
    const connection = new pg.Client({ connectionString: ctx.database.url })
    await connection.connect()
    try {
      return (await connection.query(statement, values)).rowCount ?? 0
    } finally {
      await connection.end()
    }
  }
  const statusOf = (status: number) => (response: { statusCode: number }) => response.statusCode === status

  it('a logout on one instance ends the session on the other at its next request', async () => {
    const { cookie } = await registerAndLogin(a, someone())
    await readTwice(b, { cookie })
    expect((await a.inject({ method: 'POST', url: '/api/auth/logout', headers: { cookie } })).statusCode).toBe(200)
    expect((await me(a, { cookie })).statusCode).toBe(401)
    expect((await onOther(() => me(b, { cookie }), statusOf(401))).statusCode).toBe(401)
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
    const after = await onOther(() => me(b, { cookie }), (response) => response.json().data?.role_id === 'global_admin')
    expect(after.statusCode).toBe(200)
    expect(after.json().data).toMatchObject({ role_id: 'global_admin' })
  })

  it('a session deleted by another connection is refused at the next request', async () => {
    const { user, cookie } = await registerAndLogin(a, someone())
    await readTwice(b, { cookie })
    expect(await otherConnection('delete from sessions where user_id = $1', [user.id])).toBeGreaterThan(0)
    expect((await onOther(() => me(b, { cookie }), statusOf(401))).statusCode).toBe(401)
  })

  it('a name changed by another connection is shown at the next request', async () => {
    const { user, cookie } = await registerAndLogin(a, someone())
    await readTwice(b, { cookie })
    expect(await otherConnection('update users set first_name = $1 where id = $2', ['Renamed', user.id])).toBe(1)
    expect((await onOther(() => me(b, { cookie }), (response) => response.json().data.first_name === 'Renamed')).json().data).toMatchObject({ first_name: 'Renamed' })
  })

  it('an access token revoked on one instance is refused on the other at its next request', async () => {
    const { cookie } = await registerAndLogin(a, someone())
    const tokens = await issueTokens(a, cookie, 'user:read')
    await readTwice(b, bearer(tokens.access_token))
    await readTwice(a, bearer(tokens.access_token))
    expect((await revoke(a, { token: tokens.access_token, client_id: 'service-gateway-cli' })).statusCode).toBe(200)
    expect((await me(a, bearer(tokens.access_token))).statusCode).toBe(401)
    const after = await onOther(() => me(b, bearer(tokens.access_token)), statusOf(401))
    expect(after.statusCode).toBe(401)
    expect(after.headers['www-authenticate']).toContain('invalid_token')
  })

  it('a password change ends the other sessions and the tokens, here at once and on the other instance', async () => {
    const account = someone()
    const { cookie: kept } = await registerAndLogin(a, account)
    const { cookie: other } = await login(a, account.username, DEFAULT_PASSWORD)
    const tokens = await issueTokens(a, kept, 'user:read')
    for (const app of [a, b]) {
      await readTwice(app, { cookie: other! })
      await readTwice(app, bearer(tokens.access_token))
    }
    const changed = await a.inject({ method: 'PUT', url: '/api/auth/email/change-password', headers: { cookie: kept }, payload: { current_password: DEFAULT_PASSWORD, new_password: 'a different horse battery' } })
    expect(changed.statusCode).toBe(200)
    expect((await me(a, { cookie: other! })).statusCode).toBe(401)
    expect((await me(a, bearer(tokens.access_token))).statusCode).toBe(401)
    expect((await me(a, { cookie: kept })).statusCode).toBe(200)
    expect((await onOther(() => me(b, { cookie: other! }), statusOf(401))).statusCode).toBe(401)
    expect((await onOther(() => me(b, bearer(tokens.access_token)), statusOf(401))).statusCode).toBe(401)
  })

  it('a demoted admin loses the admin routes, here at once and on the other instance', async () => {
    const { user, cookie } = await registerAndLogin(a, someone())
    const promote = (role: string) => a.inject({ method: 'PUT', url: `/api/admin/users/${user.id}/role`, headers: { cookie: admin.cookie }, payload: { role_id: role } })
    expect((await promote('global_admin')).statusCode).toBe(200)
    const adminRoute = (app: FastifyInstance) => app.inject({ method: 'GET', url: '/api/admin/users', headers: { cookie } })
    expect((await onOther(() => adminRoute(b), statusOf(200))).statusCode).toBe(200)
    expect((await adminRoute(a)).statusCode).toBe(200)
    expect((await adminRoute(b)).statusCode).toBe(200)
    expect((await promote('global_user')).statusCode).toBe(200)
    expect((await adminRoute(a)).statusCode).toBe(403)
    expect((await onOther(() => adminRoute(b), statusOf(403))).statusCode).toBe(403)
  })

  it('switching login off refuses the credentials of everyone but admins, here at once and on the other instance', async () => {
    const { cookie } = await registerAndLogin(a, someone())
    const tokens = await issueTokens(a, cookie, 'user:read')
    await readTwice(b, { cookie })
    await readTwice(b, bearer(tokens.access_token))
    const setLogin = (value: boolean) => a.inject({ method: 'PUT', url: '/api/settings/global.enable_login', headers: { cookie: admin.cookie }, payload: { value } })
    expect((await setLogin(false)).statusCode).toBe(200)
    try {
      const refused = (response: { statusCode: number; json(): { code?: string } }) => response.statusCode === 403 && response.json().code === 'LOGIN_DISABLED'
      expect(refused(await me(a, { cookie }))).toBe(true)
      expect(refused(await onOther(() => me(b, { cookie }), refused))).toBe(true)
      expect(refused(await me(b, bearer(tokens.access_token)))).toBe(true)
      expect((await me(b, { cookie: admin.cookie })).statusCode).toBe(200)
    } finally {
      expect((await setLogin(true)).statusCode).toBe(200)
    }
    expect((await onOther(() => me(b, { cookie }), statusOf(200))).statusCode).toBe(200)
  })

  it('a deleted user is refused, here at once and on the other instance', async () => {
    const { user, cookie } = await registerAndLogin(a, someone())
    await readTwice(a, { cookie })
    await readTwice(b, { cookie })
    expect((await a.inject({ method: 'DELETE', url: `/api/admin/users/${user.id}`, headers: { cookie: admin.cookie } })).statusCode).toBe(200)
    expect((await me(a, { cookie })).statusCode).toBe(401)
    expect((await onOther(() => me(b, { cookie }), statusOf(401))).statusCode).toBe(401)
  })

  it('a default team renamed by another connection is the one both instances show', async () => {
    const { user, cookie } = await registerAndLogin(a, someone())
    const team = (app: FastifyInstance) => app.inject({ method: 'GET', url: '/api/teams/me/default', headers: { cookie } })
    for (const app of [a, b]) {
      expect((await team(app)).statusCode).toBe(200)
      expect((await team(app)).statusCode).toBe(200)
    }
    expect(await otherConnection('update teams set name = $1 where owner_id = $2 and is_default', ['Renamed team', user.id])).toBe(1)
    const renamed = (response: { json(): { data: { team: { name: string } } } }) => response.json().data.team.name === 'Renamed team'
    for (const app of [a, b]) expect(renamed(await onOther(() => team(app), renamed))).toBe(true)
  })

  it('a disabled or deleted satellite\'s key is refused, here at once and on the other instance', async () => {
    const admins: Account = { id: admin.user.id, username: 'reuse-admin', email: 'reuse-admin@example.test', cookie: admin.cookie }
    const satellite = await pair(a, (await createToken(client(a), admins)).token, `reuse-sat-${dialect}`)
    for (const app of [a, b]) {
      expect((await heartbeat(app, satellite.id, satellite.apiKey)).statusCode).toBe(200)
      expect((await heartbeat(app, satellite.id, satellite.apiKey)).statusCode).toBe(200)
    }
    expect((await client(a)('PUT', `/api/satellites/${satellite.id}`, admins, { status: 'disabled' })).statusCode).toBe(200)
    expect((await heartbeat(a, satellite.id, satellite.apiKey)).statusCode).toBe(403)
    expect((await onOther(() => heartbeat(b, satellite.id, satellite.apiKey), statusOf(403))).statusCode).toBe(403)
    expect((await client(a)('PUT', `/api/satellites/${satellite.id}`, admins, { status: 'active' })).statusCode).toBe(200)
    expect((await heartbeat(a, satellite.id, satellite.apiKey)).statusCode).toBe(200)
    expect((await onOther(() => heartbeat(b, satellite.id, satellite.apiKey), statusOf(200))).statusCode).toBe(200)
    expect((await client(a)('DELETE', `/api/satellites/${satellite.id}`, admins)).statusCode).toBe(200)
    expect((await heartbeat(a, satellite.id, satellite.apiKey)).statusCode).toBe(401)
    expect((await onOther(() => heartbeat(b, satellite.id, satellite.apiKey), statusOf(401))).statusCode).toBe(401)
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
