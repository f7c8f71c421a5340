import { createHash, createHmac } from 'node:crypto'
import type { ChannelRepository, PlacedInstallation, UnresolvedRecord } from '../../db/repositories/channel.js'
import type { ValueRow } from '../../db/repositories/installations.js'
import { inputSourceOf } from '../installations/inputs.js'
import { resolveLaunch, type SecretPlacement } from '../installations/launch.js'
import type { ValueBox } from '../installations/sealed-values.js'
import { sealerFor } from '../satellites/sealing.js'
import { keyFingerprint } from '../satellites/fingerprint.js'
import { usableOn } from '../installations/own-values.js'
import { bearerOf, maskedValuesOf, withRotating } from '../installations/rotating.js'
import { LiveConnections, oauthInputsOf, type ConnectionSource } from './live-connections.js'
import type { ReportedTool } from '../../formats/satellite-reports.js'
import type { DesiredDocument, InstanceDocument, SealedSecret } from '../../formats/desired-state.js'
import { effectiveDisabled } from '../installations/tool-governance.js'

/**
 * A satellite's desired-state document (its schema: formats/desired-state.ts): every instance it
 * must run, complete. Built from the database (the installations placed on the satellite, their versions, values and teams), with
 * secret values decrypted only here and sealed at once to the satellite's public key.
 */

/** How often a satellite is told to come back when it does not hold its request open. */
export const POLL_INTERVAL_SECONDS = 30

/** What the backend keeps of an instance besides the document: to accept reports and mask logs. */
export interface InstanceFacts {
  installationId: string
  /** The installation's team: its lists show what the satellite reports of the instance. */
  teamId: string
  userId: string | null
  specHash: string
  /** The installation's spec_revision the spec was built from. */
  specRevision: number
  /** The instance's secret values in the clear, to mask them in its log lines; never sent or logged. */
  secretValues: string[]
  /**
   * What its log lines are masked with: its secret values, and those of the spec it ran before
   * (a process started with a rotated secret may still print the old one until it restarts).
   */
  maskedValues: string[]
  /**
   * An HMAC over the instance's rotating secret values ('' when it has none): their values are
   * out of spec_hash, so this is what tells the document (its revision) and the sealing that one changed.
   */
  rotation: string
}

/**
 * An instance left out of its satellite's document because it could not be resolved. Its team
 * reads it `failed` with the reason (see DesiredStates): the others are built as if it were not there.
 */
export type UnresolvedInstance = UnresolvedRecord

export interface BuildDeps {
  channel: ChannelRepository
  box: ValueBox
  specKey: Buffer
  /** Where an unexpected failure to resolve one instance is logged (ids only, never a value). */
  log?: { error(object: object, message: string): void }
  /** The OAuth connections whose access tokens instances send (absent: none is used). */
  connections?: ConnectionSource
}

export interface BuiltDocument {
  stamp: number
  /** The public key its secrets are sealed to. */
  publicKey: string | null
  /** The satellite was disabled when this was read: its key is refused, it gets no document. */
  disabled: boolean
  document: DesiredDocument
  etag: string
  instances: Map<string, InstanceFacts>
  /** The instances left out because they could not be resolved, with why. */
  unresolved: UnresolvedInstance[]
  /** Every installation placed on the satellite when this was built. */
  placedInstallations: string[]
}

/** The id of an instance: the installation's for its shared instance, with the member's for one of their own. */
export const instanceIdOf = (installationId: string, userId: string | null): string => (userId === null ? installationId : `${installationId}.${userId}`)

/**
 * Builds a document. The spec hash of an instance is an HMAC (keyed by ENCRYPTION_SECRET) over
 * everything it runs, secret values included: it changes when a secret does, yet says nothing
 * about one. Rotating secrets (rotating.ts) are the exception: their targets are in the spec hash,
 * their values are not (a renewed access token restarts nothing); an HMAC of their values (the
 * instance's `rotation`) goes into the revision instead. The revision is a hash of the instances'
 * ids, spec hashes and rotations, so it changes exactly when what the satellite must run or send
 * does. Sealing is randomized; an instance whose spec hash is the one it had in `before`, sealed to
 * the same key, keeps the sealed text it had there (its secret values are the same) — its rotating
 * secrets too while its rotation is the same — so only changed secrets are sealed again.
 *
 * Each instance is resolved on its own (instancesOf): one that cannot be is left out and listed in
 * `unresolved`, so that one team's broken entry never keeps the document — every other team's
 * deletions, values and rotated secrets — from reaching the satellite.
 */
