/** Lowercase `[a-z0-9-]`, from a name; never empty. */
export function slugify(name: string, maxLength = 60): string {
  const slug = name
    .normalize('NFKD')
    .replace(/[\u0300-\u036f]/g, '')
    .toLowerCase()
    .replace(/[^a-z0-9]+/g, '-')
    .replace(/^-+|-+$/g, '')
    .slice(0, maxLength)
    .replace(/-+$/g, '')
  return slug === '' ? 'team' : slug
}

/** `base`, then `base-2`, `base-3`, … */
export function* slugCandidates(base: string): Generator<string> {
  yield base
  for (let n = 2; ; n++) yield `${base}-${n}`
}
