import { deriveKey } from '../../lib/keys.js'
import { createSecretBox, type SecretBox } from '../../lib/secret-box.js'

/**
 * Secret input values at rest: AES-256-GCM under a key derived from ENCRYPTION_SECRET for this
 * purpose alone, with associated data naming the row (installation, user, key). A sealed value
 * copied into another installation, to another member or under another key does not open.
 */

/** Where a value is kept: the team's value (`userId` null) or one member's own. */
export interface ValuePlace {
  installationId: string
  userId: string | null
  key: string
}

export interface ValueBox {
  seal(plaintext: string, place: ValuePlace): string
  open(sealed: string, place: ValuePlace): string
}

/** The associated data of a place; a line break cannot occur in an id, and the key comes last. */
const associatedData = ({ installationId, userId, key }: ValuePlace): string => `installation-value\n${installationId}\n${userId ?? ''}\n${key}`

export const valueBoxFrom = (box: SecretBox): ValueBox => ({
  seal: (plaintext, place) => box.seal(plaintext, associatedData(place)),
  open: (sealed, place) => box.open(sealed, associatedData(place)),
})

/** The box of the installation values under one ENCRYPTION_SECRET. */
export const installationValueBox = (secret: string): ValueBox => valueBoxFrom(createSecretBox(deriveKey(secret, 'installation-values')))
