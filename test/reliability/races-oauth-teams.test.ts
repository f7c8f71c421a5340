import { and, count, eq } from 'drizzle-orm'
import type { FastifyInstance } from 'fastify'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createTestContext, type TestContext } from '../helpers/app.js'
import { DIALECTS } from '../helpers/database.js'
import {
  authorizeAndApprove, authorizeParams, consentDetails, consentRequestId, exchangeCode, getWithBearer, issueTokens, locationOf, pkce,
  postConsent, refresh, startAuthorization, type TokenSet,
} from '../helpers/oauth.js'
import { expectNoServerError, expectOutcome, fire, warmUp, winners } from '../helpers/races.js'
import { addMember, client, createTeam, ROOMY_LIMITS, signUp, withTeamSetting, type Account, type Call } from '../helpers/teams.js'

/**
 * Races on the team and OAuth promises: distinct slugs, the creation and member limits, a team
 * that keeps its owner as team_admin, single-use codes, refresh tokens and consent decisions.
 * Each race fires N requests at once and then reads the rows back.
 */

const N = 12

describe.each(DIALECTS)('races on teams and OAuth on %s', (dialect) => {
  let ctx: TestContext
  let app: FastifyInstance
  let call: Call
  let admin: Account
  /** N users with sessions, shared by the races that need many distinct callers. */
  let crowd: Account[]
  let seq = 0

  const fresh = (prefix = 'racer') => signUp(app, `${prefix}_${++seq}`)
  const db = () => app.services.database
  const membersOf = async (teamId: string) => {
    const { db: q, t } = db()
    return q.select().from(t.teamMembers).where(eq(t.teamMembers.teamId, teamId))
  }

  beforeAll(async () => {
    ctx = await createTestContext(dialect)
    app = (await ctx.build({ limits: ROOMY_LIMITS })).app
    call = client(app)
    admin = await signUp(app, 'race_admin')
    crowd = []
    for (let i = 0; i < N; i++) crowd.push(await fresh('crowd'))
  })
  afterAll(() => ctx.close())

  describe('teams', () => {
    it(`${N} users creating one team name at once: all 201, ${N} distinct slugs, each team with its owner only`, async () => {
      await warmUp(app, N)
      const responses = await fire(N, (i) => call('POST', '/api/teams', crowd[i], { name: 'Stampede Race' }))
      expectOutcome(responses, { 201: N })

      const { db: q, t } = db()
      const rows = await q.select().from(t.teams).where(eq(t.teams.name, 'Stampede Race'))
      expect(rows.map((row) => row.slug).sort()).toEqual(['stampede-race', ...Array.from({ length: N - 1 }, (_, i) => `stampede-race-${i + 2}`)].sort())
      expect(rows.map((row) => row.ownerId).sort()).toEqual(crowd.map((account) => account.id).sort())
      for (const row of rows) {
        expect((await membersOf(row.id)).map((member) => [member.userId, member.role])).toEqual([[row.ownerId, 'team_admin']])
      }
    })

    it(`one user creating ${N} teams at once with team.creation_limit 3: three 201, the rest 409 TEAM_LIMIT_REACHED`, async () => {
      await withTeamSetting(app, 'team.creation_limit', 3)
      const owner = await fresh()
      await warmUp(app, N)
      const responses = await fire(N, (i) => call('POST', '/api/teams', owner, { name: `Hoard ${i}` }))
      expectOutcome(responses, { 201: 3, '409 TEAM_LIMIT_REACHED': N - 3 })

      const { db: q, t } = db()
      const [owned] = await q.select({ n: count() }).from(t.teams).where(and(eq(t.teams.ownerId, owner.id), eq(t.teams.isDefault, false)))
      expect(owned!.n).toBe(3)
    })

    it(`${N} different users added at once with team.member_limit 5: four 201, the rest 409 MEMBER_LIMIT_REACHED, five rows`, async () => {
      await withTeamSetting(app, 'team.member_limit', 5)
      const owner = await fresh()
      const team = await createTeam(call, owner, 'Limited Crowd')
      await warmUp(app, N)
      const responses = await fire(N, (i) => call('POST', `/api/teams/${team.id}/members`, owner, { login: crowd[i]!.username, role: 'team_user' }))
      expectOutcome(responses, { 201: 4, '409 MEMBER_LIMIT_REACHED': N - 4 })

      const added = crowd.filter((_, i) => responses[i]!.statusCode === 201).map((account) => account.id)
      expect((await membersOf(team.id)).map((member) => member.userId).sort()).toEqual([owner.id, ...added].sort())
    })

    it(`one user added ${N} times at once: one 201, the rest 409 ALREADY_MEMBER, one row`, async () => {
      const owner = await fresh()
      const team = await createTeam(call, owner, 'Added Once')
      await warmUp(app, N)
      const responses = await fire(N, () => call('POST', `/api/teams/${team.id}/members`, owner, { login: crowd[0]!.email, role: 'team_user' }))
      expectOutcome(responses, { 201: 1, '409 ALREADY_MEMBER': N - 1 })
      expect((await membersOf(team.id)).map((member) => member.userId).sort()).toEqual([owner.id, crowd[0]!.id].sort())
    })

    it('users added while an admin deletes them: each addition 201 or 404 (never 409 or 5xx), and no membership outlives its user', async () => {
      const owner = await fresh()
      const team = await createTeam(call, owner, 'Vanishing Members')
      const victims = await Promise.all(Array.from({ length: N / 2 }, () => fresh('victim')))
      await warmUp(app, N)
      const responses = await fire(N, (i) => {
        const victim = victims[i >> 1]!
        return i % 2 === 0
          ? call('DELETE', `/api/admin/users/${victim.id}`, admin)
          : call('POST', `/api/teams/${team.id}/members`, owner, { login: victim.username, role: 'team_user' })
      })
      expect(responses.filter((_, i) => i % 2 === 0).map((response) => response.statusCode)).toEqual(victims.map(() => 200))
      const additions = responses.filter((_, i) => i % 2 === 1)
      for (const addition of additions) expect([201, 404], addition.body).toContain(addition.statusCode)
      expect((await membersOf(team.id)).map((member) => member.userId)).toEqual([owner.id])
    })

    it('concurrent demotions, removals, departures and ownership transfers: the owner stays a team_admin member', async () => {
      await withTeamSetting(app, 'team.creation_limit', 10)
      const [owner, a1, a2, a3, a4, user] = [await fresh(), await fresh(), await fresh(), await fresh(), await fresh(), await fresh()]
      const rounds = dialect === 'postgresql' ? 4 : 2
      for (let round = 0; round < rounds; round++) {
        const team = await createTeam(call, owner, `Keep an admin ${round}`)
        for (const member of [a1, a2, a3, a4]) await addMember(call, team.id, owner, member!, 'team_admin')
        await addMember(call, team.id, owner, user!, 'team_user')
        const member = (account: Account) => `/api/teams/${team.id}/members/${account.id}`
        const owned = `/api/teams/${team.id}/owner`

        await warmUp(app, 11)
        const responses = await Promise.all([
          // A global admin holds every team permission and never loses it during the race.
          ...[owner, a1, a2, a3, a4].map((each) => call('PUT', member(each!), admin, { role: 'team_user' })),
          call('DELETE', member(a1!), admin),
          call('DELETE', member(a2!), admin),
          call('DELETE', member(a3!), a3), // leaves
          call('DELETE', member(a1!), a4), // a team_admin who may be demoted meanwhile
          call('PUT', owned, owner, { user_id: a1!.id }),
          call('PUT', owned, admin, { user_id: a2!.id }),
        ])
        expectNoServerError(responses)
        for (const response of responses.filter((each) => each.statusCode >= 300)) {
          expect(['403 FORBIDDEN', '404 NOT_FOUND', '409 OWNER_ROLE', '409 OWNER_CANNOT_LEAVE', '409 LAST_TEAM_ADMIN'])
            .toContain(`${response.statusCode} ${response.json().code}`)
        }

        const { db: q, t } = db()
        const [row] = await q.select().from(t.teams).where(eq(t.teams.id, team.id))
        const members = await membersOf(team.id)
        expect(members.find((each) => each.userId === row!.ownerId)?.role, `round ${round}`).toBe('team_admin')
      }
    }, 60_000)
  })

  describe('OAuth', () => {
    const grantsOf = async (userId: string) => {
      const { db: q, t } = db()
      return q.select().from(t.oauthGrants).where(eq(t.oauthGrants.userId, userId))
    }
    const tokensOf = async (grantId: string) => {
      const { db: q, t } = db()
      return q.select().from(t.oauthTokens).where(eq(t.oauthTokens.grantId, grantId))
    }
    const auditCount = async (type: string, actorId: string) => {
      const { db: q, t } = db()
      const [row] = await q.select({ n: count() }).from(t.auditEvents).where(and(eq(t.auditEvents.type, type), eq(t.auditEvents.actorId, actorId)))
      return row!.n
    }
    const expectDead = async (token: string) => expect((await getWithBearer(app, '/api/users/me', token)).statusCode).toBe(401)

    /** An authorization request started without a session, so remembered consent never skips it. */
    async function pendingRequest(): Promise<string> {
      const response = await startAuthorization(app, authorizeParams(pkce().challenge, { scope: 'user:read teams:read' }))
      const requestId = consentRequestId(locationOf(response))
      if (response.statusCode !== 302 || requestId === undefined) throw new Error(`authorization failed: ${response.statusCode} ${response.body}`)
      return requestId
    }

    it(`${N} concurrent exchanges of one code: one token set, the rest invalid_grant, and the reuse revokes it`, async () => {
      const user = await fresh()
      const { code, verifier } = await authorizeAndApprove(app, user.cookie, { scope: 'user:read offline_access' })
      await warmUp(app, N)
      const responses = await fire(N, () => exchangeCode(app, { code, verifier }))
      expectOutcome(responses, { 200: 1, '400 INVALID_GRANT': N - 1 })

      const [grant, ...others] = await grantsOf(user.id)
      expect(others).toEqual([])
      expect(grant!.codeUsedAt).not.toBeNull()
      expect(grant!.revokedAt).not.toBeNull()
      const tokens = await tokensOf(grant!.id)
      expect(tokens.map((token) => [token.kind, token.revoked]).sort()).toEqual([['access', true], ['refresh', true]])
      expect(await auditCount('oauth.code_reused', user.id)).toBe(N - 1)
      const won: TokenSet = winners(responses)[0]!.json()
      await expectDead(won.access_token)
      expectOutcome([await refresh(app, won.refresh_token!)], { '400 INVALID_GRANT': 1 })
    })

    it(`${N} concurrent refreshes of one token: one 200, the rest invalid_grant, and the whole grant revoked`, async () => {
      const user = await fresh()
      const issued = await issueTokens(app, user.cookie, 'user:read offline_access')
      await warmUp(app, N)
      const responses = await fire(N, () => refresh(app, issued.refresh_token!))
      expectOutcome(responses, { 200: 1, '400 INVALID_GRANT': N - 1 })

      const [grant, ...others] = await grantsOf(user.id)
      expect(others).toEqual([])
      expect(grant!.revokedAt).not.toBeNull()
      // The first pair and exactly one rotated pair: the presented refresh token spent, the new one not.
      const tokens = await tokensOf(grant!.id)
      expect(tokens.map((token) => [token.kind, token.usedAt !== null, token.revoked]).sort()).toEqual([
        ['access', false, true], ['access', false, true], ['refresh', false, true], ['refresh', true, true],
      ])
      expect(await auditCount('oauth.refresh_token_reused', user.id)).toBeGreaterThanOrEqual(1)
      const won: TokenSet = winners(responses)[0]!.json()
      await expectDead(won.access_token)
      await expectDead(issued.access_token)
    })

    it.each([
      ['approve', () => 'approve' as const],
      ['deny', () => 'deny' as const],
      ['approve or deny', (i: number) => (i % 2 === 0 ? 'approve' as const : 'deny' as const)],
    ])(`${N} concurrent decisions (%s) on one request: one winner, the request spent, one code at most`, async (_label, decision) => {
      const user = await fresh()
      const requestId = await pendingRequest()
      const details = await consentDetails(app, requestId, user.cookie)
      expect(details.statusCode).toBe(200)
      const csrf: string = details.json().data.csrf_token
      await warmUp(app, N)
      const responses = await fire(N, (i) => postConsent(app, { request_id: requestId, decision: decision(i), csrf_token: csrf }, user.cookie))
      expectOutcome(responses, { 200: 1, '404 NOT_FOUND': N - 1 })

      const { db: q, t } = db()
      expect(await q.select().from(t.oauthRequests).where(eq(t.oauthRequests.id, requestId))).toEqual([])
      const approved = decision(responses.findIndex((response) => response.statusCode === 200)) === 'approve'
      const redirect = new URL(winners(responses)[0]!.json().data.redirect_url)
      const grants = await grantsOf(user.id)
      const consents = await q.select().from(t.oauthConsents).where(eq(t.oauthConsents.userId, user.id))
      if (approved) {
        expect(redirect.searchParams.get('code')).toEqual(expect.any(String))
        expect(grants).toHaveLength(1)
        expect(consents).toHaveLength(1)
      } else {
        expect(redirect.searchParams.get('error')).toBe('access_denied')
        expect(grants).toEqual([])
        expect(consents).toEqual([])
      }
    })

    it(`${N} sessions opening one request at once: exactly one gets it`, async () => {
      const requestId = await pendingRequest()
      await warmUp(app, N)
      const responses = await fire(N, (i) => consentDetails(app, requestId, crowd[i]!.cookie))
      expectOutcome(responses, { 200: 1, '403 FORBIDDEN': N - 1 })

      const holder = crowd[responses.findIndex((response) => response.statusCode === 200)]!
      const { db: q, t } = db()
      const [request] = await q.select().from(t.oauthRequests).where(eq(t.oauthRequests.id, requestId))
      const [session] = await q.select().from(t.sessions).where(eq(t.sessions.id, request!.sessionId!))
      expect(session?.userId).toBe(holder.id)
    })
  })
})
