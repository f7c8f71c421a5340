import { catalogueTransaction } from '../../db/repositories/catalogue-revision.js'
import type { ServerRow } from '../../db/repositories/server-filters.js'
import type { ServerPatch, ServersRepository } from '../../db/repositories/servers.js'
import type { ServerVersionsRepository, VersionRow } from '../../db/repositories/server-versions.js'
import { newId } from '../../db/ids.js'
import type { Database, Db } from '../../db/types.js'
import type { Clock } from '../../lib/clock.js'
import type { AuditLog } from '../audit/service.js'
import { insertWithDerivedSlug } from '../catalogue/slugs.js'
import { readServerJson, type DocumentProblem, type IncomingDocument } from './server-json.js'
import { catalogueEntryOf, type CatalogueEntry } from './server-json-catalogue.js'

/**
 * Imports server.json documents into the catalogue: upsert by registry name, one catalogue
 * transaction per document, so that a document is written whole or not at all and the documents
 * before it stay written whatever happens to the ones after it.
 */

export type ImportStatus = 'created' | 'updated' | 'unchanged' | 'invalid'

export interface ImportResult {
  index: number
  name: string | null
  status: ImportStatus
  server_id?: string
  errors?: DocumentProblem[]
  /**
   * Packages and remotes of an imported document that the catalogue cannot run: kept in the
   * stored document and the export, left out of the server's packages and remotes. Absent when
   * there are none (and for an invalid document).
   */
  warnings?: DocumentProblem[]
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
  /**
   * Imports each document in its own transaction, in order; answers one result per document.
   * Records the audit event `catalogue.servers_imported` unless `audit` is false (the sync records
   * one event of its own for the whole run).
   */
  importAll(documents: IncomingDocument[], actor: ImportActor, options?: { audit?: boolean }): Promise<{ results: ImportResult[]; counts: ImportCounts }>
}

/** What an imported server holds besides what its document gives. */
const IMPORT_DEFAULTS = {
  longDescription: null, categoryId: null, tags: [], language: null, runtime: null, languageKey: null, runtimeKey: null,
  status: 'active', featured: false, authorName: null, organization: null, license: null, source: 'registry',
} satisfies ServerPatch

/**
 * A document the catalogue cannot store although it is valid (no free slug left for its name): the
 * document is reported invalid. Thrown inside its transaction, which then writes nothing. Any
 * other error (the database failing) is not the document's fault and is not caught here.
 */
class NotStorable extends Error {
  constructor(readonly problems: DocumentProblem[]) {
    super(problems.map((problem) => `${problem.field}: ${problem.message}`).join('; '))
  }
}

/**
 * The upsert:
 * - a registry name never seen → a new global server (slug derived from the display name like a
 *   server created by hand: `name`, `name-2`, …) with the document's version → `created`;
 * - a known name, a version of equal semver precedence, the stored document equal (key order
 *   ignored) and the status equal → `unchanged`, nothing written;
 * - otherwise → `updated`: the version is added, or its stored document, packages, remotes and
 *   status are refreshed (a version yanked here stays yanked). The server's own fields follow the
 *   document only when its version is the server's latest after the write, so an older version
 *   imported later does not roll the server back; the latest mark is recomputed in the same
 *   transaction.
 * A registry name matches `registry_name` only: a server created by hand is never taken over.
 * Concurrent imports of one new name create one server: catalogue transactions run one at a time
 * (see catalogueTransaction), so the second finds the first's server.
 */
export class CatalogueImporter implements RegistryImporter {
  constructor(private readonly deps: {
    database: Database
    servers: ServersRepository
    versions: ServerVersionsRepository
    audit: AuditLog
    clock: Clock
    /** Run in the transaction that may have moved a server's latest version (installations follow it). */
    afterLatestChange?: (serverId: string, tx: Db) => Promise<void>
  }) {}

  async importAll(documents: IncomingDocument[], actor: ImportActor, { audit = true }: { audit?: boolean } = {}): Promise<{ results: ImportResult[]; counts: ImportCounts }> {
    const results: ImportResult[] = []
    const counts: ImportCounts = { created: 0, updated: 0, unchanged: 0, invalid: 0 }
    for (const [index, incoming] of documents.entries()) {
      const result = await this.importOne(index, incoming, actor)
      counts[result.status]++
      results.push(result)
    }
    if (audit) await this.deps.audit.record('catalogue.servers_imported', {
      actorId: actor.userId, ip: actor.ip, details: { documents: documents.length, counts },
    })
    return { results, counts }
  }

