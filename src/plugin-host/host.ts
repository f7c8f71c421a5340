import type { FastifyBaseLogger, FastifyInstance } from 'fastify'
import { userCaller } from '../http/current-user.js'
import { roleHas } from '../auth/permissions.js'
import { policy } from '../auth/policies.js'
import { errors } from '../http/errors.js'
import type { ErrorHandler } from '../http/error-handler.js'
import { setRouteDefaults } from '../http/route-guard.js'
import type { Clock } from '../lib/clock.js'
import type { AuditLog } from '../modules/audit/service.js'
import type { SettingDefinition, SettingGroup } from '../modules/settings/definitions.js'
import type { Services } from '../services.js'
import { collectionModeration, collectionStore, documentValidator, registerCollectionRoutes } from './collections.js'
import { describe, entryFile, importPlugin, pluginFolders } from './discovery.js'
import { containScope, installPluginGuard, sealCore, type GuardedPlugin, type GuardHost, type PluginStatus } from './guard.js'
import type { CollectionStore, PluginContext, PluginScope } from './index.js'
import { PLUGIN_ID, readManifest, type PluginManifest } from './manifest.js'

/** How long a plugin's `register` may take before the plugin is failed (the boot goes on). */
export const REGISTER_TIMEOUT_MS = 5000

export interface PluginHostOptions {
  dir: string
  disabled: readonly string[]
  log: FastifyBaseLogger
  clock: Clock
  /** The services once the database is ready (503 DATABASE_NOT_CONFIGURED before). */
  services: () => Services
  bodyLimit: number
  coreErrorHandler: ErrorHandler
  registerTimeoutMs?: number
}

interface PluginState extends GuardedPlugin {
  status: PluginStatus
  error: string | null
  manifest: PluginManifest | null
}

/** A plugin as `GET /api/admin/plugins` lists it. */
export interface PluginListing {
  id: string
  name: string
  version: string | null
  description: string | null
  status: Exclude<PluginStatus, 'loading'>
  error?: string
  route_count: number
  collections: string[]
}

/**
 * Discovers the plugins of PLUGINS_DIR, mounts each in its own encapsulated context under
 * `/api/plugin/<id>`, and remembers what became of each: loaded, disabled, or failed with the
 * reason. A plugin that fails (at import, in its manifest, in `register`, or by breaking a rule of
 * the guard) is skipped; the service starts without it.
 */
export class PluginHost implements GuardHost {
  loading: PluginState | null = null
  readonly bodyLimit: number
  private readonly states: PluginState[] = []
  private readonly options: PluginHostOptions

  constructor(options: PluginHostOptions) {
    this.options = options
    this.bodyLimit = options.bodyLimit
  }

  /** The route guard; before any plugin route and before the OpenAPI collector. */
  install(app: FastifyInstance): void {
    installPluginGuard(app, this, this.options.coreErrorHandler)
  }

  fail(plugin: GuardedPlugin, error: unknown): void {
    const state = plugin as PluginState
    if (state.status === 'failed') return
    state.status = 'failed'
    state.error = typeof error === 'string' ? error : describe(error)
    this.options.log.error({ plugin: state.id, err: typeof error === 'string' ? undefined : error }, `plugin ${state.id} failed and is skipped: ${state.error}`)
  }

  /** Discovers, imports and mounts every plugin. Call after the core routes. */
  async mount(app: FastifyInstance): Promise<void> {
    const { dir, disabled, log } = this.options
    const folders = pluginFolders(dir)
    for (const id of disabled) {
      if (!folders.some((folder) => folder.name === id)) log.warn(`PLUGINS_DISABLED names ${id}, but ${dir} has no such plugin`)
    }
    for (const folder of folders) {
      const state = this.track(folder.name, disabled.includes(folder.name) ? 'disabled' : 'loading')
      if (state.status === 'disabled') continue
      if (!PLUGIN_ID.test(folder.name)) {
        this.fail(state, `the folder name is not a plugin id (${PLUGIN_ID.source})`)
        continue
      }
      const file = entryFile(folder.path)
      if (file === null) {
        this.fail(state, 'the folder has no index.ts or index.js')
        continue
      }
      const imported = await importPlugin(file)
      if ('reason' in imported) {
        this.fail(state, imported.reason)
        continue
      }
      const read = readManifest(imported.exported, folder.name)
      if ('problems' in read) this.fail(state, `invalid manifest: ${read.problems.join('; ')}`)
      else state.manifest = read.manifest
    }
    const mountable = this.states.filter((state) => state.status === 'loading' && state.manifest !== null)
    await app.register(async (host) => {
      // Secure by default: a plugin route that declares no policy needs a session.
      setRouteDefaults(host, { auth: policy.session() })
      // From here on the core cannot be changed from a plugin, whichever way it reaches it.
      sealCore(app, host, this)
      for (const state of mountable) host.register(this.mountOne(state, state.manifest!), { prefix: state.prefix })
    })
    for (const state of mountable) {
      if (state.status !== 'loading') continue
      state.status = 'loaded'
      log.info({ plugin: state.id, version: state.manifest!.version, routes: state.routes.size }, `plugin ${state.id} loaded`)
    }
  }

