import type { Static } from 'typebox'
import { catalogueTransaction } from '../../db/repositories/catalogue-revision.js'
import type { CategoriesRepository } from '../../db/repositories/categories.js'
import type { ServerSearch } from '../../db/repositories/server-search.js'
import { caseKey, normalizeTag, type ServerFilter, type ServerRow, type ServerSort } from '../../db/repositories/server-filters.js'
import type { Page, ServerPatch, ServersRepository } from '../../db/repositories/servers.js'
import type { TeamsRepository } from '../../db/repositories/teams.js'
import { newId } from '../../db/ids.js'
import type { Database, Db } from '../../db/types.js'
import { errors } from '../../http/errors.js'
import type { Clock } from '../../lib/clock.js'
import type { AuditLog } from '../audit/service.js'
import type { CatalogueActor } from './actor.js'
import { normalizePackages } from '../../formats/catalogue-entries.js'
import { assertEntryRules } from './entry-rules.js'
import { ListCache } from './list-cache.js'
import type { CreateServerBody, UpdateServerBody } from './schemas.js'
import { searchTerms } from './search-terms.js'
import { insertWithDerivedSlug, unusableSlug } from './slugs.js'

export type CreateServerInput = Static<typeof CreateServerBody>
export type UpdateServerInput = Static<typeof UpdateServerBody>

/** What a new server holds where the request says nothing. */
const CREATE_DEFAULTS = {
  description: '', longDescription: null, categoryId: null, tags: [], language: null, runtime: null, languageKey: null, runtimeKey: null,
  transportType: 'stdio', status: 'active', featured: false, repositoryUrl: null, websiteUrl: null, iconUrl: null, authorName: null,
  organization: null, license: null, packages: [], remotes: [], registryName: null, source: 'manual',
} satisfies ServerPatch

const slugTaken = (slug: string) => errors.conflict('SLUG_TAKEN', `The slug "${slug}" belongs to another server.`)

/**
 * Who a server belongs to: the whole catalogue (`global`, visible to everyone) or one team
 * (`team`, visible to that team's members and to global admins).
 */
export type ServerOwner = { visibility: 'global' } | { visibility: 'team'; teamId: string }

export const GLOBAL_OWNER: ServerOwner = { visibility: 'global' }
export const teamOwner = (teamId: string): ServerOwner => ({ visibility: 'team', teamId })

/** The audit details that name a team server's team (none for a global server). */
export const teamOf = (server: Pick<ServerRow, 'ownerTeamId'>): { team_id?: string } =>
  server.ownerTeamId === null ? {} : { team_id: server.ownerTeamId }

/** The servers of the catalogue (global and team), the list and the search. No Fastify types here. */
export class ServerService {
  constructor(private readonly deps: {
    database: Database
    servers: ServersRepository
    categories: CategoriesRepository
    teams: TeamsRepository
    search: ServerSearch
    audit: AuditLog
    clock: Clock
    /** Run in the deleting transaction before the server goes; throws to refuse (a server some team runs). */
    beforeDelete?: (serverId: string, tx: Db) => Promise<void>
    /**
     * Run in the updating transaction when the edit names packages, remotes or the transport (what
     * a version without its own runs); throws to refuse (an installed target removed).
     */
    afterEntryEdit?: (before: ServerRow, after: ServerRow, tx: Db) => Promise<void>
  }) {
    this.listCache = new ListCache(deps.database)
  }

  private readonly listCache: ListCache

  /** Answered again while neither the catalogue nor the caller's team servers changed (list-cache.ts). */
  async list(actor: CatalogueActor, filter: ServerFilter, sort: ServerSort, limit: number, offset: number): Promise<Page<ServerRow>> {
    const viewer = { userId: actor.userId, isGlobalAdmin: actor.isGlobalAdmin }
    return this.listCache.page(viewer, { list: sort, filter, limit, offset }, () => this.deps.servers.list(viewer, filter, sort, limit, offset))
  }

