import { randomUUID } from 'node:crypto'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { Backend } from '../../examples/satellite/src/backend.js'
import { CallLog } from '../../examples/satellite/src/calls.js'
import { silentLogger } from '../../examples/satellite/src/logger.js'
import type { ToolCallRecord } from '../../examples/satellite/src/types.js'
import { createTestContext, type TestContext } from '../helpers/app.js'
import { DIALECTS } from '../helpers/database.js'
import { importDocuments, install, installationOf, weatherDocument } from '../helpers/installations.js'
import { startOAuthServer, type OAuthServer } from '../helpers/oauth-e2e.js'
import { createToken, heartbeat, pair, type Paired } from '../helpers/satellites.js'
import { client, crew as makeCrew, signUp, type Call, type Crew } from '../helpers/teams.js'

/**
 * The reference satellite's tool-call records against the backend's own route, over real HTTP:
 * what the satellite's call log posts is what the backend keeps (user, client, tool, outcome,
 * duration), and a batch sent again with its id is counted once.
 */
describe.each(DIALECTS)('reference satellite call records on the backend (%s)', (dialect) => {
  let ctx: TestContext
  let server: OAuthServer
  let call: Call
  let a: Crew
  let satellite: Paired
  let installationId: string
  let backend: Backend

  beforeAll(async () => {
    ctx = await createTestContext(dialect)
    server = await startOAuthServer(ctx)
    call = client(server.app)
    const admin = await signUp(server.app, `crb_admin_${dialect}`)
    let seq = 0
    a = await makeCrew(call, () => signUp(server.app, `crb_${dialect}_${++seq}`), 'Records Team')
    satellite = await pair(server.app, (await createToken(call, a.teamAdmin, { teamId: a.team.id })).token, `crb-sat-${dialect}`)
    expect((await heartbeat(server.app, satellite.id, satellite.apiKey)).statusCode).toBe(200)
    const serverId = (await importDocuments(call, admin, [weatherDocument('io.github.example/records-weather')]))[0]!
    installationId = (await install(call, a.team.id, a.teamAdmin, { server_id: serverId, target: { kind: 'package', index: 1 } })).id
    backend = new Backend(server.base)
    backend.use(satellite.id, satellite.apiKey)
  }, 60_000)

  afterAll(async () => {
    await server?.app.close()
    await ctx?.close()
  })

  it('posts what the relay recorded; the backend keeps it as sent, and a batch sent again counts once', async () => {
    const calls = new CallLog(backend, silentLogger, { flushMs: 60_000 })
    const at = new Date().toISOString()
    const records: ToolCallRecord[] = [
      { at, user_id: a.teamUser.id, client_id: 'client-one', tool: 'forecast', outcome: 'ok', duration_ms: 12 },
      { at, user_id: a.teamAdmin.id, client_id: 'client-two', tool: 'alerts', outcome: 'refused', duration_ms: 0 },
      { at, user_id: null, client_id: null, tool: 'forecast', outcome: 'error', duration_ms: 40 },
    ]
    for (const record of records) calls.record(installationId, record)
    await calls.flush(10_000)
    expect(calls.pending).toBe(0)
    const kept = await call('GET', `${installationOf(a.team.id, installationId)}/calls?limit=100`, a.teamAdmin)
    expect(kept.statusCode, kept.body).toBe(200)
    const seen = (kept.json().data.calls as Array<ToolCallRecord & { instance_id: string }>)
      .map((each) => [each.user_id, each.client_id, each.tool, each.outcome, each.duration_ms, each.instance_id])
    expect(seen.sort()).toEqual(records.map((each) => [each.user_id, each.client_id, each.tool, each.outcome, each.duration_ms, installationId]).sort())

    const batch = { batch_id: randomUUID(), calls: [records[0]!] }
    expect(await backend.postCalls(installationId, batch)).toEqual({ accepted: 1, duplicate: false })
    expect(await backend.postCalls(installationId, batch)).toEqual({ accepted: 0, duplicate: true })
    calls.close()
  })
})
