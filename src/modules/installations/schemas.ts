import { Type, type Static } from 'typebox'
import { Nullable, Ok, OkMessage, Pagination, PaginationQuery } from '../../http/envelope.js'

const closed = { additionalProperties: false } as const
const Timestamp = Type.String({ format: 'date-time' })
const Id = Type.String({ minLength: 1, maxLength: 100 })

export const Done = OkMessage

export const INSTALLATION_NAME_PATTERN = '^[a-z0-9][a-z0-9-]{0,62}$'
const InstallationName = Type.String({
  pattern: INSTALLATION_NAME_PATTERN,
  description: 'Lower-case letters, digits and dashes, 1–63 characters, starting with a letter or digit; unique within the team.',
})
/** An input key as inputs.ts builds it: `env:NAME`, `arg:--flag`, `header:Name`, `urlvar:name`, `header:Authorization{token}`. */
const InputKey = Type.String({ minLength: 5, maxLength: 300, pattern: '^(env|arg|header|urlvar):\\S' })
/** The longest value an input takes: a long certificate or a JSON blob, not a file. */
export const MAX_VALUE_LENGTH = 16_384
const ValueText = Type.String({ maxLength: MAX_VALUE_LENGTH })
const Desired = Type.Union([Type.Literal('running'), Type.Literal('stopped')], {
  description: '`running` (the default) or `stopped`: what the satellite is asked to do with the instances.',
})
const Network = Type.Union([Type.Literal('full'), Type.Literal('none')], {
  description: '`full` (the default): the instance reaches the network as the satellite allows. `none`: the satellite gives its process no network at all (a package that works offline, on its own files or over stdio). ' +
    'A remote target is reached over the network: `none` with one is 400 naming `network`. A change restarts the instances.',
})
const TargetChoice = Type.Object({
  kind: Type.Union([Type.Literal('package'), Type.Literal('remote')]),
  index: Type.Integer({ minimum: 0, maximum: 99, description: "The position in the version's `packages` or `remotes`, from 0." }),
}, { ...closed, description: 'Which package or remote of the version runs. Default: the first package, else the first remote.' })
const UserScoped = Type.Array(InputKey, {
  maxItems: 100, uniqueItems: true,
  description: 'The keys each member sets for themselves (a personal token, say); every other input is set once for the team.',
})
const Auth = Type.Literal('oauth', {
  description: 'The remote server asks for OAuth sign-in (MCP authorization): the installation gets an input of kind `oauth` without probing the server. ' +
    'Without it, an installation of a remote target probes the server once (an unauthenticated `initialize`, 3 s at most); a 401 with a Bearer challenge adds the input, anything else adds nothing.',
})
const TeamConnections = Type.Array(Type.String({ minLength: 7, maxLength: 2100, pattern: '^oauth:\\S' }), {
  maxItems: 20, uniqueItems: true,
  description: 'The oauth inputs connected once for the whole team by a team admin (scope `team`); every other oauth input is connected by each member for themselves.',
})
const Values = Type.Record(Type.String({ maxLength: 300 }), Type.Union([ValueText, Type.Null()]), {
  maxProperties: 200,
  description: 'Input key → value (text, whatever the format); `null` unsets. Every key is checked before anything is written.',
})

// Answers

