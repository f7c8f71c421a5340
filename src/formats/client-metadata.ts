/**
 * The optional client metadata of RFC 7591 §2 that registration stores and returns as sent
 * (after validation). The consent page shows `client_uri`'s host next to the client's name.
 */
export interface ClientMetadata {
  client_uri?: string
  logo_uri?: string
  tos_uri?: string
  policy_uri?: string
  contacts?: string[]
  software_id?: string
  software_version?: string
}

export const CLIENT_METADATA_FIELDS = ['client_uri', 'logo_uri', 'tos_uri', 'policy_uri', 'contacts', 'software_id', 'software_version'] as const

/** The known optional metadata of a registration body; anything else in it is ignored. */
export function pickClientMetadata(body: ClientMetadata): ClientMetadata {
  const picked: Record<string, unknown> = {}
  for (const field of CLIENT_METADATA_FIELDS) if (body[field] !== undefined) picked[field] = body[field]
  return picked as ClientMetadata
}
