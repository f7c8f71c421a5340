/**
 * What a stored log line may not show: an instance's secret values, and the forms a program
 * prints them in without meaning to — base64 and base64url (a Basic credential, a token put in
 * a JWT-like blob), percent-encoded (a value in a URL it logs), JSON-escaped (a value in a JSON
 * line it prints).
 */

/** What replaces a secret value in a stored log line. */
export const MASK = '[secret]'
/** Values shorter than this are not masked: they would blot out ordinary words, and no real secret is that short. */
const SHORTEST_MASKED = 4

/** Each value and each of its encoded forms that differs from it, at least SHORTEST_MASKED long, longest first. */
export function maskedForms(values: readonly string[]): string[] {
  const forms = new Set<string>()
  for (const value of values) {
    if (value.length < SHORTEST_MASKED) continue
    forms.add(value)
    const bytes = Buffer.from(value, 'utf8')
    for (const form of [bytes.toString('base64'), bytes.toString('base64url'), encodeURIComponent(value), JSON.stringify(value).slice(1, -1)]) {
      if (form !== value && form.length >= SHORTEST_MASKED) forms.add(form)
    }
  }
  // A form containing another (a value and its longer base64) is masked whole.
  return [...forms].sort((a, b) => b.length - a.length)
}

/** Every occurrence of each form replaced; `forms` from maskedForms. */
export function mask(text: string, forms: readonly string[]): string {
  let masked = text
  for (const form of forms) masked = masked.split(form).join(MASK)
  return masked
}
