import type { ServerRow } from '../../db/repositories/server-filters.js'
import type { ServerVersionsRepository, VersionRow } from '../../db/repositories/server-versions.js'
import type { ServersRepository } from '../../db/repositories/servers.js'
import type { Db } from '../../db/types.js'
import { errors } from '../../http/errors.js'
import { invalid, notInstallable } from './derivation.js'

/** What a team may install: which servers, at which versions (read in the writer's transaction). */

/** A server the team may install: a global one, or one of the team's own; any other is 404. */
export async function installableServer(servers: ServersRepository, idOrSlug: string, teamId: string, tx: Db): Promise<ServerRow> {
  const server = await servers.with(tx).find(idOrSlug, { userId: '', isGlobalAdmin: true })
  if (server === undefined || (server.visibility === 'team' && server.ownerTeamId !== teamId)) throw errors.notFound('Server')
  if (server.status === 'disabled') throw notInstallable(`The server "${server.slug}" is disabled in the catalogue; it cannot be installed or changed to another version.`)
  return server
}

/** The exact version asked for, or the latest; it must be active. */
export async function installableVersion(versions: ServerVersionsRepository, server: ServerRow, version: string | undefined, tx: Db): Promise<VersionRow> {
  const ofTx = versions.with(tx)
  if (version === undefined) {
    const latest = await ofTx.latest(server.id)
    if (latest === undefined) throw notInstallable(`The server "${server.slug}" has no active version to install.`)
    return latest
  }
  const row = await ofTx.findByVersion(server.id, version)
  if (row === undefined) throw invalid('version', `the server "${server.slug}" has no version "${version}"`)
  if (row.status !== 'active') throw notInstallable(`Version ${row.version} of "${server.slug}" is ${row.status}; only active versions can be installed.`)
  return row
}

/** An explicit version and `track_latest: true` together must name the latest version (else the two contradict each other). */
export async function checkTracking(
  versions: ServerVersionsRepository, server: ServerRow, version: VersionRow, trackLatest: boolean | undefined, asked: string | undefined, tx: Db,
): Promise<void> {
  if (trackLatest !== true || asked === undefined) return
  const latest = await versions.with(tx).latest(server.id)
  if (latest?.id !== version.id) {
    throw invalid('track_latest', `follows the latest version (${latest?.version ?? 'none'}); give either a version to pin or track_latest: true, not ${version.version} with it`)
  }
}
