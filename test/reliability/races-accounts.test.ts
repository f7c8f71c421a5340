import { and, count, eq, isNull, sql } from 'drizzle-orm'
import type { FastifyInstance } from 'fastify'
import { afterAll, beforeAll, describe, expect, it, onTestFinished } from 'vitest'
import { register } from '../helpers/accounts.js'
import type { Tables } from '../../src/db/types.js'
import { createTestContext, type TestContext } from '../helpers/app.js'
import { DIALECTS } from '../helpers/database.js'
import { expectNoServerError, expectOutcome, fire, warmUp, winners } from '../helpers/races.js'
import { smtpSettings, startSmtpSink, type ReceivedMail, type SmtpSink } from '../helpers/smtp-sink.js'
import { client, signUp, type Account, type Call } from '../helpers/teams.js'

/**
 * Races on the account promises: one user per email and per username, one first admin, single-use
 * verification and reset links, and at least one global admin left. Each race fires N requests at
 * once and then reads the rows back, so a duplicate that answered 409 by luck still fails.
 */

const N = 12
const ROOMY = { max: 10_000, windowMs: 60_000 }
const LIMITS = { loginOrRegister: ROOMY, forgotPassword: ROOMY }

/** `Some.Name` in three spellings that must count as one: as is, lower case, upper case. */
const spelling = (value: string, index: number) => [value, value.toLowerCase(), value.toUpperCase()][index % 3]!

function tokenIn(mail: ReceivedMail): string {
  const token = /[?&]token=([A-Za-z0-9_-]+)/.exec(mail.text)?.[1]
  if (token === undefined) throw new Error(`no token in mail: ${mail.text}`)
  return token
}

