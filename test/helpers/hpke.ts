import { Aes256Gcm, CipherSuite, HkdfSha256 } from '@hpke/core'
import { DhkemX25519HkdfSha256 } from '@hpke/dhkem-x25519'

/** The satellites' HPKE suite (RFC 9180): DHKEM(X25519, HKDF-SHA256), HKDF-SHA256, AES-256-GCM. */
const suite = new CipherSuite({ kem: new DhkemX25519HkdfSha256(), kdf: new HkdfSha256(), aead: new Aes256Gcm() })

export type PrivateKey = Awaited<ReturnType<typeof suite.kem.generateKeyPair>>['privateKey']

const bytes = (text: string): ArrayBuffer => new TextEncoder().encode(text).buffer as ArrayBuffer
const slice = (buffer: Buffer): ArrayBuffer => buffer.buffer.slice(buffer.byteOffset, buffer.byteOffset + buffer.byteLength) as ArrayBuffer

/** A satellite's key pair, the public key as it registers it (base64url of the raw 32 bytes). */
export async function keyPair(): Promise<{ publicKey: string; privateKey: PrivateKey }> {
  const pair = await suite.kem.generateKeyPair()
  const raw = await suite.kem.serializePublicKey(pair.publicKey)
  return { publicKey: Buffer.from(raw).toString('base64url'), privateKey: pair.privateKey }
}

/** Opens a sealed secret of a desired-state document as a satellite does; throws when it does not open. */
export async function unseal(privateKey: PrivateKey, instanceId: string, target: string, sealed: string): Promise<string> {
  const data = Buffer.from(sealed, 'base64url')
  const plain = await suite.open(
    { recipientKey: privateKey, enc: slice(data.subarray(0, 32)), info: bytes('service-satellite-secret') },
    slice(data.subarray(32)),
    bytes(`${instanceId}\n${target}`),
  )
  return new TextDecoder().decode(plain)
}

/** A private key from the base64url of its raw 32 bytes (as the reference satellite keeps it in its state file). */
export async function privateKeyOf(text: string): Promise<PrivateKey> {
  return suite.kem.deserializePrivateKey(slice(Buffer.from(text, 'base64url')))
}
