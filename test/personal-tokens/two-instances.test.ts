import type { FastifyInstance } from 'fastify'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createTestContext, type TestContext } from '../helpers/app.js'
import { DIALECTS } from '../helpers/database.js'
import { addMember, client, createTeam, signUp, type Account } from '../helpers/teams.js'
import { getWith, tokenFor } from './helpers.js'

/**
 * Two instances on one database: a token made on one works on the other, and whatever ends it on
 * one (deletion by its owner or an admin, a password change, leaving its team) is refused by the
 * other at its very next request, while that other instance keeps being called all along.
 */
describe.each(DIALECTS)('personal access tokens across two instances on one %s database', (dialect) => {
  let ctx: TestContext
  let a: FastifyInstance
  let b: FastifyInstance
  let admin: Account
  let counter = 0
  const fresh = () => signUp(a, `pat2_${dialect}_${++counter}`)

  beforeAll(async () => {
    ctx = await createTestContext(dialect, { file: true })
    a = (await ctx.build({ env: { RATE_LIMIT_ENABLED: 'false' } })).app
    b = (await ctx.build({ env: { RATE_LIMIT_ENABLED: 'false' } })).app
    admin = await signUp(a, `pat2_admin_${dialect}`)
  })
  afterAll(() => ctx.close())

  /** Calls B many times (warming whatever it keeps), ends the token on A, and expects B's next answer to refuse it. */
  async function endedOnA(token: string, end: () => Promise<void>): Promise<void> {
    for (let i = 0; i < 20; i++) expect((await getWith(b, '/api/teams/me', token)).statusCode).toBe(200)
    await end()
    const refused = await getWith(b, '/api/teams/me', token)
    expect(refused.statusCode).toBe(401)
    expect(refused.headers['www-authenticate']).toContain('error="invalid_token"')
  }

  it('made on A, used on B; deleted by its owner on A, refused by B at once', async () => {
    const owner = await fresh()
    const { token, id } = await tokenFor(a, owner)
    await endedOnA(token, async () => {
      expect((await client(a)('DELETE', `/api/users/me/tokens/${id}`, owner)).statusCode).toBe(200)
    })
  })

  it('deleted by an admin on A, refused by B at once', async () => {
    const owner = await fresh()
    const { token, id } = await tokenFor(b, owner)
    await endedOnA(token, async () => {
      expect((await client(a)('DELETE', `/api/admin/tokens/${id}`, admin)).statusCode).toBe(200)
    })
  })

  it('a password change on A ends it on B at once', async () => {
    const owner = await fresh()
    const { token } = await tokenFor(a, owner)
    await endedOnA(token, async () => {
      const changed = await a.inject({
        method: 'PUT', url: '/api/auth/email/change-password', headers: { cookie: owner.cookie },
        payload: { current_password: 'correct horse battery', new_password: 'another horse battery' },
      })
      expect(changed.statusCode, changed.body).toBe(200)
    })
  })

  it('removed from its team on A: refused by B at once', async () => {
    const teamOwner = await fresh()
    const member = await fresh()
    const team = await createTeam(client(a), teamOwner, `Two ${dialect}`)
    await addMember(client(a), team.id, teamOwner, member, 'team_user')
    const { token } = await tokenFor(a, member, { team_id: team.id })
    await endedOnA(token, async () => {
      expect((await client(a)('DELETE', `/api/teams/${team.id}/members/${member.id}`, teamOwner)).statusCode).toBe(200)
    })
  })
})
