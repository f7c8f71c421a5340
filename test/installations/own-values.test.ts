import { sql } from 'drizzle-orm'
import type { FastifyInstance } from 'fastify'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createTestContext, type TestContext } from '../helpers/app.js'
import { DIALECTS } from '../helpers/database.js'
import { keyPair, unseal, type PrivateKey } from '../helpers/hpke.js'
import { importDocuments, install, installationOf, weatherDocument, type InputBody, type InstallationBody } from '../helpers/installations.js'
import { documentOf, QUOTA_SETTING, withSetting, type DocumentInstance } from '../helpers/placement.js'
import { createToken, heartbeat, pair, SATELLITE_LIMITS, type Paired } from '../helpers/satellites.js'
import { rawRows } from '../helpers/sql.js'
import { client, crew as makeCrew, signUp, type Account, type Call, type Crew } from '../helpers/teams.js'

const TOKEN = 'env:PERSONAL_TOKEN'
const TEAM_VALUES = { 'env:WEATHER_API_KEY': 'wk-team-own-values', 'arg:data_dir': '/data' }

interface Keyed { satellite: Paired; privateKey: PrivateKey }

/**
 * A member's own values (here a personal token) are sealed only to a global satellite or to the
 * satellite key the member set them for. A team admin who moves a per-user installation to a
 * satellite they registered (and so hold the private key of), or registers that satellite again
 * with a new key, gets no member's secret: it is dropped (or left out), the member is told, and
 * it reaches the new satellite only once the member sets it again there. Every document here is
 * opened with the satellite's private key, as the satellite would.
 */
