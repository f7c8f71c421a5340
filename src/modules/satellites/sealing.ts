import { createCipheriv, createHmac, createPublicKey, diffieHellman, generateKeyPairSync } from 'node:crypto'
import { Aes256Gcm, CipherSuite, HkdfSha256 } from '@hpke/core'
import { DhkemX25519HkdfSha256 } from '@hpke/dhkem-x25519'

/**
 * Secrets sealed to one satellite: HPKE (RFC 9180) in base mode with DHKEM(X25519, HKDF-SHA256),
 * HKDF-SHA256 and AES-256-GCM, to the X25519 public key the satellite registered. The `info`
 * names this use; the associated data binds each sealed value to its instance and its place, so
 * a value cannot be moved to another instance or input unnoticed. A sealed value is the
 * base64url (no padding) of the 32-byte encapsulated key followed by the ciphertext.
 */

export const SEAL_INFO = 'service-satellite-secret'
const encoder = new TextEncoder()
/** The library's suite checks a key offered at registration (sealing itself is below, on Node's crypto). */
const suite = new CipherSuite({ kem: new DhkemX25519HkdfSha256(), kdf: new HkdfSha256(), aead: new Aes256Gcm() })

/** The associated data of a secret: its instance and where it goes. */
export const sealAad = (instanceId: string, target: string): Uint8Array => encoder.encode(`${instanceId}\n${target}`)

export interface SatelliteSealer {
  seal(instanceId: string, target: string, value: string): string
}

// RFC 9180's identifiers of this suite: KEM 0x0020, KDF 0x0001, AEAD 0x0002 (section 7).
const KEM_SUITE_ID = Buffer.from([...Buffer.from('KEM'), 0x00, 0x20])
const HPKE_SUITE_ID = Buffer.from([...Buffer.from('HPKE'), 0x00, 0x20, 0x00, 0x01, 0x00, 0x02])
const VERSION_LABEL = Buffer.from('HPKE-v1')
const EMPTY = Buffer.alloc(0)
/** The DER prefix of an X25519 SubjectPublicKeyInfo; the raw 32-byte key follows it. */
const X25519_SPKI_PREFIX = Buffer.from('302a300506032b656e032100', 'hex')

const labeled = (suiteId: Buffer, label: string, data: Buffer) => Buffer.concat([VERSION_LABEL, suiteId, Buffer.from(label), data])
/** LabeledExtract (RFC 9180, section 4): HKDF-Extract, an HMAC keyed by the salt. */
const labeledExtract = (suiteId: Buffer, salt: Buffer, label: string, ikm: Buffer) => createHmac('sha256', salt).update(labeled(suiteId, label, ikm)).digest()
/** LabeledExpand for at most one hash length (32 bytes), which is all this suite needs: one HMAC block. */
function labeledExpand(suiteId: Buffer, prk: Buffer, label: string, info: Buffer, length: number): Buffer {
  const lengthPrefix = Buffer.from([length >> 8, length & 0xff])
  return createHmac('sha256', prk).update(Buffer.concat([lengthPrefix, labeled(suiteId, label, info)])).update(Buffer.from([1])).digest().subarray(0, length)
}

/**
 * The base-mode key schedule's context for our `info` (mode 0, no PSK): the same for every
 * secret, so computed once.
 */
const KEY_SCHEDULE_CONTEXT = Buffer.concat([
  Buffer.from([0x00]),
  labeledExtract(HPKE_SUITE_ID, EMPTY, 'psk_id_hash', EMPTY),
  labeledExtract(HPKE_SUITE_ID, EMPTY, 'info_hash', Buffer.from(SEAL_INFO, 'utf8')),
])

/**
 * A sealer to one satellite's public key (base64url of the raw 32 bytes): HPKE's single-shot
 * seal in base mode (RFC 9180, sections 4.1, 5.1 and 6.1), written on Node's own X25519, HMAC and
 * AES-GCM, since the library's X25519 runs in JavaScript (about 2 ms a secret against 0.15 ms;
 * a document seals every secret of every instance). Satellites open it with any RFC 9180
 * implementation; the tests open it with the library's.
 */
export async function sealerFor(publicKey: string): Promise<SatelliteSealer> {
  const raw = Buffer.from(publicKey, 'base64url')
  if (raw.length !== 32) throw new Error('an X25519 public key is 32 bytes')
  const recipient = createPublicKey({ key: Buffer.concat([X25519_SPKI_PREFIX, raw]), format: 'der', type: 'spki' })
  return {
    seal(instanceId, target, value) {
      // Encap: a fresh ephemeral key pair per secret, so two seals of one value differ.
      const ephemeral = generateKeyPairSync('x25519')
      const dh = diffieHellman({ privateKey: ephemeral.privateKey, publicKey: recipient })
      // RFC 9180, section 7.1.4: an all-zero shared secret (a low-order public key) is refused.
      if (dh.every((byte) => byte === 0)) throw new Error('the public key gives an all-zero shared secret')
      const enc = ephemeral.publicKey.export({ format: 'der', type: 'spki' }).subarray(X25519_SPKI_PREFIX.length)
      const eaePrk = labeledExtract(KEM_SUITE_ID, EMPTY, 'eae_prk', dh)
      const sharedSecret = labeledExpand(KEM_SUITE_ID, eaePrk, 'shared_secret', Buffer.concat([enc, raw]), 32)
      // KeySchedule: the AES-256-GCM key and the base nonce (the first and only message uses it as is).
      const secret = labeledExtract(HPKE_SUITE_ID, sharedSecret, 'secret', EMPTY)
      const key = labeledExpand(HPKE_SUITE_ID, secret, 'key', KEY_SCHEDULE_CONTEXT, 32)
      const nonce = labeledExpand(HPKE_SUITE_ID, secret, 'base_nonce', KEY_SCHEDULE_CONTEXT, 12)
      const cipher = createCipheriv('aes-256-gcm', key, nonce).setAAD(sealAad(instanceId, target))
      return Buffer.concat([enc, cipher.update(value, 'utf8'), cipher.final(), cipher.getAuthTag()]).toString('base64url')
    },
  }
}

/** Whether `publicKey` is a usable X25519 public key (registration checks it before storing it). */
export async function isUsablePublicKey(publicKey: string): Promise<boolean> {
  try {
    await suite.kem.deserializePublicKey(toArrayBuffer(Buffer.from(publicKey, 'base64url')))
    return true
  } catch {
    return false
  }
}

const toArrayBuffer = (bytes: Uint8Array): ArrayBuffer => bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.byteLength) as ArrayBuffer
