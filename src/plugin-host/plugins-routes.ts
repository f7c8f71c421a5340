import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { Type } from 'typebox'
import { policy } from '../auth/policies.js'
import { Nullable, Ok } from '../http/envelope.js'
import type { PluginHost } from './host.js'

const PluginView = Type.Object({
  id: Type.String({ description: 'The plugin id, which is also its folder name and its URL segment: /api/plugin/{id}.' }),
  name: Type.String({ description: 'From the manifest; the folder name when no manifest could be read.' }),
  version: Nullable(Type.String({ description: 'Semantic version from the manifest; null when none could be read (disabled plugins are not imported).' })),
  description: Nullable(Type.String()),
  status: Type.Union([Type.Literal('loaded'), Type.Literal('failed'), Type.Literal('disabled')]),
  error: Type.Optional(Type.String({ description: 'Why a failed plugin was skipped.' })),
  route_count: Type.Integer({ description: 'Routes the plugin serves (collection routes included; 0 unless loaded).' }),
  collections: Type.Array(Type.String(), { description: 'Names of its collections, each served at /api/plugin/{id}/{name}.' }),
})

export const pluginsRoutes: FastifyPluginAsyncTypebox<{ plugins: PluginHost }> = async (app, { plugins }) => {
  app.get('/api/admin/plugins', {
    config: { auth: policy.session({ permission: 'plugins.view' }) },
    schema: {
      tags: ['Admin'], summary: 'The extension plugins found at start, loaded or not',
      description:
        'One entry per folder of PLUGINS_DIR: `loaded`, `disabled` (named in PLUGINS_DISABLED; its code is not run) or `failed` ' +
        '(with `error`: it could not be imported, its manifest is invalid, its `register` threw or broke a rule such as a route ' +
        'outside /api/plugin/{id}). A failed plugin is skipped; any route it had added answers 404.',
      response: { 200: Ok(Type.Object({ plugins: Type.Array(PluginView) })) },
    },
  }, async () => ({ success: true as const, data: { plugins: plugins.list() } }))
}