describe.each(DIALECTS)("members' own values and satellite moves on %s", (dialect) => {
  let ctx: TestContext
  let app: FastifyInstance
  let call: Call
  let admin: Account
  let crew: Crew
  let shared: Keyed
  let weatherId: string
  let seq = 0

  /** A satellite with a fresh key pair, online. */
  const keyed = async (token: string, name: string): Promise<Keyed> => {
    const keys = await keyPair()
    const satellite = await pair(app, token, name, { public_key: keys.publicKey })
    expect((await heartbeat(app, satellite.id, satellite.apiKey)).statusCode).toBe(200)
    return { satellite, privateKey: keys.privateKey }
  }
  /** Every secret of a document, opened with the satellite's private key. */
  const opened = async (at: Keyed): Promise<Array<{ instance: DocumentInstance; target: string; value: string }>> => {
    const found: Array<{ instance: DocumentInstance; target: string; value: string }> = []
    for (const instance of await documentOf(app, at.satellite)) {
      for (const secret of instance.secrets) found.push({ instance, target: secret.target, value: await unseal(at.privateKey, instance.instance_id, secret.target, secret.sealed) })
    }
    return found
  }
  /** What `member`'s own instance of the installation gets on that satellite: their token, or undefined when it has no instance of theirs. */
  const tokenAt = async (at: Keyed, installationId: string, member: Account): Promise<string | undefined> =>
    (await opened(at)).find((each) => each.instance.installation_id === installationId && each.instance.user_id === member.id && each.target === TOKEN)?.value
  const setOwn = async (installationId: string, member: Account, value: string) => {
    const response = await call('PUT', `${installationOf(crew.team.id, installationId)}/my-values`, member, { values: { [TOKEN]: value } })
    expect(response.statusCode, response.body).toBe(200)
  }
  const moveTo = async (installationId: string, satelliteId: string) => {
    const response = await call('PATCH', installationOf(crew.team.id, installationId), crew.teamAdmin, { satellite_id: satelliteId })
    expect(response.statusCode, response.body).toBe(200)
  }
  /** The installation as `member` sees it in their own list, and their own values of it. */
  const seenBy = async (member: Account, installationId: string) => {
    const list = await call('GET', `/api/users/me/mcp/installations?team_id=${crew.team.id}&limit=100`, member)
    expect(list.statusCode, list.body).toBe(200)
    const view = (list.json().data.installations as InstallationBody[]).find((each) => each.id === installationId)!
    const values = (await call('GET', `${installationOf(crew.team.id, installationId)}/my-values`, member)).json().data.values as InputBody[]
    return { view, token: values.find((input) => input.key === TOKEN)! }
  }
  const expectToldToSetAgain = async (member: Account, installationId: string, where: string) => {
    const { view, token } = await seenBy(member, installationId)
    expect(view).toMatchObject({ status: 'needs_config', missing_inputs: [TOKEN] })
    expect(view.status_reason).toMatch(new RegExp(`Your own ${TOKEN} was dropped: the installation moved to the satellite ${where}, or that satellite's key changed`))
    expect(view.inputs.find((input) => input.key === TOKEN)).toMatchObject({ is_set: false, unset_reason: expect.stringMatching(/dropped/) })
    expect(token).toMatchObject({ is_set: false, unset_reason: expect.stringMatching(/moved to another satellite/) })
  }
  const perUser = () => install(call, crew.team.id, crew.teamAdmin, { server_id: weatherId, name: `own-${++seq}`, user_scoped: [TOKEN], values: TEAM_VALUES })

  beforeAll(async () => {
    ctx = await createTestContext(dialect)
    app = (await ctx.build({ limits: SATELLITE_LIMITS })).app
    call = client(app)
    admin = await signUp(app, `own_admin_${dialect}`)
    crew = await makeCrew(call, () => signUp(app, `own_${dialect}_${++seq}`), 'Own Values Team')
    shared = await keyed((await createToken(call, admin)).token, `own-global-${dialect}`)
    weatherId = (await importDocuments(call, admin, [weatherDocument('io.github.example/own-values-weather')]))[0]!
  })
  afterAll(() => ctx.close())

  it("moved to the team admin's own satellite, a member's token is dropped, never sealed there, and sealed there once the member sets it again", async () => {
    const installation = await perUser()
    expect(installation.satellite_id).toBe(shared.satellite.id)
    await setOwn(installation.id, crew.teamUser, 'ghp-member-on-global')
    expect(await tokenAt(shared, installation.id, crew.teamUser)).toBe('ghp-member-on-global')

    // The team admin registers a satellite whose private key they hold, and moves the installation there.
    const theirs = await keyed((await createToken(call, crew.teamAdmin, { teamId: crew.team.id })).token, `own-team-${dialect}`)
    await moveTo(installation.id, theirs.satellite.id)
    expect((await opened(theirs)).map((each) => each.value)).not.toContain('ghp-member-on-global')
    expect(await tokenAt(theirs, installation.id, crew.teamUser)).toBeUndefined()
    expect((await documentOf(app, theirs.satellite)).filter((instance) => instance.user_id === crew.teamUser.id)).toEqual([])
    await expectToldToSetAgain(crew.teamUser, installation.id, theirs.satellite.name)
    // Dropped from storage, not only from the document: the row is emptied.
    const rows = await rawRows(app.services.database, sql`select value, sealed from mcp_installation_values where installation_id = ${installation.id} and user_id = ${crew.teamUser.id}`)
    expect(rows).toEqual([[null, null]])
    // Audited with the keys, never the value.
    const events = (await call('GET', '/api/admin/audit-log?type=installation.own_values_dropped&limit=100', admin)).json().data.events as Array<{ target: string; actor_id: string; details: unknown }>
    const dropped = events.filter((event) => event.target === installation.id)
    expect(dropped).toEqual([expect.objectContaining({
      actor_id: crew.teamAdmin.id,
      details: { team_id: crew.team.id, satellite_id: theirs.satellite.id, members: [{ user_id: crew.teamUser.id, keys: [TOKEN] }] },
    })])
    expect(JSON.stringify(events)).not.toContain('ghp-member-on-global')

    // The member trusts it and sets the token again: now it is sealed there.
    await setOwn(installation.id, crew.teamUser, 'ghp-member-approved')
    expect(await tokenAt(theirs, installation.id, crew.teamUser)).toBe('ghp-member-approved')
    const { view, token } = await seenBy(crew.teamUser, installation.id)
    expect(view.missing_inputs).toEqual([])
    expect(view.status).not.toBe('needs_config')
    expect(token).toEqual(expect.objectContaining({ is_set: true }))
    expect(token.unset_reason).toBeUndefined()

    // Registered again under the same name with a key the member never saw: left out again, and the member is told.
    const again = await keyed((await createToken(call, crew.teamAdmin, { teamId: crew.team.id })).token, theirs.satellite.name)
    expect(again.satellite.id).toBe(theirs.satellite.id)
    expect((await opened(again)).map((each) => each.value)).not.toContain('ghp-member-approved')
    expect(await tokenAt(again, installation.id, crew.teamUser)).toBeUndefined()
    await expectToldToSetAgain(crew.teamUser, installation.id, theirs.satellite.name)
    await setOwn(installation.id, crew.teamUser, 'ghp-member-new-key')
    expect(await tokenAt(again, installation.id, crew.teamUser)).toBe('ghp-member-new-key')

    // Back to the global satellite: used there as set.
    await moveTo(installation.id, shared.satellite.id)
    expect(await tokenAt(shared, installation.id, crew.teamUser)).toBe('ghp-member-new-key')
  })

  it('placed again on a team satellite after its global one is disabled: dropped the same way', async () => {
    const team = await makeCrew(call, () => signUp(app, `own_${dialect}_${++seq}`), `Replaced Team ${seq}`)
    // The helpers above act on `crew`: from here on, this team.
    crew = team
    const global = await keyed((await createToken(call, admin)).token, `own-global-replaced-${dialect}`)
    const installation = await install(call, team.team.id, team.teamAdmin, { server_id: weatherId, user_scoped: [TOKEN], values: TEAM_VALUES, satellite_id: global.satellite.id })
    await setOwn(installation.id, team.teamUser, 'ghp-before-disable')
    expect(await tokenAt(global, installation.id, team.teamUser)).toBe('ghp-before-disable')
    const theirs = await keyed((await createToken(call, team.teamAdmin, { teamId: team.team.id })).token, `own-team-replaced-${dialect}`)
    expect((await call('PUT', `/api/satellites/${global.satellite.id}`, admin, { status: 'disabled' })).statusCode).toBe(200)
    expect((await call('GET', installationOf(team.team.id, installation.id), team.teamAdmin)).json().data.installation.satellite_id).toBe(theirs.satellite.id)
    expect((await opened(theirs)).map((each) => each.value)).not.toContain('ghp-before-disable')
    await expectToldToSetAgain(team.teamUser, installation.id, theirs.satellite.name)
  })

  it("set while unplaced, then placed on the team admin's satellite by its first heartbeat: dropped", async () => {
    const team = await makeCrew(call, () => signUp(app, `own_${dialect}_${++seq}`), `Waiting Team ${seq}`)
    crew = team
    // With a quota of 0 on global satellites, nothing online may take it: it waits, unplaced.
    await withSetting(call, admin, QUOTA_SETTING, 0, 20)
    const installation = await install(call, team.team.id, team.teamAdmin, { server_id: weatherId, user_scoped: [TOKEN], values: TEAM_VALUES })
    expect(installation.satellite_id).toBeNull()
    await setOwn(installation.id, team.teamUser, 'ghp-set-while-waiting')
    expect((await seenBy(team.teamUser, installation.id)).token).toMatchObject({ is_set: true })
    const theirs = await keyed((await createToken(call, team.teamAdmin, { teamId: team.team.id })).token, `own-team-waiting-${dialect}`)
    expect((await call('GET', installationOf(team.team.id, installation.id), team.teamAdmin)).json().data.installation.satellite_id).toBe(theirs.satellite.id)
    expect((await opened(theirs)).map((each) => each.value)).not.toContain('ghp-set-while-waiting')
    await expectToldToSetAgain(team.teamUser, installation.id, theirs.satellite.name)
  })
})
