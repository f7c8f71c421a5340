import type { CatalogueViewer } from '../../db/repositories/server-filters.js'

/** Who reads or changes the catalogue, and from where (for the audit trail). */
export interface CatalogueActor extends CatalogueViewer {
  ip: string
}