export async function buildDocument(
  deps: BuildDeps,
  satellite: { id: string; satelliteType: 'global' | 'team'; publicKey: string | null; desiredStamp: number; disabledAt: Date | null },
  before?: BuiltDocument,
): Promise<BuiltDocument> {
  const placed = await deps.channel.placedOn(satellite.id)
  const ids = placed.map((row) => row.installation.id)
  // A member's own value reaches only a global satellite or the key it was set for: any other reads as unset here.
  const sealing = { type: satellite.satelliteType, publicKey: satellite.publicKey }
  const fingerprint = keyFingerprint(satellite.publicKey)
  const usable = (row: ValueRow) => row.userId === null || usableOn({ held: row.value !== null || row.sealed !== null, approvedKey: row.approvedKey }, sealing, fingerprint)
  const governed = placed.filter((row) => toolsGoverned(row.installation)).map((row) => row.installation.id)
  const [values, members, live, reportedTools, approvals] = await Promise.all([
    deps.channel.valuesOf(ids).then((rows) => rows.filter(usable)),
    deps.channel.membersOf([...new Set(placed.map((row) => row.installation.teamId))]),
    LiveConnections.read(deps.connections, placed),
    deps.channel.reportedToolsOf(governed),
    deps.channel.approvalsOf(placed.filter((row) => row.installation.pinTools).map((row) => row.installation.id)),
  ])
  const byInstallation = new Map<string, ValueRow[]>()
  for (const row of values) byInstallation.set(row.installationId, [...(byInstallation.get(row.installationId) ?? []), row])
  const sealer = satellite.publicKey === null ? null : await sealerFor(satellite.publicKey)
  const sealedBefore = new Map<string, InstanceDocument>()
  if (before !== undefined && before.publicKey === satellite.publicKey) for (const instance of before.document.instances) sealedBefore.set(instance.instance_id, instance)
  const pending: Array<Promise<InstanceDocument>> = []
  const facts = new Map<string, InstanceFacts>()
  const unresolved: UnresolvedInstance[] = []
  for (const row of placed) {
    const instances = instancesOf(row, byInstallation.get(row.installation.id) ?? [], members.get(row.installation.teamId) ?? [], live, deps)
    unresolved.push(...instances.unresolved)
    for (const built of instances.built) {
      // A satellite without a key is given no instance that has secrets (they could not reach it sealed).
      if (built.secrets.length > 0 && sealer === null) continue
      const instanceId = built.document.instance_id
      const unchanged = sealedBefore.get(instanceId)
      const sameSpec = unchanged?.spec_hash === built.document.spec_hash
      const sameRotation = sameSpec && before?.instances.get(instanceId)?.rotation === built.rotation
      const kept = new Map((sameSpec ? unchanged.secrets : []).map((secret) => [secret.target, secret]))
      // The secrets are sealed at once: the X25519 of each runs on Node's thread pool.
      const sealed = Promise.all(built.secrets.map(async (secret): Promise<SealedSecret> => {
        const reused = secret.rotating === true && !sameRotation ? undefined : kept.get(secret.target)
        if (reused !== undefined) return reused
        const text = await sealer!.seal(instanceId, secret.target, secret.value)
        return secret.rotating === true ? { target: secret.target, sealed: text, rotating: true } : { target: secret.target, sealed: text }
      }))
      const tools = toolFields(row.installation, reportedTools.get(instanceId) ?? [], approvals.get(row.installation.id) ?? [])
      pending.push(sealed.then((secrets) => ({ ...built.document, secrets, ...tools })))
      facts.set(instanceId, {
        installationId: row.installation.id, teamId: row.installation.teamId, userId: built.document.user_id, specHash: built.document.spec_hash,
        specRevision: row.installation.specRevision, secretValues: maskedValuesOf(built.secrets),
        maskedValues: maskedValuesOf(built.secrets), rotation: built.rotation,
      })
    }
  }
  const instances = await Promise.all(pending)
  const revision = createHash('sha256').update(JSON.stringify(instances.map((instance) => {
    const rotation = facts.get(instance.instance_id)?.rotation ?? ''
    const entry = rotation === '' ? [instance.instance_id, instance.spec_hash] : [instance.instance_id, instance.spec_hash, rotation]
    // The tool fields are out of spec_hash (a policy change restarts nothing) but in the revision, so the satellite learns them at once.
    const tools = instance.disabled_tools.length === 0 && instance.allowed_tools === null && !instance.pin_tools
      ? null : [instance.disabled_tools, instance.allowed_tools, instance.pin_tools, instance.pinned_tools]
    return tools === null ? entry : [...entry, tools]
  }))).digest('base64url').slice(0, 27)
  return {
    stamp: satellite.desiredStamp,
    publicKey: satellite.publicKey,
    disabled: satellite.disabledAt !== null,
    document: { revision, poll_interval_seconds: POLL_INTERVAL_SECONDS, instances },
    etag: `"${revision}"`,
    instances: facts,
    unresolved,
    placedInstallations: ids,
  }
}

