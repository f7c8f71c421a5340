import { slugCandidates, slugify } from '../../lib/slug.js'

/** Slugs are at most this long; a derived one leaves room for a `-NNNNN` suffix. */
export const SLUG_LENGTH = 100

/** Path segments of the catalogue's own routes: a server with such a slug could not be read by it. */
const RESERVED = new Set(['search', 'global', 'import'])
/** Ids are UUIDs, which the slug pattern admits: a slug shaped like one could shadow another server's id. */
const ID_SHAPED = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/

export const unusableSlug = (slug: string): boolean => RESERVED.has(slug) || ID_SHAPED.test(slug)

/** The slug a name gives before a `-2`, `-3`… suffix makes it unique. */
export const derivedSlugBase = (name: string): string => slugify(name, SLUG_LENGTH - 6, 'server')

/** How many of `name`, `name-2`, … are tried before giving up on deriving a slug. */
const MAX_SLUG_ATTEMPTS = 1000

/**
 * Inserts a server under the first free slug derived from `name` (`name`, `name-2`, …, reserved
 * ones skipped): `insert` answers null when the slug is taken (the unique index decides). Null
 * when no candidate was free.
 */
export async function insertWithDerivedSlug<T>(name: string, insert: (slug: string) => Promise<T | null>): Promise<T | null> {
  let attempts = 0
  for (const slug of slugCandidates(derivedSlugBase(name))) {
    if (unusableSlug(slug)) continue
    const created = await insert(slug)
    if (created !== null) return created
    if (++attempts >= MAX_SLUG_ATTEMPTS) break
  }
  return null
}
