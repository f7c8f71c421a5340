import type { InstallationDetail, SetValue } from '../../db/repositories/installations.js'
import type { ReportedState } from '../../formats/satellite-reports.js'
import type { InstallationInput } from '../../formats/installation-inputs.js'
import type { InstallationView } from './schemas.js'
import { keyFingerprint } from '../satellites/fingerprint.js'
import { unplacedReason, type PlacementRules } from './placement.js'
import { usableOn } from './own-values.js'

/**
 * How an installation reads, from one caller's point of view: the team's values and the caller's
 * own (never another member's), the inputs still missing, and the status derived from them and
 * from the satellite. Pure: the service gives it the rows and the instant before which a
 * satellite's heartbeat means it is offline.
 */

type InputView = InstallationView['inputs'][number]
type Status = InstallationView['status']

/** The values an installation has, for one caller: the team's by key, and the caller's own by key. */
export interface ValuesForCaller {
  team: Map<string, SetValue>
  own: Map<string, SetValue>
}

export function groupValues(rows: readonly SetValue[]): Map<string, ValuesForCaller> {
  const byInstallation = new Map<string, ValuesForCaller>()
  for (const row of rows) {
    let entry = byInstallation.get(row.installationId)
    if (entry === undefined) byInstallation.set(row.installationId, (entry = { team: new Map(), own: new Map() }))
    ;(row.userId === null ? entry.team : entry.own).set(row.key, row)
  }
  return byInstallation
}

const NO_VALUES: ValuesForCaller = { team: new Map(), own: new Map() }

/** The OAuth connections an installation has, for one caller: the team's by key, and the caller's own by key. */
export interface ConnectionsForCaller {
  team: Map<string, 'connected' | 'expired'>
  own: Map<string, 'connected' | 'expired'>
}

export function groupConnections(rows: ReadonlyArray<{ installationId: string; userId: string | null; inputKey: string; status: 'connected' | 'expired' }>): Map<string, ConnectionsForCaller> {
  const byInstallation = new Map<string, ConnectionsForCaller>()
  for (const row of rows) {
    let entry = byInstallation.get(row.installationId)
    if (entry === undefined) byInstallation.set(row.installationId, (entry = { team: new Map(), own: new Map() }))
    ;(row.userId === null ? entry.team : entry.own).set(row.inputKey, row.status)
  }
  return byInstallation
}

const NO_CONNECTIONS: ConnectionsForCaller = { team: new Map(), own: new Map() }

/** The oauth inputs whose connection (the team's, or the caller's own) is not live, with whether it is missing or expired. */
export function connectionsNeeded(inputs: readonly InstallationInput[], connections: ConnectionsForCaller): Array<{ input: InstallationInput; status: 'missing' | 'expired' }> {
  return inputs.filter((input) => input.kind === 'oauth').flatMap((input) => {
    const status = (input.scope === 'team' ? connections.team : connections.own).get(input.key)
    return status === 'connected' ? [] : [{ input, status: status ?? 'missing' as const }]
  })
}

/** Who must connect what: a team admin for the team's connections, the caller for their own. */
function connectReason(needed: ReturnType<typeof connectionsNeeded>): string {
  return needed.map(({ input, status }) => {
    if (input.scope === 'team') {
      return status === 'expired'
        ? `The team's connection ${input.key} has expired; a team admin must connect it again (POST …/connections).`
        : `A team admin must connect ${input.key} (POST …/connections).`
    }
    return status === 'expired'
      ? `Your connection ${input.key} has expired; connect your account again (POST …/connections).`
      : `Connect your account for ${input.key} (POST …/connections).`
  }).join(' ')
}

export type { ReportedState }

/**
 * The caller's own values that may be used where the installation is (all of them while it is
 * unplaced, or on a global satellite; on a team's satellite those set for its current key), and
 * the keys of the others: dropped when the installation moved, or set for a key it no longer has.
 */
export function usableOwn(own: ReadonlyMap<string, SetValue>, satellite: InstallationDetail['satellite']): { usable: Map<string, SetValue>; dropped: Set<string> } {
  const usable = new Map<string, SetValue>()
  const dropped = new Set<string>()
  if (own.size === 0) return { usable, dropped }
  const sealing = satellite === null ? null : { type: satellite.type, publicKey: satellite.publicKey }
  const fingerprint = sealing === null ? null : keyFingerprint(sealing.publicKey)
  for (const [key, value] of own) {
    if (usableOn(value, sealing, fingerprint)) usable.set(key, value)
    else dropped.add(key)
  }
  return { usable, dropped }
}

