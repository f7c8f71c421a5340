import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { Type } from 'typebox'
import { policy } from '../../auth/policies.js'
import { Nullable, Ok } from '../../http/envelope.js'
import { requestActor } from '../../http/current-user.js'
import { SYNC_MAX_PAGES, SYNC_PAGE_SIZE, UPSTREAM_URL_SETTING } from './sync.js'

const tags = ['MCP Catalogue']

const Count = Type.Integer({ minimum: 0 })
const SyncResult = Ok(Type.Object({
  counts: Type.Object({ created: Count, updated: Count, unchanged: Count, invalid: Count }, { description: 'Items imported, summed over every page.' }),
  pages: Type.Integer({ minimum: 0, description: 'Pages read from the upstream.' }),
  next_since: Nullable(Type.String({ description: 'The newest `updatedAt` the upstream has shown, as it wrote it; the next run sends it as `updated_since`. Null until an item carried one.' })),
}), 'The run reached the end of the upstream list.')

/** The sync from the upstream MCP registry, asked for by hand. */
export const registrySyncRoutes: FastifyPluginAsyncTypebox = async (app) => {
  app.post('/api/mcp/registry/sync', {
    config: { auth: policy.session({ permission: 'mcp.servers.manage' }) },
    schema: {
      tags,
      summary: 'Sync the catalogue from the upstream MCP registry now',
      description: [
        `Reads \`<${UPSTREAM_URL_SETTING}>/v0.1/servers\` (or \`/v0/servers\` when the upstream answers 404 there) page by page,`,
        `${SYNC_PAGE_SIZE} items a page, following \`metadata.nextCursor\` for at most ${SYNC_MAX_PAGES} pages, and imports every item`,
        'like POST /api/mcp/servers/import (upsert by registry name; the item\'s `_meta` gives the status).',
        'After the first run, only what changed upstream is asked for (`updated_since` = the newest `updatedAt` seen).',
        'Each request to the upstream must finish within 10 s and stay within 8 MiB. No body.',
        'Errors: 409 `SYNC_NOT_CONFIGURED` while the setting is empty;',
        '400 `UPSTREAM_URL_REFUSED` when the URL breaks the outbound rules (https only, except hosts in OUTBOUND_ALLOWED_HOSTS, which may',
        'use http; hosts resolving to loopback, private or link-local addresses refused unless listed there), naming the reason;',
        '409 `SYNC_IN_PROGRESS` while another run (on any instance) is going on;',
        '502 `UPSTREAM_REGISTRY_FAILED` naming the URL and the reason when the upstream times out, answers another status than 200,',
        'or answers something that is not a server list. What a failed run imported stays; the next run starts from where the last',
        'successful one ended. Audit-logged (`catalogue.registry_synced`).',
      ].join(' '),
      response: { 200: SyncResult },
    },
  }, async (request) => {
    const { userId, ip } = requestActor(request)
    const outcome = await app.services.registrySync.run({ userId, ip })
    const { created, updated, unchanged, invalid } = outcome.counts
    const pages = `${outcome.pages} page${outcome.pages === 1 ? '' : 's'}`
    return {
      success: true as const,
      message: `Synced from the upstream registry (${pages}): ${created} created, ${updated} updated, ${unchanged} unchanged, ${invalid} invalid.`,
      data: outcome,
    }
  })
}