export const InputView = Type.Object({
  key: Type.String({ description: 'Stable while the document is: `env:NAME`, `arg:--flag` or `arg:<valueHint>`, `header:Name`, `urlvar:name`; a template variable of an entry is `<entry key>{<variable>}`.' }),
  kind: Type.Union([Type.Literal('env'), Type.Literal('arg'), Type.Literal('header'), Type.Literal('urlvar'), Type.Literal('oauth')], { description: '`oauth`: a connection to the remote server (an account at its authorization server), made with the connect flow rather than set as a value.' }),
  description: Type.String(),
  required: Type.Boolean(),
  secret: Type.Boolean({ description: 'A secret value is write-only: it is never shown again, only `is_set`.' }),
  scope: Type.Union([Type.Literal('team'), Type.Literal('user')], { description: '`team`: one value set by the team admins; `user`: each member sets their own.' }),
  default: Type.Optional(Type.String()),
  choices: Type.Optional(Type.Array(Type.String())),
  format: Type.Optional(Type.Union([Type.Literal('string'), Type.Literal('number'), Type.Literal('boolean'), Type.Literal('filepath')])),
  is_set: Type.Boolean({ description: "For a team input, whether the team set it; for a user input, whether the caller set their own." }),
  value: Type.Optional(Type.String({ description: 'Only for a non-secret team input that is set (and a non-secret user input, to its owner, under my-values).' })),
  unset_reason: Type.Optional(Type.String({
    description: "Only on the caller's own input whose value was dropped: the installation moved to another satellite (or that satellite's key changed) since it was set, " +
      'so it is not used there until the caller sets it again.',
  })),
})

const InstallationStatus = Type.Union([
  Type.Literal('needs_config'), Type.Literal('pending'), Type.Literal('starting'), Type.Literal('running'), Type.Literal('degraded'),
  Type.Literal('failed'), Type.Literal('stopped'), Type.Literal('unknown'), Type.Literal('needs_auth'),
], {
  description: [
    'Derived when read, from the caller\'s point of view: `needs_config` while a required team input is unset (or, on a per-user installation, one of the caller\'s own);',
    '`needs_auth` (after `needs_config`) while an OAuth connection its instance needs is missing or expired — the team\'s, which a team admin connects, or the caller\'s own —',
    'with `status_reason` saying who must connect (POST …/connections); its satellite is then given no instance and no token for it;',
    '`pending` while no satellite is placed or it has not picked the installation up; `stopped` when asked to stop;',
    '`starting`, `running`, `degraded`, `failed` as the satellite reports the current spec; `unknown` while its satellite is offline;',
    '`failed` also when the backend could not resolve the instance (its target gone from the version, an entry rule broken, a value that does not decrypt):',
    'then it is left out of the satellite\'s document and `status_reason` begins "It could not be resolved".',
  ].join(' '),
})

