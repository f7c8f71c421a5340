import { catalogueTransaction } from '../../db/repositories/catalogue-revision.js'
import type { CategoriesRepository, CategoryWithCount } from '../../db/repositories/categories.js'
import { violatedUniqueIndex } from '../../db/errors.js'
import { caseKey } from '../../db/repositories/server-filters.js'
import { newId } from '../../db/ids.js'
import type { Database } from '../../db/types.js'
import { errors } from '../../http/errors.js'
import type { Clock } from '../../lib/clock.js'
import type { AuditLog } from '../audit/service.js'
import type { CatalogueActor } from './actor.js'

export interface CategoryInput {
  name?: string
  description?: string | null
  icon?: string | null
  sort_order?: number
}

const nameTaken = (name: string) => errors.conflict('CATEGORY_NAME_TAKEN', `A category named "${name}" exists already (names are compared case-insensitively).`)

/** Categories of the catalogue. No Fastify types here. */
export class CategoryService {
  constructor(private readonly deps: { database: Database; categories: CategoriesRepository; audit: AuditLog; clock: Clock }) {}

  list(actor: CatalogueActor): Promise<CategoryWithCount[]> {
    return this.deps.categories.list(actor)
  }

  async create(input: CategoryInput & { name: string }, actor: CatalogueActor): Promise<CategoryWithCount> {
    const { database, categories, audit } = this.deps
    const now = this.now()
    const name = input.name.trim()
    const id = await catalogueTransaction(database, async (tx) => {
      const row = await categories.with(tx).insert({
        id: newId(), name, nameKey: caseKey(name), description: input.description ?? null, icon: input.icon ?? null,
        sortOrder: input.sort_order ?? 0, createdAt: now, updatedAt: now,
      })
      if (row === null) throw nameTaken(name)
      await audit.record('catalogue.category_created', { actorId: actor.userId, ip: actor.ip, target: row.id, details: { name } }, tx)
      return row.id
    })
    return this.get(id, actor)
  }

  async update(id: string, input: CategoryInput, actor: CatalogueActor): Promise<CategoryWithCount> {
    const { database, categories, audit } = this.deps
    const name = input.name?.trim()
    await catalogueTransaction(database, async (tx) => {
      let found: boolean
      try {
        found = await categories.with(tx).update(id, {
          ...(name === undefined ? {} : { name, nameKey: caseKey(name) }),
          ...(input.description === undefined ? {} : { description: input.description }),
          ...(input.icon === undefined ? {} : { icon: input.icon }),
          ...(input.sort_order === undefined ? {} : { sortOrder: input.sort_order }),
        }, this.now())
      } catch (error) {
        if (name !== undefined && violatedUniqueIndex(error) !== null) throw nameTaken(name)
        throw error
      }
      if (!found) throw errors.notFound('Category')
      await audit.record('catalogue.category_updated', { actorId: actor.userId, ip: actor.ip, target: id, details: { fields: Object.keys(input) } }, tx)
    })
    return this.get(id, actor)
  }

  /** The servers in it become uncategorized, in the same transaction. */
  async delete(id: string, actor: CatalogueActor): Promise<number> {
    const { database, categories, audit } = this.deps
    return catalogueTransaction(database, async (tx) => {
      const uncategorized = await categories.with(tx).delete(id, this.now())
      if (uncategorized === null) throw errors.notFound('Category')
      await audit.record('catalogue.category_deleted', { actorId: actor.userId, ip: actor.ip, target: id, details: { uncategorized } }, tx)
      return uncategorized
    })
  }

  private async get(id: string, actor: CatalogueActor): Promise<CategoryWithCount> {
    const category = await this.deps.categories.find(id, actor)
    if (category === undefined) throw errors.notFound('Category')
    return category
  }

  private now(): Date {
    return new Date(this.deps.clock.now())
  }
}
