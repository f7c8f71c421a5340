import { createHash } from 'node:crypto'
import type { FastifyInstance, LightMyRequestResponse } from 'fastify'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createTestContext, type TestContext } from '../helpers/app.js'
import { manualClock } from '../helpers/clock.js'
import { DIALECTS } from '../helpers/database.js'
import { keyPair, unseal, type PrivateKey } from '../helpers/hpke.js'
import { importDocuments, install, weatherDocument } from '../helpers/installations.js'
import { askChallenge, challengeOf, changeKeyWithProof, openNonce, proofOf, putKey } from '../helpers/key-change.js'
import { expectOutcome, fire, warmUp } from '../helpers/races.js'
import { createToken, heartbeat, pair, SATELLITE_LIMITS, type Paired } from '../helpers/satellites.js'
import { client, crew as makeCrew, signUp, type Account, type Call, type Crew } from '../helpers/teams.js'

const SECRET = 'wk-live-rekey-7a6b5c4d3e2f'
const ATTACKER_IP = '203.0.113.77'

type Keys = { publicKey: string; privateKey: PrivateKey }

/** `sha256:` + base64url(SHA-256(raw key)), computed here from the contract, not the service's code. */
const fingerprint = (publicKey: string) => `sha256:${createHash('sha256').update(Buffer.from(publicKey, 'base64url')).digest('base64url')}`

/**
 * Replacing a satellite's public key (PUT /api/satellites/:id/public-key): whoever chooses the key
 * receives every secret sealed to it, so a key is replaced only with proof of the current private
 * key or a fresh registration token of the satellite's scope — never with the API key alone.
 */
