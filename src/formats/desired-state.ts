import { Type, type Static } from 'typebox'
import { Nullable } from './nullable.js'

/**
 * The desired-state document: what a satellite is told to run, every instance complete, as it
 * travels on the wire (GET /api/satellites/:id/desired-state). One schema: the route answers with
 * it, and the backend's types are read from it. The reference satellite, a package of its own,
 * keeps its own copy of the types; a test holds that copy to this schema.
 */

const closed = { additionalProperties: false } as const
const StringMap = Type.Record(Type.String(), Type.String())

export const LaunchArg = Type.Union([
  Type.String(),
  Type.Object({ secret: Type.String({ description: 'The `arg:<key>` target in `secrets` whose unsealed value goes in this slot.' }) }, closed),
], { description: 'One argv entry (never a shell line): a word, or the slot of a secret value.' })

export const PackageLaunch = Type.Object({
  kind: Type.Literal('package'),
  registry_type: Type.String({ description: '`npm`, `pypi`, `oci`, `docker`, `nuget` or `mcpb`.' }),
  identifier: Type.String(),
  version: Nullable(Type.String()),
  runtime_hint: Nullable(Type.String({ description: 'As the server.json gives it (`npx`, `uvx`, `docker`…); null when it gives none.' })),
  runtime_args: Type.Array(LaunchArg, { description: "Arguments for the runtime (before the package)." }),
  package_args: Type.Array(LaunchArg, { description: 'Arguments for the package itself.' }),
  env: Type.Record(Type.String(), Type.String(), { description: 'Environment variables with non-secret values; secret ones are in `secrets` (`env:NAME`).' }),
  transport: Type.Object({ type: Type.String(), url: Type.Optional(Type.String()), headers: Type.Optional(StringMap) }),
})
export const RemoteLaunch = Type.Object({
  kind: Type.Literal('remote'),
  url: Type.String({ description: 'Template variables resolved, percent-encoded; a secret one stays as `{name}` and is in `secrets` (`urlvar:name`).' }),
  transport: Type.String({ description: '`streamable-http` or `sse`.' }),
  headers: StringMap,
})

export const Launch = Type.Union([PackageLaunch, RemoteLaunch])

/** A secret value sealed for the satellite; `rotating` ones are renewed in place. */
export const SealedSecret = Type.Object({
  target: Type.String({ description: '`env:NAME`, `arg:<key>`, `header:<Name>` or `urlvar:<name>`.' }),
  sealed: Type.String({ description: 'HPKE (RFC 9180) base mode, DHKEM(X25519, HKDF-SHA256), HKDF-SHA256, AES-256-GCM, info `service-satellite-secret`, aad `<instance_id>\\n<target>`; base64url of the 32-byte encapsulated key followed by the ciphertext.' }),
  rotating: Type.Optional(Type.Literal(true, {
    description: 'A value renewed while the instance runs (the access token of an OAuth connection, as `header:Authorization`). ' +
      'Its value is left out of `spec_hash`: a renewal changes the document\'s `revision` and this sealed text only, and the satellite swaps the value in place for the requests that follow, restarting nothing.',
  })),
})

/** A tool definition a team admin approved, by its hash. */
export const PinnedTool = Type.Object({
  name: Type.String(),
  hash: Type.String({ description: 'Lowercase hex SHA-256 of the RFC 8785 canonical JSON of `{name, description, input_schema, output_schema, annotations}` as the server declares them (absent members left out).' }),
})

export const InstanceDocument = Type.Object({
  instance_id: Type.String({ description: 'Stable per installation and member: the installation id for a shared instance, `<installation id>.<user id>` for a member\'s own.' }),
  installation_id: Type.String(),
  team_id: Type.String(),
  user_id: Nullable(Type.String({ description: 'The member whose own instance this is; null for the shared one.' })),
  name: Type.String(),
  endpoint_path: Type.String({ description: '`/mcp/<installation id>`: where the satellite serves it (for a per-user installation, the instance is chosen by the token\'s `sub`).' }),
  desired: Type.Union([Type.Literal('running'), Type.Literal('stopped')]),
  network: Type.Union([Type.Literal('full'), Type.Literal('none')], {
    description: "The installation's `network`: `none` asks the satellite to give the process no network at all. Part of `spec_hash`: a change restarts the instance.",
  }),
  spec_hash: Type.String({ description: 'Changes whenever anything the instance runs does, secret values included; report it back with the phase.' }),
  restart_generation: Type.Integer({ description: 'Grows when a restart is asked for.' }),
  launch: Launch,
  secrets: Type.Array(SealedSecret),
  disabled_tools: Type.Array(Type.String(), {
    description: 'Tools not to offer (left out of `tools/list`) nor serve (`tools/call` refused with a JSON-RPC error): the team\'s deny-list, every reported tool outside `allowed_tools`, and the tools held under `pin_tools`. ' +
      'Out of `spec_hash` (a change restarts nothing) but in the `revision`.',
  }),
  allowed_tools: Nullable(Type.Array(Type.String(), {
    description: 'The team\'s allow-list, or null: when set, a tool outside it is neither offered nor served, including one that appears after the last report. Out of `spec_hash`, in the `revision`.',
  })),
  pin_tools: Type.Boolean({ description: 'Tool definitions are pinned: offer and serve only a tool whose live definition hash equals its entry in `pinned_tools`. Out of `spec_hash`, in the `revision`.' }),
  pinned_tools: Type.Array(PinnedTool, { description: 'The approved tool definitions (empty unless `pin_tools`); a tool whose live hash differs, or that has no entry, is held.' }),
})

export const DesiredDocument = Type.Object({
  revision: Type.String({ description: 'Changes exactly when the document does; the ETag is this revision in quotes.' }),
  poll_interval_seconds: Type.Integer(),
  instances: Type.Array(InstanceDocument),
})

export type LaunchArg = Static<typeof LaunchArg>
export type PackageLaunch = Static<typeof PackageLaunch>
export type RemoteLaunch = Static<typeof RemoteLaunch>
export type Launch = Static<typeof Launch>
export type SealedSecret = Static<typeof SealedSecret>
export type PinnedTool = Static<typeof PinnedTool>
export type InstanceDocument = Static<typeof InstanceDocument>
export type DesiredDocument = Static<typeof DesiredDocument>