export const InstallationView = Type.Object({
  id: Type.String(),
  team_id: Type.String(),
  server: Type.Object({ id: Type.String(), slug: Type.String(), name: Type.String() }),
  version: Type.String({ description: 'The version string installed.' }),
  track_latest: Type.Boolean({ description: "Follows the server's latest version automatically." }),
  name: Type.String(),
  target: Type.Object({
    kind: Type.Union([Type.Literal('package'), Type.Literal('remote')]),
    index: Type.Integer(),
    transport: Type.String({ description: '`stdio`, `streamable-http` or `sse`.' }),
  }),
  satellite_id: Nullable(Type.String({ description: 'The satellite that runs it; null while unplaced.' })),
  desired: Desired,
  network: Network,
  inputs: Type.Array(InputView),
  missing_inputs: Type.Array(Type.String(), { description: "Required inputs without a value (nor a default): the team's, and the caller's own user inputs." }),
  instance_mode: Type.Union([Type.Literal('shared'), Type.Literal('per_user')], { description: '`per_user` when some input is user-scoped: each member who set their required user inputs gets an instance of their own.' }),
  status: InstallationStatus,
  status_reason: Type.String({ description: 'Why, in words.' }),
  endpoint_url: Nullable(Type.String({ description: "`<satellite_url>/mcp/<installation id>` once placed on a satellite that has a URL: where MCP clients connect." })),
  tools_count: Type.Integer({ description: 'Tools the satellite reported for the current spec.' }),
  disabled_tools: Nullable(Type.Array(Type.String(), { description: 'The deny-list of tools (PUT …/tool-policy); null when none is set.' })),
  allowed_tools: Nullable(Type.Array(Type.String(), { description: 'The allow-list of tools (PUT …/tool-policy); null when none is set.' })),
  pin_tools: Type.Boolean({ description: 'Tool definitions are pinned (on at the first approval, PATCH-able): a tool new or changed since approval is held, and the status reads `degraded` naming it.' }),
  spec_revision: Type.Integer({ description: 'Counts the changes to what runs (version, target, values, placement, desired state, restarts).' }),
  created_by: Type.String(),
  created_at: Timestamp,
  updated_at: Timestamp,
}, {
  examples: [{
    id: '019b0a3e-1c2d-7e4f-8a9b-0c1d2e3f4a5b', team_id: '019b0a3d-7a1b-7c2d-9e3f-4a5b6c7d8e9f',
    server: { id: '019b0a3c-5e6f-7a8b-9c0d-1e2f3a4b5c6d', slug: 'github', name: 'GitHub' },
    version: '1.2.0', track_latest: true, name: 'github', target: { kind: 'package', index: 0, transport: 'stdio' },
    satellite_id: '019b0a3b-2f3e-7d4c-8b5a-6c7d8e9f0a1b', desired: 'running', network: 'full',
    inputs: [
      { key: 'env:GITHUB_PERSONAL_ACCESS_TOKEN', kind: 'env', description: 'Your GitHub token', required: true, secret: true, scope: 'user', is_set: false },
      { key: 'env:GITHUB_TOOLSETS', kind: 'env', description: 'Toolsets to enable', required: false, secret: false, scope: 'team', default: 'all', is_set: true, value: 'repos,issues' },
    ],
    missing_inputs: ['env:GITHUB_PERSONAL_ACCESS_TOKEN'], instance_mode: 'per_user', status: 'needs_config',
    status_reason: 'You have not set your own env:GITHUB_PERSONAL_ACCESS_TOKEN (PUT …/my-values).',
    endpoint_url: 'https://sat-eu-1.example.com/mcp/019b0a3e-1c2d-7e4f-8a9b-0c1d2e3f4a5b', tools_count: 0, disabled_tools: null, allowed_tools: null, pin_tools: false, spec_revision: 3,
    created_by: '019b0a3a-0b1c-7d2e-8f3a-4b5c6d7e8f9a', created_at: '2026-11-20T09:30:00.000Z', updated_at: '2026-11-20T09:31:00.000Z',
  }],
})
export type InstallationView = Static<typeof InstallationView>

export const InstallationEnvelope = Ok(Type.Object({ installation: InstallationView }))
export const InstallationPage = Ok(Type.Object({ installations: Type.Array(InstallationView), pagination: Pagination }))

export const MyValuesEnvelope = Ok(Type.Object({
  values: Type.Array(InputView, { description: "The installation's user-scoped inputs with the caller's own `is_set` (and `value`, when not secret)." }),
}))

const Schema = Type.Record(Type.String(), Type.Unknown())
const Hash = Type.String({ pattern: '^[0-9a-f]{64}$', description: 'The definition hash: lowercase hex SHA-256 of the RFC 8785 canonical JSON of `{name, description, input_schema, output_schema, annotations}` as the server declared them (absent members left out).' })

export const ToolView = Type.Object({
  name: Type.String(),
  title: Nullable(Type.String()),
  description: Nullable(Type.String()),
  input_schema: Schema,
  output_schema: Nullable(Type.Record(Type.String(), Type.Unknown(), { description: "The tool's output schema; null when the server declares none." })),
  annotations: Nullable(Schema),
  hash: Hash,
  state: Type.Union([Type.Literal('approved'), Type.Literal('held_new'), Type.Literal('held_changed'), Type.Literal('unpinned')], {
    description: 'Under `pin_tools`: `approved` (this very definition was approved), `held_new` (never approved) or `held_changed` (approved with another definition); a held tool is neither offered nor callable until approved. `unpinned` while `pin_tools` is off.',
  }),
  disabled: Type.Boolean({ description: 'The satellite does not offer it: held, on the deny-list, or outside the allow-list.' }),
  approved: (Nullable(Type.Object({
    hash: Hash,
    definition: Type.Object({
      name: Type.String(), description: Type.Optional(Type.String()), input_schema: Schema, output_schema: Type.Optional(Schema), annotations: Type.Optional(Schema),
    }, { description: 'The definition as it was reported when approved.' }),
    approved_at: Timestamp,
  }, { description: 'The approved definition, null when none was; for a `held_changed` tool, the old definition to compare with the new one beside it.' }))),
})
export const ToolsEnvelope = Ok(Type.Object({ tools: Type.Array(ToolView) }))