  /** Whether `url` lies under a plugin that is not loaded: the routes it added before failing do not exist. */
  hides(url: string): boolean {
    const path = url.split('?')[0]!
    return this.states.some((state) => state.status !== 'loaded' && (path === state.prefix || path.startsWith(`${state.prefix}/`)))
  }

  /** The settings of the loaded plugins, as `plugin.<id>.<key>` in group `plugin.<id>`. */
  settings(): { definitions: Record<string, SettingDefinition>; groups: SettingGroup[] } {
    const definitions: Record<string, SettingDefinition> = {}
    const groups: SettingGroup[] = []
    for (const { manifest } of this.loaded()) {
      if (manifest.settings.length === 0) continue
      const group = `plugin.${manifest.id}`
      groups.push({ id: group, name: manifest.name, description: manifest.description ?? `Settings of the ${manifest.name} plugin.` })
      for (const setting of manifest.settings) {
        definitions[`${group}.${setting.key}`] = {
          group,
          type: setting.type,
          default: setting.default,
          name: setting.key,
          description: setting.description,
          encrypted: setting.encrypted,
          ...(setting.type === 'string' ? { max: 4096 } : {}),
        }
      }
    }
    return { definitions, groups }
  }

  /** One `plugin.loaded` audit event per loaded plugin, once the database is ready. */
  async recordLoads(audit: AuditLog): Promise<void> {
    for (const state of this.loaded()) {
      const { id, version } = state.manifest
      await audit.record('plugin.loaded', {
        target: id,
        details: { id, version, route_count: state.routes.size, collections: state.manifest.collections.map((collection) => collection.name) },
      })
    }
  }

  list(): PluginListing[] {
    return this.states.map((state) => ({
      id: state.id,
      name: state.manifest?.name ?? state.id,
      version: state.manifest?.version ?? null,
      description: state.manifest?.description ?? null,
      status: state.status === 'loading' ? 'failed' : state.status,
      ...(state.error === null ? {} : { error: state.error }),
      route_count: state.status === 'loaded' ? state.routes.size : 0,
      // What it serves: nothing unless loaded.
      collections: state.status === 'loaded' ? (state.manifest?.collections.map((collection) => collection.name) ?? []) : [],
    }))
  }

  /** The OpenAPI tag of each loaded plugin, with what it is. */
  tags(): Array<{ name: string; description: string }> {
    return this.loaded().map(({ tag, manifest }) => ({
      name: tag,
      description: `Plugin ${manifest.name} ${manifest.version}${manifest.description === null ? '' : ` — ${manifest.description}`}`,
    }))
  }

  private loaded(): Array<PluginState & { manifest: PluginManifest }> {
    return this.states.filter((state): state is PluginState & { manifest: PluginManifest } => state.status === 'loaded' && state.manifest !== null)
  }

  private track(id: string, status: PluginStatus): PluginState {
    const state: PluginState = { id, prefix: `/api/plugin/${id}`, tag: `plugin:${id}`, routes: new Set(), status, error: null, manifest: null }
    this.states.push(state)
    return state
  }

  /** The encapsulated function registered for one plugin: collections first, then its `register`. */
  private mountOne(state: PluginState, manifest: PluginManifest) {
    return async (instance: FastifyInstance) => {
      const scope = instance as unknown as PluginScope
      containScope(instance, state, this, this.options.coreErrorHandler)
      this.loading = state
      try {
        const stores: Record<string, CollectionStore<Record<string, unknown>>> = {}
        for (const collection of manifest.collections) {
          const key = { pluginId: manifest.id, collection: collection.name }
          const store = collectionStore(key, documentValidator(collection), this.options.services, this.options.clock, collection.owned)
          stores[collection.name] = store
          registerCollectionRoutes(scope, manifest, collection, store, collectionModeration(key, this.options.services))
        }
        const register = manifest.register
        if (register) await this.withinTimeout(register(scope, this.context(manifest, stores)))
      } catch (error) {
        this.fail(state, error)
      } finally {
        this.loading = null
      }
    }
  }

  private context(manifest: PluginManifest, stores: Record<string, CollectionStore<Record<string, unknown>>>): PluginContext {
    const declared = new Set(manifest.settings.map((setting) => setting.key))
    const { services, clock, log } = this.options
    return {
      id: manifest.id,
      log: log.child({ plugin: manifest.id }),
      settings: {
        get: async (key: string) => {
          if (!declared.has(key)) throw new Error(`Plugin ${manifest.id} declares no setting ${key}`)
          return (await services().settings.value(`plugin.${manifest.id}.${key}`)) as never
        },
      },
      collections: stores,
      policy,
      caller: (request) => {
        const { userId, role } = userCaller(request)
        return { userId, can: (permission) => roleHas(role, permission) }
      },
      clock,
      errors: {
        notFound: (what) => errors.notFound(what),
        validation: (problems, message) => errors.validation(problems, message),
        conflict: (message) => errors.conflict('CONFLICT', message),
      },
    }
  }

  private async withinTimeout(work: void | Promise<void>): Promise<void> {
    const limit = this.options.registerTimeoutMs ?? REGISTER_TIMEOUT_MS
    let timer: NodeJS.Timeout | undefined
    const timeout = new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new Error(`register did not finish within ${limit} ms`)), limit)
    })
    try {
      await Promise.race([work, timeout])
    } finally {
      clearTimeout(timer)
    }
  }
}
