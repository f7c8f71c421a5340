import { Type } from 'typebox'
import { Ok } from '../../http/envelope.js'

const closed = { additionalProperties: false } as const

const SettingValue = Type.Union([Type.String(), Type.Number(), Type.Boolean()], {
  description: "Of the setting's type: a boolean setting refuses \"true\", a number setting refuses \"3\".",
})

export const Setting = Type.Object({
  key: Type.String(),
  name: Type.String(),
  description: Type.String(),
  type: Type.Union([Type.Literal('string'), Type.Literal('number'), Type.Literal('boolean')]),
  value: Type.Union([Type.String(), Type.Number(), Type.Boolean(), Type.Null()], {
    description: 'The typed value; always null for an encrypted setting (see is_set and readable).',
  }),
  encrypted: Type.Boolean(),
  is_set: Type.Boolean({
    description:
      'Whether the value is non-empty; with `readable`, the only thing said about an encrypted setting. ' +
      'True for a stored secret that cannot be decrypted.',
  }),
  readable: Type.Boolean({
    description:
      'Always true for a setting that is not encrypted. False when the stored secret was sealed under another ' +
      'ENCRYPTION_SECRET (changed or lost): the service then treats it as unset (mail or provider sign-in act as ' +
      'not configured) until it is set again or re-encrypted with `npm run secret:rotate`.',
  }),
  updated_at: Type.String({ format: 'date-time' }),
})

export const Group = Type.Object({
  id: Type.String(),
  name: Type.String(),
  description: Type.String(),
  settings: Type.Array(Setting),
})

export const KeyParams = Type.Object({ key: Type.String({ minLength: 1, maxLength: 200 }) })
export const GroupParams = Type.Object({ groupId: Type.String({ minLength: 1, maxLength: 100 }) })

export const ValueBody = Type.Object({ value: SettingValue }, closed)

export const BulkBody = Type.Object({
  settings: Type.Array(
    Type.Object({ key: Type.String({ minLength: 1, maxLength: 200 }), value: SettingValue }, closed),
    { minItems: 1, maxItems: 100 },
  ),
}, closed)

export const GroupsEnvelope = Ok(Type.Object({ groups: Type.Array(Group) }))
export const GroupEnvelope = Ok(Type.Object({ group: Group }))
export const SettingEnvelope = Ok(Type.Object({ setting: Setting }))
export const SettingsEnvelope = Ok(Type.Object({ settings: Type.Array(Setting) }))
