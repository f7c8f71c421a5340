import type { UserActor } from '../../auth/caller.js'
import type { ChannelRepository } from '../../db/repositories/channel.js'
import type { DesiredStamps } from '../../db/repositories/desired-stamps.js'
import type { InstallationRow, InstallationsRepository } from '../../db/repositories/installations.js'
import type { TeamsRepository } from '../../db/repositories/teams.js'
import type { ToolApprovalsRepository } from '../../db/repositories/tool-approvals.js'
import type { Database, Db } from '../../db/types.js'
import type { ReportedTool } from '../../formats/satellite-reports.js'
import { definitionOf, type ToolDefinition } from '../../formats/tool-definitions.js'
import { errors } from '../../http/errors.js'
import type { Clock } from '../../lib/clock.js'
import type { AuditLog } from '../audit/service.js'
import { hashOf, heldOf, newlyHeld, refusedByPolicy, sameHeld, stateOf, type Approval, type HeldTool, type ToolState } from './tool-governance.js'
import { lockedInstallation, teamTransaction } from './team-writes.js'

/** The policy of an installation as the API shows it. */
export interface ToolPolicyView {
  disabled_tools: string[] | null
  allowed_tools: string[] | null
  pin_tools: boolean
}

/** One reported tool with its hash and state, and the approved definition beside a changed one. */
export interface GovernedTool {
  name: string
  title: string | null
  description: string | null
  input_schema: Record<string, unknown>
  output_schema: Record<string, unknown> | null
  annotations: Record<string, unknown> | null
  hash: string
  state: ToolState
  disabled: boolean
  approved: { hash: string; definition: ToolDefinition; approved_at: string } | null
}

export interface GovernanceDeps {
  database: Database
  installations: InstallationsRepository
  teams: TeamsRepository
  channel: ChannelRepository
  approvals: ToolApprovalsRepository
  stamps: DesiredStamps
  audit: AuditLog
  clock: Clock
}

const approvalMap = (rows: ReadonlyArray<{ name: string; hash: string; definition: ToolDefinition; approvedAt: Date }>): Map<string, Approval> =>
  new Map(rows.map((row) => [row.name, { name: row.name, hash: row.hash, definition: row.definition, approvedAt: row.approvedAt }]))

/** The tools every reported instance of an installation serves, each name once (the most recent report first). */
async function reportedTools(channel: ChannelRepository, installationId: string): Promise<ReportedTool[]> {
  const byName = new Map<string, ReportedTool>()
  for (const state of await channel.allStatesOf(installationId)) for (const tool of state.tools) if (!byName.has(tool.name)) byName.set(tool.name, tool)
  return [...byName.values()]
}

/**
 * Recomputes what is held for an installation (after a report, an approval or a change of
 * pin_tools) within `tx`: stores the held list, stamps the satellite when it changed (the
 * document's effective `disabled_tools` follows it) and records `installation.tools_changed`
 * for the held tools that were not held before, each change once.
 */
export async function refreshHeld(deps: GovernanceDeps, tx: Db, installation: InstallationRow): Promise<HeldTool[]> {
  // Every instance's tools: a tool one member's instance serves changed is held even while another's still serves the approved one.
  const reported = (await deps.channel.with(tx).allStatesOf(installation.id)).flatMap((state) => state.tools)
  const approvals = approvalMap(await deps.approvals.with(tx).of([installation.id]))
  const held = heldOf(reported, approvals, installation.pinTools)
  const before = installation.heldTools
  if (sameHeld(held, before)) return held
  await deps.installations.with(tx).update(installation.id, { heldTools: held }, { respec: false, now: installation.updatedAt })
  await deps.stamps.with(tx).satellites([installation.satelliteId])
  const fresh = newlyHeld(held, before)
  if (fresh.length > 0) {
    await deps.audit.record('installation.tools_changed', {
      target: installation.id,
      details: {
        team_id: installation.teamId,
        tools: fresh.map((tool) => ({ name: tool.name, hash: tool.hash, change: approvals.has(tool.name) ? 'changed' : 'new' })),
      },
    }, tx)
  }
  return held
}

/**
 * Tool governance of installations: the team's deny- or allow-list, approval (pinning) of tool
 * definitions, and each reported tool's state. No Fastify types here.
 */
export class ToolGovernance {
  constructor(private readonly deps: GovernanceDeps) {}

  async policy(teamId: string, id: string): Promise<ToolPolicyView> {
    const found = await this.deps.installations.find(teamId, id)
    if (found === undefined) throw errors.notFound('Installation')
    return policyView(found.installation)
  }

  /** Sets the deny-list or the allow-list (the other is cleared); an empty deny-list clears both. */
  async setPolicy(teamId: string, id: string, body: { disabled_tools?: string[]; allowed_tools?: string[] }, actor: UserActor): Promise<ToolPolicyView> {
    return teamTransaction(this.deps, teamId, async (tx) => {
      const current = await lockedInstallation(this.deps.installations, teamId, id, tx)
      const unique = (names: string[]) => [...new Set(names)].sort()
      const patch = body.allowed_tools !== undefined
        ? { disabledTools: null, allowedTools: unique(body.allowed_tools) }
        : { disabledTools: body.disabled_tools!.length === 0 ? null : unique(body.disabled_tools!), allowedTools: null }
      const updated = await this.deps.installations.with(tx).update(id, patch, { respec: false, now: this.now() })
      if (updated === null || updated === 'name_taken') throw errors.notFound('Installation')
      await this.deps.stamps.with(tx).satellites([current.satelliteId])
      await this.deps.audit.record('installation.tool_policy_set', {
        actorId: actor.userId, ip: actor.ip, target: id,
        details: { team_id: teamId, disabled_tools: patch.disabledTools, allowed_tools: patch.allowedTools },
      }, tx)
      return policyView(updated)
    })
  }

