import { Type, type Static } from 'typebox'

/**
 * How an MCP server is obtained and reached, after the official MCP Registry's `server.json`:
 * packages (a registry type, the package's identifier there, an optional version, runtime
 * arguments and the environment variables it reads) and remotes (a transport, a URL or URL
 * template, the HTTP headers to send and the variables of the template). Field names are
 * snake_case like the rest of this API, except inside a remote's `headers` and `variables`: those
 * are the registry format's inputs, spelled as there (`isRequired`, `isSecret`), so that a remote
 * read from a `server.json` document is written back unchanged. Each registry type has its own
 * identifier rule; `registry_type` selects the rule (an OpenAPI discriminator), so an error names
 * one rule only.
 */

/** http or https with a host; `javascript:`, `data:`, `file:` and the like are refused. */
export const HttpUrl = Type.String({
  maxLength: 2048,
  format: 'uri',
  pattern: '^[Hh][Tt][Tt][Pp][Ss]?://[^\\s/?#@]+',
  description: 'An http or https URL.',
})

/**
 * Where a remote server listens, by the MCP Registry's rule for remote and transport URLs: `http://`
 * or `https://`, a host, then anything but whitespace (and control characters). Not held to RFC
 * 3986's character set: `{name}` segments are URL templates (RFC 6570 level 1) whose values come
 * from the remote's `variables`, and published remotes carry placeholders such as
 * `?key=<YOUR_TOKEN>` for the user to replace. Relative URLs and other schemes (`javascript:`,
 * `file:`) stay refused.
 */
export const REMOTE_URL_PATTERN = '^[Hh][Tt][Tt][Pp][Ss]?://[^\\s\\x00-\\x1f\\x7f/?#][^\\s\\x00-\\x1f\\x7f]*$'

export const RemoteUrl = Type.String({
  maxLength: 2048,
  pattern: REMOTE_URL_PATTERN,
  description: 'An http or https URL without whitespace; `{name}` segments are filled in from `variables` ' +
    '(e.g. `https://{tenant}.example.com/mcp`), and placeholders like `<YOUR_TOKEN>` are kept as published.',
})

export const EnvironmentVariable = Type.Object({
  name: Type.String({ minLength: 1, maxLength: 128, pattern: '^[A-Za-z_][A-Za-z0-9_]*$' }),
  description: Type.Optional(Type.String({ maxLength: 1000, description: "Empty when omitted." })),
  required: Type.Optional(Type.Boolean({ description: 'False when omitted.' })),
  secret: Type.Optional(Type.Boolean({ description: 'False when omitted. A secret value is never shown once set.' })),
  default: Type.Optional(Type.String({ maxLength: 1000 })),
}, { additionalProperties: false })

const packageFields = {
  version: Type.Optional(Type.String({ minLength: 1, maxLength: 255, pattern: '^\\S+$' })),
  runtime_args: Type.Optional(Type.Array(Type.String({ maxLength: 1000 }), { maxItems: 50 })),
  environment_variables: Type.Optional(Type.Array(EnvironmentVariable, { maxItems: 100 })),
}

const packageOf = <T extends string>(registryType: T, identifier: { pattern: string; maxLength: number; description: string; format?: string }) =>
  Type.Object({
    registry_type: Type.Literal(registryType),
    identifier: Type.String({ minLength: 1, ...identifier }),
    ...packageFields,
  }, { additionalProperties: false })

const NpmPackage = packageOf('npm', {
  pattern: '^(?:@[a-z0-9][a-z0-9._~-]*/)?[a-z0-9][a-z0-9._~-]*$',
  maxLength: 214,
  description: 'An npm package name, e.g. `@modelcontextprotocol/server-filesystem`.',
})
const PypiPackage = packageOf('pypi', {
  pattern: '^[A-Za-z0-9](?:[A-Za-z0-9._-]*[A-Za-z0-9])?$',
  maxLength: 200,
  description: 'A PyPI project name, e.g. `mcp-server-git`.',
})
const imageReference = {
  pattern: '^(?:[a-z0-9](?:[a-z0-9.-]*[a-z0-9])?(?::[0-9]{1,5})?/)?[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*(?:/[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*)*(?::[A-Za-z0-9_][A-Za-z0-9_.-]{0,127})?(?:@sha256:[a-f0-9]{64})?$',
  maxLength: 255,
  description: 'An image reference, e.g. `ghcr.io/github/github-mcp-server:1.2.0`.',
}
const DockerPackage = packageOf('docker', imageReference)
const OciPackage = packageOf('oci', imageReference)
const NugetPackage = packageOf('nuget', {
  pattern: '^[A-Za-z0-9_]+(?:[.-][A-Za-z0-9_]+)*$',
  maxLength: 100,
  description: 'A NuGet package id, e.g. `Contoso.Mcp.Server`.',
})
/** An MCP bundle is downloaded from where its publisher put it: the identifier is that https URL. */
const McpbPackage = packageOf('mcpb', {
  pattern: '^[Hh][Tt][Tt][Pp][Ss]://[^\\s/?#@]+[^\\s]*$',
  maxLength: 2048,
  format: 'uri',
  description: 'The https URL of the bundle, e.g. `https://github.com/example/weather/releases/download/v1.0.0/weather.mcpb`.',
})

