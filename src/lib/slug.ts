/** Lowercase `[a-z0-9-]`, from a name; `fallback` when nothing of the name is left. */
export function slugify(name: string, maxLength = 60, fallback = 'team'): string {
  const slug = name
    .normalize('NFKD')
    .replace(/[\u0300-\u036f]/g, '')
    .toLowerCase()
    .replace(/[^a-z0-9]+/g, '-')
    .replace(/^-+|-+$/g, '')
    .slice(0, maxLength)
    .replace(/-+$/g, '')
  return slug === '' ? fallback : slug
}

/** `base`, then `base-2`, `base-3`, … */
export function* slugCandidates(base: string): Generator<string> {
  yield base
  for (let n = 2; ; n++) yield `${base}-${n}`
}
