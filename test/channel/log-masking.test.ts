import type { FastifyInstance, LightMyRequestResponse } from 'fastify'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createTestContext, type TestContext } from '../helpers/app.js'
import { DIALECTS } from '../helpers/database.js'
import { keyPair } from '../helpers/hpke.js'
import { importDocuments, install, installationOf, weatherDocument } from '../helpers/installations.js'
import { createToken, pair, SATELLITE_LIMITS, type Paired } from '../helpers/satellites.js'
import { client, crew as makeCrew, signUp, type Account, type Call, type Crew } from '../helpers/teams.js'

/** A value whose base64 and base64url differ ("+" and "/"), and that percent-encoding and JSON escaping both change. */
const SECRET = 'wk"live"/é?&+>~key-7f3a9b'

const FORMS = {
  base64: Buffer.from(SECRET).toString('base64'),
  base64url: Buffer.from(SECRET).toString('base64url'),
  percent: encodeURIComponent(SECRET),
  json: JSON.stringify(SECRET).slice(1, -1),
}

/**
 * A program prints its secret in other forms than the value itself: in a Basic credential
 * (base64), a URL (percent-encoded), a JSON line (escaped). The lines a satellite posts are
 * stored with each of those forms masked as well.
 */
describe.each(DIALECTS)('log masking of encoded secret values on %s', (dialect) => {
  let ctx: TestContext
  let app: FastifyInstance
  let call: Call
  let a: Crew
  let satellite: Paired
  let serverId: string
  let seq = 0
  const fresh = () => signUp(app, `mask_${++seq}`)

  const as = (method: 'GET' | 'POST', url: string, payload?: object): Promise<LightMyRequestResponse> =>
    app.inject({ method, url, headers: { authorization: `Bearer ${satellite.apiKey}` }, ...(payload === undefined ? {} : { payload }) })

  beforeAll(async () => {
    ctx = await createTestContext(dialect)
    app = (await ctx.build({ limits: SATELLITE_LIMITS })).app
    call = client(app)
    const admin: Account = await signUp(app, 'mask_admin')
    a = await makeCrew(call, fresh, 'Masking Team')
    const token = await createToken(call, a.teamAdmin, { teamId: a.team.id })
    satellite = await pair(app, token.token, `mask-sat-${dialect}`, { satellite_url: 'https://mask.example.com', public_key: (await keyPair()).publicKey })
    serverId = (await importDocuments(call, admin, [weatherDocument('io.github.example/masking-weather')]))[0]!
  })
  afterAll(() => ctx.close())

  it('stores a line holding the value, its base64, base64url, percent-encoded and JSON-escaped forms with each masked', async () => {
    for (const [name, form] of Object.entries(FORMS)) expect(form, name).not.toBe(SECRET)
    expect(FORMS.base64).not.toBe(FORMS.base64url)
    const installation = await install(call, a.team.id, a.teamAdmin, {
      server_id: serverId, satellite_id: satellite.id, values: { 'env:WEATHER_API_KEY': SECRET, 'env:PERSONAL_TOKEN': 'personal-8c7d6e5f', 'arg:data_dir': '/d' },
    })
    const document = await as('GET', `/api/satellites/${satellite.id}/desired-state`)
    expect(document.statusCode, document.body).toBe(200)
    const instance = (document.json().data.instances as Array<{ instance_id: string; installation_id: string }>).find((each) => each.installation_id === installation.id)
    expect(instance, document.body).toBeDefined()

    const text = `raw=${SECRET} basic=${FORMS.base64} jwt=${FORMS.base64url}. url=https://x.example/?k=${FORMS.percent} json={"key":"${FORMS.json}"}`
    const posted = await as('POST', `/api/satellites/${satellite.id}/instances/${instance!.instance_id}/logs`, { lines: [{ at: new Date().toISOString(), stream: 'stderr', text }] })
    expect(posted.statusCode, posted.body).toBe(200)

    const read = await call('GET', `${installationOf(a.team.id, installation.id)}/logs`, a.teamAdmin)
    expect(read.statusCode, read.body).toBe(200)
    const stored = (read.json().data.logs as Array<{ text: string }>).map((line) => line.text)
    expect(stored).toEqual(['raw=[secret] basic=[secret] jwt=[secret]. url=https://x.example/?k=[secret] json={"key":"[secret]"}'])
    for (const form of [SECRET, ...Object.values(FORMS)]) expect(read.body).not.toContain(form)
  })
})
