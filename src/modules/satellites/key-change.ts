import type { DesiredStamps } from '../../db/repositories/desired-stamps.js'
import type { RegistrationTokensRepository } from '../../db/repositories/registration-tokens.js'
import type { SatelliteRow, SatellitesRepository } from '../../db/repositories/satellites.js'
import type { Database } from '../../db/types.js'
import { AppError, errors } from '../../http/errors.js'
import type { Clock } from '../../lib/clock.js'
import type { AuditLog } from '../audit/service.js'
import { fingerprintOf } from './fingerprint.js'
import type { KeyChangeChallenges } from './key-change-challenge.js'
import type { RegistrationJwt } from './registration-jwt.js'
import { rowRefusal } from './registration-tokens.js'
import { isUsablePublicKey } from './sealing.js'

export interface KeyChangeRequest {
  public_key: string
  challenge?: string
  proof?: string
  registration_token?: string
}

/** What allowed a key to be stored: the API key alone (a first key), a proof of the current key, or a registration token. */
export type KeyChangeMethod = 'api_key' | 'proof' | 'registration_token'

type Allowed = { method: 'api_key' | 'proof' } | { method: 'registration_token'; tokenId: string }

const proofRequired = () => new AppError(403, 'KEY_CHANGE_PROOF_REQUIRED',
  'Forbidden: replacing a public key needs proof of the current private key (challenge and proof) or a fresh registration token.')
const invalidProof = (why: string, reason: string) => new AppError(403, 'INVALID_KEY_CHANGE_PROOF', `Forbidden: the key change was refused: ${why}.`, { reason })

const REGISTRATION_TOKEN = /^service_satellite_(global|team)_(.+)$/s

/**
 * A satellite's public key: the first one is set with its API key alone; replacing it needs more,
 * since whoever chooses the key receives every secret sealed to it. No Fastify types here.
 */
export class KeyChange {
  constructor(private readonly deps: {
    database: Database; satellites: SatellitesRepository; tokens: RegistrationTokensRepository; jwt: RegistrationJwt
    challenges: KeyChangeChallenges; stamps: DesiredStamps; audit: AuditLog; clock: Clock
  }) {}

  async challenge(satelliteId: string): Promise<{ challenge: string; sealed: string }> {
    const row = await this.deps.satellites.find(satelliteId)
    if (row === undefined) throw errors.unauthorized()
    if (row.publicKey === null) {
      throw errors.conflict('CONFLICT', 'This satellite has no public key yet, so there is nothing to prove: set its first one with PUT /api/satellites/:id/public-key and the API key alone.')
    }
    try {
      return await this.deps.challenges.issue(satelliteId, row.publicKey)
    } catch {
      // A key stored before keys were checked by a trial seal: nothing can be sealed to it, so nothing proves it.
      throw errors.conflict('CONFLICT', "Nothing can be sealed to this satellite's current key: replace it with a registration token instead.")
    }
  }

