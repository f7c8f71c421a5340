/**
 * Which tools of an instance a client may see and call, as the instance document says at this
 * moment. Read on every request, so a changed document applies to every open session at once.
 *
 * - `disabled_tools`: never offered, never served (the backend lists there the tools an admin
 *   disabled and those it holds for approval).
 * - `allowed_tools`, when not null: only these (a tool that appears later is refused at once).
 * - `pin_tools`: only tools whose live definition hash (tool-hash.ts) equals the approved one of
 *   that name in `pinned_tools`. The live definition is what the server answered to `tools/list`;
 *   a server that changes a tool after its approval has the changed tool held here, before the
 *   backend has even heard of the change.
 */
import type { Instance } from './types.js'

export interface ToolPolicy {
  disabled: ReadonlySet<string>
  /** Null: no allow-list. */
  allowed: ReadonlySet<string> | null
  /** Null: definitions are not pinned; else the approved hash of each tool by name. */
  pinned: ReadonlyMap<string, string> | null
}

export const OPEN_POLICY: ToolPolicy = { disabled: new Set(), allowed: null, pinned: null }

export function policyOf(spec: Instance): ToolPolicy {
  return {
    disabled: new Set(spec.disabled_tools),
    allowed: spec.allowed_tools === undefined || spec.allowed_tools === null ? null : new Set(spec.allowed_tools),
    pinned: spec.pin_tools === true ? new Map((spec.pinned_tools ?? []).map((tool) => [tool.name, tool.hash])) : null,
  }
}

/** A text that changes exactly when the policy of a spec does (to tell clients their tool list changed). */
export function policyKey(spec: Instance): string {
  return JSON.stringify([
    [...spec.disabled_tools].sort(),
    spec.allowed_tools === undefined || spec.allowed_tools === null ? null : [...spec.allowed_tools].sort(),
    spec.pin_tools === true,
    spec.pin_tools === true ? (spec.pinned_tools ?? []).map((tool) => `${tool.name}\n${tool.hash}`).sort() : [],
  ])
}

/**
 * Why a tool may not be offered or called, if it may not. `liveHash` is the definition hash of
 * the tool as the server last listed it (undefined: the server does not list it).
 */
export function toolRefusal(policy: ToolPolicy, name: string, liveHash: string | undefined): string | undefined {
  if (policy.allowed !== null && !policy.allowed.has(name)) return `Tool ${name} is not allowed for this installation`
  if (policy.pinned !== null) {
    const approved = policy.pinned.get(name)
    if (approved === undefined) return `Tool ${name} is held for approval: it is not among the approved tools of this installation`
    if (liveHash === undefined) return `Tool ${name} is held for approval: the server does not list it`
    if (liveHash !== approved) return `Tool ${name} is held for approval: its definition changed since it was approved`
  }
  if (policy.disabled.has(name)) return `Tool ${name} is disabled for this installation`
  return undefined
}
