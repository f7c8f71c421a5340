/**
 * Replacing the satellite's key pair. The backend stores a new public key only with proof of the
 * current private key: it seals a nonce to the current key, and the satellite answers with
 * HMAC-SHA256(nonce, new public key). The new pair is saved before the backend hears of it and
 * made current once the backend took it, so a stop in between loses nothing: the next start
 * finishes the change (a challenge then opens with whichever of the two keys the backend holds).
 */
import { createHmac } from 'node:crypto'
import { BackendError, type Backend } from './backend.js'
import type { KeyRing } from './key-ring.js'
import { SatelliteKeys } from './sealing.js'
import type { Pairing, StateStore } from './state.js'

export interface Rotation {
  backend: Backend
  ring: KeyRing
  store: StateStore
  pairing: Pairing
}

/** Replaces the key pair (with `next`, or a new one); answers the pairing as saved, with the new keys. */
export async function rotateKeys({ backend, ring, store, pairing }: Rotation, next?: SatelliteKeys): Promise<{ pairing: Pairing; fingerprint: string }> {
  const keys = next ?? (await SatelliteKeys.generate())
  await store.save({ ...pairing, next_private_key: keys.privateKeyText, next_public_key: keys.publicKey })
  ring.expect(keys)
  let fingerprint: string
  try {
    const { challenge, sealed } = await backend.keyChallenge()
    const nonce = await ring.openChallenge(challenge, sealed)
    const proof = createHmac('sha256', nonce).update(keys.publicKey, 'utf8').digest('base64url')
    fingerprint = (await backend.putPublicKey(keys.publicKey, { challenge, proof })).public_key_fingerprint
  } catch (error) {
    // Refused: the new pair is of no use. Anything else (the backend unreachable, no answer): it may
    // have taken the key, so the pair stays saved and expected, and the next start finishes.
    if (error instanceof BackendError && error.status < 500) {
      ring.drop(keys)
      await store.save(settled(pairing))
    }
    throw error
  }
  ring.use(keys)
  const rotated = settled({ ...pairing, private_key: keys.privateKeyText, public_key: keys.publicKey })
  await store.save(rotated)
  return { pairing: rotated, fingerprint }
}

/** The pair a saved pairing was introducing when the satellite stopped, if any. */
export async function unfinished(pairing: Pairing): Promise<SatelliteKeys | undefined> {
  if (pairing.next_private_key === undefined || pairing.next_public_key === undefined) return undefined
  return SatelliteKeys.restore(pairing.next_private_key, pairing.next_public_key)
}

function settled(pairing: Pairing): Pairing {
  const { next_private_key: _private, next_public_key: _public, ...rest } = pairing
  return rest
}
