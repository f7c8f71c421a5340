import type { FastifyRequest } from 'fastify'
import { Type } from 'typebox'
import { userCaller } from '../http/current-user.js'
import { roleHas } from '../auth/permissions.js'
import { policy } from '../auth/policies.js'
import { newId } from '../db/ids.js'
import type { CollectionKey, OwnerFilter, PluginItemRow } from '../db/repositories/plugin-items.js'
import { MAX_OFFSET, Ok, OkMessage, Pagination, paginate, PaginationQuery } from '../http/envelope.js'
import { errors } from '../http/errors.js'
import { bodyValidator, toFieldProblems, type Validate } from '../http/validation.js'
import type { Clock } from '../lib/clock.js'
import type { Services } from '../services.js'
import type { CollectionItem, CollectionStore, PluginScope } from './index.js'
import { OWNER_PROPERTY, type CollectionManifest, type PluginManifest } from './manifest.js'
import { isoTime } from '../lib/iso-time.js'

/** A collection document (its JSON body) may be at most this large; larger → 413. */
export const DOCUMENT_BODY_LIMIT = 64 * 1024

type Document = Record<string, unknown>
type Item = CollectionItem<Document>

const toItem = (row: PluginItemRow): Item => ({
  id: row.id,
  ...(row.ownerId === null ? {} : { owner_id: row.ownerId }),
  ...row.document,
  created_at: isoTime(row.createdAt),
  updated_at: isoTime(row.updatedAt),
})

/** The audit event of a moderator deleting another user's item. */
export const MODERATED_DELETE_EVENT = 'plugin.item_deleted_by_moderator'

/** What the collection routes need beyond the plugin's store: a moderator's delete, audited. */
export interface CollectionModeration {
  /** Deletes any item; when it was someone else's, records the audit event in the same transaction. */
  remove(id: string, moderator: { userId: string; ip: string }): Promise<boolean>
}

/**
 * A collection's store over the host table. Bound to its plugin and collection at creation, so
 * nothing a plugin passes can reach another collection. Every document is validated by the
 * collection's schema, also when the plugin's own code writes it.
 */
export function collectionStore(key: CollectionKey, validate: Validate, services: () => Services, clock: Clock, owned = false): CollectionStore<Document> {
  // The same rules as the collection routes, for documents a plugin's own routes write.
  const checked = (document: Document): Document => {
    if (!validate(document)) throw errors.validation(toFieldProblems(validate.errors ?? [], 'body'), 'The document does not match the collection schema.')
    if (Buffer.byteLength(JSON.stringify(document)) > DOCUMENT_BODY_LIMIT) throw errors.payloadTooLarge(DOCUMENT_BODY_LIMIT)
    return document
  }
  const owner = ({ ownerId }: OwnerFilter = {}): OwnerFilter => (ownerId === undefined ? {} : { ownerId })
  return {
    async list({ limit = 20, offset = 0, ownerId } = {}) {
      const problems = [
        ...(Number.isInteger(limit) && limit >= 1 && limit <= 100 ? [] : [{ field: 'limit', message: 'must be an integer from 1 to 100' }]),
        ...(Number.isInteger(offset) && offset >= 0 && offset <= MAX_OFFSET ? [] : [{ field: 'offset', message: `must be an integer from 0 to ${MAX_OFFSET}` }]),
      ]
      if (problems.length > 0) throw errors.validation(problems)
      const { rows, total } = await services().pluginItems.page(key, limit, offset, owner({ ownerId }))
      return { items: rows.map(toItem), total }
    },
    async get(id, options) {
      const row = await services().pluginItems.find(key, id, owner(options))
      return row === null ? null : toItem(row)
    },
    async create(document, { ownerId } = {}) {
      // A programming error of the plugin, not the caller's: an owned item without an owner would be nobody's.
      if (owned && ownerId === undefined) throw new Error(`${key.pluginId}/${key.collection} is owned: create needs an ownerId`)
      const at = new Date(clock.now())
      return toItem(await services().pluginItems.insert(key, { id: newId(), ownerId: owned ? ownerId! : null, document: checked(document), createdAt: at, updatedAt: at }))
    },
    async replace(id, document, options) {
      const row = await services().pluginItems.replace(key, id, checked(document), new Date(clock.now()), owner(options))
      return row === null ? null : toItem(row)
    },
    remove: async (id, options) => (await services().pluginItems.remove(key, id, owner(options))) !== null,
  }
}

