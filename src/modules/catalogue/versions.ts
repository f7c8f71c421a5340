import type { Static } from 'typebox'
import type { ServerRow } from '../../db/repositories/server-filters.js'
import type { Page, ServersRepository } from '../../db/repositories/servers.js'
import type { ServerVersionsRepository, VersionPatch, VersionRow } from '../../db/repositories/server-versions.js'
import { newId } from '../../db/ids.js'
import type { Database, Db } from '../../db/types.js'
import { errors } from '../../http/errors.js'
import type { Clock } from '../../lib/clock.js'
import type { AuditLog } from '../audit/service.js'
import type { CatalogueActor } from './actor.js'
import { normalizePackages } from '../../formats/catalogue-entries.js'
import type { CreateVersionBody, UpdateVersionBody } from './schemas.js'
import { assertEntryRules } from './entry-rules.js'
import { parseVersion } from './semver-key.js'
import { teamOf, type ServerOwner, type ServerService } from './servers.js'

export type CreateVersionInput = Static<typeof CreateVersionBody>
export type UpdateVersionInput = Static<typeof UpdateVersionBody>

const field = (name: string, message: string) => errors.validation([{ field: name, message, in: 'body' }])

/**
 * Versions of a server. Every change runs in a catalogue transaction (which takes the catalogue's
 * revision row first, so catalogue writers run one at a time) and ends by marking the latest version (the highest active release, else the highest active pre-release) on the
 * versions and on the server, in the same transaction: concurrent changes cannot leave the mark
 * stale or doubled. Transitions: active ⇄ deprecated; anything → yanked, which is final.
 */
export class VersionService {
  constructor(private readonly deps: {
    database: Database
    servers: ServersRepository
    versions: ServerVersionsRepository
    serverService: ServerService
    audit: AuditLog
    clock: Clock
    /** Run in the transaction that may have moved the server's latest version (installations follow it). */
    afterLatestChange?: (serverId: string, tx: Db) => Promise<void>
  }) {}

  async list(serverKey: string, actor: CatalogueActor, limit: number, offset: number): Promise<Page<VersionRow>> {
    const server = await this.deps.serverService.get(serverKey, actor)
    return this.deps.versions.list(server.id, limit, offset)
  }

  /** `owner`, when given, is who the server must belong to (a team's routes); otherwise any server the caller sees. */
  async create(serverKey: string, input: CreateVersionInput, actor: CatalogueActor, owner?: ServerOwner): Promise<VersionRow> {
    const parsed = parseVersion(input.version)
    if (parsed === null) throw field('version', 'must be a semantic version (semver 2.0) such as 1.4.0 or 2.0.0-rc.1, without a leading v')
    const server = await this.server(serverKey, actor, owner)
    assertEntryRules(input.packages, server.visibility)
    const now = this.now()
    return this.change(server, async (tx) => {
      const created = await this.deps.versions.with(tx).insert({
        id: newId(), serverId: server.id, version: input.version, precedence: parsed.key, prerelease: parsed.prerelease,
        status: input.status ?? 'active', changelog: input.changelog ?? null,
        releaseDate: input.release_date == null ? null : new Date(input.release_date),
        packages: input.packages == null ? null : normalizePackages(input.packages), remotes: input.remotes ?? null,
        isLatest: false, serverJson: null, createdAt: now, updatedAt: now,
      })
      if (created === null) throw errors.conflict('VERSION_EXISTS', `The server has version ${input.version} already (build metadata does not make a version distinct).`)
      await this.deps.audit.record('catalogue.version_created', { actorId: actor.userId, ip: actor.ip, target: server.id, details: { version: input.version, ...teamOf(server) } }, tx)
      return created.id
    })
  }

  async update(serverKey: string, versionId: string, input: UpdateVersionInput, actor: CatalogueActor, owner?: ServerOwner): Promise<VersionRow> {
    const server = await this.server(serverKey, actor, owner)
    return this.change(server, async (tx) => {
      const versions = this.deps.versions.with(tx)
      const current = await versions.find(server.id, versionId)
      if (current === undefined) throw errors.notFound('Version')
      if (input.version !== undefined && input.version !== current.version) throw field('version', 'is immutable; create a new version instead')
      if (current.status === 'yanked') throw errors.conflict('VERSION_YANKED', 'A yanked version is final: it cannot change.')
      const patch: VersionPatch = {}
      if (input.status !== undefined) patch.status = input.status
      if (input.changelog !== undefined) patch.changelog = input.changelog
      if (input.release_date !== undefined) patch.releaseDate = input.release_date === null ? null : new Date(input.release_date)
      await versions.update(versionId, patch, this.now())
      await this.deps.audit.record('catalogue.version_updated', {
        actorId: actor.userId, ip: actor.ip, target: server.id, details: { version: current.version, fields: Object.keys(patch), status: patch.status, ...teamOf(server) },
      }, tx)
      return versionId
    })
  }

  /** The server a version write is for: one the caller sees, and, when `owner` is given, one of the owner's. */
  private server(serverKey: string, actor: CatalogueActor, owner: ServerOwner | undefined): Promise<ServerRow> {
    const { serverService } = this.deps
    return owner === undefined ? serverService.get(serverKey, actor) : serverService.owned(owner, serverKey, actor)
  }

  /**
   * Runs `write`, then re-marks the latest version in the same transaction; answers the written
   * version. A team server's write takes its team's row first (ServerService.writeTransaction).
   */
  private async change(server: ServerRow, write: (tx: Db) => Promise<string>): Promise<VersionRow> {
    const { servers, versions, serverService } = this.deps
    const serverId = server.id
    return serverService.writeTransaction(server.ownerTeamId, async (tx) => {
      const versionId = await write(tx)
      const now = this.now()
      const latest = await versions.with(tx).markLatest(serverId, now)
      await servers.with(tx).setLatestVersion(serverId, latest, now)
      await this.deps.afterLatestChange?.(serverId, tx)
      return (await versions.with(tx).find(serverId, versionId))!
    })
  }

  private now(): Date {
    return new Date(this.deps.clock.now())
  }
}
