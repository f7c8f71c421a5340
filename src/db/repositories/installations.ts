import type { Database, Db } from '../types.js'
import { installationPages } from './installation-pages.js'
import { installationPlacements } from './installation-placements.js'
import { installationRows } from './installation-rows.js'
import { installationValues } from './installation-values.js'

export type { InstallationDetail, InstallationPage, ListScope } from './installation-pages.js'
export type { GlobalIntake, SatelliteLoad, Unplaced } from './installation-placements.js'
export type { InstallationPatch, InstallationRow, ValueRow } from './installation-rows.js'
export type { SetValue } from './installation-values.js'

export type InstallationsRepository = ReturnType<typeof installationsRepository>

/**
 * Teams' installations, in one repository: their rows (installation-rows.ts), the lists and single
 * installations readers see (installation-pages.ts), their values (installation-values.ts) and
 * where they are placed (installation-placements.ts). `with` answers the same on a transaction.
 */
export function installationsRepository(database: Database, executor: Db = database.db) {
  return {
    with: (tx: Db) => installationsRepository(database, tx),
    ...installationRows(database, executor),
    ...installationPages(database, executor),
    ...installationValues(database, executor),
    ...installationPlacements(database, executor),
  }
}
