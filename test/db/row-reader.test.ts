import { and, eq, sql } from 'drizzle-orm'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { rowReader } from '../../src/db/readers/row-reader.js'
import { defaultTeamOfUser } from '../../src/db/repositories/teams.js'
import type { Database } from '../../src/db/types.js'
import { registerAndLogin } from '../helpers/accounts.js'
import { createTestContext, type TestContext } from '../helpers/app.js'
import { DIALECTS } from '../helpers/database.js'

/**
 * The credential lookups run on the driver and decode rows themselves: they must give what
 * Drizzle's own select gives for the same query — dates as dates, booleans as booleans, nulls,
 * and null for a table left-joined without a row.
 */
describe.each(DIALECTS)('row reader on %s', (dialect) => {
  let ctx: TestContext
  let database: Database

  beforeAll(async () => {
    ctx = await createTestContext(dialect)
    const { app } = await ctx.build({ env: { RATE_LIMIT_ENABLED: 'false' } })
    await registerAndLogin(app, { username: 'reader', email: 'reader@example.test' })
    database = app.services.database
  })
  afterAll(() => ctx?.close())

  const query = (db: Database['db'], t: Database['t'], selection: Record<string, unknown>, withTeams: boolean) => {
    const base = db.select(selection as never).from(t.sessions).innerJoin(t.users, eq(t.users.id, t.sessions.userId))
    return (withTeams ? base.leftJoin(t.teams, and(defaultTeamOfUser(database), eq(t.teams.name, sql.placeholder('team')))) : base)
      .where(eq(t.sessions.userId, sql.placeholder('user')))
  }

  it("answers what Drizzle's select answers, a left join without a row as null, and undefined for no row", async () => {
    const { t, db } = database
    const [session] = await db.select().from(t.sessions)
    const [team] = await db.select().from(t.teams).where(eq(t.teams.ownerId, session!.userId))
    const read = rowReader(database, `test_reader_${dialect}`, { session: t.sessions, user: t.users, team: t.teams }, (selection) => query(db, t, selection, true), { optional: ['team'] })

    const [expected] = await query(db, t, { session: t.sessions, user: t.users, team: t.teams }, true).prepare('test_drizzle').execute({ user: session!.userId, team: team!.name })
    const found = await read({ user: session!.userId, team: team!.name })
    expect(found).toEqual(expected)
    expect(found!.session.expiresAt).toBeInstanceOf(Date)
    expect(found!.user.emailVerified).toEqual(expect.any(Boolean))
    expect(found!.team).toMatchObject({ id: team!.id, isDefault: true })

    // The team's name does not match: the left join finds nothing.
    expect(await read({ user: session!.userId, team: 'no such team' })).toMatchObject({ session: { id: session!.id }, team: null })
    expect(await read({ user: 'no such user', team: team!.name })).toBeUndefined()
  })
})

/**
 * A reusing reader (SQLite) answers again with its last answer only while nothing could have
 * changed it: a write inside a transaction is neither answered from before it nor kept after a
 * rollback. On PostgreSQL every call reads.
 */
describe.each(DIALECTS)('reusing row reader on %s', (dialect) => {
  let ctx: TestContext
  let database: Database
  let userId: string

  beforeAll(async () => {
    ctx = await createTestContext(dialect)
    const { app } = await ctx.build({ env: { RATE_LIMIT_ENABLED: 'false' } })
    userId = (await registerAndLogin(app, { username: 'reused', email: 'reused@example.test' })).user.id
    database = app.services.database
  })
  afterAll(() => ctx?.close())

  const reader = () => rowReader(database, `test_reuse_${dialect}`, { user: database.t.users }, (selection) => database.db
    .select(selection as never).from(database.t.users).where(eq(database.t.users.id, sql.placeholder('id'))), { reuse: true })
  const rename = (db: Database['db'], firstName: string) => db.update(database.t.users).set({ firstName }).where(eq(database.t.users.id, userId))

  it('answers with the same frozen answer while nothing changed, on SQLite only', async () => {
    const read = reader()
    const first = await read({ id: userId })
    const second = await read({ id: userId })
    expect(second).toEqual(first)
    if (dialect === 'sqlite') {
      expect(second).toBe(first)
      expect(Object.isFrozen(second!.user)).toBe(true)
    } else {
      expect(second).not.toBe(first)
    }
  })

  it('sees a write at once, inside its transaction and after a rollback', async () => {
    const read = reader()
    await rename(database.db, 'Before')
    expect((await read({ id: userId }))!.user.firstName).toBe('Before')
    await expect(database.transaction(async (tx) => {
      await rename(tx, 'Uncommitted')
      // SQLite's one connection reads the transaction's own write (never kept); PostgreSQL's
      // reader runs on a pool connection of its own, outside the transaction.
      expect((await read({ id: userId }))!.user.firstName).toBe(dialect === 'sqlite' ? 'Uncommitted' : 'Before')
      throw new Error('roll back')
    })).rejects.toThrow('roll back')
    expect((await read({ id: userId }))!.user.firstName).toBe('Before')
    await rename(database.db, 'After')
    expect((await read({ id: userId }))!.user.firstName).toBe('After')
  })

  it('keys a query of several parameters by all of them', async () => {
    const read = rowReader(database, `test_reuse_two_${dialect}`, { user: database.t.users }, (selection) => database.db
      .select(selection as never).from(database.t.users)
      .where(and(eq(database.t.users.id, sql.placeholder('id')), eq(database.t.users.email, sql.placeholder('email')))), { reuse: true })
    expect((await read({ id: userId, email: 'reused@example.test' }))!.user.id).toBe(userId)
    expect(await read({ id: userId, email: 'someone-else@example.test' })).toBeUndefined()
    expect((await read({ id: userId, email: 'reused@example.test' }))!.user.id).toBe(userId)
  })
})
