import semver from 'semver'
import { isPermission, type Permission } from '../auth/permissions.js'
import { SCOPES, type Scope } from '../auth/policies.js'
import type { PluginDefinition } from './index.js'

export const PLUGIN_ID = /^[a-z][a-z0-9-]{1,62}$/
export const COLLECTION_NAME = /^[a-z][a-z0-9-]{0,62}$/
export const SETTING_KEY = /^[a-z][a-z0-9_]{0,62}$/

/** Properties every item carries; a collection's schema cannot declare them. */
export const RESERVED_ITEM_PROPERTIES = ['id', 'created_at', 'updated_at'] as const
/** Carried by the items of an owned collection as well. */
export const OWNER_PROPERTY = 'owner_id'

export interface CollectionManifest {
  name: string
  schema: Record<string, unknown>
  description: string | null
  scope: Scope | null
  permission: Permission | null
  /** Items belong to the user who created them: each caller reaches only their own. */
  owned: boolean
  /** In an owned collection: the global permission whose holders list every item and may delete any. */
  moderator: Permission | null
}

export interface SettingManifest {
  key: string
  type: 'string' | 'number' | 'boolean'
  default: string | number | boolean
  description: string
  encrypted: boolean
}

/** A manifest the host has checked: what it registers and lists. */
export interface PluginManifest {
  id: string
  name: string
  version: string
  description: string | null
  settings: SettingManifest[]
  collections: CollectionManifest[]
  register: PluginDefinition['register'] | null
}

const TOP_LEVEL = new Set(['id', 'name', 'version', 'description', 'settings', 'collections', 'register'])
const SETTING_FIELDS = new Set(['type', 'default', 'description', 'encrypted'])
const COLLECTION_FIELDS = new Set(['schema', 'description', 'scope', 'permission', 'owned', 'moderator'])

const isRecord = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null && !Array.isArray(value)

const optionalText = (value: unknown, max: number): boolean => value === undefined || (typeof value === 'string' && value.length <= max)

/**
 * Checks a default export against the plugin contract. Returns the manifest, or every problem
 * found (so an author fixes them in one go). `folder` is the plugin's folder name, which the id
 * must equal: that is how a plugin is disabled without running its code.
 */
export function readManifest(exported: unknown, folder: string): { manifest: PluginManifest } | { problems: string[] } {
  if (!isRecord(exported)) return { problems: ['the default export is not definePlugin({...})'] }
  const problems: string[] = []
  for (const key of Object.keys(exported)) if (!TOP_LEVEL.has(key)) problems.push(`unknown field "${key}"`)
  const { id, name, version, description, register } = exported
  if (typeof id !== 'string' || !PLUGIN_ID.test(id)) problems.push(`id must match ${PLUGIN_ID.source}`)
  else if (id !== folder) problems.push(`id "${id}" must equal its folder name "${folder}"`)
  if (typeof name !== 'string' || name.trim() === '' || name.length > 100) problems.push('name must be 1–100 characters')
  if (typeof version !== 'string' || semver.valid(version) === null) problems.push('version must be a semantic version such as 1.0.0')
  if (!optionalText(description, 1000)) problems.push('description must be a string of at most 1000 characters')
  if (register !== undefined && typeof register !== 'function') problems.push('register must be a function')
  if (typeof register === 'function' && (register as unknown as Record<symbol, unknown>)[Symbol.for('skip-override')] === true) {
    problems.push('register must not opt out of encapsulation (fastify-plugin or skip-override)')
  }
  const settings = readSettings(exported.settings, problems)
  const collections = readCollections(exported.collections, problems)
  if (problems.length > 0) return { problems }
  return {
    manifest: {
      id: id as string,
      name: name as string,
      version: version as string,
      description: (description as string | undefined) ?? null,
      settings,
      collections,
      register: (register as PluginManifest['register'] | undefined) ?? null,
    },
  }
}

