import { Ajv, type ErrorObject } from 'ajv'
import addFormats from 'ajv-formats'
import { Type, type TSchema } from 'typebox'
import { lazy } from '../../lib/lazy.js'
import { REMOTE_URL_PATTERN } from '../../formats/catalogue-entries.js'

/**
 * The rules of the MCP Registry's `server.json` format, revision 2025-12-11, written as this
 * service's own schema. It accepts what the registry's published schema accepts (unknown members
 * included: the format lets publishers add them), and is stricter in three places the registry's
 * own prose asks for but its schema leaves out: icon and remote URLs must be https/http, and
 * arguments and transports are told apart by their `type` (a discriminator), so that a wrong
 * argument gets one message about itself instead of one per kind it failed to be. Remote and
 * transport URLs follow the rule the registry itself applies (http(s), no whitespace) rather than
 * the published schema's `uri-template` format, which refuses the placeholders real entries hold.
 *
 * `x-message` on a schema is the plain-words message for a failure of that schema (the pattern a
 * name must follow, the value a version must not be); Ajv ignores the keyword.
 */

const text = (options: Record<string, unknown> = {}) => Type.String(options)
const flag = () => Type.Boolean()
const list = (items: TSchema) => Type.Array(items)
const map = (values: TSchema) => Type.Unsafe<Record<string, unknown>>({ type: 'object', additionalProperties: values })

const inputFields = {
  choices: Type.Optional(list(text())),
  default: Type.Optional(text()),
  description: Type.Optional(text()),
  format: Type.Optional(Type.Unsafe<string>({ type: 'string', enum: ['string', 'number', 'boolean', 'filepath'] })),
  isRequired: Type.Optional(flag()),
  isSecret: Type.Optional(flag()),
  placeholder: Type.Optional(text()),
  value: Type.Optional(text()),
}

/** A value a client asks its user for or fills in: an environment variable, a header, a URL variable. */
const Input = Type.Object(inputFields)
const variables = Type.Optional(map(Input))
const KeyValueInput = Type.Object({ ...inputFields, variables, name: text() })

const NamedArgument = Type.Object({
  ...inputFields,
  variables,
  type: Type.Literal('named'),
  name: text(),
  isRepeated: Type.Optional(flag()),
})

/** A positional argument is its value, or a value the user gives (named by `valueHint`): one of the two is needed. */
const PositionalArgument = Type.Object({
  ...inputFields,
  variables,
  type: Type.Literal('positional'),
  valueHint: Type.Optional(text()),
  isRepeated: Type.Optional(flag()),
}, {
  if: { not: { required: ['value'] } },
  then: { required: ['valueHint'], 'x-message': 'is required when the positional argument has no value' },
})

const byType = (variants: TSchema[], description: string) =>
  Type.Unsafe({ type: 'object', oneOf: variants, discriminator: { propertyName: 'type' }, description })

const Argument = byType([NamedArgument, PositionalArgument], 'A command-line argument: named (`--flag` and a value) or positional.')

/**
 * A remote's or a package transport's URL, by the registry's own rule: http or https and no
 * whitespace (nor control characters), `{name}` template segments allowed, no RFC 3986 character
 * check — published documents carry placeholders like `?key=<YOUR_TOKEN>`. The catalogue's rule.
 */
const httpUrlTemplate = text({
  pattern: REMOTE_URL_PATTERN,
  'x-message': 'must be an http or https URL without spaces (variables in {braces} allowed)',
  description: 'An http or https URL without whitespace. `{name}` segments are filled in from the remote\'s `variables` ' +
    '(in a package transport: from the package\'s arguments and environment variables); placeholders such as `<YOUR_TOKEN>` are kept as published.',
})

const headers = Type.Optional(list(KeyValueInput))
const StdioTransport = Type.Object({ type: Type.Literal('stdio') })
const StreamableHttpTransport = Type.Object({ type: Type.Literal('streamable-http'), url: httpUrlTemplate, headers })
const SseTransport = Type.Object({ type: Type.Literal('sse'), url: httpUrlTemplate, headers })

const LocalTransport = byType([StdioTransport, StreamableHttpTransport, SseTransport], 'How a client talks to the running package.')
const RemoteTransport = byType([
  Type.Object({ ...StreamableHttpTransport.properties, variables }),
  Type.Object({ ...SseTransport.properties, variables }),
], 'A server reached over the network.')

