/**
 * The example plugin: one collection of private notes and one route of its own. Copy this folder
 * to start a plugin (docs/plugins.md, "Write your first plugin", walks through it).
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
    total: Type.Integer({ description: 'How many notes the caller has.' }),
  }),
})

export default definePlugin({
  id: 'notes',
  name: 'Notes',
  version: '2.0.0',
  description: 'Private notes for signed-in users: a collection and a summary route.',
  settings: {
    greeting: { type: 'string', default: 'Welcome to the notes.', description: 'Shown by GET /api/plugin/notes/summary.' },
  },
  // Served at /api/plugin/notes/notes: list, get, create, replace, delete.
  collections: {
    notes: {
      schema: Note,
      description: 'Your notes: each signed-in user sees and changes only their own.',
      // A note belongs to whoever created it. The host lists only the caller's notes and answers
      // 404 for anyone else's, the same answer as for an id that does not exist, so a guessed id
      // does not even confirm that a note is there.
      owned: true,
      // Moderation with the core's own permission model: admins (whose global role grants
      // users.edit) list every note and may delete any; the host audits each such delete.
      moderator: 'users.edit',
    },
  },
  register(scope, { collections, settings, policy, caller }) {
    scope.get('/summary', {
      // Any core policy; without `auth` a route needs a session anyway.
      config: { auth: policy.session() },
      schema: { summary: 'The greeting and how many notes you have', response: { 200: Summary } },
    }, async (request) => {
      // The plugin's own code reaches every note, so it narrows to the caller's itself.
      const { total } = await collections.notes.list({ limit: 1, ownerId: caller(request).userId })
      return { success: true as const, data: { greeting: await settings.get('greeting'), total } }
    })
  },
})
