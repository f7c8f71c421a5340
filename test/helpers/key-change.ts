import { createHmac } from 'node:crypto'
import type { FastifyInstance, LightMyRequestResponse } from 'fastify'
import { Aes256Gcm, CipherSuite, HkdfSha256 } from '@hpke/core'
import { DhkemX25519HkdfSha256 } from '@hpke/dhkem-x25519'
import type { PrivateKey } from './hpke.js'
import type { Paired } from './satellites.js'

/**
 * The key-change proof as the wire contract states it, independently of the service's code:
 * open the sealed nonce (HPKE base mode, info "service-satellite-key-change", aad = the challenge),
 * then proof = base64url(HMAC-SHA256(nonce, new public key)).
 */
const suite = new CipherSuite({ kem: new DhkemX25519HkdfSha256(), kdf: new HkdfSha256(), aead: new Aes256Gcm() })
const exact = (view: Uint8Array): ArrayBuffer => view.buffer.slice(view.byteOffset, view.byteOffset + view.byteLength) as ArrayBuffer

export interface Challenge { challenge: string; sealed: string }

export function askChallenge(app: FastifyInstance, satellite: Paired): Promise<LightMyRequestResponse> {
  return app.inject({ method: 'POST', url: `/api/satellites/${satellite.id}/public-key/challenge`, headers: { authorization: `Bearer ${satellite.apiKey}` } })
}

export async function challengeOf(app: FastifyInstance, satellite: Paired): Promise<Challenge> {
  const response = await askChallenge(app, satellite)
  if (response.statusCode !== 200) throw new Error(`challenge failed: ${response.statusCode} ${response.body}`)
  return response.json().data
}

export async function openNonce(privateKey: PrivateKey, { challenge, sealed }: Challenge): Promise<Buffer> {
  const bytes = Buffer.from(sealed, 'base64url')
  const plain = await suite.open(
    { recipientKey: privateKey, enc: exact(bytes.subarray(0, 32)), info: exact(new TextEncoder().encode('service-satellite-key-change')) },
    exact(bytes.subarray(32)),
    exact(new TextEncoder().encode(challenge)),
  )
  return Buffer.from(plain)
}

export const proofOf = (nonce: Buffer, newPublicKey: string): string => createHmac('sha256', nonce).update(newPublicKey, 'utf8').digest('base64url')

export function putKey(app: FastifyInstance, satellite: Paired, payload: Record<string, unknown>, remoteAddress?: string): Promise<LightMyRequestResponse> {
  return app.inject({
    method: 'PUT', url: `/api/satellites/${satellite.id}/public-key`, headers: { authorization: `Bearer ${satellite.apiKey}` }, payload,
    ...(remoteAddress === undefined ? {} : { remoteAddress }),
  })
}

/** Replaces the satellite's key with a proof of its current one; fails loudly unless 200. */
export async function changeKeyWithProof(app: FastifyInstance, satellite: Paired, currentPrivateKey: PrivateKey, newPublicKey: string): Promise<LightMyRequestResponse> {
  const challenge = await challengeOf(app, satellite)
  const proof = proofOf(await openNonce(currentPrivateKey, challenge), newPublicKey)
  const response = await putKey(app, satellite, { public_key: newPublicKey, challenge: challenge.challenge, proof })
  if (response.statusCode !== 200) throw new Error(`key change failed: ${response.statusCode} ${response.body}`)
  return response
}