const Package = Type.Object({
  registryType: text({ minLength: 1 }),
  registryBaseUrl: Type.Optional(text({ format: 'uri' })),
  identifier: text({ minLength: 1 }),
  version: Type.Optional(Type.Unsafe<string>({
    type: 'string',
    minLength: 1,
    not: { const: 'latest', 'x-message': 'must be a specific version, not "latest"' },
  })),
  fileSha256: Type.Optional(text({ pattern: '^[a-f0-9]{64}$', 'x-message': 'must be a SHA-256 hash: 64 lowercase hexadecimal digits' })),
  runtimeHint: Type.Optional(text()),
  transport: LocalTransport,
  runtimeArguments: Type.Optional(list(Argument)),
  packageArguments: Type.Optional(list(Argument)),
  environmentVariables: Type.Optional(list(KeyValueInput)),
})

const Repository = Type.Object({
  url: text({ format: 'uri' }),
  source: text(),
  id: Type.Optional(text()),
  subfolder: Type.Optional(text()),
})

const Icon = Type.Object({
  src: text({ format: 'uri', maxLength: 255, pattern: '^[Hh][Tt][Tt][Pp][Ss]://', 'x-message': 'must be an https URL' }),
  mimeType: Type.Optional(Type.Unsafe<string>({ type: 'string', enum: ['image/png', 'image/jpeg', 'image/jpg', 'image/svg+xml', 'image/webp'] })),
  sizes: Type.Optional(list(text({ pattern: '^(\\d+x\\d+|any)$', 'x-message': 'must be a size like 48x48, or any' }))),
  theme: Type.Optional(Type.Unsafe<string>({ type: 'string', enum: ['light', 'dark'] })),
})

/** The name pattern: a reverse-DNS namespace, one slash, the server's own name. */
export const SERVER_NAME_PATTERN = '^[a-zA-Z0-9.-]+/[a-zA-Z0-9._-]+$'

export const ServerDetail = Type.Object({
  $schema: Type.Optional(text({ format: 'uri' })),
  name: text({
    minLength: 3,
    maxLength: 200,
    pattern: SERVER_NAME_PATTERN,
    'x-message': 'must be a namespace and a name separated by one slash, like io.github.user/weather (letters, digits, dots and dashes; underscores after the slash)',
  }),
  title: Type.Optional(text({ minLength: 1, maxLength: 100 })),
  description: text({ minLength: 1, maxLength: 100 }),
  version: text({ maxLength: 255 }),
  websiteUrl: Type.Optional(text({ format: 'uri' })),
  repository: Type.Optional(Repository),
  icons: Type.Optional(list(Icon)),
  packages: Type.Optional(list(Package)),
  remotes: Type.Optional(list(RemoteTransport)),
  _meta: Type.Optional(Type.Object({
    'io.modelcontextprotocol.registry/publisher-provided': Type.Optional(Type.Object({})),
  })),
})

export interface DocumentProblem {
  /** Where in the document, as a JSON path from its root (`packages[0].transport.url`); `(document)` for the whole. */
  field: string
  message: string
}

// Compiled on the first import, not at start-up (a quarter of a second of it).
const ajv = lazy(() => addFormats.default(new Ajv({ allErrors: true, strict: false, discriminator: true, verbose: true })))
const validateDetail = lazy(() => ajv().compile(ServerDetail))

/** The problems of a document under the 2025-12-11 rules; empty when it follows them. */
export function detailProblems(document: unknown): DocumentProblem[] {
  const validate = validateDetail()
  return validate(document) ? [] : problemsOf(validate.errors ?? [])
}

/** A validator for another schema, with the same options and the same plain-words problems (compiled on first use). */
export function checker(schema: TSchema): (value: unknown, field: (path: string[]) => string) => DocumentProblem[] {
  const compiled = lazy(() => ajv().compile(schema))
  return (value, field) => {
    const validate = compiled()
    return validate(value) ? [] : problemsOf(validate.errors ?? [], field)
  }
}