describe.each(DIALECTS)('races on accounts on %s', (dialect) => {
  let ctx: TestContext
  let app: FastifyInstance
  let sink: SmtpSink
  /** The first user, global admin. */
  let root: Account
  let seq = 0

  const db = () => app.services.database
  const auditCount = async (type: string, target: string) => {
    const { db: q, t } = db()
    const [row] = await q.select({ n: count() }).from(t.auditEvents).where(and(eq(t.auditEvents.type, type), eq(t.auditEvents.target, target)))
    return row!.n
  }
  const sessionsOf = async (userId: string) => {
    const { db: q, t } = db()
    return q.select().from(t.sessions).where(eq(t.sessions.userId, userId))
  }

  beforeAll(async () => {
    ctx = await createTestContext(dialect)
    sink = await startSmtpSink()
    app = (await ctx.build({ limits: LIMITS })).app
    root = await signUp(app, 'race_root')
  })
  afterAll(async () => {
    await ctx.close()
    await sink.close()
  })

  describe('registration', () => {
    it.each([
      ['email', 'EMAIL_TAKEN', (i: number) => ({ username: `email_race_${i}`, email: spelling('One.Mail@Example.com', i) }),
        (t: Tables) => sql`lower(${t.users.email}) = 'one.mail@example.com'`],
      ['username', 'USERNAME_TAKEN', (i: number) => ({ username: spelling('One_Name', i), email: `name_race_${i}@example.com` }),
        (t: Tables) => sql`lower(${t.users.username}) = 'one_name'`],
    ] as const)(`${N} concurrent registrations of one %s: one 201, the rest 409 %s, one row and one default team`, async (_field, code, account, sameOne) => {
      const { db: q, t } = db()
      const [before] = await q.select({ n: count() }).from(t.users)
      await warmUp(app, N)
      const responses = await fire(N, (i) => register(app, account(i)))
      expectOutcome(responses, { 201: 1, [`409 ${code}`]: N - 1 })

      const winner = winners(responses)[0]!.json().data.user
      const [after] = await q.select({ n: count() }).from(t.users)
      expect(after!.n).toBe(before!.n + 1)
      expect((await q.select().from(t.users).where(sameOne(t))).map((row) => row.id)).toEqual([winner.id])
      const owned = await q.select().from(t.teams).where(eq(t.teams.ownerId, winner.id))
      expect(owned.map((team) => team.isDefault)).toEqual([true])
    })

    it.each([
      ['username through the profile', 'USERNAME_TAKEN',
        (call: Call, user: Account, i: number) => call('PUT', '/api/auth/profile/update', user, { username: spelling('Renamed_Race', i) }),
        (t: Tables) => sql`lower(${t.users.username}) = 'renamed_race'`],
      ['email through the admin API', 'EMAIL_TAKEN',
        (call: Call, user: Account, i: number) => call('PUT', `/api/admin/users/${user.id}`, root, { email: spelling('Moved.Race@Example.com', i) }),
        (t: Tables) => sql`lower(${t.users.email}) = 'moved.race@example.com'`],
    ] as const)(`${N} users changing to one %s at once: one 200, the rest 409 %s, one row`, async (_field, code, change, sameOne) => {
      const users: Account[] = []
      for (let i = 0; i < N; i++) users.push(await signUp(app, `renamer_${++seq}`))
      const call = client(app)
      await warmUp(app, N)
      const responses = await fire(N, (i) => change(call, users[i]!, i))
      expectOutcome(responses, { 200: 1, [`409 ${code}`]: N - 1 })

      const { db: q, t } = db()
      const winner = users[responses.findIndex((response) => response.statusCode === 200)]!
      expect((await q.select().from(t.users).where(sameOne(t))).map((row) => row.id)).toEqual([winner.id])
    })

    it(`${N} concurrent first registrations on an empty database make exactly one global_admin`, async () => {
      // A fresh database per round; PostgreSQL, whose transactions truly overlap, gets more rounds.
      const rounds = dialect === 'postgresql' ? 3 : 1
      for (let round = 0; round < rounds; round++) {
        const fresh = await createTestContext(dialect)
        try {
          const { app: first } = await fresh.build({ env: { RATE_LIMIT_ENABLED: 'false' } })
          await warmUp(first, N)
          const responses = await fire(N, (i) => register(first, { username: `first_${i}`, email: `first_${i}@example.com` }))
          expectOutcome(responses, { 201: N })
          const admins = responses.filter((response) => response.json().data.user.role_id === 'global_admin')
          expect(admins).toHaveLength(1)

          const { db: q, t } = first.services.database
          const rows = await q.select().from(t.users)
          expect(rows).toHaveLength(N)
          expect(rows.filter((row) => row.roleId === 'global_admin').map((row) => row.id)).toEqual([admins[0]!.json().data.user.id])
          // Only the first admin starts with a verified email.
          expect(rows.filter((row) => row.emailVerified)).toHaveLength(1)
          const defaults = await q.select().from(t.teams).where(eq(t.teams.isDefault, true))
          expect(new Set(defaults.map((team) => team.ownerId)).size).toBe(N)
          expect(new Set(defaults.map((team) => team.slug)).size).toBe(N)
        } finally {
          await fresh.close()
        }
      }
    }, 60_000)
  })

  describe('single-use email links', () => {
    const settings = (changes: Parameters<FastifyInstance['services']['settings']['update']>[0]) => app.services.settings.update(changes)

    beforeAll(() => settings(smtpSettings(sink, { 'global.require_email_verification': true })))
    afterAll(() => settings([{ key: 'global.send_mail', value: false }]))

    /** A user whose email is verified already, with a live session. */
    async function verifiedUser(): Promise<Account> {
      await settings([{ key: 'global.require_email_verification', value: false }])
      try {
        return await signUp(app, `mail_race_${++seq}`)
      } finally {
        await settings([{ key: 'global.require_email_verification', value: true }])
      }
    }

    /** POST /api/auth/email/forgot-password `times` times; answers the tokens mailed, in order. */
    async function resetTokens(email: string, times: number): Promise<string[]> {
      sink.clear()
      for (let i = 0; i < times; i++) {
        const response = await app.inject({ method: 'POST', url: '/api/auth/email/forgot-password', payload: { email } })
        expect(response.statusCode).toBe(200)
      }
      const mails = [...(await sink.waitFor(times))]
      sink.clear()
      return mails.map(tokenIn)
    }

    const reset = (token: string, password: string) =>
      app.inject({ method: 'POST', url: '/api/auth/email/reset-password', payload: { token, new_password: password } })

    /** Exactly one of `passwords` opens the account now, and it is `expected`. */
    async function expectPassword(userId: string, passwords: string[], expected: string) {
      const { passwordHash } = (await app.services.users.findById(userId))!
      const opening = []
      for (const password of passwords) if (await app.services.passwords.verify(passwordHash!, password)) opening.push(password)
      expect(opening).toEqual([expected])
    }

    it(`${N} concurrent verifications with one link: one 200, the rest 400 INVALID_TOKEN; verified once, no session`, async () => {
      sink.clear()
      const username = `verify_race_${++seq}`
      const registered = await register(app, { username, email: `${username}@example.com` })
      expect(registered.statusCode).toBe(201)
      const userId = registered.json().data.user.id
      const [mail] = await sink.waitFor(1)
      const token = tokenIn(mail!)

      await warmUp(app, N)
      const responses = await fire(N, () => app.inject({ method: 'GET', url: `/api/auth/email/verify?token=${token}` }))
      expectOutcome(responses, { 200: 1, '400 INVALID_TOKEN': N - 1 })

      const { db: q, t } = db()
      expect((await app.services.users.findById(userId))!.emailVerified).toBe(true)
      const links = await q.select().from(t.emailTokens).where(eq(t.emailTokens.userId, userId))
      expect(links.map((link) => [link.purpose, link.usedAt !== null])).toEqual([['verify_email', true]])
      expect(await sessionsOf(userId)).toHaveLength(0)
      expect(await auditCount('user.email_verified', userId)).toBe(1)
    })

    it(`${N} concurrent resets with one token: one 200, the rest 400 INVALID_TOKEN; the winner's password, no session left`, async () => {
      const user = await verifiedUser()
      expect(await sessionsOf(user.id)).toHaveLength(1)
      const [token] = await resetTokens(user.email, 1)
      const passwords = Array.from({ length: N }, (_, i) => `racing password ${i}`)

      await warmUp(app, N)
      const responses = await fire(N, (i) => reset(token!, passwords[i]!))
      expectOutcome(responses, { 200: 1, '400 INVALID_TOKEN': N - 1 })

      await expectPassword(user.id, passwords, passwords[responses.findIndex((response) => response.statusCode === 200)]!)
      expect(await sessionsOf(user.id)).toHaveLength(0)
      expect(await auditCount('user.password_reset', user.id)).toBe(1)
      // The winner's answer waited for its "password changed" mail; no loser sent one.
      expect(sink.messages.map((mail) => mail.envelope.to)).toEqual([[user.email]])
    })

    it(`${N} concurrent resets with ${N} tokens of one user: one 200 (every token dies with the one used)`, async () => {
      const user = await verifiedUser()
      const tokens = await resetTokens(user.email, N)
      const passwords = tokens.map((_, i) => `parallel password ${i}`)

      await warmUp(app, N)
      const responses = await fire(N, (i) => reset(tokens[i]!, passwords[i]!))
      expectNoServerError(responses)
      expectOutcome(responses, { 200: 1, '400 INVALID_TOKEN': N - 1 })

      await expectPassword(user.id, passwords, passwords[responses.findIndex((response) => response.statusCode === 200)]!)
      const { db: q, t } = db()
      const unused = await q.select().from(t.emailTokens).where(and(eq(t.emailTokens.userId, user.id), isNull(t.emailTokens.usedAt)))
      expect(unused).toHaveLength(0)
      expect(await auditCount('user.password_reset', user.id)).toBe(1)
    })
  })
})

