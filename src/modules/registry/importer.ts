import type { DocumentProblem, IncomingDocument } from './server-json.js'

/**
 * STUB: signatures agreed between the modules; the implementation is being written.
 * Imports server.json documents into the catalogue: upsert by registry name, one transaction per document.
 */

export type ImportStatus = 'created' | 'updated' | 'unchanged' | 'invalid'

export interface ImportResult {
  index: number
  name: string | null
  status: ImportStatus
  server_id?: string
  errors?: DocumentProblem[]
}

export interface ImportCounts {
  created: number
  updated: number
  unchanged: number
  invalid: number
}

/** Who imports: a user (route) or nobody (the scheduled sync); recorded in the audit trail. */
export interface ImportActor {
  userId: string | null
  ip: string | null
}

export interface RegistryImporter {
  /** Imports each document in its own transaction, in order; answers one result per document. */
  importAll(documents: IncomingDocument[], actor: ImportActor): Promise<{ results: ImportResult[]; counts: ImportCounts }>
}
