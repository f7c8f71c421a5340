import type { FastifyInstance } from 'fastify'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createTestContext, type TestContext } from '../helpers/app.js'
import { DIALECTS } from '../helpers/database.js'
import { client, crew, ROOMY_LIMITS, signUp, type Account, type Call, type Crew } from '../helpers/teams.js'
import { invited, registerInvited } from './helpers.js'

type Who = 'team_admin' | 'team_user' | 'non_member' | 'global_admin' | 'anonymous'

/**
 * Who may call each invitation route: the team's routes need team.members.manage (a team_user gets
 * 403, a non-member 404, an anonymous caller 401, a global admin passes); the lookup is public; the
 * acceptance needs a session, and then the invited address (403 for anyone else).
 */
const TABLE: Array<{ route: string; expected: Record<Who, number> }> = [
  { route: 'POST /api/teams/:teamId/invitations', expected: { team_admin: 201, team_user: 403, non_member: 404, global_admin: 201, anonymous: 401 } },
  { route: 'GET /api/teams/:teamId/invitations', expected: { team_admin: 200, team_user: 403, non_member: 404, global_admin: 200, anonymous: 401 } },
  { route: 'DELETE /api/teams/:teamId/invitations/:id', expected: { team_admin: 200, team_user: 403, non_member: 404, global_admin: 200, anonymous: 401 } },
  { route: 'GET /api/invitations/:token', expected: { team_admin: 200, team_user: 200, non_member: 200, global_admin: 200, anonymous: 200 } },
  { route: 'POST /api/invitations/:token/accept', expected: { team_admin: 403, team_user: 403, non_member: 403, global_admin: 403, anonymous: 401 } },
]
const WHO: Who[] = ['team_admin', 'team_user', 'non_member', 'global_admin', 'anonymous']

describe.each(DIALECTS)('who may call the invitation routes on %s', (dialect) => {
  let ctx: TestContext
  let app: FastifyInstance
  let call: Call
  let globalAdmin: Account
  let c: Crew
  let seq = 0

  beforeAll(async () => {
    ctx = await createTestContext(dialect)
    app = (await ctx.build({ limits: ROOMY_LIMITS })).app
    call = client(app)
    globalAdmin = await signUp(app, 'perm_global_admin')
    c = await crew(call, () => signUp(app, `perm_${++seq}`), 'Permission team')
    await app.services.settings.update([{ key: 'team.member_limit', value: 1000 }])
  })
  afterAll(() => ctx.close())

  const account = (who: Who): Account | undefined => ({
    team_admin: c.teamAdmin, team_user: c.teamUser, non_member: c.outsider, global_admin: globalAdmin, anonymous: undefined,
  })[who]

  /** One request of `route` as `who`, each on an invitation of its own. */
  async function request(route: string, who: Who) {
    const base = `/api/teams/${c.team.id}/invitations`
    const fresh = await invited(call, c.team.id, c.owner, `perm_${route.length}_${++seq}@example.com`)
    switch (route) {
      case 'POST /api/teams/:teamId/invitations': return call('POST', base, account(who), { email: `perm_new_${++seq}@example.com`, role: 'team_user' })
      case 'GET /api/teams/:teamId/invitations': return call('GET', base, account(who))
      case 'DELETE /api/teams/:teamId/invitations/:id': return call('DELETE', `${base}/${fresh.invitation.id}`, account(who))
      case 'GET /api/invitations/:token': return call('GET', `/api/invitations/${fresh.token}`, account(who))
      default: return call('POST', `/api/invitations/${fresh.token}/accept`, account(who))
    }
  }

  for (const { route, expected } of TABLE) {
    it(`${route}: ${WHO.map((who) => `${who} ${expected[who]}`).join(', ')}`, async () => {
      const seen: Record<string, number> = {}
      for (const who of WHO) seen[who] = (await request(route, who)).statusCode
      expect(seen).toEqual(expected)
    })
  }

  it('refusals carry their codes: 403 FORBIDDEN names team.members.manage, 404 NOT_FOUND, 401 UNAUTHORIZED, 403 INVITATION_EMAIL_MISMATCH', async () => {
    const base = `/api/teams/${c.team.id}/invitations`
    expect((await call('GET', base, c.teamUser)).json()).toMatchObject({ code: 'FORBIDDEN', details: { required_permission: 'team.members.manage' } })
    expect((await call('GET', base, c.outsider)).json().code).toBe('NOT_FOUND')
    expect((await call('GET', base)).json().code).toBe('UNAUTHORIZED')
    const { token } = await invited(call, c.team.id, c.owner, `perm_code_${++seq}@example.com`)
    expect((await call('POST', `/api/invitations/${token}/accept`, c.outsider)).json().code).toBe('INVITATION_EMAIL_MISMATCH')
  })

  it('only the invited person accepts: 200 for them, whoever invited them', async () => {
    const person = `perm_invitee_${++seq}`
    const { token } = await invited(call, c.team.id, c.teamAdmin, `${person}@example.com`)
    const invitee = await registerInvited(app, person, token)
    expect((await call('POST', `/api/invitations/${token}/accept`, invitee)).statusCode).toBe(200)
  })
})
