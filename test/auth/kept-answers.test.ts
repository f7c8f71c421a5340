import type { FastifyInstance } from 'fastify'
import v8 from 'node:v8'
import vm from 'node:vm'
import pg from 'pg'
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest'
import { openDatabase } from '../../src/db/drivers/client.js'
import { KeptAnswers, keptAnswersStats } from '../../src/db/feed/kept-answers.js'
import { LISTENER_APPLICATION_NAME } from '../../src/db/feed/pg-changes.js'
import type { ChangeFeed, Database } from '../../src/db/types.js'
import { DEFAULT_PASSWORD, login, registerAndLogin } from '../helpers/accounts.js'
import { createTestContext, type TestContext } from '../helpers/app.js'
import { ADMIN_URL, createTestDatabase, type TestDatabase } from '../helpers/database.js'
import { bearer, issueTokens, revoke } from '../helpers/oauth.js'
import { warmUp } from '../helpers/races.js'
import { createToken, heartbeat, pair } from '../helpers/satellites.js'
import { client, type Account } from '../helpers/teams.js'
import { until } from '../helpers/until.js'

v8.setFlagsFromString('--expose-gc')
const gc = vm.runInNewContext('gc') as () => void

/**
 * The credential answers PostgreSQL instances keep in memory (src/db/feed/kept-answers.ts) against the
 * ways an answer could outlive its row: a read overtaken by a change, a transaction of this
 * instance still committing, the listening connection lost or silent, and sheer numbers. SQLite
 * keeps its answers by the database's change stamp instead (credential-reuse.test.ts runs the
 * same changes on both).
 */
