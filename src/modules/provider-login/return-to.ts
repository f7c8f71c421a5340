/**
 * Any C0 control, space, DEL or other whitespace. Browsers drop TAB, CR and LF from a URL before
 * parsing it (WHATWG URL, "remove all ASCII tab or newline"), so `/<TAB>/evil.example` is
 * `//evil.example` to them, and the rest cannot go into a Location header at all (RFC 9110 §5.5).
 */
const UNSAFE = /[\u0000-\u0020\u007f]|\s/u

export interface Origins {
  /** This service's PUBLIC_URL. */
  publicUrl: string
  /** `global.page_url`, '' when unset. */
  pageUrl: string
}

/**
 * Where a sign-in may send the browser afterwards (OWASP: unvalidated redirects): a path on this
 * service, answered as a path, or a URL on `global.page_url`'s origin; null for anything else. The
 * value is resolved with the WHATWG URL parser, as a browser will, and the origins compared; the
 * answer is the parser's own serialization, so it never holds a character a header cannot carry.
 */
export function safeReturnTo(value: string, { publicUrl, pageUrl }: Origins): string | null {
  if (value === '' || UNSAFE.test(value)) return null
  const own = new URL(publicUrl)
  const target = parse(value, own)
  if (target === null || (target.protocol !== 'https:' && target.protocol !== 'http:')) return null
  if (value.startsWith('/') && target.origin === own.origin) {
    const path = `${target.pathname}${target.search}${target.hash}`
    // `/.//evil.example` normalizes to a path a browser reads as another host.
    return path.startsWith('//') ? null : path
  }
  const page = pageUrl === '' ? null : parse(pageUrl)
  return page !== null && /^https?:$/.test(page.protocol) && target.origin === page.origin ? target.href : null
}

/** `URL.parse` of Node 22, on Node 20. */
function parse(value: string, base?: URL): URL | null {
  try {
    return new URL(value, base)
  } catch {
    return null
  }
}