/** `packages[0].transport.url` from path segments. */
export function fieldOf(path: Array<string | number>): string {
  if (path.length === 0) return '(document)'
  return path.reduce<string>((out, part) => {
    if (typeof part === 'number' || /^\d+$/.test(part)) return `${out}[${part}]`
    const word = /^[A-Za-z_$][\w$]*$/.test(part) ? part : JSON.stringify(part)
    return out === '' ? word : /^[A-Za-z_$]/.test(word) ? `${out}.${word}` : `${out}[${word}]`
  }, '')
}

const pathOf = (instancePath: string): string[] =>
  instancePath.split('/').slice(1).map((part) => part.replace(/~1/g, '/').replace(/~0/g, '~'))

/** Keywords that only say "one of the branches failed": the branch's own errors say more. */
const SUMMARY_KEYWORDS = new Set(['oneOf', 'anyOf', 'allOf', 'if'])

/**
 * Ajv's errors as problems in plain words, one per field (the first rule it breaks: a value
 * neither a URL nor of the expected form needs one message, not two). The summaries of unions
 * and conditions are left out when a more precise error says the same thing.
 */
export function problemsOf(errors: ErrorObject[], field: (path: string[]) => string = fieldOf): DocumentProblem[] {
  const precise = errors.filter((error) => !SUMMARY_KEYWORDS.has(error.keyword))
  const chosen = precise.length > 0 ? precise : errors
  const seen = new Set<string>()
  const problems: DocumentProblem[] = []
  for (const error of chosen) {
    const path = pathOf(error.instancePath)
    const params = error.params as Record<string, unknown>
    if (error.keyword === 'required') path.push(String(params.missingProperty))
    if (error.keyword === 'discriminator') path.push(String(params.tag))
    const problem = { field: field(path), message: messageOf(error) }
    if (seen.has(problem.field)) continue
    seen.add(problem.field)
    problems.push(problem)
  }
  return problems
}

/** The keywords an `x-message` speaks for (not `maxLength` next to a pattern, say). */
const WRITTEN_FOR = new Set(['pattern', 'format', 'not', 'required'])

const TYPE_WORDS: Record<string, string> = {
  string: 'must be text',
  array: 'must be a list',
  object: 'must be an object',
  boolean: 'must be true or false',
  number: 'must be a number',
  integer: 'must be a whole number',
}

function messageOf(error: ErrorObject): string {
  const params = error.params as Record<string, unknown>
  const parent = error.parentSchema as Record<string, unknown> | undefined
  // The message written for a rule: on the negated schema for `not`, else next to the keyword.
  const written = error.keyword === 'not' ? (error.schema as Record<string, unknown> | undefined)?.['x-message'] : parent?.['x-message']
  if (typeof written === 'string' && WRITTEN_FOR.has(error.keyword)) return written
  switch (error.keyword) {
    case 'required':
      return 'is required'
    case 'type':
      return TYPE_WORDS[String(params.type)] ?? `must be of type ${String(params.type)}`
    case 'minLength':
      return params.limit === 1 ? 'must not be empty' : `must be at least ${String(params.limit)} characters long`
    case 'maxLength':
      return `must be at most ${String(params.limit)} characters long`
    case 'minItems':
      return `must have at least ${String(params.limit)} items`
    case 'maxItems':
      return `must have at most ${String(params.limit)} items`
    case 'format':
      return params.format === 'uri' ? 'must be a URL' : params.format === 'uri-template' ? 'must be a URL or URL template' : `must be a valid ${String(params.format)}`
    case 'enum':
      return `must be one of: ${(params.allowedValues as unknown[]).map(String).join(', ')}`
    case 'const':
      return `must be "${String(params.allowedValue)}"`
    case 'discriminator':
      return `must be one of: ${typesOf(parent).join(', ')}`
    case 'pattern':
      // The catalogue's own schemas describe what a value is (`An npm package name, e.g. …`).
      return typeof parent?.description === 'string' ? `does not have the expected form (${parent.description.replace(/\.$/, '')})` : 'does not have the expected form'
    case 'not':
      return 'is not allowed'
    default:
      return error.message ?? 'is invalid'
  }
}

/** The `type` values a discriminated union admits. */
function typesOf(schema: Record<string, unknown> | undefined): string[] {
  const variants = (schema?.oneOf ?? []) as Array<{ properties?: { type?: { const?: unknown } } }>
  return variants.map((variant) => String(variant.properties?.type?.const))
}