/** These races need a database whose only admins are the racers: one of its own per test. */
describe.each(DIALECTS)('races on the last global admin on %s', (dialect) => {
  const ROUNDS = 5
  let comebacks = 0

  async function adminsOnly(n: number): Promise<{ app: FastifyInstance; call: Call; admins: Account[] }> {
    const ctx = await createTestContext(dialect)
    onTestFinished(() => ctx.close())
    const { app } = await ctx.build({ env: { RATE_LIMIT_ENABLED: 'false' } })
    const call = client(app)
    const admins = [await signUp(app, 'admin_0')]
    for (let i = 1; i < n; i++) admins.push(await promoted(call, admins[0]!, await signUp(app, `admin_${i}`)))
    return { app, call, admins }
  }

  async function promoted(call: Call, by: Account, account: Account): Promise<Account> {
    const response = await call('PUT', `/api/admin/users/${account.id}/role`, by, { role_id: 'global_admin' })
    if (response.statusCode !== 200) throw new Error(`promotion failed: ${response.statusCode} ${response.body}`)
    return account
  }

  const adminIds = async (app: FastifyInstance) => {
    const { db: q, t } = app.services.database
    return (await q.select({ id: t.users.id }).from(t.users).where(eq(t.users.roleId, 'global_admin'))).map((row) => row.id).sort()
  }

  it.each([
    ['demoting', (call: Call, actor: Account, target: Account) => call('PUT', `/api/admin/users/${target.id}/role`, actor, { role_id: 'global_user' })],
    ['deleting', (call: Call, actor: Account, target: Account) => call('DELETE', `/api/admin/users/${target.id}`, actor)],
  ] as const)('two admins %s each other at once leave exactly one admin', async (_verb, act) => {
    const { app, call, admins } = await adminsOnly(1)
    let survivor = admins[0]!
    for (let round = 0; round < ROUNDS; round++) {
      const rival = await promoted(call, survivor, await signUp(app, `rival_${round}`))
      await warmUp(app, 2)
      const responses = await Promise.all([act(call, survivor, rival), act(call, rival, survivor)])
      expectNoServerError(responses)
      expect(winners(responses)).toHaveLength(1)
      // The loser is refused by the rule (409), has lost the role (403) or its account (401).
      const loser = responses.find((response) => response.statusCode >= 300)!
      expect([401, 403, 409]).toContain(loser.statusCode)
      const left = await adminIds(app)
      expect(left).toHaveLength(1)
      survivor = left[0] === survivor.id ? survivor : rival
    }
  })

  it('4 admins each demoting or deleting every other one at once (12 requests): exactly one admin is left', async () => {
    const { app, call, admins } = await adminsOnly(4)
    const rounds = dialect === 'postgresql' ? 3 : 1
    for (let round = 0; round < rounds; round++) {
      if (round > 0) await restore(app, admins)
      const pairs = admins.flatMap((actor) => admins.filter((target) => target !== actor).map((target) => [actor, target] as const))
      await warmUp(app, pairs.length)
      const responses = await Promise.all(pairs.map(([actor, target], i) => i % 2 === 0
        ? call('PUT', `/api/admin/users/${target.id}/role`, actor, { role_id: 'global_user' })
        : call('DELETE', `/api/admin/users/${target.id}`, actor)))
      expectNoServerError(responses)
      // Refused by the rule (409), or the actor lost its role (403) or account (401), or the target is gone (404).
      for (const response of responses.filter((each) => each.statusCode >= 300)) expect([401, 403, 404, 409]).toContain(response.statusCode)
      // Demotions and deletions only remove admins: two left would each have removed the other.
      expect(await adminIds(app), `round ${round}`).toHaveLength(1)
    }
  }, 60_000)

  /** Back to four admins with live sessions: the deleted ones come back as new accounts. */
  async function restore(app: FastifyInstance, admins: Account[]): Promise<void> {
    const [keeper] = await adminIds(app)
    const call = client(app)
    const lead = admins.find((account) => account.id === keeper)!
    for (const [i, account] of admins.entries()) {
      if (account === lead) continue
      const row = await app.services.users.findById(account.id)
      admins[i] = await promoted(call, lead, row === undefined ? await signUp(app, `admin_again_${++comebacks}`) : account)
    }
  }
})