const packageVariants = [NpmPackage, PypiPackage, DockerPackage, OciPackage, NugetPackage, McpbPackage]

export const ServerPackage = Type.Unsafe<
  | Static<typeof NpmPackage> | Static<typeof PypiPackage> | Static<typeof DockerPackage>
  | Static<typeof OciPackage> | Static<typeof NugetPackage> | Static<typeof McpbPackage>
>({
  oneOf: packageVariants,
  discriminator: { propertyName: 'registry_type' },
  description: 'A package of the server in a package registry; `registry_type` decides the identifier rule. ' +
    'What it may make a satellite run is limited further (its version, runner options and variable names): see the route\'s description.',
})
export type ServerPackage = Static<typeof ServerPackage>

const inputText = (maxLength: number, description?: string) => Type.Optional(Type.String({ maxLength, ...(description === undefined ? {} : { description }) }))

/** What a user is asked for or what is filled in for them: the registry format's `Input`. */
const inputFields = {
  description: inputText(1000),
  isRequired: Type.Optional(Type.Boolean({ description: 'False when omitted.' })),
  isSecret: Type.Optional(Type.Boolean({ description: 'False when omitted. A secret is never shown once set.' })),
  format: Type.Optional(Type.Union([Type.Literal('string'), Type.Literal('number'), Type.Literal('boolean'), Type.Literal('filepath')], { description: '`string` when omitted.' })),
  value: inputText(2048, 'A fixed value; `{name}` segments are filled in from `variables`.'),
  default: inputText(2048),
  placeholder: inputText(1000),
  choices: Type.Optional(Type.Array(Type.String({ maxLength: 1000 }), { maxItems: 100 })),
}

export const RemoteVariable = Type.Object(inputFields, { additionalProperties: false })

/** Variables by name, as in `{name}`: 1–128 characters, no whitespace, no braces; any other key is refused. */
const remoteVariables = (description: string) => Type.Optional(Type.Unsafe<Record<string, Static<typeof RemoteVariable>>>({
  type: 'object',
  patternProperties: { '^[^\\s{}]{1,128}$': RemoteVariable },
  additionalProperties: false,
  maxProperties: 50,
  description,
}))

/** An HTTP header a client sends to the remote (RFC 9110 field name); its `value` may hold `{name}` segments of its own `variables`. */
export const RemoteHeader = Type.Object({
  name: Type.String({ minLength: 1, maxLength: 256, pattern: "^[!#$%&'*+.^_`|~0-9A-Za-z-]+$", description: 'The header\'s name (an RFC 9110 token).' }),
  ...inputFields,
  variables: remoteVariables('Values for the `{name}` segments of `value`.'),
}, { additionalProperties: false })

export const ServerRemote = Type.Object({
  type: Type.Union([Type.Literal('streamable-http'), Type.Literal('sse')]),
  url: RemoteUrl,
  headers: Type.Optional(Type.Array(RemoteHeader, { maxItems: 50, description: 'HTTP headers a client sends, as the registry format\'s key-value inputs.' })),
  variables: remoteVariables('Values for the `{name}` segments of `url`, by name, as the registry format\'s inputs.'),
  auth: Type.Optional(Type.Literal('oauth', {
    description: 'The remote server asks for OAuth sign-in (MCP authorization): installations get an input of kind `oauth` without probing the server first.',
  })),
}, { additionalProperties: false })
export type ServerRemote = Static<typeof ServerRemote>

export const Packages = Type.Array(ServerPackage, { maxItems: 20 })
export const Remotes = Type.Array(ServerRemote, { maxItems: 20 })

/** Packages as stored and answered: every environment variable with its flags spelled out. */
export function normalizePackages(packages: ServerPackage[]): ServerPackage[] {
  return packages.map((item) => ({
    ...item,
    ...(item.environment_variables === undefined ? {} : {
      environment_variables: item.environment_variables.map((variable) => ({
        ...variable,
        description: variable.description ?? '',
        required: variable.required ?? false,
        secret: variable.secret ?? false,
      })),
    }),
  }))
}
