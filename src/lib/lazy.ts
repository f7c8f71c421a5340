/**
 * A value made on first use, then kept: for work that start-up need not pay for, such as compiling
 * a validator that no request has needed yet.
 */
export function lazy<T>(make: () => T): () => T {
  let made: { value: T } | null = null
  return () => (made ??= { value: make() }).value
}
