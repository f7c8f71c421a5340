import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import type { Caller } from '../../auth/caller.js'
import { policy } from '../../auth/policies.js'
import { errors } from '../../http/errors.js'
import type { Db } from '../../db/types.js'
import type { AuditLog } from '../audit/service.js'
import type { SettingView } from './service.js'
import {
  BulkBody, GroupEnvelope, GroupParams, GroupsEnvelope, KeyParams, SettingEnvelope, SettingsEnvelope, ValueBody,
} from './schemas.js'
import { isoTime } from '../../lib/iso-time.js'

const tags = ['Settings']
const canView = { auth: policy.session({ permission: 'settings.view' }) }
const canEdit = { auth: policy.session({ permission: 'settings.edit' }) }

/** The API never returns a secret's plaintext, only whether one is set. */
function settingView(setting: SettingView) {
  return {
    key: setting.key,
    name: setting.name,
    description: setting.description,
    type: setting.type,
    value: setting.encrypted ? null : setting.value,
    encrypted: setting.encrypted,
    is_set: setting.is_set,
    readable: setting.readable,
    updated_at: isoTime(setting.updated_at),
  }
}

const actorOf = (caller: Caller | null) => (caller?.kind === 'user' ? caller.userId : null)

/**
 * One event per successful request, written in the change's own transaction; the keys only,
 * never a value (secrets never appear).
 */
const recordUpdate = (audit: AuditLog, keys: string[], actorId: string | null, ip: string) => (tx: Db) =>
  audit.record('settings.updated', { actorId, ip, target: keys.length === 1 ? keys[0]! : null, details: { keys } }, tx)

/** The global settings, typed, grouped, audited. */
export const settingsRoutes: FastifyPluginAsyncTypebox = async (app) => {
  const groups = async () => {
    const settings = await app.services.settings.list()
    return app.services.settings.groups.map((group) => ({
      ...group,
      settings: settings.filter((setting) => setting.group === group.id).map(settingView),
    }))
  }

  app.get('/api/settings', {
    config: canView,
    schema: {
      tags, summary: 'Every settings group with its settings',
      description:
        'Encrypted settings never show their value (`value: null`): `is_set` says whether one is stored and ' +
        '`readable` whether the current ENCRYPTION_SECRET can decrypt it.',
      response: { 200: GroupsEnvelope },
    },
  }, async () => ({ success: true as const, data: { groups: await groups() } }))

  // A static segment wins over a parameter in find-my-way, so `groups/…` never reaches `/:key`.
  app.get('/api/settings/groups/:groupId', {
    config: canView,
    schema: { tags, summary: 'One settings group', description: '404 for an unknown group.', params: GroupParams, response: { 200: GroupEnvelope } },
  }, async (request) => {
    const group = (await groups()).find((each) => each.id === request.params.groupId)
    if (group === undefined) throw errors.notFound(`Settings group ${request.params.groupId}`)
    return { success: true as const, data: { group } }
  })

  app.get('/api/settings/:key', {
    config: canView,
    schema: {
      tags, summary: 'One setting',
      description: '404 NOT_FOUND for an unknown key, naming it ("Setting foo.bar not found.").',
      params: KeyParams, response: { 200: SettingEnvelope },
    },
  }, async (request) => {
    const setting = (await app.services.settings.list()).find((each) => each.key === request.params.key)
    if (setting === undefined) throw errors.notFound(`Setting ${request.params.key}`)
    return { success: true as const, data: { setting: settingView(setting) } }
  })

  app.put('/api/settings/:key', {
    config: canEdit,
    schema: {
      tags, summary: 'Change one setting',
      description:
        "`value` must be of the setting's type (a boolean setting refuses `\"true\"` and `\"maybe\"`; numbers are " +
        'integers within the bounds; some settings have a rule of their own, e.g. `global.page_url` is empty or an absolute http(s) URL ' +
        'without credentials, query, fragment, whitespace or control characters) → else 400 VALIDATION_ERROR. 404 NOT_FOUND for an unknown key, naming it: ' +
        'settings are defined in code and cannot be created. Setting a secret that was `readable: false` seals it ' +
        'with the current ENCRYPTION_SECRET, so it is readable again. Audit-logged (`settings.updated`, keys only). ' +
        'Other instances see the change as soon as the database notifies them (PostgreSQL: milliseconds), and within 5 s whatever happens (SQLite, or an instance whose notification connection is down).',
      params: KeyParams, body: ValueBody, response: { 200: SettingEnvelope },
    },
  }, async (request) => {
    const { key } = request.params
    if (app.services.settings.definition(key) === undefined) throw errors.notFound(`Setting ${key}`)
    const [setting] = await app.services.settings.update([{ key, value: request.body.value }], recordUpdate(app.services.audit, [key], actorOf(request.caller), request.ip))
    return { success: true as const, message: 'Setting updated.', data: { setting: settingView(setting!) } }
  })

  app.put('/api/settings', {
    config: canEdit,
    schema: {
      tags, summary: 'Change several settings at once, all or nothing',
      description:
        'Every change is validated first; one invalid value, an unknown key (400 VALIDATION_ERROR, the key in ' +
        '`details[].field`) or a key given twice changes nothing. Valid changes land in one transaction. ' +
        'Audit-logged as one `settings.updated` event listing the keys.',
      body: BulkBody, response: { 200: SettingsEnvelope },
    },
  }, async (request) => {
    const keys = request.body.settings.map((setting) => setting.key)
    const settings = await app.services.settings.update(request.body.settings, recordUpdate(app.services.audit, keys, actorOf(request.caller), request.ip))
    return { success: true as const, message: 'Settings updated.', data: { settings: settings.map(settingView) } }
  })
}
