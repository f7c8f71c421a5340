import type { FastifyInstance, LightMyRequestResponse } from 'fastify'
import pg from 'pg'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { LISTENER_APPLICATION_NAME } from '../../src/db/feed/pg-changes.js'
import { createTestContext, type TestContext } from '../helpers/app.js'
import { ADMIN_URL, DIALECTS } from '../helpers/database.js'
import { keyPair } from '../helpers/hpke.js'
import { sleep } from '../helpers/http-load.js'
import { warmUp } from '../helpers/races.js'
import { importDocuments, install, weatherDocument } from '../helpers/installations.js'
import { createToken, heartbeat, pair, SATELLITE_LIMITS, type Paired } from '../helpers/satellites.js'
import { client, crew as makeCrew, signUp, type Account, type Call, type Crew } from '../helpers/teams.js'

/** What every held request here waits at most; each test asserts it answered well before. */
const WAIT_SECONDS = 20
/** Room for a held request to run out its wait, so that a test that fails says how rather than timing out. */
const HELD_TEST_TIMEOUT_MS = 90_000
/** How long the listening connections are kept down at least: long enough for a few of the held requests' re-checks. */
const DOWN_FOR_MS = 3_000
/** How soon another instance learns of a change through its notification (the API promises about a second). */
const NOTIFIED_WITHIN_MS = 1_000
/** The default DATABASE_POOL_SIZE: every connection a pool may open. */
const POOL_SIZE = 10

/**
 * The desired-state long-poll across instances of the service and through faults: a held request
 * wakes on a change made by another instance, keeps answering correctly while the connection that
 * listens for changes is cut (and wakes through notifications again once it is back), follows the
 * conditional-request rules of RFC 9110 for If-None-Match, and is answered at once when its
 * instance closes.
 *
 * Two apps built on one database stand for two instances (a SQLite file on SQLite). On PostgreSQL
 * instances tell each other of changes (NOTIFY); on SQLite nothing crosses between processes, so an
 * instance checks the document's stamp on every read and every second for a held request. Cutting
 * the listening connection is PostgreSQL's alone.
 */
