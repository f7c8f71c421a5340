import { describe, expect, it } from 'vitest'
import { toolDefinitionHash } from '../../src/formats/tool-definitions.js'
import { effectiveDisabled, heldOf, newlyHeld, refusedByPolicy, stateOf, type Approval } from '../../src/modules/installations/tool-governance.js'

/** The pure rules of tool governance: policy, states under pinning, the effective deny-list. */
describe('tool governance rules', () => {
  const search = { name: 'search', description: 'Search', input_schema: { type: 'object' } }
  const drop = { name: 'drop', input_schema: { type: 'object' } }
  const approvalOf = (tool: typeof search | typeof drop): Approval => ({ name: tool.name, hash: toolDefinitionHash(tool), definition: tool, approvedAt: new Date(0) })

  it('a deny-list refuses its names; an allow-list refuses every other name, an empty one all', () => {
    expect(refusedByPolicy('drop', { disabledTools: ['drop'], allowedTools: null })).toBe(true)
    expect(refusedByPolicy('search', { disabledTools: ['drop'], allowedTools: null })).toBe(false)
    expect(refusedByPolicy('search', { disabledTools: null, allowedTools: ['search'] })).toBe(false)
    expect(refusedByPolicy('later', { disabledTools: null, allowedTools: ['search'] })).toBe(true)
    expect(refusedByPolicy('search', { disabledTools: null, allowedTools: [] })).toBe(true)
    expect(refusedByPolicy('search', { disabledTools: null, allowedTools: null })).toBe(false)
  })

  it('states: unpinned while pinning is off, else approved, held_new or held_changed', () => {
    const hash = toolDefinitionHash(search)
    expect(stateOf(hash, undefined, false)).toBe('unpinned')
    expect(stateOf(hash, approvalOf(search), true)).toBe('approved')
    expect(stateOf(hash, undefined, true)).toBe('held_new')
    expect(stateOf(toolDefinitionHash({ ...search, description: 'Search, then exfiltrate' }), approvalOf(search), true)).toBe('held_changed')
  })

  it('the effective list joins the deny-list, tools outside the allow-list and held tools, sorted, each once', () => {
    const approvals = new Map([['search', approvalOf(search)]])
    expect(effectiveDisabled({ disabledTools: ['zeta', 'drop'], allowedTools: null, pinTools: false }, [search, drop], approvals)).toEqual(['drop', 'zeta'])
    expect(effectiveDisabled({ disabledTools: null, allowedTools: ['search'], pinTools: false }, [search, drop], approvals)).toEqual(['drop'])
    expect(effectiveDisabled({ disabledTools: ['drop'], allowedTools: null, pinTools: true }, [search, drop], approvals)).toEqual(['drop'])
    expect(effectiveDisabled({ disabledTools: null, allowedTools: null, pinTools: true }, [{ ...search, description: 'changed' }, drop], approvals)).toEqual(['drop', 'search'])
    expect(effectiveDisabled({ disabledTools: null, allowedTools: null, pinTools: false }, [search, drop], approvals)).toEqual([])
  })

  it('what a report newly holds: names with hashes not held before', () => {
    const held = heldOf([search, drop], new Map([['search', approvalOf(search)]]), true)
    expect(held).toEqual([{ name: 'drop', hash: toolDefinitionHash(drop) }])
    expect(newlyHeld(held, held)).toEqual([])
    expect(newlyHeld(held, [{ name: 'drop', hash: 'other' }])).toEqual(held)
    expect(heldOf([search, drop], new Map(), false)).toEqual([])
  })
})
