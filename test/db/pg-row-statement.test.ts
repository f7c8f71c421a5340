import pg from 'pg'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { DatabaseUnavailableError } from '../../src/db/errors.js'
import { openPostgres } from '../../src/db/drivers/pg.js'
import type { Database } from '../../src/db/types.js'
import { adminQuery, createTestDatabase, type TestDatabase } from '../helpers/database.js'

/**
 * The credential lookups run on PostgreSQL as named statements written straight to pg's
 * connection, with the result described once per process (src/db/readers/pg-row-statement.ts). What a
 * caller relies on: the row decoded as pg would decode it, every execution its own answer when
 * many share a few connections, a server error that fails one execution and leaves the connection
 * usable, and statements prepared again on the connections that replace lost ones.
 */
describe('row statements on PostgreSQL', () => {
  let database: TestDatabase
  let db: Database
  const timed: number[] = []

  beforeAll(async () => {
    database = await createTestDatabase('postgresql')
    db = openPostgres({ url: database.url, poolSize: 3, onError: () => {}, onQuery: (seconds) => timed.push(seconds) })
  })
  afterAll(async () => {
    await db?.close()
    await database?.drop()
  })

  it("decodes each column as pg's own parsers do, dates as PostgreSQL sent them, and answers undefined for no row", async () => {
    const read = db.prepareRow('typed_row', `select $1::text, $2::int4, $3::boolean, null::text, $4::timestamptz, '{"x":[1,2]}'::jsonb, 12.5::float8 where $1::text <> 'none'`)
    const at = new Date('2026-11-23T10:11:12.345Z')
    const before = timed.length
    const row = await read(['it’s "quoted"', 42, false, at])
    expect(row).toEqual(['it’s "quoted"', 42, false, null, expect.any(String), { x: [1, 2] }, 12.5])
    expect(new Date(row![4] as string).getTime()).toBe(at.getTime())
    // The same again on a connection where the statement is prepared and described already.
    expect(await read(['again', -1, true, at])).toEqual(['again', -1, true, null, row![4], { x: [1, 2] }, 12.5])
    expect(await read(['none', 0, true, at])).toBeUndefined()
    // Every execution is timed, as every other statement is.
    expect(timed.length - before).toBe(3)
  })

  it('gives every execution its own row when many share the pool, the first ones included', async () => {
    const read = db.prepareRow('echo_row', 'select $1::text, $2::int4 * 2')
    const answers = await Promise.all(Array.from({ length: 60 }, (_, index) => read([`caller ${index}`, index])))
    expect(answers).toEqual(Array.from({ length: 60 }, (_, index) => [`caller ${index}`, index * 2]))
  })

  it("fails one execution with the server's error and keeps the connection and the statement usable", async () => {
    const read = db.prepareRow('divide_row', 'select 100 / $1::int4')
    expect(await read([4])).toEqual([25])
    const failure = await read([0]).catch((error: unknown) => error)
    expect(failure).toBeInstanceOf(pg.DatabaseError)
    expect((failure as pg.DatabaseError).code).toBe('22012')
    // Every connection of the pool still answers, with the statement as prepared.
    expect(await Promise.all([read([5]), read([10]), read([20]), read([25])])).toEqual([[20], [10], [5], [4]])
  })

  it('refuses a parameter with no text form before it reaches a connection', async () => {
    const read = db.prepareRow('object_row', 'select $1::text')
    await expect(read([{ not: 'text' }])).rejects.toThrow(TypeError)
    const stats = db.poolStats!()
    expect(stats.idle).toBe(stats.total)
    expect(await read(['fine'])).toEqual(['fine'])
  })

  it('prepares the statement again on the connections that replace lost ones', async () => {
    const read = db.prepareRow('survivor_row', 'select $1::text')
    await Promise.all([read(['a']), read(['b']), read(['c'])])
    const name = new URL(database.url).pathname.slice(1)
    await adminQuery(`select pg_terminate_backend(pid) from pg_stat_activity where datname = '${name}' and pid <> pg_backend_pid()`)
    await new Promise((resolve) => setTimeout(resolve, 50))
    const outcomes: unknown[] = []
    for (let attempt = 0; attempt < 5; attempt++) {
      const outcome = await read(['back']).catch((error: unknown) => error)
      outcomes.push(outcome)
      if (Array.isArray(outcome)) break
      // A connection found lost on the way is the database's absence, not the request's fault.
      expect(outcome).toBeInstanceOf(DatabaseUnavailableError)
    }
    expect(outcomes.at(-1)).toEqual(['back'])
  })
})
