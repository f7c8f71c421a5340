import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { policy } from '../../auth/policies.js'
import { isoOrNull } from '../../http/envelope.js'
import { fingerprintOf } from './fingerprint.js'
import { CHALLENGE_SECONDS } from './key-change-challenge.js'
import { KeyChallengeEnvelope, PublicKeyChangeBody, PublicKeyEnvelope } from './key-schemas.js'
import { IdParams } from './schemas.js'

const tags = ['Satellites']
const KEY_TEXT = "With the satellite's own API key (`Authorization: Bearer service_satkey_…`), on its own id only (403 for another); a disabled satellite's key gets 403 SATELLITE_DISABLED; a session or any other credential 401."

/** The public key a satellite's secrets are sealed to, and how it is replaced. */
export const satelliteKeyRoutes: FastifyPluginAsyncTypebox = async (app) => {
  const keys = () => app.services.keyChange

  app.post('/api/satellites/:id/public-key/challenge', {
    config: { auth: policy.satellite({ self: 'id' }) },
    schema: {
      tags, summary: 'A challenge proving the current private key, before replacing it',
      description: [
        `No body. Answers \`challenge\` (valid ${CHALLENGE_SECONDS / 60} minutes) and \`sealed\`, a 32-byte nonce sealed with HPKE to the satellite's current public key`,
        '(RFC 9180 base mode, DHKEM(X25519, HKDF-SHA256), HKDF-SHA256, AES-256-GCM, `info` "service-satellite-key-change", `aad` the challenge string).',
        'Only the holder of the current private key can open it; it then sends `PUT …/public-key` with `{public_key, challenge, proof}` where',
        '`proof` = base64url(HMAC-SHA256(key = nonce, message = the new public_key)). Nothing is stored: a challenge dies when it expires or when the key changes.',
        `409 CONFLICT while the satellite has no key yet (set the first one without a proof). ${KEY_TEXT}`,
      ].join(' '),
      params: IdParams, response: { 200: KeyChallengeEnvelope },
    },
  }, async (request) => {
    return { success: true as const, data: await keys().challenge(request.params.id) }
  })

  app.put('/api/satellites/:id/public-key', {
    config: { auth: policy.satellite({ self: 'id' }) },
    schema: {
      tags, summary: "Set or replace the satellite's public key",
      description: [
        'The X25519 key the secrets of its desired-state documents are sealed to; the next document seals every secret again, to it.',
        'The first key needs the API key alone, and the key the satellite already has answers 200 with nothing changed.',
        'Replacing a key needs more, since whoever chooses it receives every secret sealed to it: either `challenge` and `proof` (see POST …/public-key/challenge),',
        "or `registration_token`, a fresh registration token of the satellite's scope and team, spent by the change (of concurrent uses, one succeeds).",
        'Without either: 403 KEY_CHANGE_PROOF_REQUIRED; a wrong, expired or outdated proof, or a token that is used, revoked, expired or of another scope: 403 INVALID_KEY_CHANGE_PROOF (`details.reason`).',
        'A change is audited (`satellite.public_key_changed`: the satellite as actor, the IP, the old and new fingerprints, the method), and `public_key_changed_at` records it.',
        KEY_TEXT,
      ].join(' '),
      params: IdParams, body: PublicKeyChangeBody, response: { 200: PublicKeyEnvelope },
    },
  }, async (request) => {
    const { row, changed } = await keys().change(request.params.id, request.body, request.ip)
    return {
      success: true as const,
      message: changed ? 'Public key saved.' : 'This is the key the satellite has already; nothing changed.',
      data: { public_key: row.publicKey!, public_key_fingerprint: fingerprintOf(row.publicKey!), public_key_changed_at: isoOrNull(row.publicKeyChangedAt) },
    }
  })
}
