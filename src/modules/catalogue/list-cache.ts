import { KeptAnswers, keptAnswers } from '../../db/feed/kept-answers.js'
import type { CatalogueViewer, ServerRow } from '../../db/repositories/server-filters.js'
import type { Page } from '../../db/repositories/servers.js'
import { families, topics } from '../../db/feed/topics.js'
import type { Database } from '../../db/types.js'

/** At most this many pages kept (20 servers of about 2 KB each by default, 100 at most). */
const MAX_PAGES = 250
const MAX_AGE_MS = 60_000

interface Kept {
  page: Page<ServerRow>
  topics: string[]
}

/**
 * Pages of the server list and of search results, answered again while neither the catalogue nor
 * what the viewer can see of it changed: kept answers (db/feed/kept-answers.ts) ended by `catalogue`,
 * which the database sends for every catalogue write, and, for a viewer who sees team servers
 * through their teams, by `member:<id>` when those teams change. A global admin sees every server,
 * so their pages are shared.
 *
 * A kept page is the same object on every hit, so the routes can keep its serialized answer
 * beside it (see `servers-routes.ts`).
 */
export class ListCache {
  private readonly kept: KeptAnswers<Kept>

  constructor(database: Database) {
    this.kept = keptAnswers(database, 'catalogue-pages', () => new KeptAnswers<Kept>('catalogue-pages', database.changes, {
      families: [topics.catalogue, families.member], topicsOf: (answer) => answer.topics, max: MAX_PAGES, maxAgeMs: MAX_AGE_MS,
    }))
  }

  async page(viewer: CatalogueViewer, query: object, load: () => Promise<Page<ServerRow>>): Promise<Page<ServerRow>> {
    const key = `${viewer.isGlobalAdmin ? 'admin' : viewer.userId}\n${JSON.stringify(query)}`
    const answer = await this.kept.read(key, async () => ({
      page: await load(),
      topics: viewer.isGlobalAdmin ? [topics.catalogue] : [topics.catalogue, topics.member(viewer.userId)],
    }))
    return answer!.page
  }
}