  private async importOne(index: number, incoming: IncomingDocument, actor: ImportActor): Promise<ImportResult> {
    const read = readServerJson(incoming)
    if (!read.ok) return { index, name: read.name, status: 'invalid', errors: read.problems }
    const name = read.document.name
    const mapped = catalogueEntryOf(read)
    if (!mapped.ok) return { index, name, status: 'invalid', errors: mapped.problems }
    const entry = mapped.entry
    // Stored as JSON: compared as JSON (no `undefined` members), whichever dialect stored it.
    const document = JSON.parse(JSON.stringify(entry.document)) as Record<string, unknown>
    const releaseDate = entry.version.releaseDate ?? read.publishedAt
    try {
      const { status, serverId } = await catalogueTransaction(this.deps.database, (tx) => this.upsert(tx, entry, document, releaseDate, actor))
      return { index, name, status, server_id: serverId, ...(entry.notCatalogued.length === 0 ? {} : { warnings: entry.notCatalogued }) }
    } catch (error) {
      if (error instanceof NotStorable) return { index, name, status: 'invalid', errors: error.problems }
      throw error
    }
  }

  private async upsert(tx: Db, entry: CatalogueEntry, document: Record<string, unknown>, releaseDate: Date | null, actor: ImportActor): Promise<{ status: ImportStatus; serverId: string }> {
    const servers = this.deps.servers.with(tx)
    const versions = this.deps.versions.with(tx)
    const now = this.now()
    const known = await servers.findByRegistryName(entry.registryName)
    const server = known ?? await this.create(servers, entry, actor, now)
    const current = known === undefined ? undefined : await versions.findByPrecedence(server.id, entry.version.precedence)
    if (current === undefined) {
      await versions.insert({
        id: newId(), serverId: server.id, version: entry.version.version, precedence: entry.version.precedence, prerelease: entry.version.prerelease,
        status: entry.version.status, changelog: null, releaseDate, packages: entry.packages, remotes: entry.remotes,
        isLatest: false, serverJson: document, createdAt: now, updatedAt: now,
      })
    } else {
      // Yanking is final in this catalogue, whatever the registry says later.
      const status = current.status === 'yanked' ? 'yanked' : entry.version.status
      if (status === current.status && current.serverJson !== null && sameJson(current.serverJson, document)) return { status: 'unchanged', serverId: server.id }
      await versions.refreshImported(current.id, { serverJson: document, packages: entry.packages, remotes: entry.remotes, status }, now)
    }
    const latest = await versions.markLatest(server.id, now)
    await servers.setLatestVersion(server.id, latest, now)
    await this.deps.afterLatestChange?.(server.id, tx)
    if (known !== undefined && latest !== null && isThisVersion(latest, current, entry)) {
      await servers.update(server.id, { ...serverFields(entry), updatedAt: now })
    }
    return { status: known === undefined ? 'created' : 'updated', serverId: server.id }
  }

  /** A new global server; the first free slug of the display name's (the unique index decides). */
  private async create(servers: ServersRepository, entry: CatalogueEntry, actor: ImportActor, now: Date): Promise<ServerRow> {
    const fields = {
      ...IMPORT_DEFAULTS, ...serverFields(entry), registryName: entry.registryName,
      id: newId(), visibility: 'global' as const, ownerTeamId: null, createdBy: actor.userId, createdAt: now, updatedAt: now,
    }
    const created = await insertWithDerivedSlug(fields.name, (slug) => servers.insert({ ...fields, slug }))
    if (created !== null) return created
    throw new NotStorable([{ field: 'title', message: 'no free slug could be derived from the display name; rename the servers that take it' }])
  }

  private now(): Date {
    return new Date(this.deps.clock.now())
  }
}

/** The server's own fields a document gives. */
function serverFields(entry: CatalogueEntry) {
  const name = entry.displayName.trim()
  return {
    name, sortName: name.toLowerCase(), description: entry.description, repositoryUrl: entry.repositoryUrl, websiteUrl: entry.websiteUrl,
    iconUrl: entry.iconUrl, transportType: entry.transportType, packages: entry.packages, remotes: entry.remotes,
  } satisfies ServerPatch
}

/** Whether the latest version's string is the document's version (one version per precedence, so strings identify it). */
function isThisVersion(latest: string, current: VersionRow | undefined, entry: CatalogueEntry): boolean {
  return latest === (current?.version ?? entry.version.version)
}

/** Deep equality of JSON values, member order ignored (PostgreSQL's jsonb does not keep it). */
export function sameJson(a: unknown, b: unknown): boolean {
  if (a === b) return true
  if (typeof a !== 'object' || typeof b !== 'object' || a === null || b === null) return false
  if (Array.isArray(a) || Array.isArray(b)) {
    return Array.isArray(a) && Array.isArray(b) && a.length === b.length && a.every((item, i) => sameJson(item, b[i]))
  }
  const left = a as Record<string, unknown>
  const right = b as Record<string, unknown>
  const keys = Object.keys(left)
  return keys.length === Object.keys(right).length && keys.every((key) => Object.hasOwn(right, key) && sameJson(left[key], right[key]))
}
