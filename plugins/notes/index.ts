/**
 * The example plugin: one collection and one route of its own. Copy this folder to start a
 * plugin (the README's "Write your first plugin" walks through it).
 */
import { definePlugin, Type } from '../../src/plugin-host/index.js'

/** One note. Objects are closed (`additionalProperties: false`): unknown fields are refused. */
const Note = Type.Object({
  title: Type.String({ minLength: 1, maxLength: 200 }),
  body: Type.Optional(Type.String({ maxLength: 10_000 })),
  pinned: Type.Optional(Type.Boolean()),
}, { additionalProperties: false })

const Summary = Type.Object({
  success: Type.Literal(true),
  data: Type.Object({
    greeting: Type.String(),
    total: Type.Integer({ description: 'How many notes there are.' }),
  }),
})

export default definePlugin({
  id: 'notes',
  name: 'Notes',
  version: '1.0.0',
  description: 'Shared notes for signed-in users: a collection and a summary route.',
  settings: {
    greeting: { type: 'string', default: 'Welcome to the notes.', description: 'Shown by GET /api/plugin/notes/summary.' },
  },
  // Served at /api/plugin/notes/notes: list, get, create, replace, delete.
  collections: {
    notes: { schema: Note, description: 'Notes every signed-in user can read and write.' },
  },
  register(scope, { collections, settings, policy }) {
    scope.get('/summary', {
      // Any core policy; without `auth` a route needs a session anyway.
      config: { auth: policy.session() },
      schema: { summary: 'The greeting and the number of notes', response: { 200: Summary } },
    }, async () => {
      const { total } = await collections.notes.list({ limit: 1 })
      return { success: true as const, data: { greeting: await settings.get('greeting'), total } }
    })
  },
})