/** A moderator's delete: the row and, when it was another user's, its audit event commit together. */
export function collectionModeration(key: CollectionKey, services: () => Services): CollectionModeration {
  return {
    async remove(id, moderator) {
      const { database, pluginItems, audit } = services()
      return database.transaction(async (tx) => {
        const removed = await pluginItems.with(tx).remove(key, id)
        if (removed === null) return false
        if (removed.ownerId !== moderator.userId) {
          await audit.record(MODERATED_DELETE_EVENT, {
            actorId: moderator.userId,
            ip: moderator.ip,
            target: id,
            // The owner, not the content: the document may be private, and the audit log outlives it.
            details: { plugin: key.pluginId, collection: key.collection, owner_id: removed.ownerId },
          }, tx)
        }
        return true
      })
    },
  }
}

/** The JSON Schema of an item as answered: the document's properties between id and the timestamps. */
function itemSchema(collection: CollectionManifest): Record<string, unknown> {
  const owner = collection.owned ? { [OWNER_PROPERTY]: { type: 'string', description: 'The user the item belongs to: who created it.' } } : {}
  return {
    type: 'object',
    properties: {
      id: { type: 'string', description: 'Assigned by the service (UUIDv7).' },
      ...owner,
      ...(collection.schema.properties as object),
      created_at: { type: 'string', format: 'date-time' },
      updated_at: { type: 'string', format: 'date-time' },
    },
    // Only what every stored item has: documents written before a schema gained a required
    // property must still serialize.
    required: ['id', ...Object.keys(owner), 'created_at', 'updated_at'],
  }
}

const ItemParams = Type.Object({ itemId: Type.String({ minLength: 1, maxLength: 100, description: 'The item id; an unknown one → 404.' }) })

/** Whose items a request reaches: in an owned collection the caller's own, or every one for a moderator. */
interface Reach {
  /** The filter for reads and deletes. */
  filter: OwnerFilter
  /** The caller's own items only: what creating and replacing use. */
  own: OwnerFilter
  moderates: boolean
  userId: string | null
}

function reachOf(collection: CollectionManifest, request: FastifyRequest): Reach {
  if (!collection.owned) return { filter: {}, own: {}, moderates: false, userId: null }
  const caller = userCaller(request)
  const moderates = collection.moderator !== null && roleHas(caller.role, collection.moderator)
  const own = { ownerId: caller.userId }
  return { filter: moderates ? {} : own, own, moderates, userId: caller.userId }
}

function accessText(manifest: PluginManifest, collection: CollectionManifest): string {
  const who = collection.scope === null ? 'a session' : `a session, or a bearer token with the scope ${collection.scope}`
  const needs = `Needs ${who}${collection.permission === null ? '' : ` and the permission ${collection.permission}`}.`
  const owners = !collection.owned
    ? ''
    : ' Each item belongs to the user who created it (owner_id): a caller lists and reaches only their own, and another user\'s item answers 404 like an unknown id.' +
      (collection.moderator === null
        ? ''
        : ` Holders of the permission ${collection.moderator} moderate: they list every item, read any and delete any (audited as ${MODERATED_DELETE_EVENT}); only the owner replaces an item.`)
  return `${collection.description ?? `The ${collection.name} collection of ${manifest.name}.`} ${needs}${owners}`
}