function readSettings(declared: unknown, problems: string[]): SettingManifest[] {
  if (declared === undefined) return []
  if (!isRecord(declared)) {
    problems.push('settings must be an object keyed by setting name')
    return []
  }
  const settings: SettingManifest[] = []
  for (const [key, setting] of Object.entries(declared)) {
    const at = `settings.${key}`
    if (!SETTING_KEY.test(key)) problems.push(`${at}: the key must match ${SETTING_KEY.source}`)
    if (!isRecord(setting)) {
      problems.push(`${at} must be {type, default, description?, encrypted?}`)
      continue
    }
    for (const field of Object.keys(setting)) if (!SETTING_FIELDS.has(field)) problems.push(`${at}: unknown field "${field}"`)
    const { type, default: fallback, description, encrypted } = setting
    if (type !== 'string' && type !== 'number' && type !== 'boolean') {
      problems.push(`${at}.type must be string, number or boolean`)
      continue
    }
    const fits = type === 'number' ? Number.isSafeInteger(fallback) : typeof fallback === type
    if (!fits) problems.push(`${at}.default must be ${type === 'number' ? 'an integer' : `a ${type}`}`)
    if (typeof fallback === 'string' && fallback.length > 4096) problems.push(`${at}.default must be at most 4096 characters`)
    if (!optionalText(description, 1000)) problems.push(`${at}.description must be a string of at most 1000 characters`)
    if (encrypted !== undefined && typeof encrypted !== 'boolean') problems.push(`${at}.encrypted must be a boolean`)
    if (encrypted === true && type !== 'string') problems.push(`${at}: only string settings can be encrypted`)
    settings.push({
      key,
      type,
      default: fallback as SettingManifest['default'],
      description: (description as string | undefined) ?? '',
      encrypted: encrypted === true,
    })
  }
  return settings
}

function readCollections(declared: unknown, problems: string[]): CollectionManifest[] {
  if (declared === undefined) return []
  if (!isRecord(declared)) {
    problems.push('collections must be an object keyed by collection name')
    return []
  }
  const collections: CollectionManifest[] = []
  for (const [name, collection] of Object.entries(declared)) {
    const at = `collections.${name}`
    if (!COLLECTION_NAME.test(name)) problems.push(`${at}: the name must match ${COLLECTION_NAME.source}`)
    if (!isRecord(collection)) {
      problems.push(`${at} must be {schema, description?, scope?, permission?, owned?, moderator?}`)
      continue
    }
    for (const field of Object.keys(collection)) if (!COLLECTION_FIELDS.has(field)) problems.push(`${at}: unknown field "${field}"`)
    const { schema, description, scope, permission, owned, moderator } = collection
    if (!isRecord(schema) || schema.type !== 'object' || !isRecord(schema.properties)) {
      problems.push(`${at}.schema must be a JSON Schema of type "object" with properties`)
    } else {
      const carried = owned === true ? [...RESERVED_ITEM_PROPERTIES, OWNER_PROPERTY] : RESERVED_ITEM_PROPERTIES
      const reserved = carried.filter((property) => property in (schema.properties as object))
      if (reserved.length > 0) problems.push(`${at}.schema must not declare ${reserved.join(', ')}: every item carries them`)
    }
    if (owned !== undefined && typeof owned !== 'boolean') problems.push(`${at}.owned must be a boolean`)
    if (moderator !== undefined && !isPermission(moderator)) problems.push(`${at}.moderator is not a known permission`)
    // Moderation lets some callers past the owner check; without owners there is nothing to pass.
    if (moderator !== undefined && owned !== true) problems.push(`${at}.moderator needs owned: true`)
    if (!optionalText(description, 1000)) problems.push(`${at}.description must be a string of at most 1000 characters`)
    if (scope !== undefined && !(SCOPES as readonly unknown[]).includes(scope)) problems.push(`${at}.scope must be one of ${SCOPES.join(', ')}`)
    if (permission !== undefined && !isPermission(permission)) problems.push(`${at}.permission is not a known permission`)
    collections.push({
      name,
      schema: schema as Record<string, unknown>,
      description: (description as string | undefined) ?? null,
      scope: (scope as Scope | undefined) ?? null,
      permission: (permission as Permission | undefined) ?? null,
      owned: owned === true,
      moderator: (moderator as Permission | undefined) ?? null,
    })
  }
  return collections
}
