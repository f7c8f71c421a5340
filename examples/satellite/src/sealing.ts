/**
 * The satellite's X25519 key pair and the opening of the secrets the backend seals to it.
 *
 * Secrets travel sealed with HPKE (RFC 9180) in base mode: DHKEM(X25519, HKDF-SHA256),
 * HKDF-SHA256 and AES-256-GCM. The info string names the purpose, and the associated data binds a
 * sealed value to one instance and one place in it (`<instance id>\n<target>`), so a value sealed
 * for one instance's environment variable cannot be replayed as another instance's header.
 */
import { Aes256Gcm, CipherSuite, HkdfSha256 } from '@hpke/core'
import { DhkemX25519HkdfSha256 } from '@hpke/dhkem-x25519'

export const SEAL_INFO = 'service-satellite-secret'
/** The `info` of the nonce a key-change challenge carries: only the current key's holder opens it. */
export const KEY_CHANGE_INFO = 'service-satellite-key-change'

/** The length of `enc` for DHKEM(X25519): one public key. */
const ENC_LENGTH = 32
/** An AES-GCM tag; a sealed empty string is still this long after `enc`. */
const TAG_LENGTH = 16

const encoder = new TextEncoder()
const decoder = new TextDecoder('utf-8', { fatal: true })

export function suite(): CipherSuite {
  return new CipherSuite({ kem: new DhkemX25519HkdfSha256(), kdf: new HkdfSha256(), aead: new Aes256Gcm() })
}

/** The associated data a secret of `instanceId` at `target` is sealed with. */
export function sealingAad(instanceId: string, target: string): Uint8Array {
  return encoder.encode(`${instanceId}\n${target}`)
}

export function sealingInfo(): Uint8Array {
  return encoder.encode(SEAL_INFO)
}

type PrivateKey = Parameters<CipherSuite['open']>[0]['recipientKey']

/** Why a sealed value could not be opened; never holds any part of the value. */
export class UnsealError extends Error {
  constructor(readonly target: string, reason: string) {
    super(`the secret for ${target} could not be opened: ${reason}`)
  }
}

export class SatelliteKeys {
  private constructor(
    private readonly privateKey: PrivateKey,
    /** base64url (no padding) of the raw 32-byte public key, as registration sends it. */
    readonly publicKey: string,
    /** base64url of the raw 32-byte private key, for the state file. */
    readonly privateKeyText: string,
  ) {}

  static async generate(): Promise<SatelliteKeys> {
    const kem = new DhkemX25519HkdfSha256()
    const pair = await kem.generateKeyPair()
    const publicRaw = Buffer.from(await kem.serializePublicKey(pair.publicKey))
    const privateRaw = Buffer.from(await kem.serializePrivateKey(pair.privateKey))
    return new SatelliteKeys(pair.privateKey, publicRaw.toString('base64url'), privateRaw.toString('base64url'))
  }

  /** The keys kept in the state file. */
  static async restore(privateKeyText: string, publicKey: string): Promise<SatelliteKeys> {
    const raw = Buffer.from(privateKeyText, 'base64url')
    if (raw.length !== 32 || Buffer.from(publicKey, 'base64url').length !== 32) throw new Error('the saved key pair is not a pair of 32-byte X25519 keys')
    const kem = new DhkemX25519HkdfSha256()
    const privateKey = await kem.deserializePrivateKey(exact(raw))
    return new SatelliteKeys(privateKey, publicKey, privateKeyText)
  }

  /** Opens one sealed secret of `instanceId` meant for `target`; throws UnsealError when it does not open. */
  async open(instanceId: string, target: string, sealed: string): Promise<string> {
    const bytes = Buffer.from(sealed, 'base64url')
    if (bytes.length < ENC_LENGTH + TAG_LENGTH) throw new UnsealError(target, 'it is too short')
    let plain: ArrayBuffer
    try {
      plain = await suite().open(
        { recipientKey: this.privateKey, enc: exact(bytes.subarray(0, ENC_LENGTH)), info: exact(sealingInfo()) },
        exact(bytes.subarray(ENC_LENGTH)),
        exact(sealingAad(instanceId, target)),
      )
    } catch {
      // Wrong key (the satellite re-keyed), another instance or target, or altered bytes.
      throw new UnsealError(target, 'it was not sealed to this satellite for this place')
    }
    try {
      return decoder.decode(plain)
    } catch {
      throw new UnsealError(target, 'it is not UTF-8 text')
    }
  }

  /**
   * Opens the nonce of a key-change challenge (sealed with `info` KEY_CHANGE_INFO and the
   * challenge itself as associated data); throws when it was not sealed to this key.
   */
  async openChallenge(challenge: string, sealed: string): Promise<Buffer> {
    const bytes = Buffer.from(sealed, 'base64url')
    if (bytes.length < ENC_LENGTH + TAG_LENGTH) throw new Error('the sealed nonce is too short')
    const plain = await suite().open(
      { recipientKey: this.privateKey, enc: exact(bytes.subarray(0, ENC_LENGTH)), info: exact(encoder.encode(KEY_CHANGE_INFO)) },
      exact(bytes.subarray(ENC_LENGTH)),
      exact(encoder.encode(challenge)),
    )
    return Buffer.from(plain)
  }

  /** Opens every secret of an instance: target → value. */
  async openAll(instanceId: string, secrets: ReadonlyArray<{ target: string; sealed: string }>): Promise<Map<string, string>> {
    const values = new Map<string, string>()
    for (const secret of secrets) values.set(secret.target, await this.open(instanceId, secret.target, secret.sealed))
    return values
  }
}

/**
 * The bytes of a view as an ArrayBuffer of their own. Small Buffers share a larger pool, and a
 * library reading `.buffer` of a view would otherwise see bytes that are not the value's.
 */
function exact(bytes: Uint8Array): ArrayBuffer {
  return bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.byteLength) as ArrayBuffer
}
