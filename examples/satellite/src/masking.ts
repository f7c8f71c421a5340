/**
 * What the satellite never lets out of an instance's log lines and status messages: its secret
 * values, and the forms a program prints them in without meaning to — base64 and base64url (a
 * Basic credential, a token inside a blob), percent-encoded (a value in a URL it logs),
 * JSON-escaped (a value in a JSON line it prints).
 */

export const MASK = '[secret]'
/** An encoded form shorter than this would blot out ordinary text; the values themselves are masked at any length. */
const SHORTEST_FORM = 4

/** Each non-empty value and each of its encoded forms that differs from it, longest first. */
export function maskedForms(values: Iterable<string>): string[] {
  const forms = new Set<string>()
  for (const value of values) {
    if (value === '') continue
    forms.add(value)
    const bytes = Buffer.from(value, 'utf8')
    for (const form of [bytes.toString('base64'), bytes.toString('base64url'), encodeURIComponent(value), JSON.stringify(value).slice(1, -1)]) {
      if (form !== value && form.length >= SHORTEST_FORM) forms.add(form)
    }
  }
  // Longest first: a form that contains another (a value inside its own longer form) goes whole.
  return [...forms].sort((a, b) => b.length - a.length)
}

/** `text` with every occurrence of each form replaced; `forms` from maskedForms. */
export function mask(text: string, forms: readonly string[]): string {
  let masked = text
  for (const form of forms) masked = masked.split(form).join(MASK)
  return masked
}
