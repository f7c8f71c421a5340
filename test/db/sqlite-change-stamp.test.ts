import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { setImmediate as nextTurn } from 'node:timers/promises'
import BetterSqlite3 from 'better-sqlite3'
import { sql, type SQL } from 'drizzle-orm'
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest'
import { openSqlite } from '../../src/db/drivers/sqlite.js'
import { topics } from '../../src/db/feed/topics.js'
import type { Database } from '../../src/db/types.js'

/**
 * SQLite's change feed hears another process's commits only through the file's change stamp,
 * which `fresh` reads once per request and turn of the event loop: what kept answers are given
 * must follow a commit made elsewhere from the next request on, from the next turn for work that
 * is not a request, and at once after a write of this process.
 */
describe('the SQLite change stamp', () => {
  let dir: string
  let database: Database
  let other: BetterSqlite3.Database
  const heard: string[] = []
  /** A statement through the service's own driver (Drizzle's SQLite `run`). */
  const write = (statement: SQL) => (database.db as unknown as { run(query: SQL): Promise<unknown> }).run(statement)

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'svc-stamp-'))
    database = openSqlite(join(dir, 'service.db'))
    await database.migrate()
    await write(sql`create table probe (n integer)`)
    // Another process on the same file, as a second instance or a command-line tool would be.
    other = new BetterSqlite3(join(dir, 'service.db'))
    database.changes.subscribe((topic) => heard.push(topic))
  })
  afterAll(async () => {
    other?.close()
    await database?.close()
    rmSync(dir, { recursive: true, force: true })
  })
  beforeEach(async () => {
    // A turn of its own, the stamp read and nothing heard yet.
    await nextTurn()
    database.changes.lookAgain()
    expect(database.changes.fresh()).toBe(true)
    heard.length = 0
  })

  const otherCommits = () => other.prepare('insert into probe (n) values (1)').run()
  const everything = () => heard.filter((topic) => topic === topics.everything).length

  it('an unchanged database is read once for the kept reads of a request, and ends nothing', async () => {
    for (let i = 0; i < 5; i++) expect(database.changes.fresh()).toBe(true)
    database.changes.lookAgain()
    expect(database.changes.fresh()).toBe(true)
    await nextTurn()
    expect(database.changes.fresh()).toBe(true)
    expect(everything()).toBe(0)
  })

  it("another process's commit is seen by the next request, even in the same turn", () => {
    otherCommits()
    // The same request, read a moment ago: as if all its reads were made when it began.
    expect(database.changes.fresh()).toBe(true)
    expect(everything()).toBe(0)
    database.changes.lookAgain()
    expect(database.changes.fresh()).toBe(true)
    expect(everything()).toBe(1)
  })

  it("another process's commit is seen in the next turn by work that is no request", async () => {
    otherCommits()
    await nextTurn()
    expect(database.changes.fresh()).toBe(true)
    expect(everything()).toBe(1)
  })

  it("this process's own write is seen by the next kept read, in the same request and turn", async () => {
    await write(sql`insert into probe (n) values (2)`)
    expect(database.changes.fresh()).toBe(true)
    expect(everything()).toBe(1)
  })

  it('inside a transaction nothing kept is given', async () => {
    await database.transaction(async () => {
      expect(database.changes.fresh()).toBe(false)
    })
  })
})
