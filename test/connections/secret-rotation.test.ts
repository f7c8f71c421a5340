import { sql } from 'drizzle-orm'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { connectionTokensBox } from '../../src/modules/connections/tokens-box.js'
import { rotateEncryptionSecret } from '../../src/modules/installations/secret-rotation.js'
import { RotationRefused } from '../../src/modules/settings/secret-rotation.js'
import { createTestContext, TEST_SECRET, type TestContext } from '../helpers/app.js'
import { connect, listeningApp, remoteServer, startResourceServer, type ResourceServer } from '../helpers/connections.js'
import { DIALECTS } from '../helpers/database.js'
import { install } from '../helpers/installations.js'
import { rawRows } from '../helpers/sql.js'
import { client, crew as makeCrew, signUp } from '../helpers/teams.js'
import { startAuthorizationServer, type AuthorizationServer } from '../helpers/upstream-oauth.js'

const NEW_SECRET = 'the-new-secret-for-the-connections-0123456789ab'

describe.each(DIALECTS)('secret:rotate re-seals connection tokens and upstream client secrets (%s)', (dialect) => {
  let ctx: TestContext
  let as: AuthorizationServer
  let rs: ResourceServer
  beforeAll(async () => {
    ctx = await createTestContext(dialect)
    as = await startAuthorizationServer()
    rs = await startResourceServer(as.issuer)
  })
  afterAll(async () => {
    await ctx?.close()
    await as?.close()
    await rs?.close()
  })

  it('moves every sealed token and secret to the new secret, bound to its place; a second run leaves them; a copied one refuses all', async () => {
    const { app } = await listeningApp(ctx, { OUTBOUND_ALLOWED_HOSTS: `${as.host},${rs.host}` })
    const call = client(app)
    let n = 0
    const fresh = () => signUp(app, `rot_${dialect}_${++n}`)
    const admin = await fresh()
    const crew = await makeCrew(call, fresh, `Rotation ${dialect}`)
    const id = (await install(call, crew.team.id, crew.teamAdmin, { server_id: await remoteServer(call, admin, `Rotated ${dialect}`, rs.url), name: 'rotated' })).id
    expect((await connect(app, crew.team.id, id, crew.teamUser, 'alice')).page.statusCode).toBe(200)
    const put = await call('PUT', `/api/oauth/upstream/clients/${encodeURIComponent('https://manual.example')}`, admin, { client_id: 'm', client_secret: 'manual-secret-0123456789' })
    expect(put.statusCode).toBe(200)
    const place = { installationId: id, userId: crew.teamUser.id, inputKey: `oauth:${rs.url}` }
    const sealedOf = async (query: ReturnType<typeof sql>) => ((await rawRows(app.services.database, query)) as string[][])[0]![0]!
    const sealed = await sealedOf(sql`select sealed from oauth_connections`)
    const tokens = connectionTokensBox(TEST_SECRET).openTokens(place, sealed)

    const report = await rotateEncryptionSecret(app.services.database, { from: TEST_SECRET, to: NEW_SECRET })
    expect(report.connections).toEqual({ reencrypted: 2, current: 0 })
    const resealed = await sealedOf(sql`select sealed from oauth_connections`)
    expect(connectionTokensBox(NEW_SECRET).openTokens(place, resealed)).toEqual(tokens)
    expect(() => connectionTokensBox(TEST_SECRET).openTokens(place, resealed)).toThrow()
    const secret = await sealedOf(sql`select client_secret_sealed from upstream_oauth_clients where issuer = 'https://manual.example'`)
    expect(connectionTokensBox(NEW_SECRET).openClientSecret('https://manual.example', secret)).toBe('manual-secret-0123456789')

    const again = await rotateEncryptionSecret(app.services.database, { from: TEST_SECRET, to: NEW_SECRET })
    expect(again.connections).toEqual({ reencrypted: 0, current: 2 })

    // A sealed token set copied to another member's row opens under neither secret: nothing is written.
    await rawRows(app.services.database, sql`update oauth_connections set user_id = ${crew.teamAdmin.id}, owner = ${crew.teamAdmin.id}`)
    await expect(rotateEncryptionSecret(app.services.database, { from: NEW_SECRET, to: TEST_SECRET })).rejects.toBeInstanceOf(RotationRefused)
  })
})
