import type { ServerVersionsRepository } from '../../db/repositories/server-versions.js'
import type { CatalogueActor } from '../catalogue/actor.js'
import type { ServerService } from '../catalogue/servers.js'
import { type ServerJson } from './server-json.js'
import { exportDocument, namespaceOf } from './server-json-export.js'

/**
 * A catalogue server as one MCP Registry `server.json` document: the document of its latest
 * version, else of its newest version, else of the server alone. Names of servers created here
 * are `<namespace>/<slug>`, the namespace being PUBLIC_URL's host reversed.
 */
export class ServerJsonExporter {
  private namespace: string | undefined

  constructor(private readonly deps: { serverService: ServerService; versions: ServerVersionsRepository; publicUrl: string }) {}

  /** 404 like reading the server: unknown, or not visible to the caller. */
  async document(idOrSlug: string, actor: CatalogueActor): Promise<ServerJson> {
    const server = await this.deps.serverService.get(idOrSlug, actor)
    const version = await this.deps.versions.latestOrNewest(server.id)
    this.namespace ??= namespaceOf(this.deps.publicUrl)
    return exportDocument(server, version ?? null, this.namespace)
  }
}