/** Whether the tools reported matter to the document: an allow-list or pinning. */
const toolsGoverned = (installation: PlacedInstallation['installation']): boolean => installation.allowedTools !== null || installation.pinTools

/**
 * The instance's tool fields: the effective `disabled_tools` (the deny-list, every reported tool
 * outside the allow-list, and the tools held under pinning), the allow-list itself (a tool that
 * appears between two reports is refused at once), and under pinning the approved definitions,
 * the only ones the satellite may serve.
 */
function toolFields(
  installation: PlacedInstallation['installation'], reported: readonly ReportedTool[], pinned: Array<{ name: string; hash: string }>,
): Pick<InstanceDocument, 'disabled_tools' | 'allowed_tools' | 'pin_tools' | 'pinned_tools'> {
  const approvals = new Map(pinned.map((entry) => [entry.name, { ...entry, definition: { name: entry.name, input_schema: {} }, approvedAt: new Date(0) }]))
  return {
    disabled_tools: effectiveDisabled(installation, reported, approvals),
    allowed_tools: installation.allowedTools,
    pin_tools: installation.pinTools,
    pinned_tools: installation.pinTools ? pinned : [],
  }
}

interface BuiltInstance {
  document: Omit<InstanceDocument, 'secrets' | 'disabled_tools' | 'allowed_tools' | 'pin_tools' | 'pinned_tools'>
  secrets: SecretPlacement[]
  rotation: string
}

/** Why an instance could not be resolved; thrown inside one instance's resolution only. */
class Unresolvable extends Error {}

/** A connection's access token in the clear; tokens that do not open fail the instance, not the document. */
function accessTokenOf(row: Parameters<LiveConnections['accessToken']>[0], key: string, live: LiveConnections): string {
  try {
    return live.accessToken(row)
  } catch {
    throw new Unresolvable(`The stored tokens of the connection ${key} could not be decrypted (was ENCRYPTION_SECRET changed without npm run secret:rotate?); connect again.`)
  }
}

/** A value in the clear; a value that does not open fails its instance, not the document. */
function opened(row: ValueRow, box: ValueBox): string {
  if (row.sealed === null) return row.value ?? ''
  try {
    return box.open(row.sealed, { installationId: row.installationId, userId: row.userId, key: row.key })
  } catch {
    throw new Unresolvable(`The stored value of ${row.key} could not be decrypted (was ENCRYPTION_SECRET changed without npm run secret:rotate?); set it again.`)
  }
}

/**
 * The instances of one installation: one shared instance, or one per member who set every
 * required input of their own. None while a required team input is unset (it could not start).
 * Each instance is resolved on its own: one that cannot be (its target gone from the version, a
 * runtime rule broken, a value that does not decrypt) is listed in `unresolved` with why, and
 * the others are built.
 *
 * An oauth input is no value but a connection: a team-scoped one needs the team's live
 * connection (without it there is no instance at all), a user-scoped one makes the installation
 * per-user and each member needs their own (a member without one gets no instance, as with an
 * unset value). The first oauth input's access token is the instance's rotating
 * `header:Authorization`. Such instances are simply absent: their status reads `needs_auth`.
 */
