import { createCipheriv, createDecipheriv, randomBytes } from 'node:crypto'

/**
 * AES-256-GCM with a random 96-bit IV. Sealed form: `v1.<iv>.<tag>.<ciphertext>`,
 * base64url parts, so the version, IV, tag and ciphertext travel as one string.
 *
 * `aad` (associated data) binds a sealed value to where it is kept: it is authenticated, not
 * stored, and the same text must be given to open it. A value copied to another row, whose
 * associated data differ, then fails to open instead of being read as that row's.
 */
export interface SecretBox {
  seal(plaintext: string, aad?: string): string
  open(sealed: string, aad?: string): string
}

const VERSION = 'v1'

export function createSecretBox(key: Buffer): SecretBox {
  if (key.length !== 32) throw new Error('AES-256-GCM needs a 32-byte key')
  return {
    seal(plaintext, aad) {
      const iv = randomBytes(12)
      const cipher = createCipheriv('aes-256-gcm', key, iv)
      if (aad !== undefined) cipher.setAAD(Buffer.from(aad, 'utf8'))
      const ciphertext = Buffer.concat([cipher.update(plaintext, 'utf8'), cipher.final()])
      return [VERSION, iv, cipher.getAuthTag(), ciphertext]
        .map((part) => (typeof part === 'string' ? part : part.toString('base64url')))
        .join('.')
    },
    open(sealed, aad) {
      const [version, iv, tag, ciphertext] = sealed.split('.')
      if (version !== VERSION || iv === undefined || tag === undefined || ciphertext === undefined) {
        throw new Error('Not a sealed value of a known version')
      }
      const decipher = createDecipheriv('aes-256-gcm', key, Buffer.from(iv, 'base64url'))
      decipher.setAuthTag(Buffer.from(tag, 'base64url'))
      if (aad !== undefined) decipher.setAAD(Buffer.from(aad, 'utf8'))
      return Buffer.concat([decipher.update(Buffer.from(ciphertext, 'base64url')), decipher.final()]).toString('utf8')
    },
  }
}