const DROPPED_NOTE = "Your value was dropped: the installation moved to another satellite, or its satellite's key changed, since you set it. Set it again to have it used on the satellite it is on now."

/**
 * An input as the API shows it; the value only when it is not a secret. `dropped`: the caller's
 * own value that may not be used where the installation is now (it reads as unset, with why).
 */
export function inputView(input: InstallationInput, set: SetValue | undefined, dropped = false): InputView {
  const view: InputView = {
    key: input.key, kind: input.kind, description: input.description, required: input.required, secret: input.secret, scope: input.scope,
    is_set: set !== undefined,
  }
  if (input.default !== undefined) view.default = input.default
  if (input.choices !== undefined) view.choices = input.choices
  if (input.format !== undefined) view.format = input.format
  if (set !== undefined && !input.secret && set.value !== null) view.value = set.value
  if (set === undefined && dropped) view.unset_reason = DROPPED_NOTE
  return view
}

/**
 * Required inputs with neither a value nor a default: the team's, then the caller's own. An oauth
 * input is no value to set (its connection decides `needs_auth`, see connectionsNeeded).
 */
export function missingInputs(inputs: readonly InstallationInput[], values: ValuesForCaller): { team: string[]; own: string[] } {
  const team: string[] = []
  const own: string[] = []
  for (const input of inputs) {
    if (!input.required || input.default !== undefined || input.kind === 'oauth') continue
    if (input.scope === 'team' && !values.team.has(input.key)) team.push(input.key)
    if (input.scope === 'user' && !values.own.has(input.key)) own.push(input.key)
  }
  return { team, own }
}

const listed = (keys: string[]): string => keys.join(', ')

/** Why the caller's own inputs are missing: never set, or dropped by a move (`dropped`). */
function ownMissingReason(missing: string[], dropped: ReadonlySet<string>, satellite: InstallationDetail['satellite']): string {
  const moved = missing.filter((key) => dropped.has(key))
  const unset = missing.filter((key) => !dropped.has(key))
  const parts: string[] = []
  if (moved.length > 0) {
    const where = satellite === null ? 'another satellite' : `the satellite ${satellite.name}`
    parts.push(`Your own ${listed(moved)} ${moved.length === 1 ? 'was' : 'were'} dropped: the installation moved to ${where}, or that satellite's key changed, since you set ${moved.length === 1 ? 'it' : 'them'}. ` +
      `Set ${moved.length === 1 ? 'it' : 'them'} again (PUT …/my-values) to have ${moved.length === 1 ? 'it' : 'them'} used there.`)
  }
  if (unset.length > 0) parts.push(`You have not set your own ${listed(unset)} (PUT …/my-values).`)
  return parts.join(' ')
}

/** The status and its reason, in the order that decides: configuration, connections, the team's wish, placement, the satellite. */
export function statusOf(
  detail: InstallationDetail, missing: { team: string[]; own: string[] }, silentSince: Date, rules: PlacementRules, state?: ReportedState, dropped: ReadonlySet<string> = new Set(),
  needed: ReturnType<typeof connectionsNeeded> = [],
): { status: Status; reason: string } {
  const { installation, satellite } = detail
  if (missing.team.length > 0) return { status: 'needs_config', reason: `A team admin must set ${listed(missing.team)} (PUT …/values).` }
  if (missing.own.length > 0) return { status: 'needs_config', reason: ownMissingReason(missing.own, dropped, satellite) }
  if (needed.length > 0) return { status: 'needs_auth', reason: connectReason(needed) }
  if (installation.desired === 'stopped') return { status: 'stopped', reason: 'Stopped by the team (desired: stopped).' }
  if (satellite === null) return { status: 'pending', reason: unplacedReason(detail.serverVisibility, rules) }
  if (satellite.disabledAt !== null) return { status: 'pending', reason: `Its satellite ${satellite.name} is disabled; it is being placed on another one.` }
  // Recorded by the backend when it built the satellite's document: this instance was left out.
  if (state?.unresolved === true && state.specRevision === installation.specRevision) {
    return { status: 'failed', reason: `It could not be resolved, so ${satellite.name} was not asked to run it: ${state.message ?? 'no reason recorded'}` }
  }
  if (!reporting(satellite)) return { status: 'pending', reason: `Waiting for its satellite ${satellite.name}, which has not reported since it registered.` }
  if (satelliteOffline(satellite, silentSince)) {
    return satellite.offlineAt !== null
      ? { status: 'unknown', reason: `Its satellite ${satellite.name} has stopped; what runs there is not known until it is back.` }
      : { status: 'unknown', reason: `Its satellite ${satellite.name} has not reported for over 90 seconds; what runs there is not known.` }
  }
  if (state === undefined || state.specRevision !== installation.specRevision) {
    return { status: 'pending', reason: `Waiting for its satellite ${satellite.name} to pick up revision ${installation.specRevision}.` }
  }
  const said = state.message === null || state.message === '' ? '' : `: ${state.message}`
  if (state.phase === 'running' && installation.pinTools && installation.heldTools.length > 0) {
    const names = [...new Set(installation.heldTools.map((tool) => tool.name))]
    return {
      status: 'degraded',
      reason: `Its satellite ${satellite.name} reports running, but ${names.length === 1 ? 'a tool is' : `${names.length} tools are`} held until a team admin approves ${names.length === 1 ? 'it' : 'them'} ` +
        `(new, or changed since approved; POST …/tools/approve): ${listed(names.slice(0, 20))}${names.length > 20 ? ` and ${names.length - 20} more` : ''}.`,
    }
  }
  return { status: state.phase, reason: `Its satellite ${satellite.name} reports ${state.phase}${said}.` }
}