export const LogLineView = Type.Object({
  at: Timestamp,
  stream: Type.Union([Type.Literal('stdout'), Type.Literal('stderr'), Type.Literal('event')]),
  text: Type.String(),
  user_id: Nullable(Type.String({ description: 'The member whose own instance wrote it; null for the shared instance.' })),
})
export const LogsEnvelope = Ok(Type.Object({ logs: Type.Array(LogLineView), pagination: Pagination }))

const ClientConfigEntry = Type.Object({ type: Type.Literal('http'), url: Type.String() }, {
  ...closed, description: 'An endpoint by URL only: clients authorize with their own OAuth tokens, never with a credential from here.',
})
const ClientConfigEntries = Type.Record(Type.String(), ClientConfigEntry, { description: '`"<team slug>-<installation name>"` → the endpoint.' })
const EXAMPLE_ENTRIES = { 'platform-team-github': { type: 'http', url: 'https://sat-eu-1.example.com/mcp/019b0a3e-1c2d-7e4f-8a9b-0c1d2e3f4a5b' } }
export const McpServersDocument = Type.Object({ mcpServers: ClientConfigEntries }, {
  ...closed, description: '`format=mcpServers`: the file Claude Code (`.mcp.json`) and Cursor (`.cursor/mcp.json`) read.', examples: [{ mcpServers: EXAMPLE_ENTRIES }],
})
export const VscodeDocument = Type.Object({ servers: ClientConfigEntries }, {
  ...closed, description: '`format=vscode`: VS Code\'s `.vscode/mcp.json`.', examples: [{ servers: EXAMPLE_ENTRIES }],
})
export const ClientConfigDocument = Type.Union([McpServersDocument, VscodeDocument])
export type ClientConfigDocument = Static<typeof ClientConfigDocument>
/** Enveloped by default; with `download=1` the bare document, as a client reads it from its file. */
export const ClientConfigAnswer = Type.Union([Ok(ClientConfigDocument), McpServersDocument, VscodeDocument], {
  description: 'The envelope `{success, data: <document>}`; with `download=1`, the bare document.',
})

// Requests

export const TeamParams = Type.Object({ teamId: Id }, closed)
export const InstallationParams = Type.Object({ teamId: Id, id: Id }, closed)
export const ListQuery = Type.Object({ ...PaginationQuery }, closed)
export const MyListQuery = Type.Object({ ...PaginationQuery, team_id: Type.Optional(Id) }, closed)
export const ClientConfigFormat = Type.Union([Type.Literal('mcpServers'), Type.Literal('vscode')], {
  default: 'mcpServers',
  description: '`mcpServers` (default): `{mcpServers: {…}}`, read by Claude Code and Cursor. `vscode`: `{servers: {…}}`, VS Code\'s `.vscode/mcp.json`.',
})
export type ClientConfigFormat = Static<typeof ClientConfigFormat>
export const ClientConfigQuery = Type.Object({
  team_id: Type.Optional(Id),
  format: Type.Optional(ClientConfigFormat),
  download: Type.Optional(Type.Union([Type.Literal('0'), Type.Literal('1'), Type.Literal('false'), Type.Literal('true')], {
    default: '0',
    description: '`1` or `true`: the bare document as a file to save (`Content-Disposition: attachment`); `0` or `false` (default): inside the envelope.',
  })),
}, closed)