describe.each(DIALECTS)('public-key change on %s', (dialect) => {
  let ctx: TestContext
  let app: FastifyInstance
  let call: Call
  let admin: Account
  let crew: Crew
  let other: Crew
  let weatherId: string
  const clock = manualClock(Date.now())
  let seq = 0
  const fresh = () => signUp(app, `rekey_${dialect}_${++seq}`)

  /** A team satellite with a key and one installation whose secret is sealed to it. */
  const keyedSatellite = async (): Promise<{ satellite: Paired; keys: Keys }> => {
    const keys = await keyPair()
    const token = await createToken(call, crew.teamAdmin, { teamId: crew.team.id })
    const satellite = await pair(app, token.token, `rekey-${dialect}-${++seq}`, { public_key: keys.publicKey })
    expect((await heartbeat(app, satellite.id, satellite.apiKey)).statusCode).toBe(200)
    await install(call, crew.team.id, crew.teamAdmin, {
      server_id: weatherId, satellite_id: satellite.id, name: `rekey-${seq}`,
      values: { 'env:WEATHER_API_KEY': SECRET, 'env:PERSONAL_TOKEN': 't', 'arg:data_dir': '/d' },
    })
    return { satellite, keys }
  }

  /** The secret as the satellite's document carries it: sealed to whatever key the backend holds now. */
  const sealedSecret = async (satellite: Paired): Promise<{ instance: string; sealed: string }> => {
    const response = await app.inject({ method: 'GET', url: `/api/satellites/${satellite.id}/desired-state`, headers: { authorization: `Bearer ${satellite.apiKey}` } })
    expect(response.statusCode, response.body).toBe(200)
    const instance = (response.json().data.instances as Array<{ instance_id: string; secrets: Array<{ target: string; sealed: string }> }>)[0]!
    return { instance: instance.instance_id, sealed: instance.secrets.find((secret) => secret.target === 'env:WEATHER_API_KEY')!.sealed }
  }
  const opensWith = async (satellite: Paired, privateKey: PrivateKey): Promise<boolean> => {
    const { instance, sealed } = await sealedSecret(satellite)
    return unseal(privateKey, instance, 'env:WEATHER_API_KEY', sealed).then((value) => value === SECRET, () => false)
  }

  const keyEvents = async (satelliteId: string) => {
    const response = await call('GET', '/api/admin/audit-log?type=satellite.public_key_changed&limit=100', admin)
    expect(response.statusCode, response.body).toBe(200)
    return (response.json().data.events as Array<{ actor_id: string | null; ip: string | null; target: string; details: Record<string, unknown> }>)
      .filter((event) => event.target === satelliteId)
  }

  /**
   * The satellite views show the key's fingerprint and when it changed once they carry those
   * fields (added to the views by another change); the key-change answer shows them already.
   */
  const expectViewShows = async (satellite: Paired, key: string, changedAt: string | null) => {
    const view = (await call('GET', `/api/satellites/${satellite.id}`, admin)).json().data.satellite as Record<string, unknown>
    if (!('public_key_fingerprint' in view)) return
    expect(view.public_key_fingerprint).toBe(fingerprint(key))
    expect(view.public_key_changed_at).toBe(changedAt)
  }

  const expectCode = (response: LightMyRequestResponse, status: number, code: string) => {
    expect(response.statusCode, response.body).toBe(status)
    expect(response.json().code).toBe(code)
  }

  beforeAll(async () => {
    ctx = await createTestContext(dialect)
    app = (await ctx.build({ limits: SATELLITE_LIMITS, clock })).app
    call = client(app)
    admin = await signUp(app, `rekey_${dialect}_admin`)
    crew = await makeCrew(call, fresh, 'Rekey Team')
    other = await makeCrew(call, fresh, 'Rekey Other Team')
    weatherId = (await importDocuments(call, admin, [weatherDocument('io.github.example/rekey-weather')]))[0]!
  })
  afterAll(() => ctx.close())

  it('sets the first key with the API key alone, and answers the same key again with 200 and no change', async () => {
    const token = await createToken(call, crew.teamAdmin, { teamId: crew.team.id })
    const satellite = await pair(app, token.token, `rekey-first-${dialect}`)
    const keys = await keyPair()
    expectCode(await askChallenge(app, satellite), 409, 'CONFLICT')
    const first = await putKey(app, satellite, { public_key: keys.publicKey })
    expect(first.statusCode, first.body).toBe(200)
    expect(first.json().data).toEqual({ public_key: keys.publicKey, public_key_fingerprint: fingerprint(keys.publicKey), public_key_changed_at: null })
    const again = await putKey(app, satellite, { public_key: keys.publicKey })
    expect(again.statusCode, again.body).toBe(200)
    expect(again.json().data.public_key_changed_at).toBeNull()
    const events = await keyEvents(satellite.id)
    expect(events).toHaveLength(1)
    expect(events[0]!.details).toMatchObject({ method: 'api_key', old_fingerprint: null, new_fingerprint: fingerprint(keys.publicKey) })
    await expectViewShows(satellite, keys.publicKey, null)
  })

  it('refuses a different key with only the API key (403 KEY_CHANGE_PROOF_REQUIRED): the secrets stay sealed to the old key', async () => {
    const { satellite, keys } = await keyedSatellite()
    const attacker = await keyPair()
    expectCode(await putKey(app, satellite, { public_key: attacker.publicKey }, ATTACKER_IP), 403, 'KEY_CHANGE_PROOF_REQUIRED')
    expect(await opensWith(satellite, keys.privateKey)).toBe(true)
    expect(await opensWith(satellite, attacker.privateKey)).toBe(false)
    expect(await keyEvents(satellite.id)).toEqual([])
    await expectViewShows(satellite, keys.publicKey, null)
  })

  it('replaces the key with a proof of the current one: audited with the satellite, the IP and both fingerprints; the secrets follow the new key', async () => {
    const { satellite, keys } = await keyedSatellite()
    const next = await keyPair()
    const challenge = await challengeOf(app, satellite)
    const proof = proofOf(await openNonce(keys.privateKey, challenge), next.publicKey)
    const changed = await putKey(app, satellite, { public_key: next.publicKey, challenge: challenge.challenge, proof }, ATTACKER_IP)
    expect(changed.statusCode, changed.body).toBe(200)
    const data = changed.json().data
    expect(data.public_key_fingerprint).toBe(fingerprint(next.publicKey))
    expect(data.public_key_changed_at).toBe(new Date(clock.now()).toISOString())
    expect(await opensWith(satellite, next.privateKey)).toBe(true)
    expect(await opensWith(satellite, keys.privateKey)).toBe(false)

    const [event, ...more] = await keyEvents(satellite.id)
    expect(more).toEqual([])
    expect(event).toMatchObject({
      actor_id: satellite.id, ip: ATTACKER_IP,
      details: { actor: 'satellite', method: 'proof', old_fingerprint: fingerprint(keys.publicKey), new_fingerprint: fingerprint(next.publicKey) },
    })
    // Fingerprints only: no key, challenge, nonce or proof in the trail.
    const trail = JSON.stringify(event)
    for (const material of [keys.publicKey, next.publicKey, challenge.challenge, challenge.sealed, proof]) expect(trail).not.toContain(material)
    await expectViewShows(satellite, next.publicKey, data.public_key_changed_at)

    // The same proof again: the key is the satellite's now, so nothing changes.
    const again = await putKey(app, satellite, { public_key: next.publicKey, challenge: challenge.challenge, proof })
    expect(again.statusCode, again.body).toBe(200)
    expect(await keyEvents(satellite.id)).toHaveLength(1)
  })

  it('refuses a proof made for another key, a challenge replayed after the change, an expired one and one of another satellite (403 INVALID_KEY_CHANGE_PROOF)', async () => {
    const { satellite, keys } = await keyedSatellite()
    const [wanted, smuggled, third] = [await keyPair(), await keyPair(), await keyPair()]

    // A proof for one key does not carry another.
    const challenge = await challengeOf(app, satellite)
    const nonce = await openNonce(keys.privateKey, challenge)
    expectCode(await putKey(app, satellite, { public_key: smuggled.publicKey, challenge: challenge.challenge, proof: proofOf(nonce, wanted.publicKey) }), 403, 'INVALID_KEY_CHANGE_PROOF')
    // A proof made without the nonce (the holder of the API key alone cannot open it).
    expectCode(await putKey(app, satellite, { public_key: smuggled.publicKey, challenge: challenge.challenge, proof: proofOf(Buffer.alloc(32), smuggled.publicKey) }), 403, 'INVALID_KEY_CHANGE_PROOF')
    expect(await opensWith(satellite, keys.privateKey)).toBe(true)

    // A challenge of another satellite (one the caller controls, whose nonce it can open) proves nothing here.
    const { satellite: mine, keys: mineKeys } = await keyedSatellite()
    const foreign = await challengeOf(app, mine)
    const foreignProof = proofOf(await openNonce(mineKeys.privateKey, foreign), smuggled.publicKey)
    expectCode(await putKey(app, satellite, { public_key: smuggled.publicKey, challenge: foreign.challenge, proof: foreignProof }), 403, 'INVALID_KEY_CHANGE_PROOF')

    // The right proof works; then the challenge it answered (or any earlier one) is dead.
    expect((await putKey(app, satellite, { public_key: wanted.publicKey, challenge: challenge.challenge, proof: proofOf(nonce, wanted.publicKey) })).statusCode).toBe(200)
    expectCode(await putKey(app, satellite, { public_key: third.publicKey, challenge: challenge.challenge, proof: proofOf(nonce, third.publicKey) }), 403, 'INVALID_KEY_CHANGE_PROOF')
    expect(await opensWith(satellite, wanted.privateKey)).toBe(true)

    // A challenge answered after its 5 minutes.
    const late = await challengeOf(app, satellite)
    const lateProof = proofOf(await openNonce(wanted.privateKey, late), third.publicKey)
    clock.advance(5 * 60_000 + 1_000)
    expectCode(await putKey(app, satellite, { public_key: third.publicKey, challenge: late.challenge, proof: lateProof }), 403, 'INVALID_KEY_CHANGE_PROOF')
    expect(await opensWith(satellite, wanted.privateKey)).toBe(true)
    // Just inside them, it works.
    const timely = await challengeOf(app, satellite)
    const timelyProof = proofOf(await openNonce(wanted.privateKey, timely), third.publicKey)
    clock.advance(5 * 60_000 - 1_000)
    expect((await putKey(app, satellite, { public_key: third.publicKey, challenge: timely.challenge, proof: timelyProof })).statusCode).toBe(200)
  })

  it('of two changes racing with proofs from one challenge, one stores its key; the other is refused', async () => {
    const { satellite, keys } = await keyedSatellite()
    const [one, two] = [await keyPair(), await keyPair()]
    const challenge = await challengeOf(app, satellite)
    const nonce = await openNonce(keys.privateKey, challenge)
    await warmUp(app, 2)
    const answers = await fire(2, (i) => {
      const next = i === 0 ? one : two
      return putKey(app, satellite, { public_key: next.publicKey, challenge: challenge.challenge, proof: proofOf(nonce, next.publicKey) })
    })
    expectOutcome(answers, { 200: 1, '403 INVALID_KEY_CHANGE_PROOF': 1 })
    const winner = answers[0]!.statusCode === 200 ? one : two
    expect(await opensWith(satellite, winner.privateKey)).toBe(true)
    expect(await keyEvents(satellite.id)).toHaveLength(1)
  })

  it('replaces the key with a fresh registration token of its scope, spending it; a used token, another team\'s or a global one is refused', async () => {
    const { satellite, keys } = await keyedSatellite()
    const [next, later] = [await keyPair(), await keyPair()]

    const otherTeams = await createToken(call, other.teamAdmin, { teamId: other.team.id })
    expectCode(await putKey(app, satellite, { public_key: next.publicKey, registration_token: otherTeams.token }), 403, 'INVALID_KEY_CHANGE_PROOF')
    const global = await createToken(call, admin)
    expectCode(await putKey(app, satellite, { public_key: next.publicKey, registration_token: global.token }), 403, 'INVALID_KEY_CHANGE_PROOF')
    expectCode(await putKey(app, satellite, { public_key: next.publicKey, registration_token: `${global.token.slice(0, -4)}AAAA` }), 403, 'INVALID_KEY_CHANGE_PROOF')
    expect(await opensWith(satellite, keys.privateKey)).toBe(true)

    const token = await createToken(call, crew.teamAdmin, { teamId: crew.team.id })
    const changed = await putKey(app, satellite, { public_key: next.publicKey, registration_token: token.token }, ATTACKER_IP)
    expect(changed.statusCode, changed.body).toBe(200)
    expect(await opensWith(satellite, next.privateKey)).toBe(true)
    const tokens = (await call('GET', `/api/teams/${crew.team.id}/satellites/registration-tokens?limit=100`, crew.teamAdmin)).json().data.tokens as Array<Record<string, unknown>>
    expect(tokens.find((each) => each.id === token.id)).toMatchObject({ status: 'used', used_by_satellite_id: satellite.id })
    for (const unspent of [otherTeams.id]) {
      const theirs = (await call('GET', `/api/teams/${other.team.id}/satellites/registration-tokens?limit=100`, other.teamAdmin)).json().data.tokens as Array<Record<string, unknown>>
      expect(theirs.find((each) => each.id === unspent)).toMatchObject({ status: 'active' })
    }
    expect((await keyEvents(satellite.id))[0]).toMatchObject({
      actor_id: satellite.id, ip: ATTACKER_IP,
      details: { method: 'registration_token', token_id: token.id, old_fingerprint: fingerprint(keys.publicKey), new_fingerprint: fingerprint(next.publicKey) },
    })
    // Spent: it does not work twice.
    expectCode(await putKey(app, satellite, { public_key: later.publicKey, registration_token: token.token }), 403, 'INVALID_KEY_CHANGE_PROOF')
  })

  it('a registration token raced by two changes replaces the key once', async () => {
    const { satellite } = await keyedSatellite()
    const [one, two] = [await keyPair(), await keyPair()]
    const token = await createToken(call, crew.teamAdmin, { teamId: crew.team.id })
    await warmUp(app, 2)
    const answers = await fire(2, (i) => putKey(app, satellite, { public_key: (i === 0 ? one : two).publicKey, registration_token: token.token }))
    expectOutcome(answers, { 200: 1, '403 INVALID_KEY_CHANGE_PROOF': 1 })
    const winner = answers[0]!.statusCode === 200 ? one : two
    expect(await opensWith(satellite, winner.privateKey)).toBe(true)
    expect(await keyEvents(satellite.id)).toHaveLength(1)
  })

  it('a global satellite takes a global token, not a team one', async () => {
    const keys = await keyPair()
    const satellite = await pair(app, (await createToken(call, admin)).token, `rekey-global-${dialect}`, { public_key: keys.publicKey })
    const next = await keyPair()
    expectCode(await putKey(app, satellite, { public_key: next.publicKey, registration_token: (await createToken(call, crew.teamAdmin, { teamId: crew.team.id })).token }), 403, 'INVALID_KEY_CHANGE_PROOF')
    expect((await putKey(app, satellite, { public_key: next.publicKey, registration_token: (await createToken(call, admin)).token })).statusCode).toBe(200)
    await changeKeyWithProof(app, satellite, next.privateKey, (await keyPair()).publicKey)
  })

  it('a re-registration that brings another key (with a registration token, as ever) records when the key changed', async () => {
    const { satellite } = await keyedSatellite()
    const next = await keyPair()
    const again = await pair(app, (await createToken(call, crew.teamAdmin, { teamId: crew.team.id })).token, satellite.name, { public_key: next.publicKey })
    expect(again.id).toBe(satellite.id)
    const same = await putKey(app, again, { public_key: next.publicKey })
    expect(same.statusCode, same.body).toBe(200)
    expect(same.json().data).toMatchObject({ public_key_fingerprint: fingerprint(next.publicKey), public_key_changed_at: new Date(clock.now()).toISOString() })
    expect(await opensWith(again, next.privateKey)).toBe(true)
  })

  it('refuses bad shapes with 400', async () => {
    const { satellite, keys } = await keyedSatellite()
    const next = await keyPair()
    const challenge = await challengeOf(app, satellite)
    const proof = proofOf(await openNonce(keys.privateKey, challenge), next.publicKey)
    const token = await createToken(call, crew.teamAdmin, { teamId: crew.team.id })
    for (const body of [
      { public_key: next.publicKey, challenge: challenge.challenge },
      { public_key: next.publicKey, proof },
      { public_key: next.publicKey, challenge: challenge.challenge, proof, registration_token: token.token },
      { public_key: next.publicKey, challenge: challenge.challenge, proof, sealed: challenge.sealed },
      { public_key: next.publicKey, challenge: challenge.challenge, proof: `${proof}=` },
      { public_key: next.publicKey, registration_token: 'not-a-token' },
      { public_key: 'A'.repeat(44) },
      // Points of low order (0 and 1): they parse, but nothing can be sealed to them (RFC 7748 §6.1).
      { public_key: Buffer.alloc(32).toString('base64url') },
      { public_key: Buffer.from([1, ...new Array(31).fill(0)]).toString('base64url') },
      {},
    ]) {
      expectCode(await putKey(app, satellite, body), 400, 'VALIDATION_ERROR')
    }
    expect(await opensWith(satellite, keys.privateKey)).toBe(true)
  })

  it("answers 401 to a global admin's or a user's session, and 403 to another satellite's key, on both routes", async () => {
    const { satellite } = await keyedSatellite()
    const { satellite: stranger } = await keyedSatellite()
    const next = await keyPair()
    for (const cookie of [admin.cookie, crew.teamAdmin.cookie, crew.teamUser.cookie]) {
      const headers = { cookie, origin: 'http://localhost:3000' }
      expectCode(await app.inject({ method: 'POST', url: `/api/satellites/${satellite.id}/public-key/challenge`, headers }), 401, 'UNAUTHORIZED')
      expectCode(await app.inject({ method: 'PUT', url: `/api/satellites/${satellite.id}/public-key`, headers, payload: { public_key: next.publicKey } }), 401, 'UNAUTHORIZED')
    }
    const foreign = { ...satellite, apiKey: stranger.apiKey }
    expectCode(await askChallenge(app, foreign), 403, 'FORBIDDEN')
    expectCode(await putKey(app, foreign, { public_key: next.publicKey }), 403, 'FORBIDDEN')
  })
})
