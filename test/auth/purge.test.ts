import { eq } from 'drizzle-orm'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createTestContext, type TestContext } from '../helpers/app.js'
import { manualClock } from '../helpers/clock.js'
import { DIALECTS } from '../helpers/database.js'

describe.each(DIALECTS)('purging expired credentials on %s (SPEC §5)', (dialect) => {
  let ctx: TestContext
  beforeAll(async () => {
    ctx = await createTestContext(dialect)
  })
  afterAll(() => ctx.close())

  it('deletes expired sessions and keeps live ones', async () => {
    const clock = manualClock(Date.now())
    const { app } = await ctx.build({ clock })
    const register = (username: string) => app.inject({
      method: 'POST', url: '/api/auth/email/register',
      payload: { username, email: `${username}@example.test`, password: 'long enough password' },
    })
    await register('early')
    clock.advance(20 * 24 * 60 * 60 * 1000)
    await register('late')
    clock.advance(11 * 24 * 60 * 60 * 1000) // the first session is now 31 days old, the second 11
    const { db, t } = app.services.database
    expect(await db.select().from(t.sessions)).toHaveLength(2)
    await app.services.purgeExpired()
    const left = await db.select({ userId: t.sessions.userId }).from(t.sessions)
    const [late] = await db.select({ id: t.users.id }).from(t.users).where(eq(t.users.username, 'late'))
    expect(left).toEqual([{ userId: late!.id }])
  })
})