describe('kept credential answers on PostgreSQL', () => {
  describe('the rules, on a real change feed', () => {
    let target: TestDatabase
    let database: Database
    let feed: ChangeFeed
    const made: Array<KeptAnswers<{ id: string; version: number }>> = []

    beforeAll(async () => {
      target = await createTestDatabase('postgresql')
      database = openDatabase({ dialect: 'postgresql', url: target.url }, { poolSize: 4, onPoolError: () => {} })
      feed = database.changes
    })
    afterEach(() => {
      for (const kept of made.splice(0)) kept.close()
    })
    afterAll(async () => {
      await database?.close()
      await target?.drop()
    })

    /**
     * Notifies outside a transaction and waits for the notification to come back through the
     * listener too (this instance is told at once, then again by the database).
     */
    const notifySettled = async (topic: string) => {
      let delivered = 0
      const unsubscribe = feed.subscribe((seen) => void (seen === topic && delivered++))
      try {
        await feed.notify(database.db, topic)
        await until(() => delivered >= 2, { what: `the echo of ${topic}` })
      } finally {
        unsubscribe()
      }
    }

    const keptOf = (max = 100) => {
      const kept = new KeptAnswers<{ id: string; version: number }>('test', feed, {
        families: ['user:'], topicsOf: (answer) => [`user:${answer.id}`], max, maxAgeMs: 60_000,
      })
      made.push(kept)
      return kept
    }
    /** A load that counts its calls and answers the row as it is now. */
    const row = { version: 1 }
    const counted = () => {
      const calls = { n: 0 }
      return { calls, load: async () => (calls.n++, { id: 'u1', version: row.version }) }
    }

    it('answers a repeat from memory while the feed is up, and reads again once the topic is notified', async () => {
      const kept = keptOf()
      await until(() => feed.up, { what: 'the change feed' })
      const { calls, load } = counted()
      await kept.read('digest', load)
      expect(await kept.read('digest', load)).toEqual({ id: 'u1', version: row.version })
      expect(calls.n).toBe(1)
      await notifySettled('user:u1')
      await kept.read('digest', load)
      expect(calls.n).toBe(2)
      // Another family's topic leaves it alone.
      await notifySettled('satellite:u1')
      await kept.read('digest', load)
      expect(calls.n).toBe(2)
      expect(kept.stats()).toMatchObject({ hits: 2, misses: 2, size: 1 })
    })

    it('does not keep an answer whose read a notification overtook', async () => {
      const kept = keptOf()
      let release!: () => void
      const gate = new Promise<void>((resolve) => (release = resolve))
      row.version = 10
      // The read starts, the row changes and its notification arrives, then the read ends with what it read before.
      const racing = kept.read('digest', async () => {
        const before = { id: 'u1', version: row.version }
        await gate
        return before
      })
      row.version = 11
      await feed.notify(database.db, 'user:u1')
      release()
      expect((await racing)?.version).toBe(10)
      const { calls, load } = counted()
      expect((await kept.read('digest', load))?.version).toBe(11)
      expect(calls.n).toBe(1)
    })

    it('neither answers from memory nor keeps what a transaction of this instance is changing, until it ended', async () => {
      const kept = keptOf()
      const { calls, load } = counted()
      await kept.read('digest', load)
      let inside = 0
      await database.transaction(async (tx) => {
        await feed.notify(tx, 'user:u1')
        // Uncommitted: the database may already hold the change by the time this instance is told.
        await kept.read('digest', load)
        await kept.read('digest', load)
        inside = calls.n
      })
      expect(inside).toBe(3)
      expect(kept.stats().hits).toBe(0)
      // Committed and delivered: kept again from the next read on.
      await kept.read('digest', load)
      await kept.read('digest', load)
      expect(calls.n).toBe(4)
      // A rolled-back transaction releases what it held too.
      await expect(database.transaction(async (tx) => {
        await feed.notify(tx, 'user:u1')
        throw new Error('rolled back')
      })).rejects.toThrow('rolled back')
      await kept.read('digest', load)
      await kept.read('digest', load)
      expect(calls.n).toBe(5)
    })

    it('stays within its bound for 100 000 distinct credentials, topics included', async () => {
      const kept = new KeptAnswers<{ id: string; version: number }>('bounded', feed, {
        families: ['user:'], topicsOf: (answer) => [`user:${answer.id}`, 'user:shared'], max: 10_000, maxAgeMs: 60_000,
      })
      made.push(kept as never)
      gc()
      const heapBefore = process.memoryUsage().heapUsed
      for (let index = 0; index < 100_000; index++) {
        await kept.read(`digest-${index}`, async () => ({ id: `user-${index}`, version: index }))
      }
      expect(kept.stats().size).toBe(10_000)
      // The newest are the ones kept.
      let reads = 0
      await kept.read('digest-99999', async () => (reads++, { id: 'user-99999', version: 0 }))
      await kept.read('digest-0', async () => (reads++, { id: 'user-0', version: 0 }))
      expect(reads).toBe(1)
      // What stays reachable is bounded too: 10 000 answers with their index, well under 20 MB.
      gc()
      expect(process.memoryUsage().heapUsed - heapBefore).toBeLessThan(20 * 1024 * 1024)
      expect(kept.stats().topics).toBe(10_001)
      // One topic shared by every answer drops them all, index included.
      await feed.notify(database.db, 'user:shared')
      expect(kept.stats()).toMatchObject({ size: 0, topics: 0 })
    })
  })

  describe('through the API', () => {
    let ctx: TestContext
    let app: FastifyInstance
    let admin: Account
    let pgAdmin: pg.Client
    let counter = 0

    beforeAll(async () => {
      ctx = await createTestContext('postgresql')
      app = (await ctx.build({ env: { RATE_LIMIT_ENABLED: 'false' } })).app
      const signedUp = await registerAndLogin(app, { username: 'kept-admin', email: 'kept-admin@example.test' })
      admin = { id: signedUp.user.id, username: 'kept-admin', email: 'kept-admin@example.test', cookie: signedUp.cookie }
      pgAdmin = new pg.Client({ connectionString: ADMIN_URL })
      await pgAdmin.connect()
      await until(() => app.services.database.changes.up, { what: 'the change feed' })
    })
    afterAll(async () => {
      await pgAdmin?.query(`alter database ${databaseName()} allow_connections true`).catch(() => {})
      await pgAdmin?.end()
      await ctx?.close()
    })

    const databaseName = () => new URL(ctx.database.url).pathname.slice(1)
    const listenerPid = async (): Promise<number> => {
      const found = await pgAdmin.query('select pid from pg_stat_activity where application_name = $1 and datname = $2', [LISTENER_APPLICATION_NAME, databaseName()])
      expect(found.rows).toHaveLength(1)
      return found.rows[0].pid as number
    }
    const me = (headers: Record<string, string>) => app.inject({ method: 'GET', url: '/api/users/me', headers })
    const someone = () => ({ username: `kept-${++counter}`, email: `kept-${counter}@example.test` })
    const hits = () => keptAnswersStats(app.services.database).reduce((sum, stats) => sum + stats.hits, 0)

    /**
     * Runs `body` while the listening connection's server process is stopped (SIGSTOP): the feed
     * still counts as up, but nothing the database sends arrives. What this instance changes
     * must count at its next request all the same: it tells itself at the commit.
     */
    async function withSilentListener(body: () => Promise<void>): Promise<void> {
      const pid = await listenerPid()
      process.kill(pid, 'SIGSTOP')
      try {
        await body()
        expect(app.services.database.changes.up).toBe(true)
      } finally {
        process.kill(pid, 'SIGCONT')
      }
    }

    it('answers repeat credentials from memory', async () => {
      const { cookie } = await registerAndLogin(app, someone())
      const before = hits()
      for (let index = 0; index < 5; index++) expect((await me({ cookie })).statusCode).toBe(200)
      expect(hits() - before).toBeGreaterThanOrEqual(4)
    })

    it('refuses at the next request what this instance just changed, though the database\'s notifications are not arriving', async () => {
      const account = someone()
      const { user, cookie } = await registerAndLogin(app, account)
      const second = (await login(app, account.username, DEFAULT_PASSWORD)).cookie!
      const third = (await login(app, account.username, DEFAULT_PASSWORD)).cookie!
      const tokens = await issueTokens(app, cookie, 'user:read')
      const satellite = await pair(app, (await createToken(client(app), admin)).token, `kept-sat-${counter}`)
      const adminRoute = () => app.inject({ method: 'GET', url: '/api/admin/users', headers: { cookie } })
      expect((await app.inject({ method: 'PUT', url: `/api/admin/users/${user.id}/role`, headers: { cookie: admin.cookie }, payload: { role_id: 'global_admin' } })).statusCode).toBe(200)
      for (let index = 0; index < 2; index++) {
        for (const headers of [{ cookie }, { cookie: second }, { cookie: third }, bearer(tokens.access_token)]) expect((await me(headers)).statusCode).toBe(200)
        expect((await adminRoute()).statusCode).toBe(200)
        expect((await heartbeat(app, satellite.id, satellite.apiKey)).statusCode).toBe(200)
      }

      await withSilentListener(async () => {
        const before = hits()
        expect((await me({ cookie: third })).statusCode).toBe(200)
        expect(hits()).toBe(before + 1)
        // A logout.
        expect((await app.inject({ method: 'POST', url: '/api/auth/logout', headers: { cookie: third } })).statusCode).toBe(200)
        expect((await me({ cookie: third })).statusCode).toBe(401)
        // A role change.
        expect((await app.inject({ method: 'PUT', url: `/api/admin/users/${user.id}/role`, headers: { cookie: admin.cookie }, payload: { role_id: 'global_user' } })).statusCode).toBe(200)
        expect((await adminRoute()).statusCode).toBe(403)
        // A token revocation.
        expect((await revoke(app, { token: tokens.access_token, client_id: 'service-gateway-cli' })).statusCode).toBe(200)
        expect((await me(bearer(tokens.access_token))).statusCode).toBe(401)
        // A password change ends the other session.
        const changed = await app.inject({ method: 'PUT', url: '/api/auth/email/change-password', headers: { cookie }, payload: { current_password: DEFAULT_PASSWORD, new_password: 'another horse battery' } })
        expect(changed.statusCode).toBe(200)
        expect((await me({ cookie: second })).statusCode).toBe(401)
        // A disabled satellite.
        expect((await client(app)('PUT', `/api/satellites/${satellite.id}`, admin, { status: 'disabled' })).statusCode).toBe(200)
        expect((await heartbeat(app, satellite.id, satellite.apiKey)).statusCode).toBe(403)
      })
    })

    it('with the listening connection lost, answers nothing from memory, so a change made meanwhile elsewhere is never missed', async () => {
      const { user, cookie } = await registerAndLogin(app, someone())
      expect((await me({ cookie })).statusCode).toBe(200)
      expect((await me({ cookie })).statusCode).toBe(200)
      // Every connection needed meanwhile is opened first (the app's pool, another writer's):
      // the database then refuses new ones, so the listener stays down.
      await warmUp(app, 10)
      const writer = new pg.Client({ connectionString: ctx.database.url })
      await writer.connect()
      await pgAdmin.query(`alter database ${databaseName()} allow_connections false`)
      try {
        await pgAdmin.query('select pg_terminate_backend($1)', [await listenerPid()])
        await until(() => !app.services.database.changes.up, { what: 'the feed going down' })
        const bypassed = () => keptAnswersStats(app.services.database).reduce((sum, stats) => sum + stats.bypassed, 0)
        const before = bypassed()
        expect((await me({ cookie })).statusCode).toBe(200)
        // Another writer (an operator's SQL) ends the session; its notification reaches nobody.
        expect((await writer.query('delete from sessions where user_id = $1', [user.id])).rowCount).toBeGreaterThan(0)
        expect((await me({ cookie })).statusCode).toBe(401)
        expect(bypassed()).toBe(before + 2)
        expect(app.services.database.changes.up).toBe(false)
      } finally {
        await pgAdmin.query(`alter database ${databaseName()} allow_connections true`)
        await writer.end()
      }
      await until(() => app.services.database.changes.up, { what: 'the feed coming back' })
      expect((await me({ cookie })).statusCode).toBe(401)
    })
  })
})