type PlacedOn = NonNullable<InstallationDetail['satellite']>

const reporting = (satellite: PlacedOn): boolean => satellite.status === 'active' || satellite.status === 'degraded' || satellite.status === 'error'

/**
 * Whether the satellite serves nothing now: it said it stopped (until its next heartbeat), or it
 * reported once and has been silent since `silentSince` (the satellites' `offline`).
 */
export function satelliteOffline(satellite: PlacedOn, silentSince: Date): boolean {
  if (satellite.offlineAt !== null) return true
  return reporting(satellite) && (satellite.lastHeartbeatAt === null || satellite.lastHeartbeatAt.getTime() < silentSince.getTime())
}

/** `<satellite_url>/mcp/<installation id>`, once placed on a satellite that has a URL. */
export function endpointOf(detail: InstallationDetail): string | null {
  const url = detail.satellite?.url
  if (url === null || url === undefined || detail.satellite?.disabledAt !== null) return null
  return `${url.replace(/\/+$/, '')}/mcp/${detail.installation.id}`
}

export function installationView(
  detail: InstallationDetail, values: ValuesForCaller | undefined, silentSince: Date, rules: PlacementRules, state?: ReportedState, connections: ConnectionsForCaller = NO_CONNECTIONS,
): InstallationView {
  const { installation } = detail
  const given = values ?? NO_VALUES
  const own = usableOwn(given.own, detail.satellite)
  const mine: ValuesForCaller = { team: given.team, own: own.usable }
  const missing = missingInputs(installation.inputs, mine)
  const needed = connectionsNeeded(installation.inputs, connections)
  const { status, reason } = statusOf(detail, missing, silentSince, rules, state, own.dropped, needed)
  return {
    id: installation.id,
    team_id: installation.teamId,
    server: detail.server,
    version: detail.version,
    track_latest: installation.trackLatest,
    name: installation.name,
    target: { kind: installation.targetKind, index: installation.targetIndex, transport: installation.transport },
    satellite_id: installation.satelliteId,
    desired: installation.desired,
    network: installation.network,
    inputs: installation.inputs.map((input) => {
      if (input.kind === 'oauth') return { ...inputView(input, undefined), is_set: !needed.some((each) => each.input.key === input.key) }
      return input.scope === 'team' ? inputView(input, mine.team.get(input.key)) : inputView(input, mine.own.get(input.key), own.dropped.has(input.key))
    }),
    missing_inputs: [...missing.team, ...missing.own],
    instance_mode: installation.inputs.some((input) => input.scope === 'user') ? 'per_user' : 'shared',
    status,
    status_reason: reason,
    endpoint_url: endpointOf(detail),
    tools_count: state?.toolsCount ?? 0,
    disabled_tools: installation.disabledTools,
    allowed_tools: installation.allowedTools,
    pin_tools: installation.pinTools,
    spec_revision: installation.specRevision,
    created_by: installation.createdBy,
    created_at: installation.createdAt.toISOString(),
    updated_at: installation.updatedAt.toISOString(),
  }
}