/** GET (list, one), POST, PUT and DELETE for one collection, inside the plugin's scope. */
export function registerCollectionRoutes(
  scope: PluginScope, manifest: PluginManifest, collection: CollectionManifest, store: CollectionStore<Document>, moderation: CollectionModeration,
): void {
  const requirements = collection.permission === null ? {} : { permission: collection.permission }
  const auth = collection.scope === null ? policy.session(requirements) : policy.dual(collection.scope, requirements)
  const item = Type.Unsafe<Item>(itemSchema(collection))
  const body = Type.Unsafe<Document>(collection.schema)
  const ItemEnvelope = Ok(Type.Object({ item }))
  const about = accessText(manifest, collection)
  const path = `/${collection.name}`
  const documentLimit = `A document over ${DOCUMENT_BODY_LIMIT / 1024} KiB → 413 PAYLOAD_TOO_LARGE.`

  scope.get(path, {
    config: { auth },
    schema: {
      summary: `List ${collection.name}`,
      description: `${about} A page in creation order, with the number of items the caller reaches.`,
      querystring: Type.Object(PaginationQuery, { additionalProperties: false }),
      response: { 200: Ok(Type.Object({ items: Type.Array(item), pagination: Pagination })) },
    },
  }, async (request) => {
    const { limit = 20, offset = 0 } = request.query as { limit?: number; offset?: number }
    const { items, total } = await store.list({ limit, offset, ...reachOf(collection, request).filter })
    return { success: true as const, data: { items, pagination: paginate(total, limit, offset) } }
  })

  scope.get(`${path}/:itemId`, {
    config: { auth },
    schema: { summary: `One of ${collection.name}`, description: `${about} 404 for an unknown id.`, params: ItemParams, response: { 200: ItemEnvelope } },
  }, async (request) => {
    const found = await store.get(request.params.itemId, reachOf(collection, request).filter)
    if (found === null) throw errors.notFound('Item')
    return { success: true as const, data: { item: found } }
  })

  scope.post(path, {
    config: { auth },
    bodyLimit: DOCUMENT_BODY_LIMIT,
    schema: {
      summary: `Add to ${collection.name}`,
      description: `${about} The body is the document, validated by the collection's schema (400 VALIDATION_ERROR with the failing fields). ${documentLimit}`,
      body,
      response: { 201: ItemEnvelope },
    },
  }, async (request, reply) => {
    const created = await store.create(request.body, reachOf(collection, request).own)
    return reply.code(201).send({ success: true as const, message: 'Item created.', data: { item: created } })
  })

  scope.put(`${path}/:itemId`, {
    config: { auth },
    bodyLimit: DOCUMENT_BODY_LIMIT,
    schema: {
      summary: `Replace one of ${collection.name}`,
      description: `${about} The body replaces the whole document. 404 for an unknown id. ${documentLimit}`,
      params: ItemParams,
      body,
      response: { 200: ItemEnvelope },
    },
  }, async (request) => {
    const replaced = await store.replace(request.params.itemId, request.body, reachOf(collection, request).own)
    if (replaced === null) throw errors.notFound('Item')
    return { success: true as const, message: 'Item replaced.', data: { item: replaced } }
  })

  scope.delete(`${path}/:itemId`, {
    config: { auth },
    schema: { summary: `Delete one of ${collection.name}`, description: `${about} 404 for an unknown id.`, params: ItemParams, response: { 200: OkMessage } },
  }, async (request) => {
    const reach = reachOf(collection, request)
    const deleted = reach.moderates
      ? await moderation.remove(request.params.itemId, { userId: reach.userId!, ip: request.ip })
      : await store.remove(request.params.itemId, reach.filter)
    if (!deleted) throw errors.notFound('Item')
    return { success: true as const, message: 'Item deleted.' }
  })
}

/** The validator of a collection's documents; throws when the schema does not compile. */
export const documentValidator = (collection: CollectionManifest): Validate => bodyValidator(collection.schema)
