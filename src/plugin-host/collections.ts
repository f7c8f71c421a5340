import { Type } from 'typebox'
import { policy } from '../auth/policies.js'
import { newId } from '../db/ids.js'
import type { CollectionKey, PluginItemRow } from '../db/repositories/plugin-items.js'
import { MAX_OFFSET, Ok, OkMessage, Pagination, paginate, PaginationQuery } from '../http/envelope.js'
import { errors } from '../http/errors.js'
import { bodyValidator, toFieldProblems, type Validate } from '../http/validation.js'
import type { Clock } from '../lib/clock.js'
import type { Services } from '../services.js'
import type { CollectionItem, CollectionStore, PluginScope } from './index.js'
import type { CollectionManifest, PluginManifest } from './manifest.js'
import { isoTime } from '../lib/iso-time.js'

/** A collection document (its JSON body) may be at most this large; larger → 413. */
export const DOCUMENT_BODY_LIMIT = 64 * 1024

type Document = Record<string, unknown>
type Item = CollectionItem<Document>

const toItem = (row: PluginItemRow): Item => ({
  id: row.id,
  ...row.document,
  created_at: isoTime(row.createdAt),
  updated_at: isoTime(row.updatedAt),
})

/**
 * A collection's store over the host table. Bound to its plugin and collection at creation, so
 * nothing a plugin passes can reach another collection. Every document is validated by the
 * collection's schema, also when the plugin's own code writes it.
 */
export function collectionStore(key: CollectionKey, validate: Validate, services: () => Services, clock: Clock): CollectionStore<Document> {
  // The same rules as the collection routes, for documents a plugin's own routes write.
  const checked = (document: Document): Document => {
    if (!validate(document)) throw errors.validation(toFieldProblems(validate.errors ?? [], 'body'), 'The document does not match the collection schema.')
    if (Buffer.byteLength(JSON.stringify(document)) > DOCUMENT_BODY_LIMIT) throw errors.payloadTooLarge(DOCUMENT_BODY_LIMIT)
    return document
  }
  return {
    async list({ limit = 20, offset = 0 } = {}) {
      const problems = [
        ...(Number.isInteger(limit) && limit >= 1 && limit <= 100 ? [] : [{ field: 'limit', message: 'must be an integer from 1 to 100' }]),
        ...(Number.isInteger(offset) && offset >= 0 && offset <= MAX_OFFSET ? [] : [{ field: 'offset', message: `must be an integer from 0 to ${MAX_OFFSET}` }]),
      ]
      if (problems.length > 0) throw errors.validation(problems)
      const { rows, total } = await services().pluginItems.page(key, limit, offset)
      return { items: rows.map(toItem), total }
    },
    async get(id) {
      const row = await services().pluginItems.find(key, id)
      return row === null ? null : toItem(row)
    },
    async create(document) {
      const at = new Date(clock.now())
      return toItem(await services().pluginItems.insert(key, { id: newId(), document: checked(document), createdAt: at, updatedAt: at }))
    },
    async replace(id, document) {
      const row = await services().pluginItems.replace(key, id, checked(document), new Date(clock.now()))
      return row === null ? null : toItem(row)
    },
    remove: (id) => services().pluginItems.remove(key, id),
  }
}

/** The JSON Schema of an item as answered: the document's properties between id and the timestamps. */
function itemSchema(collection: CollectionManifest): Record<string, unknown> {
  return {
    type: 'object',
    properties: {
      id: { type: 'string', description: 'Assigned by the service (UUIDv7).' },
      ...(collection.schema.properties as object),
      created_at: { type: 'string', format: 'date-time' },
      updated_at: { type: 'string', format: 'date-time' },
    },
    // Only what every stored item has: documents written before a schema gained a required
    // property must still serialize.
    required: ['id', 'created_at', 'updated_at'],
  }
}

const ItemParams = Type.Object({ itemId: Type.String({ minLength: 1, maxLength: 100, description: 'The item id; an unknown one → 404.' }) })

/** GET (list, one), POST, PUT and DELETE for one collection, inside the plugin's scope. */
export function registerCollectionRoutes(scope: PluginScope, manifest: PluginManifest, collection: CollectionManifest, store: CollectionStore<Document>): void {
  const requirements = collection.permission === null ? {} : { permission: collection.permission }
  const auth = collection.scope === null ? policy.session(requirements) : policy.dual(collection.scope, requirements)
  const item = Type.Unsafe<Item>(itemSchema(collection))
  const body = Type.Unsafe<Document>(collection.schema)
  const ItemEnvelope = Ok(Type.Object({ item }))
  const who = collection.scope === null ? 'a session' : `a session, or a bearer token with the scope ${collection.scope}`
  const access = `Needs ${who}${collection.permission === null ? '' : ` and the permission ${collection.permission}`}.`
  const about = `${collection.description ?? `The ${collection.name} collection of ${manifest.name}.`} ${access}`
  const path = `/${collection.name}`
  const documentLimit = `A document over ${DOCUMENT_BODY_LIMIT / 1024} KiB → 413 PAYLOAD_TOO_LARGE.`

  scope.get(path, {
    config: { auth },
    schema: {
      summary: `List ${collection.name}`,
      description: `${about} A page in creation order, with the collection's size.`,
      querystring: Type.Object(PaginationQuery, { additionalProperties: false }),
      response: { 200: Ok(Type.Object({ items: Type.Array(item), pagination: Pagination })) },
    },
  }, async (request) => {
    const { limit = 20, offset = 0 } = request.query as { limit?: number; offset?: number }
    const { items, total } = await store.list({ limit, offset })
    return { success: true as const, data: { items, pagination: paginate(total, limit, offset) } }
  })

  scope.get(`${path}/:itemId`, {
    config: { auth },
    schema: { summary: `One of ${collection.name}`, description: `${about} 404 for an unknown id.`, params: ItemParams, response: { 200: ItemEnvelope } },
  }, async (request) => {
    const found = await store.get(request.params.itemId)
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
    const created = await store.create(request.body)
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
    const replaced = await store.replace(request.params.itemId, request.body)
    if (replaced === null) throw errors.notFound('Item')
    return { success: true as const, message: 'Item replaced.', data: { item: replaced } }
  })

  scope.delete(`${path}/:itemId`, {
    config: { auth },
    schema: { summary: `Delete one of ${collection.name}`, description: `${about} 404 for an unknown id.`, params: ItemParams, response: { 200: OkMessage } },
  }, async (request) => {
    if (!(await store.remove(request.params.itemId))) throw errors.notFound('Item')
    return { success: true as const, message: 'Item deleted.' }
  })
}

/** The validator of a collection's documents; throws when the schema does not compile. */
export const documentValidator = (collection: CollectionManifest): Validate => bodyValidator(collection.schema)
