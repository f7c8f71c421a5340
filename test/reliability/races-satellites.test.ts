import { sql } from 'drizzle-orm'
import type { FastifyInstance, LightMyRequestResponse } from 'fastify'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createTestContext, type TestContext } from '../helpers/app.js'
import { DIALECTS } from '../helpers/database.js'
import { expectNoServerError, expectOutcome, fire, warmUp, winners } from '../helpers/races.js'
import { createToken, heartbeat, registerWith, SYSTEM_INFO, type CreatedToken } from '../helpers/satellites.js'
import { rawRows } from '../helpers/sql.js'
import { client, createTeam, ROOMY_LIMITS, signUp, type Account, type Call } from '../helpers/teams.js'

/**
 * Races on the satellites' promises: a registration token pairs one satellite, once, however many
 * registrations present it at once; a name belongs to one satellite (re-registrations in its scope
 * leave one row and one working key; another scope or team is refused without spending its
 * token); and a revocation racing a registration lets exactly one of them succeed. Each race fires
 * its requests at once, then reads the rows back with raw SQL.
 */

const N = 10
/** Registrations are rate limited per IP (10 a minute); these races send far more from one address. */
const LIMITS = { ...ROOMY_LIMITS, satelliteRegistration: { max: 10_000, windowMs: 60_000 } }

interface TokenRow { usedAt: unknown; usedBy: string | null; revokedAt: unknown }

