import type { ReportedTool } from '../../formats/satellite-reports.js'
import { definitionOf, toolDefinitionHash, type ToolDefinition } from '../../formats/tool-definitions.js'

/**
 * Which tools of an installation may be offered: the team's policy (a deny-list or an allow-list)
 * and, under pinning, the definitions team admins approved. Pure: the service and the document
 * builder share it.
 */

export interface ToolPolicy {
  disabledTools: string[] | null
  allowedTools: string[] | null
  pinTools: boolean
}

export interface Approval {
  name: string
  hash: string
  definition: ToolDefinition
  approvedAt: Date
}

export type ToolState = 'approved' | 'held_new' | 'held_changed' | 'unpinned'

export interface HeldTool { name: string; hash: string }

/** The state of one reported tool under the installation's pinning. */
export function stateOf(hash: string, approval: Approval | undefined, pinTools: boolean): ToolState {
  if (!pinTools) return 'unpinned'
  if (approval === undefined) return 'held_new'
  return approval.hash === hash ? 'approved' : 'held_changed'
}

/** Whether the policy alone (deny- or allow-list) keeps a tool from being offered. */
export function refusedByPolicy(name: string, policy: Pick<ToolPolicy, 'disabledTools' | 'allowedTools'>): boolean {
  if (policy.allowedTools !== null) return !policy.allowedTools.includes(name)
  return policy.disabledTools?.includes(name) ?? false
}

export const hashOf = (tool: ReportedTool): string => toolDefinitionHash(definitionOf(tool))

/** The reported tools held under pinning (new, or changed since approval), by name and hash, each pair once (instances may report the same tool). */
export function heldOf(tools: readonly ReportedTool[], approvals: ReadonlyMap<string, Approval>, pinTools: boolean): HeldTool[] {
  if (!pinTools) return []
  const held = new Map<string, HeldTool>()
  for (const tool of tools) {
    const hash = hashOf(tool)
    if (stateOf(hash, approvals.get(tool.name), true) !== 'approved') held.set(`${tool.name}\n${hash}`, { name: tool.name, hash })
  }
  return [...held.values()].sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : a.hash < b.hash ? -1 : a.hash > b.hash ? 1 : 0))
}

/**
 * The instance document's `disabled_tools`: the names the policy disables (every reported tool
 * outside an allow-list), with the tools held under pinning; sorted, each once.
 */
export function effectiveDisabled(policy: ToolPolicy, tools: readonly ReportedTool[], approvals: ReadonlyMap<string, Approval>): string[] {
  const names = new Set<string>(policy.allowedTools === null ? policy.disabledTools ?? [] : [])
  for (const tool of tools) if (refusedByPolicy(tool.name, policy)) names.add(tool.name)
  for (const held of heldOf(tools, approvals, policy.pinTools)) names.add(held.name)
  return [...names].sort()
}

/** The held tools in `now` that were not held (with that hash) in `before`: what a report changed. */
export function newlyHeld(now: readonly HeldTool[], before: readonly HeldTool[]): HeldTool[] {
  const seen = new Set(before.map((held) => `${held.name}\n${held.hash}`))
  return now.filter((held) => !seen.has(`${held.name}\n${held.hash}`))
}

export const sameHeld = (a: readonly HeldTool[], b: readonly HeldTool[]): boolean =>
  a.length === b.length && newlyHeld(a, b).length === 0