  /**
   * Pins these definitions: each hash must be one a satellite reported for that tool (409
   * TOOL_DEFINITION_UNKNOWN otherwise, and nothing is approved). The first approval turns pin_tools on.
   */
  async approve(teamId: string, id: string, tools: Array<{ name: string; hash: string }>, actor: UserActor): Promise<GovernedTool[]> {
    await teamTransaction(this.deps, teamId, async (tx) => {
      const current = await lockedInstallation(this.deps.installations, teamId, id, tx)
      const reported = await this.deps.channel.with(tx).allStatesOf(id)
      const known = new Map<string, ReportedTool>()
      for (const state of reported) for (const tool of state.tools) known.set(`${tool.name}\n${hashOf(tool)}`, tool)
      const unknown = tools.filter((tool) => !known.has(`${tool.name}\n${tool.hash}`))
      if (unknown.length > 0) {
        throw errors.conflict('TOOL_DEFINITION_UNKNOWN', `No satellite reported ${unknown.map((tool) => `"${tool.name.slice(0, 200)}" with hash ${tool.hash.slice(0, 64)}`).slice(0, 5).join(', ')}${unknown.length > 5 ? ` (and ${unknown.length - 5} more)` : ''} for this installation; read GET …/tools for the hashes it reported.`)
      }
      const now = this.now()
      const byName = new Map(tools.map((tool) => [tool.name, tool]))
      await this.deps.approvals.with(tx).put([...byName.values()].map((tool) => ({
        installationId: id, name: tool.name, hash: tool.hash, definition: definitionOf(known.get(`${tool.name}\n${tool.hash}`)!), approvedBy: actor.userId, approvedAt: now,
      })))
      let row = current
      if (!current.pinTools) {
        const updated = await this.deps.installations.with(tx).update(id, { pinTools: true }, { respec: false, now })
        if (updated !== null && updated !== 'name_taken') row = updated
      }
      await this.deps.stamps.with(tx).satellites([current.satelliteId])
      await this.deps.audit.record('installation.tools_approved', {
        actorId: actor.userId, ip: actor.ip, target: id,
        details: { team_id: teamId, tools: [...byName.values()].map((tool) => ({ name: tool.name, hash: tool.hash })), pin_tools_turned_on: !current.pinTools },
      }, tx)
      await refreshHeld(this.deps, tx, row)
    })
    return this.tools(teamId, id)
  }

  /**
   * Around the storing of a satellite's tools report, in its transaction: the installation is
   * locked first (the order every writer of it keeps), the report stored, what is held found
   * again, and the satellite's document rebuilt when the list changed under an allow-list (a tool
   * outside it joins the effective `disabled_tools`).
   */
  async reported(tx: Db, installationId: string, store: () => Promise<boolean>): Promise<void> {
    const row = await this.deps.installations.with(tx).lockById(installationId)
    const changed = await store()
    if (row === undefined) return
    if (changed && row.allowedTools !== null) await this.deps.stamps.with(tx).satellites([row.satelliteId])
    if (row.pinTools || row.heldTools.length > 0) await refreshHeld(this.deps, tx, row)
  }

  /** Every tool the installation's instances reported, with its hash, state and whether it is offered. */
  async tools(teamId: string, id: string): Promise<GovernedTool[]> {
    const found = await this.deps.installations.find(teamId, id)
    if (found === undefined) throw errors.notFound('Installation')
    const installation = found.installation
    const [reported, approvalRows] = await Promise.all([reportedTools(this.deps.channel, id), this.deps.approvals.of([id])])
    const approvals = approvalMap(approvalRows)
    return reported.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0)).map((tool) => {
      const hash = hashOf(tool)
      const approval = approvals.get(tool.name)
      const state = stateOf(hash, approval, installation.pinTools)
      return {
        name: tool.name, title: tool.title ?? null, description: tool.description ?? null, input_schema: tool.input_schema,
        output_schema: tool.output_schema ?? null, annotations: tool.annotations ?? null, hash, state,
        disabled: state === 'held_new' || state === 'held_changed' || refusedByPolicy(tool.name, installation),
        approved: approval === undefined ? null : { hash: approval.hash, definition: approval.definition, approved_at: approval.approvedAt.toISOString() },
      }
    })
  }



  private now(): Date {
    return new Date(this.deps.clock.now())
  }
}

export const policyView = (row: Pick<InstallationRow, 'disabledTools' | 'allowedTools' | 'pinTools'>): ToolPolicyView => ({
  disabled_tools: row.disabledTools, allowed_tools: row.allowedTools, pin_tools: row.pinTools,
})
