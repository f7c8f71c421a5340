/**
 * The words of a search query: runs of letters and digits, lowercased (NFKC first, so that
 * full-width and compatibility forms match their plain spelling). Everything else — quotes,
 * `*`, `:`, `^`, parentheses, `-`, operators such as NEAR, AND or OR — separates words and is
 * never passed on as search syntax, so no query text can make the database's parser fail.
 * At most 16 words are used.
 */
export function searchTerms(query: string): string[] {
  const words = query.normalize('NFKC').toLowerCase().match(/[\p{L}\p{N}]+/gu) ?? []
  return [...new Set(words)].slice(0, 16)
}
