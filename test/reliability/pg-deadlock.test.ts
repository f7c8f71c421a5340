import { sql } from 'drizzle-orm'
import type { FastifyPluginAsync } from 'fastify'
import { Type } from 'typebox'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { policy } from '../../src/auth/policies.js'
import type { Database } from '../../src/db/types.js'
import { createTestContext, type TestApp, type TestContext } from '../helpers/app.js'
import { rawRows } from '../helpers/sql.js'

/**
 * Two transactions that lock the same two rows in opposite orders deadlock on PostgreSQL, which
 * breaks the deadlock by aborting one of them (SQLSTATE 40P01). That request lost a race and
 * wrote nothing: it is answered 409 CONFLICT in the envelope, telling the client to send it again,
 * never 500. (SQLite runs one write transaction at a time and cannot deadlock.)
 */

/** Both requests hold their first lock before either asks for its second. */
function barrier(parties: number): () => Promise<void> {
  let waiting = 0
  let release!: () => void
  const all = new Promise<void>((resolve) => { release = resolve })
  return () => {
    waiting += 1
    if (waiting === parties) release()
    return all
  }
}

function lockRoutes(database: () => Database, bothHoldFirstLock: () => Promise<void>): FastifyPluginAsync {
  return async (app) => {
    app.post('/api/test/lock-in-order/:order', {
      config: { auth: policy.public() },
      schema: { tags: ['Test'], summary: 'lock two rows in the given order', params: Type.Object({ order: Type.Union([Type.Literal('ab'), Type.Literal('ba')]) }) },
    }, async (request) => {
      const { order } = request.params as { order: 'ab' | 'ba' }
      const [first, second] = order === 'ab' ? ['a', 'b'] : ['b', 'a']
      await database().transaction(async (tx) => {
        await tx.execute(sql`SELECT id FROM deadlock_rows WHERE id = ${first} FOR UPDATE`)
        await bothHoldFirstLock()
        await tx.execute(sql`SELECT id FROM deadlock_rows WHERE id = ${second} FOR UPDATE`)
        await tx.execute(sql`UPDATE deadlock_rows SET touched_by = ${order} WHERE id IN ('a', 'b')`)
      })
      return { success: true as const, data: { order } }
    })
  }
}

describe('a deadlock PostgreSQL breaks', () => {
  let ctx: TestContext
  let subject: TestApp
  let arrive = barrier(2)

  beforeAll(async () => {
    ctx = await createTestContext('postgresql')
    subject = await ctx.build({ extend: lockRoutes(() => subject.app.services.database, () => arrive()) })
    await rawRows(subject.app.services.database, sql`CREATE TABLE deadlock_rows (id text PRIMARY KEY, touched_by text)`)
    await rawRows(subject.app.services.database, sql`INSERT INTO deadlock_rows (id) VALUES ('a'), ('b')`)
  })
  afterAll(() => ctx.close())

  it('is answered 409 CONFLICT to the request it aborted, whose writes are gone; the other succeeds', async () => {
    arrive = barrier(2)
    const [ab, ba] = await Promise.all([
      subject.app.inject({ method: 'POST', url: '/api/test/lock-in-order/ab' }),
      subject.app.inject({ method: 'POST', url: '/api/test/lock-in-order/ba' }),
    ])
    const statuses = [ab.statusCode, ba.statusCode].sort()
    expect(statuses).toEqual([200, 409])
    const [won, lost] = ab.statusCode === 200 ? [ab, ba] : [ba, ab]
    expect(lost.json()).toMatchObject({ success: false, code: 'CONFLICT', error: expect.stringMatching(/send it again/i) })
    expect(lost.body).not.toMatch(/deadlock|40P01|SELECT/i)
    // Only the winner's write is there.
    const touched = await rawRows(subject.app.services.database, sql`SELECT DISTINCT touched_by FROM deadlock_rows`)
    expect(touched).toEqual([[won.json().data.order]])
  })
})
