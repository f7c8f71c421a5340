import pg from 'pg'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { channelRepository } from '../../src/db/repositories/channel.js'
import { installationsRepository } from '../../src/db/repositories/installations.js'
import type { Database } from '../../src/db/types.js'
import { createTestContext, type TestContext } from '../helpers/app.js'
import { keyPair } from '../helpers/hpke.js'
import { importDocuments, install, weatherDocument } from '../helpers/installations.js'
import { createToken, heartbeat, pair, SATELLITE_LIMITS, type Paired } from '../helpers/satellites.js'
import { client, crew as makeCrew, signUp } from '../helpers/teams.js'
import { waitFor } from '../satellite/support.js'

/**
 * A satellite reports an instance's phase and its tools at about the same moment when the
 * instance starts. The tools report locks the installation, then writes the instance's state row;
 * the phase report inserts that same row, whose foreign-key check takes a key-share lock on the
 * installation. With `FOR UPDATE` the two wait for each other and PostgreSQL aborts one as a
 * deadlock (the satellite sees 409 and has to send it again). The installation's lock is
 * `FOR NO KEY UPDATE`, which a key-share lock passes: both reports are written. (SQLite runs one
 * write transaction at a time and cannot deadlock.)
 */
describe('the reports of a starting instance on postgresql', () => {
  let ctx: TestContext
  let database: Database
  let satellite: Paired
  let installationId: string
  /** A connection of its own, outside the app's pool (which the two reports may fill). */
  let observer: pg.Client

  /** Sessions of this database waiting for a lock. */
  const waitingForLocks = async (): Promise<number> => {
    const { rows } = await observer.query<{ waiting: number }>("SELECT count(*)::int AS waiting FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock'")
    return rows[0]!.waiting
  }

  beforeAll(async () => {
    ctx = await createTestContext('postgresql')
    observer = new pg.Client({ connectionString: ctx.database.url })
    await observer.connect()
    const { app } = await ctx.build({ limits: SATELLITE_LIMITS })
    database = app.services.database
    const call = client(app)
    const admin = await signUp(app, 'locks_admin')
    let seq = 0
    const a = await makeCrew(call, () => signUp(app, `locks_${++seq}`), 'Locks Team')
    const token = await createToken(call, a.teamAdmin, { teamId: a.team.id })
    satellite = await pair(app, token.token, 'locks-sat', { satellite_url: 'http://127.0.0.1:7101', public_key: (await keyPair()).publicKey })
    expect((await heartbeat(app, satellite.id, satellite.apiKey)).statusCode).toBe(200)
    const [serverId] = await importDocuments(call, admin, [weatherDocument('io.github.example/locks-weather')])
    installationId = (await install(call, a.team.id, a.teamAdmin, {
      server_id: serverId, name: 'locks-weather', values: { 'env:WEATHER_API_KEY': 'wk-locks', 'env:PERSONAL_TOKEN': 'pt-locks', 'arg:data_dir': '/srv' },
    })).id
  })
  afterAll(async () => {
    await observer?.end()
    await ctx?.close()
  })

  it('a phase report inserting the state row while the tools report holds the installation is not a deadlock: both are written', async () => {
    const row = { instanceId: installationId, installationId, userId: null, satelliteId: satellite.id, specRevision: 1, specHash: 'h', reportedAt: new Date() }
    const channel = channelRepository(database)
    let phase: Promise<unknown> | undefined
    await database.transaction(async (tx) => {
      expect(await installationsRepository(database).with(tx).lockById(installationId)).toBeDefined()
      // The phase report comes now, outside the transaction, and inserts the row first.
      let settled = false
      phase = channel.putPhase({ ...row, phase: 'running', message: null, startedAt: null }).finally(() => (settled = true))
      phase.catch(() => undefined)
      // Either it went through, or it waits for a lock the transaction holds.
      await waitFor(async () => settled || (await waitingForLocks()) > 0, 'the phase report written or waiting')
      await channelRepository(database, tx).putTools({ ...row, tools: [{ name: 'forecast', input_schema: { type: 'object' } }] })
    })
    await phase
    const [state] = await channel.allStatesOf(installationId)
    expect(state).toMatchObject({ phase: 'running', tools: [{ name: 'forecast' }] })
  })
})
