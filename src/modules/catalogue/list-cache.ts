import { LRUCache } from 'lru-cache'
import type { ServerRow } from '../../db/repositories/server-filters.js'
import type { Page } from '../../db/repositories/servers.js'

/** At most this many cached servers over all pages (about 2 KB each). */
const MAX_ROWS = 5000

/**
 * Pages of the server list and of search results, reused while the catalogue and what the
 * viewer can see have not changed. The key holds the list stamp (the catalogue's revision, which
 * database triggers move in the transaction of every catalogue write, on any instance; and the
 * teams through which the viewer sees team servers) and the query. The stamp is read before the
 * page, so a page stored under a stamp is never older than it: a write that lands in between only
 * makes the entry fresher than its key, never stale.
 *
 * A cached page is the same object on every hit, so the routes can keep its serialized answer
 * beside it (see `servers-routes.ts`).
 */
export class ListCache {
  private readonly pages = new LRUCache<string, Page<ServerRow>>({ maxSize: MAX_ROWS, sizeCalculation: (page) => page.rows.length + 1 })

  async page(stamp: string, query: object, load: () => Promise<Page<ServerRow>>): Promise<Page<ServerRow>> {
    const key = `${stamp}\n${JSON.stringify(query)}`
    const cached = this.pages.get(key)
    if (cached !== undefined) return cached
    const page = await load()
    this.pages.set(key, page)
    return page
  }
}
