import { sql } from 'drizzle-orm'
import type { FastifyInstance, LightMyRequestResponse } from 'fastify'
import { decodeJwt } from 'jose'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { ConnectionRow } from '../../src/db/repositories/connections.js'
import { upstreamClientsRepository } from '../../src/db/repositories/upstream-clients.js'
import { refreshAtFor } from '../../src/modules/connections/token-response.js'
import { createTestContext, type TestContext } from '../helpers/app.js'
import { addOAuthInput, bearerTokens, storeConnection, tokensOf } from '../helpers/connection-rows.js'
import { DIALECTS } from '../helpers/database.js'
import { keyPair, unseal, type PrivateKey } from '../helpers/hpke.js'
import { importDocuments, install, installationOf, weatherDocument, type InstallationBody } from '../helpers/installations.js'
import { createToken, heartbeat, pair, SATELLITE_LIMITS, type Paired } from '../helpers/satellites.js'
import { rawRows } from '../helpers/sql.js'
import { client, crew as makeCrew, signUp, type Call, type Crew } from '../helpers/teams.js'
import { until } from '../helpers/until.js'
import { startAuthorizationServer, type AuthorizationServer } from '../helpers/upstream-oauth.js'
import { grantFor, registerPublicClient } from '../helpers/upstream-tokens.js'

const RESOURCE = 'https://acme.weather.example.com/mcp'
/** Short, so that a token is due within seconds: refreshed 1.2 s before it expires. */
const ACCESS_TOKEN_TTL = 6

interface Instance { instance_id: string; installation_id: string; spec_hash: string; secrets: Array<{ target: string; sealed: string; rotating?: true }> }

/**
 * The connection refresher against a real authorization server (oidc-provider on loopback, refresh
 * tokens rotating), with two instances of the service on one database: a token is refreshed before
 * it expires and the new one reaches the satellite's document (revision moved, spec_hash not); a
 * refresh token the server no longer knows ends the connection (expired, needs_auth, audited, no
 * token in the document, never tried again); instances ticking at once refresh each token once.
 */
