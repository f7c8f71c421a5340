import { createHmac, randomUUID, timingSafeEqual } from 'node:crypto'
import { jwtVerify, SignJWT } from 'jose'
import type { Clock } from '../../lib/clock.js'
import { fingerprintOf } from './fingerprint.js'
import { sealMessage } from './sealing.js'

/** The HPKE `info` of a sealed key-change nonce: never the one secrets are sealed with. */
export const KEY_CHANGE_INFO = 'service-satellite-key-change'
const AUDIENCE = 'satellite-key-change'
/** How long a challenge may be answered. */
export const CHALLENGE_SECONDS = 300
/** A challenge is a JWT of a few hundred characters; anything far longer is not ours. */
const MAX_CHALLENGE_LENGTH = 2048

/**
 * Proof that a satellite holds the private key of its current public key, asked before that key
 * is replaced (someone holding only its API key must not be able to have its secrets sealed to a
 * key of their own).
 *
 * Nothing is stored. The challenge is an HS256 JWT naming the satellite, the fingerprint of its
 * current key, a random id and a 5-minute expiry; the nonce is an HMAC of those under the same
 * derived key, so checking an answer recomputes it. The nonce is sealed to the current key, so
 * only that key's holder learns it, and the proof is an HMAC of the new key under the nonce,
 * binding the answer to one new key. Once the key changes, every earlier challenge names an old
 * fingerprint and is dead; until then a challenge may be answered more than once, which grants
 * nothing its holder could not get by asking for a new one.
 */
export class KeyChangeChallenges {
  constructor(private readonly key: Uint8Array, private readonly issuer: string, private readonly clock: Clock) {}

  /** A challenge for the satellite's current key, and its nonce sealed to that key (base64url of enc || ct). */
  async issue(satelliteId: string, currentKey: string): Promise<{ challenge: string; sealed: string }> {
    const iat = Math.floor(this.clock.now() / 1000)
    const jti = randomUUID()
    const fingerprint = fingerprintOf(currentKey)
    const challenge = await new SignJWT({ fpr: fingerprint })
      .setProtectedHeader({ alg: 'HS256', typ: 'JWT' })
      .setIssuer(this.issuer)
      .setAudience(AUDIENCE)
      .setSubject(satelliteId)
      .setJti(jti)
      .setIssuedAt(iat)
      .setExpirationTime(iat + CHALLENGE_SECONDS)
      .sign(this.key)
    const sealed = await sealMessage(currentKey, KEY_CHANGE_INFO, Buffer.from(challenge, 'utf8'), this.nonce(jti, satelliteId, fingerprint))
    return { challenge, sealed }
  }

  /**
   * Whether `proof` answers `challenge` for this satellite and its current key, for `newKey`:
   * a challenge of ours, unexpired, of this satellite and this key, and
   * proof = base64url(HMAC-SHA256(nonce, newKey)), compared in constant time.
   */
  async proves(challenge: string, proof: string, satelliteId: string, currentKey: string, newKey: string): Promise<boolean> {
    if (challenge.length > MAX_CHALLENGE_LENGTH) return false
    let payload: Record<string, unknown>
    try {
      ;({ payload } = await jwtVerify(challenge, this.key, {
        algorithms: ['HS256'], issuer: this.issuer, audience: AUDIENCE, subject: satelliteId,
        requiredClaims: ['jti', 'exp'], currentDate: new Date(this.clock.now()),
      }))
    } catch {
      return false
    }
    const fingerprint = fingerprintOf(currentKey)
    if (typeof payload.jti !== 'string' || payload.fpr !== fingerprint) return false
    const expected = createHmac('sha256', this.nonce(payload.jti, satelliteId, fingerprint)).update(newKey, 'utf8').digest()
    const presented = Buffer.from(proof, 'base64url')
    return presented.length === expected.length && timingSafeEqual(presented, expected)
  }

  /** 32 bytes only this service can compute, for one challenge of one satellite's key. */
  private nonce(jti: string, satelliteId: string, fingerprint: string): Buffer {
    return createHmac('sha256', this.key).update(`key-change-nonce\n${jti}\n${satelliteId}\n${fingerprint}`).digest()
  }
}
