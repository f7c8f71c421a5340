import { slugify } from '../../lib/slug.js'

/** Slugs are at most this long; a derived one leaves room for a `-NNNNN` suffix. */
export const SLUG_LENGTH = 100

/** Path segments of the catalogue's own routes: a server with such a slug could not be read by it. */
const RESERVED = new Set(['search', 'global', 'import'])
/** Ids are UUIDs, which the slug pattern admits: a slug shaped like one could shadow another server's id. */
const ID_SHAPED = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/

export const unusableSlug = (slug: string): boolean => RESERVED.has(slug) || ID_SHAPED.test(slug)

/** The slug a name gives before a `-2`, `-3`… suffix makes it unique. */
export const derivedSlugBase = (name: string): string => slugify(name, SLUG_LENGTH - 6, 'server')