describe.each(DIALECTS)('races on satellites on %s', (dialect) => {
  let ctx: TestContext
  let app: FastifyInstance
  let call: Call
  /** The first account: global_admin. */
  let admin: Account

  const db = () => app.services.database
  const register = (token: CreatedToken, name: string) => registerWith(app, `Bearer ${token.token}`, { name, system_info: SYSTEM_INFO })
  const reasonOf = (response: LightMyRequestResponse) => response.json().details?.reason

  async function tokenRow(id: string): Promise<TokenRow> {
    const [row] = await rawRows(db(), sql`select used_at, used_by_satellite_id, revoked_at from satellite_registration_tokens where id = ${id}`)
    expect(row, `token ${id}`).toBeDefined()
    return { usedAt: row![0], usedBy: (row![1] as string | null) ?? null, revokedAt: row![2] }
  }

  async function satellitesNamed(pattern: string): Promise<Array<[string, string]>> {
    const rows = await rawRows(db(), sql`select id, name from satellites where name like ${pattern} order by name`)
    return rows.map(([id, name]) => [String(id), String(name)])
  }

  /** The status the token list shows for `id`. */
  async function listedStatus(id: string): Promise<string | undefined> {
    const response = await call('GET', '/api/satellites/registration-tokens?limit=100', admin)
    expect(response.statusCode, response.body).toBe(200)
    return (response.json().data.tokens as Array<{ id: string; status: string }>).find((token) => token.id === id)?.status
  }

  beforeAll(async () => {
    ctx = await createTestContext(dialect)
    app = (await ctx.build({ limits: LIMITS })).app
    call = client(app)
    admin = await signUp(app, 'satellite_race_admin')
  })
  afterAll(() => ctx.close())

  describe('one token, many registrations', () => {
    it(`${N} registrations with one token and ${N} names: one 201, ${N - 1} 401 INVALID_REGISTRATION_TOKEN (used), one satellite`, async () => {
      const token = await createToken(call, admin)
      await warmUp(app, N)
      const responses = await fire(N, (i) => register(token, `one-token-${i}`))
      expectOutcome(responses, { 201: 1, '401 INVALID_REGISTRATION_TOKEN': N - 1 })
      for (const response of responses.filter((each) => each.statusCode === 401)) expect(reasonOf(response), response.body).toBe('used')

      const winner = winners(responses)[0]!.json().data
      expect(await satellitesNamed('one-token-%')).toEqual([[winner.satellite.id, winner.satellite.name]])
      const row = await tokenRow(token.id)
      expect(row.usedAt).not.toBeNull()
      expect(row.usedBy).toBe(winner.satellite.id)
      expect(row.revokedAt).toBeNull()
      expect(await listedStatus(token.id)).toBe('used')
      // The winner's key works; the token stays spent.
      expect((await heartbeat(app, winner.satellite.id, winner.api_key)).statusCode).toBe(200)
      const again = await register(token, 'one-token-late')
      expect(again.statusCode, again.body).toBe(401)
      expect(reasonOf(again)).toBe('used')
    })

    it(`${N} registrations with one token and one name: one 201, ${N - 1} 401 (used), one satellite`, async () => {
      const token = await createToken(call, admin)
      await warmUp(app, N)
      const responses = await fire(N, () => register(token, 'one-token-one-name'))
      expectOutcome(responses, { 201: 1, '401 INVALID_REGISTRATION_TOKEN': N - 1 })
      for (const response of responses.filter((each) => each.statusCode === 401)) expect(reasonOf(response), response.body).toBe('used')

      const winner = winners(responses)[0]!.json().data
      expect(await satellitesNamed('one-token-one-name')).toEqual([[winner.satellite.id, 'one-token-one-name']])
      const row = await tokenRow(token.id)
      expect(row.usedAt).not.toBeNull()
      expect(row.usedBy).toBe(winner.satellite.id)
      expect((await heartbeat(app, winner.satellite.id, winner.api_key)).statusCode).toBe(200)
    })
  })

  describe('one name, many tokens', () => {
    it('8 registrations of one new name, each with its own global token: all 201, one satellite, every token spent, one working key', async () => {
      const n = 8
      const tokens: CreatedToken[] = []
      for (let i = 0; i < n; i++) tokens.push(await createToken(call, admin))
      await warmUp(app, n)
      const responses = await fire(n, (i) => register(tokens[i]!, 'crowded-satellite'))
      expectNoServerError(responses)
      expectOutcome(responses, { 201: n })

      const rows = await satellitesNamed('crowded-satellite')
      expect(rows).toHaveLength(1)
      const [id] = rows[0]!
      const answered = responses.map((response) => response.json().data)
      expect(new Set(answered.map((data) => data.satellite.id))).toEqual(new Set([id]))
      for (const token of tokens) {
        const row = await tokenRow(token.id)
        expect(row.usedAt, token.id).not.toBeNull()
        expect(row.usedBy, token.id).toBe(id)
      }

      // Each registration issued a new key and killed the one before: the last one stored works.
      const keys = answered.map((data) => data.api_key as string)
      expect(new Set(keys).size).toBe(n)
      const beats = await Promise.all(keys.map((key) => heartbeat(app, id, key)))
      expectOutcome(beats, { 200: 1, '401 UNAUTHORIZED': n - 1 })
      const [stored] = await rawRows(db(), sql`select status from satellites where id = ${id}`)
      expect(stored![0]).toBe('active')
    })

    it('one name at once with a global token and two teams\' tokens: one 201, two 409 SATELLITE_NAME_TAKEN, their tokens unspent', async () => {
      const teamA = await createTeam(call, await signUp(app, 'sat_race_owner_a'), 'Satellite race A')
      const teamB = await createTeam(call, await signUp(app, 'sat_race_owner_b'), 'Satellite race B')
      const won: string[] = []
      for (let round = 0; round < 3; round++) {
        const tokens = [
          await createToken(call, admin),
          await createToken(call, admin, { teamId: teamA.id }),
          await createToken(call, admin, { teamId: teamB.id }),
        ]
        const name = `contested-${round}`
        await warmUp(app, tokens.length)
        const responses = await fire(tokens.length, (i) => register(tokens[(i + round) % tokens.length]!, name)).then((answers) =>
          // Fired in a rotated order each round; answered back in token order.
          tokens.map((_, t) => answers[(t - round + tokens.length) % tokens.length]!))
        expectOutcome(responses, { 201: 1, '409 SATELLITE_NAME_TAKEN': 2 })

        const winner = responses.findIndex((response) => response.statusCode === 201)
        const winnerToken = tokens[winner]!
        const id: string = responses[winner]!.json().data.satellite.id
        const rows = await rawRows(db(), sql`select id, satellite_type, team_id from satellites where name = ${name}`)
        expect(rows.map(([rowId, type, teamId]) => [rowId, type, teamId ?? null])).toEqual([[id, winnerToken.scope, winnerToken.team_id]])
        for (const [i, token] of tokens.entries()) {
          const row = await tokenRow(token.id)
          if (i === winner) {
            expect(row.usedBy).toBe(id)
            expect(await listedStatus(token.id)).toBe('used')
          } else {
            expect(row.usedAt, `token ${i} was spent by a refused registration`).toBeNull()
            expect(row.usedBy).toBeNull()
            expect(await listedStatus(token.id)).toBe('active')
          }
        }
        // A loser's token still pairs a satellite, under another name.
        const loser = tokens.find((_, i) => i !== winner)!
        const later = await register(loser, `${name}-elsewhere`)
        expect(later.statusCode, later.body).toBe(201)
        won.push(winnerToken.scope === 'global' ? 'global' : winnerToken.team_id === teamA.id ? 'team A' : 'team B')
      }
      console.info(`[${dialect}] contested names won by: ${won.join(', ')}`)
    })
  })

  describe('revocation', () => {
    it('a revoke racing a registration with the same token: exactly one of them succeeds, the database agrees', async () => {
      const tally = { revoked: 0, registered: 0 }
      const rounds = 12
      for (let round = 0; round < rounds; round++) {
        const token = await createToken(call, admin)
        const name = `revoke-race-${round}`
        const revoke = () => call('DELETE', `/api/satellites/registration-tokens/${token.id}`, admin)
        // Even rounds fire both at once; odd rounds hold the revocation back a little longer each
        // time (a registration verifies its JWT before it reaches the database), so both orders occur.
        const delayed = () => new Promise<void>((resolve) => setTimeout(resolve, round)).then(revoke)
        await warmUp(app, 2)
        const [revoked, registered] = await Promise.all([round % 2 === 0 ? revoke() : delayed(), register(token, name)])
        expectNoServerError([revoked!, registered!])
        const row = await tokenRow(token.id)
        const stored = await satellitesNamed(name)
        const state = `round ${round}: revoke ${revoked!.statusCode} ${revoked!.body}\nregister ${registered!.statusCode} ${registered!.body}`
        if (revoked!.statusCode === 200) {
          tally.revoked++
          expect(registered!.statusCode, state).toBe(401)
          expect(registered!.json().code, state).toBe('INVALID_REGISTRATION_TOKEN')
          expect(reasonOf(registered!), state).toBe('revoked')
          expect(stored, state).toEqual([])
          expect(row.revokedAt, state).not.toBeNull()
          expect(row.usedAt, state).toBeNull()
          expect(await listedStatus(token.id)).toBe('revoked')
        } else {
          tally.registered++
          expect(revoked!.statusCode, state).toBe(409)
          expect(revoked!.json().code, state).toBe('TOKEN_ALREADY_USED')
          expect(registered!.statusCode, state).toBe(201)
          const id = registered!.json().data.satellite.id
          expect(stored, state).toEqual([[id, name]])
          expect(row.usedBy, state).toBe(id)
          expect(row.revokedAt, state).toBeNull()
          expect(await listedStatus(token.id)).toBe('used')
        }
      }
      console.info(`[${dialect}] revoke vs register: ${tally.revoked} revoked first, ${tally.registered} registered first`)
    })
  })
})