export const CreateInstallationBody = Type.Object({
  server_id: Type.String({ minLength: 1, maxLength: 100, description: 'The server, by id or slug; it must be visible to the team.' }),
  version: Type.Optional(Type.String({ minLength: 1, maxLength: 255, description: "An exact version string; default the server's latest version." })),
  track_latest: Type.Optional(Type.Boolean({ description: 'Follow the latest version automatically. Default: true when `version` is omitted, false when it is given.' })),
  name: Type.Optional(InstallationName),
  target: Type.Optional(TargetChoice),
  satellite_id: Type.Optional(Id),
  user_scoped: Type.Optional(UserScoped),
  values: Type.Optional(Values),
  desired: Type.Optional(Desired),
  network: Type.Optional(Network),
  auth: Type.Optional(Auth),
  team_connections: Type.Optional(TeamConnections),
}, {
  ...closed,
  examples: [{ server_id: 'github', user_scoped: ['env:GITHUB_PERSONAL_ACCESS_TOKEN'], values: { 'env:GITHUB_TOOLSETS': 'repos,issues' } }],
})
export type CreateInstallationBody = Static<typeof CreateInstallationBody>

export const UpdateInstallationBody = Type.Object({
  name: Type.Optional(InstallationName),
  version: Type.Optional(Type.String({ minLength: 1, maxLength: 255 })),
  track_latest: Type.Optional(Type.Boolean()),
  target: Type.Optional(TargetChoice),
  satellite_id: Type.Optional(Nullable(Id)),
  desired: Type.Optional(Desired),
  user_scoped: Type.Optional(UserScoped),
  network: Type.Optional(Network),
  auth: Type.Optional(Auth),
  team_connections: Type.Optional(TeamConnections),
  pin_tools: Type.Optional(Type.Boolean({ description: 'Pin tool definitions (see POST …/tools/approve); off offers every tool the policy allows, whatever its definition. Restarts nothing.' })),
}, { ...closed, minProperties: 1, examples: [{ version: '1.3.0', track_latest: false }, { desired: 'stopped' }] })
export type UpdateInstallationBody = Static<typeof UpdateInstallationBody>

export const ValuesBody = Type.Object({ values: Values }, {
  ...closed,
  examples: [{ values: { 'env:API_KEY': 'sk-live-…', 'env:REGION': 'eu', 'env:OLD_FLAG': null } }],
})

const ToolName = Type.String({ minLength: 1, maxLength: 200 })

export const ToolPolicyBody = Type.Object({
  disabled_tools: Type.Optional(Type.Array(ToolName, { maxItems: 1000, description: 'Tools the satellite must not offer nor serve (a deny-list); `[]` clears the policy.' })),
  allowed_tools: Type.Optional(Type.Array(ToolName, { maxItems: 1000, description: 'The only tools the satellite may offer and serve (an allow-list); a tool that appears later outside it is refused at once. `[]` allows none.' })),
}, { ...closed, minProperties: 1, maxProperties: 1, examples: [{ disabled_tools: ['delete_repository'] }, { allowed_tools: ['search', 'get_issue'] }, { disabled_tools: [] }] })
export type ToolPolicyBody = Static<typeof ToolPolicyBody>

export const ToolPolicyView = Type.Object({
  disabled_tools: Nullable(Type.Array(ToolName, { maxItems: 1000, description: 'The deny-list; null when none is set.' })),
  allowed_tools: Nullable(Type.Array(ToolName, { maxItems: 1000, description: 'The allow-list; null when none is set (at most one of the two is).' })),
  pin_tools: Type.Boolean({ description: 'Tool definitions are pinned: a tool new or changed since its approval is held until approved.' }),
})
export const ToolPolicyEnvelope = Ok(Type.Object({ policy: ToolPolicyView }))

export const ApproveToolsBody = Type.Object({
  tools: Type.Array(Type.Object({ name: ToolName, hash: Hash }, closed), {
    minItems: 1, maxItems: 1000, description: 'Each a tool name with the definition hash `GET …/tools` shows for it.',
  }),
}, { ...closed, examples: [{ tools: [{ name: 'search', hash: 'aed3fd26e25b0ccd3a7fbeb6371e9e65c47d9379d2eb32efadcf9e5daf843302' }] }] })
export type ApproveToolsBody = Static<typeof ApproveToolsBody>
