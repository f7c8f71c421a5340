import { ClientDocumentRefused, isClientIdUrl } from './client-id-documents.js'
import { CLI_CLIENT, CLI_CLIENT_ID, clientFromRow, type OAuthClient } from './clients.js'
import type { OAuthDeps } from './deps.js'

/** A client, or none — with the reason when a metadata document was refused. */
export type ClientLookup = { client: OAuthClient; refused?: undefined } | { client: null; refused?: string }

/**
 * The client a `client_id` names, for the authorization, token, revocation and consent steps: the
 * CLI client defined in code, a Client ID Metadata Document (an https URL, fetched or cached), or a
 * client registered under RFC 7591 (the database).
 */
export async function lookupClient(deps: Pick<OAuthDeps, 'repository' | 'clientDocuments'>, id: string, ip?: string): Promise<ClientLookup> {
  if (id === CLI_CLIENT_ID) return { client: CLI_CLIENT }
  if (isClientIdUrl(id)) {
    try {
      // `ip`: who the fetch, if one is needed, is counted against (fetch-budget.ts).
      return { client: await deps.clientDocuments.client(id, ip) }
    } catch (error) {
      if (error instanceof ClientDocumentRefused) return { client: null, refused: error.message }
      throw error
    }
  }
  const row = await deps.repository.findClient(id)
  return { client: row === undefined ? null : clientFromRow(row) }
}

export async function findClient(deps: Pick<OAuthDeps, 'repository' | 'clientDocuments'>, id: string): Promise<OAuthClient | null> {
  return (await lookupClient(deps, id)).client
}
