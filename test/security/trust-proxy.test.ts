import type { FastifyInstance, LightMyRequestResponse } from 'fastify'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { register, sessionCookie } from '../helpers/accounts.js'
import { createTestContext, type TestContext } from '../helpers/app.js'
import { DIALECTS } from '../helpers/database.js'

/**
 * TRUST_PROXY names the proxies whose X-Forwarded-For entries are believed: a hop count or their
 * addresses. Entries a client wrote itself (everything left of what the trusted proxies appended)
 * never become the client's address — not its per-IP rate-limit key, not the audit log's ip.
 */

const PROXY = '10.0.0.5'
const LIMITS = { loginOrRegister: { max: 3, windowMs: 60_000 } }

interface From { remoteAddress: string; forwardedFor?: string }

function attemptLogin(app: FastifyInstance, { remoteAddress, forwardedFor }: From): Promise<LightMyRequestResponse> {
  return app.inject({
    method: 'POST',
    url: '/api/auth/email/login',
    payload: { login: 'nobody', password: 'whatever it is' },
    remoteAddress,
    headers: forwardedFor === undefined ? {} : { 'x-forwarded-for': forwardedFor },
  })
}

/** The statuses of `count` login attempts, each from `from(index)`. */
async function statuses(app: FastifyInstance, count: number, from: (index: number) => From): Promise<number[]> {
  const result: number[] = []
  for (let index = 0; index < count; index++) result.push((await attemptLogin(app, from(index))).statusCode)
  return result
}

describe.each(DIALECTS)('TRUST_PROXY on %s', (dialect) => {
  let ctx: TestContext
  let oneHop: FastifyInstance
  let listed: FastifyInstance
  let adminCookie: string

  /** The ip of the user.registered event of the user a registration answer created. */
  const registeredFrom = async (registration: LightMyRequestResponse): Promise<string | null | undefined> => {
    const audit = await oneHop.inject({ method: 'GET', url: '/api/admin/audit-log?type=user.registered&limit=100', headers: { cookie: adminCookie } })
    expect(audit.statusCode, audit.body).toBe(200)
    const events = audit.json().data.events as Array<{ target: string; ip: string | null }>
    return events.find((event) => event.target === registration.json().data.user.id)?.ip
  }

  beforeAll(async () => {
    // Two apps (two configurations) on one database: SQLite in a file, so that both see it.
    ctx = await createTestContext(dialect, { file: true })
    oneHop = (await ctx.build({ env: { TRUST_PROXY: '1' }, limits: LIMITS })).app
    listed = (await ctx.build({ env: { TRUST_PROXY: '10.0.0.0/8, ::1' }, limits: LIMITS })).app
    // The first account is the global admin, who reads the audit log.
    adminCookie = sessionCookie(await register(oneHop, { username: 'trust_admin', email: 'trust_admin@example.com' }))!
  })
  afterAll(() => ctx.close())

  it('with one hop, the audit log records the address the proxy appended, not the one the client wrote', async () => {
    const response = await registerVia(oneHop, { remoteAddress: PROXY, forwardedFor: '198.51.100.66, 203.0.113.7' }, 'proxied_user')
    expect(response.statusCode, response.body).toBe(201)
    expect(await registeredFrom(response)).toBe('203.0.113.7')
  })

  it('with one hop, varying the leftmost X-Forwarded-For entry does not escape the per-IP login limit', async () => {
    expect(await statuses(oneHop, 4, (index) => ({ remoteAddress: PROXY, forwardedFor: `198.51.100.${index}, 203.0.113.20` })))
      .toEqual([401, 401, 401, 429])
    // Another client behind the same proxy keeps its own allowance.
    expect((await attemptLogin(oneHop, { remoteAddress: PROXY, forwardedFor: '198.51.100.0, 203.0.113.21' })).statusCode).toBe(401)
  })

  it('with a list of proxies, entries they appended are believed and a client\'s own are not', async () => {
    // Through two listed proxies: the client is the first address no listed proxy owns.
    expect(await statuses(listed, 4, (index) => ({ remoteAddress: PROXY, forwardedFor: `198.51.100.${index}, 203.0.113.30, 10.1.2.3` })))
      .toEqual([401, 401, 401, 429])
    const response = await registerVia(listed, { remoteAddress: '::1', forwardedFor: '198.51.100.67, 203.0.113.9' }, 'listed_user')
    expect(response.statusCode, response.body).toBe(201)
    expect(await registeredFrom(response)).toBe('203.0.113.9')
  })

  it('with a list of proxies, a client that is not one of them is its own address, whatever it forwards', async () => {
    // 203.0.113.30 is exhausted above; a direct client naming it is not counted against it...
    expect((await attemptLogin(listed, { remoteAddress: '203.0.113.40', forwardedFor: '203.0.113.30' })).statusCode).toBe(401)
    // ...and cannot escape its own limit by naming others.
    expect(await statuses(listed, 3, (index) => ({ remoteAddress: '203.0.113.40', forwardedFor: `198.51.100.${index}` })))
      .toEqual([401, 401, 429])
  })
})

function registerVia(app: FastifyInstance, { remoteAddress, forwardedFor }: From, username: string): Promise<LightMyRequestResponse> {
  return app.inject({
    method: 'POST',
    url: '/api/auth/email/register',
    payload: { username, email: `${username}@example.com`, password: 'correct horse battery' },
    remoteAddress,
    headers: forwardedFor === undefined ? {} : { 'x-forwarded-for': forwardedFor },
  })
}