  /** Kept like the list: by the words of the query. */
  async search(query: string, actor: CatalogueActor, filter: ServerFilter, limit: number, offset: number): Promise<Page<ServerRow>> {
    const words = searchTerms(query)
    if (words.length === 0) return { rows: [], total: 0 }
    const viewer = { userId: actor.userId, isGlobalAdmin: actor.isGlobalAdmin }
    return this.listCache.page(viewer, { search: words, filter, limit, offset }, () => this.deps.search.search(words, viewer, filter, limit, offset))
  }

  /** By id or slug; 404 when unknown or not visible to the caller. */
  async get(idOrSlug: string, actor: CatalogueActor): Promise<ServerRow> {
    const server = await this.deps.servers.find(idOrSlug, actor)
    if (server === undefined) throw errors.notFound('Server')
    return server
  }

  /**
   * An explicit slug must be free (409 SLUG_TAKEN); a slug derived from the name takes the first
   * free one of `name`, `name-2`, `name-3`… The unique index decides in both cases, across global
   * and team servers alike: a slug names one server in every path that takes one.
   */
  async create(owner: ServerOwner, input: CreateServerInput, actor: CatalogueActor): Promise<ServerRow> {
    const { servers, audit } = this.deps
    assertEntryRules(input.packages, owner.visibility)
    const now = this.now()
    const name = input.name.trim()
    const fields = {
      ...CREATE_DEFAULTS, ...serverPatch(input), name, sortName: name.toLowerCase(),
      id: newId(), visibility: owner.visibility, ownerTeamId: owner.visibility === 'team' ? owner.teamId : null,
      createdBy: actor.userId, createdAt: now, updatedAt: now,
    }
    return this.writeTransaction(fields.ownerTeamId, async (tx) => {
      await this.checkCategory(input.category_id, tx)
      const txServers = servers.with(tx)
      let created: ServerRow | null = null
      if (input.slug !== undefined) {
        if (unusableSlug(input.slug)) throw reservedSlug(input.slug)
        created = await txServers.insert({ ...fields, slug: input.slug })
        if (created === null) throw slugTaken(input.slug)
      } else {
        created = await insertWithDerivedSlug(name, (slug) => txServers.insert({ ...fields, slug }))
        if (created === null) throw errors.conflict('SLUG_TAKEN', 'No free slug could be derived from the name; give one explicitly.')
      }
      await audit.record('catalogue.server_created', { actorId: actor.userId, ip: actor.ip, target: created.id, details: { name: created.name, slug: created.slug, ...teamOf(created) } }, tx)
      return created
    })
  }

  /** Partial update of one of the owner's servers; its slug changes only to a free one. */
  async update(owner: ServerOwner, idOrSlug: string, input: UpdateServerInput, actor: CatalogueActor): Promise<ServerRow> {
    const { servers, audit } = this.deps
    const server = await this.owned(owner, idOrSlug, actor)
    if (input.slug !== undefined && unusableSlug(input.slug)) throw reservedSlug(input.slug)
    assertEntryRules(input.packages, server.visibility)
    return this.writeTransaction(server.ownerTeamId, async (tx) => {
      await this.checkCategory(input.category_id, tx)
      const updated = await servers.with(tx).update(server.id, { ...serverPatch(input), updatedAt: this.now() })
      if (updated === 'slug_taken') throw slugTaken(input.slug!)
      if (updated === null) throw errors.notFound('Server')
      if (input.packages !== undefined || input.remotes !== undefined || input.transport_type !== undefined) await this.deps.afterEntryEdit?.(server, updated, tx)
      await audit.record('catalogue.server_updated', { actorId: actor.userId, ip: actor.ip, target: server.id, details: { fields: Object.keys(input), ...teamOf(server) } }, tx)
      return updated
    })
  }

  /** Deletes one of the owner's servers with its versions (and its search entry). */
  async delete(owner: ServerOwner, idOrSlug: string, actor: CatalogueActor): Promise<void> {
    const { servers, audit } = this.deps
    const server = await this.owned(owner, idOrSlug, actor)
    await this.writeTransaction(server.ownerTeamId, async (tx) => {
      await this.deps.beforeDelete?.(server.id, tx)
      if (!(await servers.with(tx).delete(server.id))) throw errors.notFound('Server')
      await audit.record('catalogue.server_deleted', { actorId: actor.userId, ip: actor.ip, target: server.id, details: { name: server.name, slug: server.slug, ...teamOf(server) } }, tx)
    })
  }