  /**
   * Stores `request.public_key` if allowed. A key that is already the satellite's answers as it is
   * (nothing changes, no token is spent). The key is replaced only if it is still the one the
   * decision was made on; when a concurrent change wins, the request is decided again against the
   * new key (so a proof of the old one no longer holds).
   */
  async change(satelliteId: string, request: KeyChangeRequest, ip: string): Promise<{ row: SatelliteRow; changed: boolean }> {
    checkShape(request)
    if (!(await isUsablePublicKey(request.public_key))) throw errors.validation([{ field: 'public_key', message: 'is not an X25519 public key', in: 'body' }])
    const { database, satellites, tokens, stamps, audit } = this.deps
    for (let attempt = 0; attempt < 3; attempt++) {
      const current = await satellites.find(satelliteId)
      if (current === undefined) throw errors.unauthorized()
      if (current.publicKey === request.public_key) return { row: current, changed: false }
      const allowed = await this.allowed(current, request)
      const now = this.now()
      const row = await database.transaction(async (tx) => {
        const updated = await satellites.with(tx).setPublicKey(satelliteId, current.publicKey, request.public_key, current.publicKey === null ? undefined : now, now)
        if (updated === null) return null
        // One conditional update spends it: of two changes racing with one token, one stores its key.
        if (allowed.method === 'registration_token' && !(await tokens.with(tx).spend(allowed.tokenId, satelliteId, now))) {
          const reason = rowRefusal(await tokens.with(tx).find(allowed.tokenId), now) ?? 'used'
          throw invalidProof(`the registration token cannot be used (${reason})`, reason)
        }
        // The next document seals every secret again, to the new key; a held long-poll answers with it.
        await stamps.with(tx).satellites([satelliteId])
        await audit.record('satellite.public_key_changed', {
          actorId: satelliteId, ip, target: satelliteId,
          details: {
            actor: 'satellite', method: allowed.method,
            old_fingerprint: current.publicKey === null ? null : fingerprintOf(current.publicKey),
            new_fingerprint: fingerprintOf(request.public_key),
            ...(allowed.method === 'registration_token' ? { token_id: allowed.tokenId } : {}),
          },
        }, tx)
        return updated
      })
      if (row !== null) return { row, changed: true }
    }
    throw errors.conflict('CONFLICT', "The satellite's key is being changed concurrently; try again.")
  }

  /** What allows storing the new key instead of `current`'s; throws 403 when nothing does. */
  private async allowed(current: SatelliteRow, request: KeyChangeRequest): Promise<Allowed> {
    if (current.publicKey === null) return { method: 'api_key' }
    if (request.challenge !== undefined && request.proof !== undefined) {
      if (await this.deps.challenges.proves(request.challenge, request.proof, current.id, current.publicKey, request.public_key)) return { method: 'proof' }
      throw invalidProof('the proof does not answer a current challenge of this satellite for its present key and this new key (wrong, expired, or the key changed since)', 'proof')
    }
    if (request.registration_token !== undefined) return { method: 'registration_token', tokenId: await this.usableToken(current, request.registration_token) }
    throw proofRequired()
  }

  /** The id of a fresh registration token of the satellite's own scope (and team); spent later, in the change's transaction. */
  private async usableToken(satellite: SatelliteRow, text: string): Promise<string> {
    const match = REGISTRATION_TOKEN.exec(text)
    if (match === null) throw invalidProof('it is not a registration token', 'malformed')
    const verified = await this.deps.jwt.verify(match[2]!, match[1] as 'global' | 'team')
    if (!verified.ok) throw invalidProof(`the registration token was refused (${verified.reason})`, verified.reason)
    const row = await this.deps.tokens.find(verified.claims.jti)
    const refusal = rowRefusal(row, this.now())
    if (refusal !== null) throw invalidProof(`the registration token cannot be used (${refusal})`, refusal)
    if (row!.scope !== verified.claims.scope || row!.teamId !== (verified.claims.team_id ?? null)) throw invalidProof('the registration token is not what it claims', 'invalid_claims')
    if (row!.scope !== satellite.satelliteType || row!.teamId !== satellite.teamId) {
      throw invalidProof(satellite.teamId === null ? 'a global satellite takes a global registration token' : "a team satellite takes a registration token of its own team", 'other_scope')
    }
    return row!.id
  }

  private now(): Date {
    return new Date(this.deps.clock.now())
  }
}

/** A proof needs its challenge and the other way round; it is one way or the other, not both. */
function checkShape(request: KeyChangeRequest): void {
  const hasChallenge = request.challenge !== undefined
  if (hasChallenge !== (request.proof !== undefined)) {
    throw errors.validation([{ field: hasChallenge ? 'proof' : 'challenge', message: 'is required with ' + (hasChallenge ? 'challenge' : 'proof'), in: 'body' }])
  }
  if (hasChallenge && request.registration_token !== undefined) {
    throw errors.validation([{ field: 'registration_token', message: 'send either challenge and proof or registration_token, not both', in: 'body' }])
  }
}
