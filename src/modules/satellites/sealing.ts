import { Aes256Gcm, CipherSuite, DhkemX25519HkdfSha256 as NativeX25519, HkdfSha256 } from '@hpke/core'
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
/** Checks the keys offered at registration, as it always has. */
const suite = new CipherSuite({ kem: new DhkemX25519HkdfSha256(), kdf: new HkdfSha256(), aead: new Aes256Gcm() })
/**
 * Seals, with the same library's X25519 on Node's Web Crypto: native and run on the thread pool
 * (about 0.5 ms a secret, none of it on the event loop), where the JavaScript X25519 of
 * @hpke/dhkem-x25519 takes 1.3–1.9 ms of the event loop. Same suite, same bytes on the wire.
 */
const sealing = new CipherSuite({ kem: new NativeX25519(), kdf: new HkdfSha256(), aead: new Aes256Gcm() })

/** The associated data of a secret: its instance and where it goes. */
export const sealAad = (instanceId: string, target: string): Uint8Array => encoder.encode(`${instanceId}\n${target}`)

export interface SatelliteSealer {
  seal(instanceId: string, target: string, value: string): Promise<string>
}

/** A sealer to one satellite's public key (base64url of the raw 32 bytes). */
export async function sealerFor(publicKey: string): Promise<SatelliteSealer> {
  const recipientPublicKey = await sealing.kem.deserializePublicKey(toArrayBuffer(Buffer.from(publicKey, 'base64url')))
  return {
    async seal(instanceId, target, value) {
      const { enc, ct } = await sealing.seal(
        { recipientPublicKey, info: toArrayBuffer(Buffer.from(SEAL_INFO, 'utf8')) },
        toArrayBuffer(Buffer.from(value, 'utf8')),
        toArrayBuffer(sealAad(instanceId, target)),
      )
      return Buffer.concat([Buffer.from(enc), Buffer.from(ct)]).toString('base64url')
    },
  }
}

/**
 * Seals one message to a satellite's public key for another use than its secrets (the key-change
 * challenge): same suite and wire form, the use's own `info`, and `aad` binding it to its context.
 */
export async function sealMessage(publicKey: string, info: string, aad: Uint8Array, message: Uint8Array): Promise<string> {
  const recipientPublicKey = await sealing.kem.deserializePublicKey(toArrayBuffer(Buffer.from(publicKey, 'base64url')))
  const { enc, ct } = await sealing.seal({ recipientPublicKey, info: toArrayBuffer(Buffer.from(info, 'utf8')) }, toArrayBuffer(message), toArrayBuffer(aad))
  return Buffer.concat([Buffer.from(enc), Buffer.from(ct)]).toString('base64url')
}

/**
 * Whether `publicKey` is a usable X25519 public key (checked before one is stored). A point of low
 * order parses but yields an all-zero shared secret, which X25519 refuses (RFC 7748 §6.1): a trial
 * seal turns it away here rather than failing every document later.
 */
export async function isUsablePublicKey(publicKey: string): Promise<boolean> {
  try {
    await suite.kem.deserializePublicKey(toArrayBuffer(Buffer.from(publicKey, 'base64url')))
    await sealMessage(publicKey, SEAL_INFO, new Uint8Array(0), new Uint8Array(0))
    return true
  } catch {
    return false
  }
}

const toArrayBuffer = (bytes: Uint8Array): ArrayBuffer => bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.byteLength) as ArrayBuffer