function instancesOf(
  placed: PlacedInstallation, values: ValueRow[], members: string[], live: LiveConnections, deps: BuildDeps,
): { built: BuiltInstance[]; unresolved: UnresolvedInstance[] } {
  const { installation, server, version } = placed
  const out: { built: BuiltInstance[]; unresolved: UnresolvedInstance[] } = { built: [], unresolved: [] }
  const teamRows = values.filter((row) => row.userId === null)
  const teamKeys = new Set(teamRows.map((row) => row.key))
  const required = installation.inputs.filter((input) => input.required && input.default === undefined && input.kind !== 'oauth')
  if (required.some((input) => input.scope === 'team' && !teamKeys.has(input.key))) return out
  const oauth = oauthInputsOf(installation.inputs)
  if (oauth.some((input) => input.scope === 'team' && live.of(installation.id, input, null) === undefined)) return out
  const perUser = installation.inputs.some((input) => input.scope === 'user')
  const owners: Array<string | null> = perUser ? members : [null]
  const source = inputSourceOf({ serverJson: version.serverJson, packages: version.packages ?? server.packages, remotes: version.remotes ?? server.remotes })
  let team: Map<string, string> | undefined
  for (const userId of owners) {
    const own = userId === null ? [] : values.filter((row) => row.userId === userId)
    if (userId !== null && required.some((input) => input.scope === 'user' && !own.some((row) => row.key === input.key))) continue
    const connections = oauth.map((input) => live.of(installation.id, input, userId))
    if (connections.some((row) => row === undefined)) continue
    const instanceId = instanceIdOf(installation.id, userId)
    const fail = (reason: string) => out.unresolved.push({ instanceId, installationId: installation.id, userId, specRevision: installation.specRevision, reason })
    try {
      team ??= new Map(teamRows.map((row) => [row.key, opened(row, deps.box)]))
      const mine = new Map(team)
      for (const row of own) mine.set(row.key, opened(row, deps.box))
      const launched = resolveLaunch(source, { kind: installation.targetKind, index: installation.targetIndex }, installation.transport, installation.inputs, mine, server.visibility)
      if (!launched.ok) {
        fail(launched.reason)
        continue
      }
      const first = connections[0]
      const resolved = first === undefined ? launched : withRotating(launched, [bearerOf(accessTokenOf(first, oauth[0]!.key, live))])
      const secrets = [...resolved.secrets].sort((a, b) => (a.target < b.target ? -1 : 1))
      const rotating = secrets.filter((secret) => secret.rotating === true)
      const spec = {
        instance_id: instanceId, launch: resolved.launch, desired: installation.desired, network: installation.network, restart_generation: installation.restartGeneration,
        secrets: secrets.filter((secret) => secret.rotating !== true).map((secret) => [secret.target, secret.value]),
        ...(rotating.length === 0 ? {} : { rotating: rotating.map((secret) => secret.target) }),
      }
      const rotation = rotating.length === 0 ? '' : createHmac('sha256', deps.specKey).update(JSON.stringify([instanceId, rotating.map((secret) => [secret.target, secret.value])])).digest('base64url')
      out.built.push({
        document: {
          instance_id: instanceId, installation_id: installation.id, team_id: installation.teamId, user_id: userId, name: installation.name,
          endpoint_path: `/mcp/${installation.id}`, desired: installation.desired, network: installation.network,
          spec_hash: createHmac('sha256', deps.specKey).update(JSON.stringify(spec)).digest('base64url'),
          restart_generation: installation.restartGeneration, launch: resolved.launch,
        },
        secrets: resolved.secrets,
        rotation,
      })
    } catch (error) {
      if (error instanceof Unresolvable) {
        fail(error.message)
        continue
      }
      // Not the entry's fault: logged for the operator (ids only), and still this instance's alone.
      deps.log?.error({ err: error, instance_id: instanceId, installation_id: installation.id }, 'an instance of a desired-state document could not be resolved')
      fail('An unexpected error kept it from being resolved; the service log has the details.')
    }
  }
  return out
}