  /**
   * By id or slug, a server the caller can see and that belongs to `owner`: 404 otherwise, also
   * for a server of another team (or a global one asked for under a team's path).
   */
  async owned(owner: ServerOwner, idOrSlug: string, actor: CatalogueActor): Promise<ServerRow> {
    const server = await this.get(idOrSlug, actor)
    const belongs = owner.visibility === 'global'
      ? server.visibility === 'global'
      : server.visibility === 'team' && server.ownerTeamId === owner.teamId
    if (!belongs) throw errors.notFound('Server')
    return server
  }

  /**
   * The catalogue transaction for a write to a server of `teamId` (null: a global server). On
   * PostgreSQL, deleting a team locks the team's row, then its cascade to the team's servers
   * reaches the catalogue's revision; a write to a team's servers takes the team's row first too,
   * so the two wait for each other instead of deadlocking. The team must exist (404): a global
   * admin passes the route's team check for any id, and a team may be deleted meanwhile.
   */
  writeTransaction<T>(teamId: string | null, write: (tx: Db) => Promise<T>): Promise<T> {
    if (teamId === null) return catalogueTransaction(this.deps.database, write)
    return catalogueTransaction(this.deps.database, write, {
      first: async (tx) => {
        const teams = this.deps.teams.with(tx)
        await teams.lock(teamId)
        if ((await teams.find(teamId)) === undefined) throw errors.notFound('Team')
      },
    })
  }

  /** A named category must exist (400); run inside the catalogue transaction, so it cannot vanish meanwhile. */
  private async checkCategory(categoryId: string | null | undefined, tx: Db): Promise<void> {
    if (categoryId === undefined || categoryId === null) return
    if (!(await this.deps.categories.with(tx).exists(categoryId))) {
      throw errors.validation([{ field: 'category_id', message: 'no such category', in: 'body' }])
    }
  }

  private now(): Date {
    return new Date(this.deps.clock.now())
  }
}

const reservedSlug = (slug: string) => errors.validation([{ field: 'slug', message: `"${slug}" is reserved: a path of the catalogue API, or shaped like a server id`, in: 'body' }])

const keyOf = (value: string | null | undefined): string | null => (value == null ? null : caseKey(value))

function normalizeTags(tags: string[]): string[] {
  const normalized = [...new Set(tags.map(normalizeTag))]
  const empty = normalized.findIndex((tag) => tag === '')
  if (empty !== -1) throw errors.validation([{ field: 'tags', message: 'a tag must hold at least one character besides spaces', in: 'body' }])
  return normalized
}

/** The row fields a request sets (create or update): only those it names, normalized. */
function serverPatch(input: UpdateServerInput): ServerPatch {
  const patch: ServerPatch = {}
  const set = <K extends keyof ServerPatch>(key: K, value: ServerPatch[K] | undefined) => {
    if (value !== undefined) patch[key] = value
  }
  const name = input.name?.trim()
  set('name', name)
  set('sortName', name?.toLowerCase())
  set('slug', input.slug)
  set('description', input.description)
  set('longDescription', input.long_description)
  set('categoryId', input.category_id)
  set('tags', input.tags === undefined ? undefined : normalizeTags(input.tags))
  set('language', input.language)
  set('runtime', input.runtime)
  set('languageKey', input.language === undefined ? undefined : keyOf(input.language))
  set('runtimeKey', input.runtime === undefined ? undefined : keyOf(input.runtime))
  set('transportType', input.transport_type)
  set('status', input.status)
  set('featured', input.featured)
  set('repositoryUrl', input.repository_url)
  set('websiteUrl', input.website_url)
  set('iconUrl', input.icon_url)
  set('authorName', input.author_name)
  set('organization', input.organization)
  set('license', input.license)
  set('packages', input.packages === undefined ? undefined : normalizePackages(input.packages))
  set('remotes', input.remotes)
  return patch
}
