import { Type } from 'typebox'
import { Nullable, Ok } from '../../http/envelope.js'
import { PublicKey } from './schemas.js'

export const KeyChallengeEnvelope = Ok(Type.Object({
  challenge: Type.String({ description: 'Opaque (a JWT valid for 5 minutes, bound to this satellite and its current key). Send it back unchanged, with the proof.' }),
  sealed: Type.String({
    description: 'base64url (no padding) of the HPKE `enc || ciphertext` of a 32-byte nonce, sealed to the current public key with the suite of secrets, ' +
      '`info` = "service-satellite-key-change" and `aad` = the UTF-8 bytes of `challenge`.',
  }),
}))

export const PublicKeyChangeBody = Type.Object({
  public_key: PublicKey,
  challenge: Type.Optional(Type.String({ minLength: 1, maxLength: 2048, description: 'From POST …/public-key/challenge; with `proof`.' })),
  proof: Type.Optional(Type.String({
    pattern: '^[A-Za-z0-9_-]{43}$',
    description: 'base64url (no padding) of HMAC-SHA256 with the opened nonce as key over the UTF-8 bytes of the new `public_key`.',
  })),
  registration_token: Type.Optional(Type.String({
    maxLength: 4096, pattern: '^service_satellite_(global|team)_[A-Za-z0-9._-]+$',
    description: "Instead of a proof: a fresh registration token of the satellite's scope (a global token for a global satellite, a token of its team for a team satellite), spent by this change.",
  })),
}, { additionalProperties: false })

export const PublicKeyEnvelope = Ok(Type.Object({
  public_key: Type.String(),
  public_key_fingerprint: Type.String({ description: '`sha256:` and the base64url of the SHA-256 of the raw 32-byte key.' }),
  public_key_changed_at: Nullable(Type.String({ format: 'date-time', description: 'When the key was last replaced; null while the first key was never replaced.' })),
}))