describe.each(DIALECTS)('connection refresher on %s', (dialect) => {
  let server: AuthorizationServer
  let registered: Awaited<ReturnType<typeof registerPublicClient>>
  let ctx: TestContext
  let one: FastifyInstance
  let two: FastifyInstance
  let call: Call
  let a: Crew
  let satellite: Paired
  let keys: { publicKey: string; privateKey: PrivateKey }
  let weatherId: string
  let seq = 0

  const document = async (): Promise<{ revision: string; instances: Instance[] }> => {
    const response: LightMyRequestResponse = await one.inject({ method: 'GET', url: `/api/satellites/${satellite.id}/desired-state`, headers: { authorization: `Bearer ${satellite.apiKey}` } })
    expect(response.statusCode, response.body).toBe(200)
    return response.json().data
  }
  const authorizationIn = async (installationId: string): Promise<string | undefined> => {
    const instance = (await document()).instances.find((each) => each.installation_id === installationId)
    const secret = instance?.secrets.find((each) => each.target === 'header:Authorization')
    return secret === undefined ? undefined : unseal(keys.privateKey, instance!.instance_id, secret.target, secret.sealed)
  }
  /** A remote installation with a team oauth input, connected with real tokens (due for refresh at `refreshAt`). */
  const connected = async (name: string, refreshAt: Date | null, account = 'alice') => {
    const installation = await install(call, a.team.id, a.teamAdmin, {
      server_id: weatherId, name, target: { kind: 'remote', index: 0 }, values: { 'urlvar:tenant': 'acme', 'header:X-Api-Key': 'xk-static-0f1e2d' },
    })
    const key = await addOAuthInput(one, installation.id, RESOURCE, 'team')
    const grant = await grantFor(server, registered, RESOURCE, account)
    const row = await storeConnection(one, {
      installationId: installation.id, teamId: a.team.id, userId: null, inputKey: key, issuer: server.issuer, clientId: grant.clientId, tokens: grant.tokens,
      refreshAt: refreshAt ?? refreshAtFor(new Date(), new Date(grant.tokens.expires_at!), true),
    })
    return { installation, key, grant, row }
  }
  const past = () => new Date(Date.now() - 1000)
  const tokenRequests = () => server.requests.get('/token') ?? 0

  beforeAll(async () => {
    server = await startAuthorizationServer({ accessTokenTTL: ACCESS_TOKEN_TTL })
    registered = await registerPublicClient(server)
    ctx = await createTestContext(dialect, { file: true })
    const env = { OUTBOUND_ALLOWED_HOSTS: server.host }
    // The first instance ticks on its own, often; the second only when a test says so.
    one = (await ctx.build({ env, limits: SATELLITE_LIMITS, connectionRefreshMs: 250 })).app
    two = (await ctx.build({ env, limits: SATELLITE_LIMITS, connectionRefreshMs: 3_600_000 })).app
    call = client(one)
    const admin = await signUp(one, 'refresher_admin')
    a = await makeCrew(call, () => signUp(one, `refresher_${++seq}`), 'Refresher Team')
    keys = await keyPair()
    const token = await createToken(call, a.teamAdmin, { teamId: a.team.id })
    satellite = await pair(one, token.token, `refresher-sat-${dialect}`, { satellite_url: 'http://127.0.0.1:7400', public_key: keys.publicKey })
    expect((await heartbeat(one, satellite.id, satellite.apiKey)).statusCode).toBe(200)
    weatherId = (await importDocuments(call, admin, [weatherDocument('io.github.example/refresher-weather')]))[0]!
    // This backend's registration at the server, as the connect flow would have kept it (a public client).
    const now = new Date()
    await upstreamClientsRepository(one.services.database).put({
      issuer: server.issuer, method: 'dynamic', clientId: registered.client.client_id, clientSecretSealed: null, tokenEndpointAuthMethod: 'none', registeredAt: now, updatedAt: now,
    })
  }, 60_000)
  afterAll(async () => {
    await ctx?.close()
    await server?.close()
  })

  it('refreshes a token before it expires; the next document carries the new one (revision moved, spec_hash not); the rotated refresh token works next time', async () => {
    const { installation, grant, row } = await connected('refreshed', null)
    const expiresAt = Date.parse(grant.tokens.expires_at!)
    const before = await document()
    expect(await authorizationIn(installation.id)).toBe(`Bearer ${grant.tokens.access_token}`)

    await until(async () => (await tokensOf(one, row.id)).row.tokenRevision > row.tokenRevision, { what: 'the timer-driven refresh', timeoutMs: 10_000 })
    expect(Date.now()).toBeLessThan(expiresAt)
    const { row: refreshed, tokens } = await tokensOf(one, row.id)
    expect(refreshed).toMatchObject({ status: 'connected', failures: 0, leaseOwner: null, leaseUntil: null })
    expect(tokens.access_token).not.toBe(grant.tokens.access_token)
    expect(tokens.refresh_token).not.toBe(grant.tokens.refresh_token)
    expect(Date.parse(tokens.expires_at!)).toBeGreaterThan(expiresAt)
    expect(refreshed.refreshAt!.getTime()).toBeLessThan(Date.parse(tokens.expires_at!))
    // The new access token (a JWT) is for the same resource and the same account.
    expect(decodeJwt(tokens.access_token)).toMatchObject({ aud: RESOURCE, sub: 'alice' })

    const after = await document()
    expect(after.revision).not.toBe(before.revision)
    const specOf = (doc: typeof before) => doc.instances.find((each) => each.installation_id === installation.id)!.spec_hash
    expect(specOf(after)).toBe(specOf(before))
    expect(await authorizationIn(installation.id)).toBe(`Bearer ${tokens.access_token}`)

    // The rotated refresh token was stored in the same write: the next refresh uses it and succeeds.
    await one.services.database.db.update(one.services.database.t.oauthConnections).set({ refreshAt: past() }).where(sql`id = ${row.id}`)
    await until(async () => (await tokensOf(one, row.id)).row.tokenRevision > refreshed.tokenRevision, { what: 'the second refresh', timeoutMs: 10_000 })
    expect((await tokensOf(one, row.id)).row.status).toBe('connected')
  })

  it('a refresh token the server no longer honours: expired, needs_auth, audited without a token, no token in the document, never tried again', async () => {
    const { installation, key, grant, row } = await connected('revoked', new Date(Date.now() + 3_600_000), 'bob')
    // As the server's operator revoking it: the stored refresh token is gone from the server.
    const refreshTokens = server.provider.RefreshToken as { find(value: string): Promise<{ destroy(): Promise<void> } | undefined> }
    const refreshToken = await refreshTokens.find(grant.tokens.refresh_token!)
    await refreshToken!.destroy()
    await one.services.database.db.update(one.services.database.t.oauthConnections).set({ refreshAt: past() }).where(sql`id = ${row.id}`)

    await two.services.connectionRefresher.tick()
    await until(async () => (await tokensOf(one, row.id)).row.status === 'expired', { what: 'the connection to expire', timeoutMs: 10_000 })
    expect((await tokensOf(one, row.id)).row).toMatchObject({ refreshAt: null, leaseOwner: null })
    expect(await authorizationIn(installation.id)).toBeUndefined()
    const view = (await call('GET', installationOf(a.team.id, installation.id), a.teamUser)).json().data.installation as InstallationBody
    expect(view).toMatchObject({ status: 'needs_auth', status_reason: `The team's connection ${key} has expired; a team admin must connect it again (POST …/connections).` })

    const events = await rawRows(one.services.database, sql`select details from audit_events where type = 'connection.refreshed_failed'`)
    expect(events).toHaveLength(1)
    const details = JSON.stringify(events[0])
    expect(details).toContain(row.id)
    expect(details).toContain(server.issuer)
    for (const secret of [grant.tokens.access_token, grant.tokens.refresh_token!]) expect(details).not.toContain(secret)

    // Never again: more ticks ask the server nothing.
    const asked = tokenRequests()
    await Promise.all([one.services.connectionRefresher.tick(), two.services.connectionRefresher.tick()])
    expect(tokenRequests()).toBe(asked)
  })

  it('a failure other than invalid_grant (an issuer the address checks refuse) postpones with a growing wait, never a loop', async () => {
    const installation = await install(call, a.team.id, a.teamAdmin, {
      server_id: weatherId, name: 'unreachable', target: { kind: 'remote', index: 0 }, values: { 'urlvar:tenant': 'acme', 'header:X-Api-Key': 'xk-static-0f1e2d' },
    })
    const key = await addOAuthInput(one, installation.id, RESOURCE, 'team')
    // A private address outside OUTBOUND_ALLOWED_HOSTS: refused before any connection.
    const now = new Date()
    await upstreamClientsRepository(one.services.database).put({
      issuer: 'http://10.255.255.1', method: 'manual', clientId: 'c', clientSecretSealed: null, tokenEndpointAuthMethod: 'none', registeredAt: now, updatedAt: now,
    })
    const row = await storeConnection(one, {
      installationId: installation.id, teamId: a.team.id, userId: null, inputKey: key, issuer: 'http://10.255.255.1', clientId: 'c', tokens: bearerTokens('at-unreachable-1a2b', 'rt-unreachable-3c4d'), refreshAt: past(),
    })
    const started = Date.now()
    await two.services.connectionRefresher.tick()
    await until(async () => (await tokensOf(one, row.id)).row.failures === 1, { what: 'the first failure', timeoutMs: 10_000 })
    const first = (await tokensOf(one, row.id)).row
    expect(first).toMatchObject({ status: 'connected', leaseOwner: null, tokenRevision: row.tokenRevision })
    expect(first.refreshAt!.getTime() - started).toBeGreaterThanOrEqual(29_000)
    // Still connected: its current token keeps being sent meanwhile.
    expect(await authorizationIn(installation.id)).toBe('Bearer at-unreachable-1a2b')
    // Due again: the wait doubles.
    await one.services.database.db.update(one.services.database.t.oauthConnections).set({ refreshAt: past() }).where(sql`id = ${row.id}`)
    await two.services.connectionRefresher.tick()
    await until(async () => (await tokensOf(one, row.id)).row.failures === 2, { what: 'the second failure', timeoutMs: 10_000 })
    expect((await tokensOf(one, row.id)).row.refreshAt!.getTime() - Date.now()).toBeGreaterThan(55_000)
    // Not due: more ticks leave it alone.
    await Promise.all([one.services.connectionRefresher.tick(), two.services.connectionRefresher.tick()])
    expect((await tokensOf(one, row.id)).row.failures).toBe(2)
  })

  it('two instances ticking at once refresh each due token exactly once', async () => {
    const rows: ConnectionRow[] = []
    for (let index = 0; index < 5; index++) rows.push((await connected(`concurrent-${index}`, new Date(Date.now() + 3_600_000), `user${index}`)).row)
    const asked = tokenRequests()
    const database = one.services.database
    await database.db.update(database.t.oauthConnections).set({ refreshAt: past() }).where(sql`id in (${sql.join(rows.map((row) => sql`${row.id}`), sql`, `)})`)
    for (let round = 0; round < 3; round++) {
      await Promise.all([one.services.connectionRefresher.tick(), two.services.connectionRefresher.tick(), one.services.connectionRefresher.tick()])
    }
    await until(async () => (await Promise.all(rows.map((row) => tokensOf(one, row.id)))).every(({ row }) => row.leaseOwner === null), { what: 'every lease to be released', timeoutMs: 10_000 })
    expect(tokenRequests() - asked).toBe(rows.length)
    for (const row of rows) expect((await tokensOf(one, row.id)).row.tokenRevision).toBe(row.tokenRevision + 1)
  })
})
