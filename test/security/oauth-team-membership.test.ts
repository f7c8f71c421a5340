import type { FastifyInstance } from 'fastify'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createTestContext, type TestContext } from '../helpers/app.js'
import { DIALECTS } from '../helpers/database.js'
import { introspect, issueTokens, refresh } from '../helpers/oauth.js'
import { addMember, client, createTeam, signUp, type Account, type Call } from '../helpers/teams.js'

/**
 * A token is bound to the team chosen on the consent page, and satellites decide access from the
 * `team_id` introspection answers. Once the user is no longer a member of that team (removed, or the
 * team deleted), introspection answers `{active: false}` and a refresh answers invalid_grant and ends
 * the grant. A global admin gets no exception: a grant names a team the user was a member of when
 * approving, and holds only while that membership does.
 */
describe.each(DIALECTS)('OAuth tokens follow team membership on %s', (dialect) => {
  let ctx: TestContext
  let app: FastifyInstance
  let call: Call
  let admin: Account
  let owner: Account
  let seq = 0

  const fresh = () => signUp(app, `member_${dialect.slice(0, 2)}_${++seq}`)
  const inspect = async (token: string) => {
    const response = await introspect(app, token, { cookie: admin.cookie })
    expect(response.statusCode, response.body).toBe(200)
    return response.json()
  }
  const remove = async (teamId: string, member: Account) => {
    const response = await call('DELETE', `/api/teams/${teamId}/members/${member.id}`, owner)
    expect(response.statusCode, response.body).toBe(200)
  }

  beforeAll(async () => {
    ctx = await createTestContext(dialect)
    app = (await ctx.build({ env: { RATE_LIMIT_ENABLED: 'false' } })).app
    call = client(app)
    admin = await signUp(app, `admin_${dialect.slice(0, 2)}`)
    owner = await fresh()
  })
  afterAll(() => ctx.close())

  it('a removed member: introspection answers inactive, the refresh is invalid_grant, and the grant stays ended after re-adding', async () => {
    const team = await createTeam(call, owner, `Removal ${dialect}`)
    const member = await fresh()
    await addMember(call, team.id, owner, member, 'team_user')
    const tokens = await issueTokens(app, member.cookie, 'mcp:read offline_access', { teamId: team.id })
    expect(await inspect(tokens.access_token)).toMatchObject({ active: true, team_id: team.id, sub: member.id })

    await remove(team.id, member)
    expect(await inspect(tokens.access_token)).toEqual({ success: true, active: false })
    expect(await inspect(tokens.refresh_token!)).toEqual({ success: true, active: false })
    const refreshed = await refresh(app, tokens.refresh_token!)
    expect(refreshed.statusCode, refreshed.body).toBe(400)
    expect(refreshed.json()).toMatchObject({ success: false, error: 'invalid_grant', code: 'INVALID_GRANT' })

    // The grant was ended, not merely paused: membership coming back does not revive it.
    await addMember(call, team.id, owner, member, 'team_user')
    expect(await inspect(tokens.access_token)).toEqual({ success: true, active: false })
    expect((await refresh(app, tokens.refresh_token!)).json()).toMatchObject({ error: 'invalid_grant' })
  })

  it('a deleted team: its tokens are inactive and cannot be refreshed', async () => {
    const member = await fresh()
    const team = await createTeam(call, member, `Deleted ${dialect}`)
    const tokens = await issueTokens(app, member.cookie, 'mcp:read offline_access', { teamId: team.id })
    expect(await inspect(tokens.access_token)).toMatchObject({ active: true, team_id: team.id })
    const deleted = await call('DELETE', `/api/teams/${team.id}`, member)
    expect(deleted.statusCode, deleted.body).toBe(200)
    expect(await inspect(tokens.access_token)).toEqual({ success: true, active: false })
    expect((await refresh(app, tokens.refresh_token!)).json()).toMatchObject({ error: 'invalid_grant' })
  })

  it('a global admin removed from the team gets no exception; tokens of teams still held stay active', async () => {
    const team = await createTeam(call, owner, `Admin ${dialect}`)
    await addMember(call, team.id, owner, admin, 'team_user')
    // Different scopes, so that the second approval is asked for (a remembered one would reuse the first's team).
    const own = await issueTokens(app, admin.cookie, 'user:read offline_access')
    const bound = await issueTokens(app, admin.cookie, 'mcp:read offline_access', { teamId: team.id })
    expect(await inspect(bound.access_token)).toMatchObject({ active: true, team_id: team.id })
    await remove(team.id, admin)
    expect(await inspect(bound.access_token)).toEqual({ success: true, active: false })
    expect((await refresh(app, bound.refresh_token!)).json()).toMatchObject({ error: 'invalid_grant' })
    expect(await inspect(own.access_token)).toMatchObject({ active: true, sub: admin.id })
    const renewed = await refresh(app, own.refresh_token!)
    expect(renewed.statusCode, renewed.body).toBe(200)
  })
})
