/**
 * The one module a plugin imports. A plugin is a folder `plugins/<id>/` whose `index.ts` (or
 * built `index.js`) default-exports `definePlugin({...})`; the host mounts it at
 * `/api/plugin/<id>` in its own encapsulated Fastify context. See docs/plugins.md, "Write your first
 * plugin".
 */
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox'
import type { FastifyBaseLogger, FastifyInstance, FastifyRequest, RawReplyDefaultExpression, RawRequestDefaultExpression, RawServerDefault } from 'fastify'
import type { Static, TSchema } from 'typebox'
import type { Permission } from '../auth/permissions.js'
import type { policy, Scope } from '../auth/policies.js'
import type { AppError, FieldProblem } from '../http/errors.js'
import type { Clock } from '../lib/clock.js'
// The route config (`config.auth`, `config.limit`) that plugin routes declare.
import type {} from '../http/route-guard.js'

export { Type, type Static, type TSchema } from 'typebox'
export type { Permission, Scope }

/** The plugin's own Fastify instance: encapsulated, already prefixed with `/api/plugin/<id>`. */
export type PluginScope = FastifyInstance<RawServerDefault, RawRequestDefaultExpression, RawReplyDefaultExpression, FastifyBaseLogger, TypeBoxTypeProvider>

/** A setting shown in the settings API as `plugin.<id>.<key>`, in group `plugin.<id>`. */
export type SettingDeclaration =
  | { type: 'string'; default: string; description?: string; encrypted?: boolean }
  | { type: 'number'; default: number; description?: string }
  | { type: 'boolean'; default: boolean; description?: string }

/** A JSON Schema for one item (TypeBox builds one): an object whose objects are all closed. */
export type ItemSchema = TSchema | Record<string, unknown>

export interface CollectionDeclaration<S extends ItemSchema = ItemSchema> {
  schema: S
  description?: string
  /** One of the service's OAuth scopes: bearer tokens carrying it are admitted too (default: sessions only). */
  scope?: Scope
  /** A global permission the caller must hold as well. */
  permission?: Permission
  /**
   * Each item belongs to the user who created it (its `owner_id`): the routes list only the
   * caller's items, and someone else's answers 404, as an unknown id does.
   */
  owned?: boolean
  /**
   * With `owned`: holders of this global permission moderate. They list every item, read any and
   * delete any (the host audits each delete of another user's item); only owners change an item.
   */
  moderator?: Permission
}

export type SettingValue<D extends SettingDeclaration> = D['default']
export type DocumentOf<S> = S extends TSchema ? Static<S> : Record<string, unknown>

/**
 * An item as the API answers it: the document with its id and timestamps (ISO 8601), and in an
 * owned collection the id of the user it belongs to.
 */
export type CollectionItem<D> = D & { id: string; owner_id?: string; created_at: string; updated_at: string }

/**
 * Whose items a store call reaches: with `ownerId`, only that user's (someone else's item is not
 * found); without, every item of the collection. Creating in an owned collection needs it.
 */
export interface OwnerOption {
  ownerId?: string
}

/** A collection's items in the database; documents are validated by the collection's schema. */
export interface CollectionStore<D> {
  /** A page in creation order (limit 1–100, default 20) and how many items there are. */
  list(options?: { limit?: number; offset?: number } & OwnerOption): Promise<{ items: Array<CollectionItem<D>>; total: number }>
  get(id: string, options?: OwnerOption): Promise<CollectionItem<D> | null>
  /** Throws the service's 400 VALIDATION_ERROR when the document does not fit the schema. */
  create(document: D, options?: OwnerOption): Promise<CollectionItem<D>>
  /** null when there is no such item. */
  replace(id: string, document: D, options?: OwnerOption): Promise<CollectionItem<D> | null>
  /** Whether an item was deleted. */
  remove(id: string, options?: OwnerOption): Promise<boolean>
}

/** The signed-in user calling a route, as the core's policy check established them. */
export interface PluginCaller {
  userId: string
  /** Whether the user's global role grants `permission` (the core's role table). */
  can(permission: Permission): boolean
}

/** Errors a plugin's handler throws to answer in the service's envelope. */
export interface PluginErrors {
  notFound(what?: string): AppError
  validation(problems: FieldProblem[], message?: string): AppError
  conflict(message: string): AppError
}

export interface PluginContext<
  S extends Record<string, SettingDeclaration> = Record<string, SettingDeclaration>,
  C extends Record<string, CollectionDeclaration> = Record<string, CollectionDeclaration>,
> {
  id: string
  /** A child logger whose lines carry `plugin: <id>`. */
  log: FastifyBaseLogger
  /** The plugin's settings, as an admin set them (another instance's change is seen within seconds). */
  settings: { get<K extends keyof S & string>(key: K): Promise<SettingValue<S[K]>> }
  /** One store per declared collection. */
  collections: { [K in keyof C]: CollectionStore<DocumentOf<C[K]['schema']>> }
  /** Route policies for `config.auth`; a route that declares none needs a session. */
  policy: typeof policy
  /** The user calling one of the plugin's routes (session or bearer token); 401 on a public route without one. */
  caller(request: FastifyRequest): PluginCaller
  clock: Clock
  errors: PluginErrors
}

export interface PluginDefinition<
  S extends Record<string, SettingDeclaration> = Record<string, SettingDeclaration>,
  C extends Record<string, CollectionDeclaration> = Record<string, CollectionDeclaration>,
> {
  /** `^[a-z][a-z0-9-]{1,62}$`, the name of the plugin's folder. */
  id: string
  name: string
  /** Semantic version, e.g. `1.0.0`. */
  version: string
  description?: string
  settings?: S
  /** Keyed by collection name (`^[a-z][a-z0-9-]{0,62}$`), served at `/api/plugin/<id>/<name>`. */
  collections?: C
  /** Adds the plugin's own routes and hooks to `scope`. A throw fails this plugin only. */
  register?: (scope: PluginScope, context: PluginContext<S, C>) => void | Promise<void>
}

/** Declares a plugin; the default export of its `index.ts`. Types the context from the declarations. */
export function definePlugin<
  const S extends Record<string, SettingDeclaration> = Record<never, SettingDeclaration>,
  const C extends Record<string, CollectionDeclaration> = Record<never, CollectionDeclaration>,
>(definition: PluginDefinition<S, C>): PluginDefinition<S, C> {
  return definition
}