describe.each(DIALECTS)('the desired-state channel across instances on %s', (dialect) => {
  let ctx: TestContext
  let a: FastifyInstance
  let b: FastifyInstance
  let call: Call
  let admin: Account
  let crew: Crew
  let satellite: Paired
  let weatherId: string
  let seq = 0

  const desired = (app: FastifyInstance, headers: Record<string, string> = {}, query = ''): Promise<LightMyRequestResponse> =>
    app.inject({ method: 'GET', url: `/api/satellites/${satellite.id}/desired-state${query}`, headers: { authorization: `Bearer ${satellite.apiKey}`, ...headers } })
  /** The current document as `app` serves it, with its ETag. */
  const current = async (app: FastifyInstance = a): Promise<{ revision: string; etag: string; ids: string[] }> => {
    const response = await desired(app)
    expect(response.statusCode, response.body).toBe(200)
    const { revision, instances } = response.json().data as { revision: string; instances: Array<{ installation_id: string }> }
    return { revision, etag: response.headers.etag as string, ids: instances.map((each) => each.installation_id) }
  }
  /** A request held on `app` until the document differs from `etag` (or the wait runs out), with when it answered. */
  const hold = (app: FastifyInstance, etag: string, waitSeconds = WAIT_SECONDS) => {
    const started = Date.now()
    return desired(app, { 'if-none-match': etag }, `?wait=${waitSeconds}`).then((response) => ({ response, ms: Date.now() - started }))
  }
  /** Resolves once `app` holds `n` requests (a request sent is held only after its first read). */
  const heldOn = async (app: FastifyInstance, n: number) => {
    for (let tries = 0; app.services.channel.documents.held < n; tries++) {
      if (tries > 500) throw new Error(`${n} held requests expected, ${app.services.channel.documents.held} held`)
      await sleep(10)
    }
  }
  /** Resolves once `app` receives change notifications from other instances (PostgreSQL; SQLite has none to receive). */
  const untilUp = async (app: FastifyInstance) => {
    if (dialect === 'sqlite') return
    for (let tries = 0; !app.services.database.changes.up; tries++) {
      if (tries > 1_000) throw new Error('the change feed did not come back')
      await sleep(10)
    }
  }
  /** Reads until `accept` takes the answer, for at most `withinMs`; the last answer either way. */
  const eventually = async <T>(read: () => Promise<T>, accept: (value: T) => boolean, withinMs = NOTIFIED_WITHIN_MS): Promise<T> => {
    const deadline = Date.now() + withinMs
    for (;;) {
      const value = await read()
      if (accept(value) || Date.now() > deadline) return value
      await sleep(10)
    }
  }
  /** A change of the satellite's document made through `app`: a new installation (with no secret) placed on it. */
  const change = async (app: FastifyInstance = a): Promise<string> =>
    (await install(client(app), crew.team.id, crew.teamAdmin, { server_id: weatherId, name: `inst-${++seq}`, target: { kind: 'package', index: 1 } })).id

  beforeAll(async () => {
    ctx = await createTestContext(dialect, { file: true })
    a = (await ctx.build({ limits: SATELLITE_LIMITS })).app
    b = (await ctx.build({ limits: SATELLITE_LIMITS })).app
    call = client(a)
    admin = await signUp(a, 'inst_admin')
    crew = await makeCrew(call, () => signUp(a, `inst_${++seq}`), 'Instances Team')
    const token = await createToken(call, crew.teamAdmin, { teamId: crew.team.id })
    satellite = await pair(a, token.token, `inst-sat-${dialect}`, { public_key: (await keyPair()).publicKey })
    expect((await heartbeat(a, satellite.id, satellite.apiKey)).statusCode).toBe(200)
    weatherId = (await importDocuments(call, admin, [weatherDocument('io.github.example/instances-weather')]))[0]!
  })
  afterAll(() => ctx.close())

  describe('If-None-Match (RFC 9110, section 13.1.2)', () => {
    it('304 with the ETag for the current one, a list holding it, its weak form or *; 200 otherwise', async () => {
      await change()
      const { etag, revision } = await current()
      const expectUnchanged = async (ifNoneMatch: string) => {
        const response = await desired(a, { 'if-none-match': ifNoneMatch })
        expect(response.statusCode, `If-None-Match: ${ifNoneMatch} → ${response.body}`).toBe(304)
        expect(response.body).toBe('')
        expect(response.headers.etag).toBe(etag)
      }
      const expectDocument = async (ifNoneMatch: string) => {
        const response = await desired(a, { 'if-none-match': ifNoneMatch })
        expect(response.statusCode, `If-None-Match: ${ifNoneMatch}`).toBe(200)
        expect(response.headers.etag).toBe(etag)
        expect(response.json().data.revision).toBe(revision)
      }
      await expectUnchanged(etag)
      // `*` matches any current representation, and the satellite's document always exists.
      await expectUnchanged('*')
      // A list matches when any member does; the comparison is the weak one.
      await expectUnchanged(`"not-it", ${etag}`)
      await expectUnchanged(`"not-it",${etag} , "nor-this"`)
      await expectUnchanged(`W/${etag}`)
      await expectUnchanged(`"not-it", W/${etag}`)
      await expectDocument('"not-it"')
      await expectDocument('"not-it", "nor-this"')
      // The revision without its quotes is no entity tag.
      await expectDocument(revision)
      await expectDocument('')

      // Once the document changed, the old ETag (alone or in a list) gets the new document.
      await change()
      const next = await current()
      expect(next.etag).not.toBe(etag)
      for (const stale of [etag, `${etag}, "not-it"`]) {
        const response = await desired(a, { 'if-none-match': stale })
        expect(response.statusCode).toBe(200)
        expect(response.json().data.revision).toBe(next.revision)
      }
    })

    it('a held request with * runs out its wait with 304: every document matches it', async () => {
      const { etag } = await current()
      const { response, ms } = await hold(a, '*', 1)
      expect(response.statusCode).toBe(304)
      expect(response.headers.etag).toBe(etag)
      expect(ms).toBeGreaterThanOrEqual(900)
    })
  })

  it('closing an instance answers its held requests at once with 304, not after their wait', { timeout: HELD_TEST_TIMEOUT_MS }, async () => {
    const closing = (await ctx.build({ limits: SATELLITE_LIMITS })).app
    const { etag } = await current(closing)
    const held = hold(closing, etag, 30)
    await heldOn(closing, 1)
    const closeStarted = Date.now()
    await closing.close()
    const { response, ms } = await held
    console.info(`[${dialect}] a held request answered ${Date.now() - closeStarted} ms after close began (held ${ms} ms in all)`)
    expect(response.statusCode, response.body).toBe(304)
    expect(response.headers.etag).toBe(etag)
    expect(ms).toBeLessThan(5_000)
  })

  it('a request held on B wakes with the new revision when an installation is changed on A', { timeout: HELD_TEST_TIMEOUT_MS }, async () => {
    await untilUp(b)
    const before = await current(b)
    const held = hold(b, before.etag)
    await heldOn(b, 1)
    const id = await change(a)
    const { response, ms } = await held
    console.info(`[${dialect}] a request held on B woke ${ms} ms after it was sent (wait ${WAIT_SECONDS} s)`)
    expect(response.statusCode, response.body).toBe(200)
    expect(ms).toBeLessThan(WAIT_SECONDS * 1000 / 2)
    const data = response.json().data as { revision: string; instances: Array<{ installation_id: string }> }
    expect(data.revision).not.toBe(before.revision)
    expect(data.instances.map((each) => each.installation_id)).toContain(id)
    expect(response.headers.etag).toBe(`"${data.revision}"`)
    expect((await current(a)).revision).toBe(data.revision)
  })

  it('a read on B right after a change on A serves the new document', async () => {
    await untilUp(b)
    // Notifications between instances take a moment on PostgreSQL, so B may answer the old document until its notification
    // arrives; on SQLite, where none comes from another process, B must check the document is current on every read.
    for (let round = 0; round < 3; round++) {
      const id = await change(a)
      const onB = dialect === 'sqlite' ? await current(b) : await eventually(() => current(b), (doc) => doc.ids.includes(id))
      expect(onB.ids).toContain(id)
      expect(onB.revision).toBe((await current(a)).revision)
    }
  })

  describe.runIf(dialect === 'postgresql')('two instances sharing change notifications', () => {
    /** The listening connections of this test's database (the other test files' are left alone). */
    const databaseName = () => new URL(ctx.database.url).pathname.slice(1)
    const listeners = async (admin: pg.Client): Promise<number> => {
      const found = await admin.query(
        'select count(*)::int as n from pg_stat_activity where application_name = $1 and datname = $2',
        [LISTENER_APPLICATION_NAME, databaseName()],
      )
      return found.rows[0].n as number
    }
    const terminateListeners = async (admin: pg.Client): Promise<number> => {
      const killed = await admin.query(
        'select count(pg_terminate_backend(pid))::int as n from pg_stat_activity where application_name = $1 and datname = $2',
        [LISTENER_APPLICATION_NAME, databaseName()],
      )
      return killed.rows[0].n as number
    }
    let pgAdmin: pg.Client

    beforeAll(async () => {
      pgAdmin = new pg.Client({ connectionString: ADMIN_URL })
      await pgAdmin.connect()
      await Promise.all([untilUp(a), untilUp(b)])
    })
    afterAll(() => pgAdmin?.end())

    it('with the listening connections cut, held requests still answer the change and nothing stale is served; the listeners come back', { timeout: HELD_TEST_TIMEOUT_MS }, async () => {
      expect(await listeners(pgAdmin)).toBe(2)
      const before = await current(a)
      expect((await current(b)).revision).toBe(before.revision)
      // The listeners must stay down, not reconnect between two cuts: the database refuses new
      // connections for a while (superusers too). The pools keep what they opened, so every
      // connection the requests need meanwhile is opened now.
      await Promise.all([warmUp(a, POOL_SIZE), warmUp(b, POOL_SIZE)])
      const heldOnA = hold(a, before.etag)
      const heldOnB = hold(b, before.etag)
      await Promise.all([heldOn(a, 1), heldOn(b, 1)])

      // B's feed, watched: whether it came back at any moment before its held request answered.
      const statuses: Array<{ up: boolean; at: number }> = []
      const unwatch = b.services.database.changes.onStatus((up) => statuses.push({ up, at: Date.now() }))
      await pgAdmin.query(`alter database ${databaseName()} allow_connections false`)
      try {
        expect(await terminateListeners(pgAdmin)).toBe(2)
        for (let tries = 0; a.services.database.changes.up || b.services.database.changes.up; tries++) {
          if (tries > 500) throw new Error('the change feeds did not go down')
          await sleep(10)
        }
        const changedAt = Date.now()
        const id = await change(a)
        // Nothing stale: right after the change, either instance serves the new document.
        const onA = await current(a)
        const onB = await current(b)
        expect(onA.revision).not.toBe(before.revision)
        expect(onB.revision).toBe(onA.revision)
        expect(onB.ids).toContain(id)

        // The held requests answer it, B's while its feed is still down (it re-checked the stamp).
        const [answeredOnA, answeredOnB] = await Promise.all([heldOnA, heldOnB])
        const answeredAt = Date.now()
        for (const { response, ms } of [answeredOnA, answeredOnB]) {
          expect(response.statusCode, response.body).toBe(200)
          expect(response.json().data.revision).toBe(onA.revision)
          expect(ms).toBeLessThan(WAIT_SECONDS * 1000 / 2)
        }
        console.info(
          `[${dialect}] listeners cut: held requests answered ${answeredOnA.ms} ms (A) and ${answeredOnB.ms} ms (B) after being sent, ` +
          `${answeredAt - changedAt} ms after the change`,
        )
        expect(statuses.map((status) => status.up)).toEqual([false])
        expect(b.services.database.changes.up).toBe(false)
        expect(await listeners(pgAdmin)).toBe(0)

        // A second change while still down: both serve it at once, and a held request on B sees it within its re-checks.
        const settled = await current(b)
        const held = hold(b, settled.etag)
        await heldOn(b, 1)
        const second = await change(a)
        const again = await current(a)
        expect((await current(b)).revision).toBe(again.revision)
        const { response } = await held
        expect(response.statusCode, response.body).toBe(200)
        expect((response.json().data.instances as Array<{ installation_id: string }>).map((each) => each.installation_id)).toContain(second)
        expect(b.services.database.changes.up).toBe(false)
        const remaining = DOWN_FOR_MS - (Date.now() - changedAt)
        if (remaining > 0) await sleep(remaining)
      } finally {
        await pgAdmin.query(`alter database ${databaseName()} allow_connections true`)
        unwatch()
      }

      // The listeners come back by themselves, and a change wakes a held request through them again.
      await Promise.all([untilUp(a), untilUp(b)])
      expect(await listeners(pgAdmin)).toBe(2)
      const settled = await current(b)
      const held = hold(b, settled.etag)
      await heldOn(b, 1)
      const id = await change(a)
      const { response, ms } = await held
      console.info(`[${dialect}] listeners back: a request held on B woke ${ms} ms after it was sent`)
      expect(response.statusCode, response.body).toBe(200)
      expect(ms).toBeLessThan(WAIT_SECONDS * 1000 / 2)
      expect((response.json().data.instances as Array<{ installation_id: string }>).map((each) => each.installation_id)).toContain(id)
    })
  })
})
