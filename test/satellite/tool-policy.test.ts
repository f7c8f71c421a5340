import { describe, expect, it } from 'vitest'
import { policyKey, policyOf, toolRefusal } from '../../examples/satellite/src/tool-policy.js'
import type { Instance } from '../../examples/satellite/src/types.js'
import { everythingInstance } from './support.js'

/**
 * The satellite's reading of an instance's tool fields: which tools it offers and serves, why it
 * refuses one, and when a new document changes the policy (and so the clients' tool lists).
 */
describe('reference satellite: the tool policy of an instance', () => {
  const spec = (fields: Partial<Instance>): Instance => everythingInstance({ installation_id: 'inst-policy', ...fields })

  it.each([
    ['no policy: everything', {}, 'echo', 'h1', undefined],
    ['a disabled tool', { disabled_tools: ['echo'] }, 'echo', 'h1', 'is disabled'],
    ['outside the allow-list', { allowed_tools: ['sum'] }, 'echo', 'h1', 'is not allowed'],
    ['inside the allow-list', { allowed_tools: ['echo'] }, 'echo', 'h1', undefined],
    ['an empty allow-list allows nothing', { allowed_tools: [] }, 'echo', 'h1', 'is not allowed'],
    ['a null allow-list is none', { allowed_tools: null }, 'echo', 'h1', undefined],
    ['pinned, the approved definition', { pin_tools: true, pinned_tools: [{ name: 'echo', hash: 'h1' }] }, 'echo', 'h1', undefined],
    ['pinned, a changed definition', { pin_tools: true, pinned_tools: [{ name: 'echo', hash: 'h1' }] }, 'echo', 'h2', 'definition changed'],
    ['pinned, a new tool', { pin_tools: true, pinned_tools: [{ name: 'echo', hash: 'h1' }] }, 'sum', 'h3', 'not among the approved tools'],
    ['pinned, a tool the server does not list', { pin_tools: true, pinned_tools: [{ name: 'echo', hash: 'h1' }] }, 'echo', undefined, 'does not list it'],
    ['pinned entries without pin_tools are not enforced', { pin_tools: false, pinned_tools: [{ name: 'echo', hash: 'h1' }] }, 'echo', 'h2', undefined],
    ['approved but disabled', { pin_tools: true, pinned_tools: [{ name: 'echo', hash: 'h1' }], disabled_tools: ['echo'] }, 'echo', 'h1', 'is disabled'],
  ] as Array<[string, Partial<Instance>, string, string | undefined, string | undefined]>)('%s', (_label, fields, name, hash, reason) => {
    const refused = toolRefusal(policyOf(spec(fields)), name, hash)
    if (reason === undefined) expect(refused).toBeUndefined()
    else expect(refused).toContain(reason)
  })

  it('a document from before the fields (no allow-list, no pinning) offers all but the disabled tools', () => {
    const old = spec({ disabled_tools: ['delete'] })
    delete old.allowed_tools
    delete old.pin_tools
    delete old.pinned_tools
    expect(toolRefusal(policyOf(old), 'echo', undefined)).toBeUndefined()
    expect(toolRefusal(policyOf(old), 'delete', 'h')).toContain('disabled')
  })

  it('changes its key exactly when what is offered may change', () => {
    const base = spec({ disabled_tools: ['a', 'b'], allowed_tools: null, pin_tools: false, pinned_tools: [] })
    expect(policyKey({ ...base, disabled_tools: ['b', 'a'], spec_hash: 'other' })).toBe(policyKey(base))
    expect(policyKey({ ...base, disabled_tools: ['a'] })).not.toBe(policyKey(base))
    expect(policyKey({ ...base, allowed_tools: ['a'] })).not.toBe(policyKey(base))
    expect(policyKey({ ...base, pin_tools: true })).not.toBe(policyKey(base))
    const pinned = { ...base, pin_tools: true, pinned_tools: [{ name: 'a', hash: 'h1' }] }
    expect(policyKey({ ...pinned, pinned_tools: [{ name: 'a', hash: 'h2' }] })).not.toBe(policyKey(pinned))
  })
})
