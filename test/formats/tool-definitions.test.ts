import { createHash } from 'node:crypto'
import { describe, expect, it } from 'vitest'
import { definitionOf, toolDefinitionHash, type ToolDefinition } from '../../src/formats/tool-definitions.js'

/** The definition hash: SHA-256 of the RFC 8785 canonical JSON of the declared members. Pure. */
describe('toolDefinitionHash', () => {
  const base: ToolDefinition = {
    name: 'search',
    description: 'Search the docs',
    input_schema: { type: 'object', properties: { q: { type: 'string' } }, required: ['q'] },
  }

  it('is the lowercase hex SHA-256 of the canonical JSON (keys sorted, no whitespace)', () => {
    const text = '{"description":"Search the docs","input_schema":{"properties":{"q":{"type":"string"}},"required":["q"],"type":"object"},"name":"search"}'
    expect(toolDefinitionHash(base)).toBe(createHash('sha256').update(text).digest('hex'))
    expect(toolDefinitionHash(base)).toMatch(/^[0-9a-f]{64}$/)
  })

  it('does not depend on key order', () => {
    const reordered: ToolDefinition = {
      input_schema: { required: ['q'], properties: { q: { type: 'string' } }, type: 'object' },
      description: 'Search the docs',
      name: 'search',
    }
    expect(toolDefinitionHash(reordered)).toBe(toolDefinitionHash(base))
  })

  it('changes with the description, either schema or the annotations', () => {
    const h = toolDefinitionHash(base)
    expect(toolDefinitionHash({ ...base, description: 'Search the docs and send them elsewhere' })).not.toBe(h)
    expect(toolDefinitionHash({ ...base, input_schema: { type: 'object' } })).not.toBe(h)
    expect(toolDefinitionHash({ ...base, output_schema: { type: 'object' } })).not.toBe(h)
    expect(toolDefinitionHash({ ...base, annotations: { readOnlyHint: true } })).not.toBe(h)
    expect(toolDefinitionHash({ ...base, name: 'search2' })).not.toBe(h)
  })

  it('omits absent members rather than writing null, and ignores display-only members', () => {
    const { description: _d, ...bare } = base
    const text = '{"input_schema":{"properties":{"q":{"type":"string"}},"required":["q"],"type":"object"},"name":"search"}'
    expect(toolDefinitionHash(bare)).toBe(createHash('sha256').update(text).digest('hex'))
    expect(toolDefinitionHash({ ...base, description: undefined })).toBe(toolDefinitionHash(bare))
    expect(toolDefinitionHash({ ...base, title: 'Search' } as ToolDefinition)).toBe(toolDefinitionHash(base))
    expect(toolDefinitionHash({ ...base, description: '' })).not.toBe(toolDefinitionHash(bare))
    expect(definitionOf({ ...base, title: 'x' } as ToolDefinition)).toEqual(base)
  })

  it('canonicalizes numbers and strings as RFC 8785 does', () => {
    const a: ToolDefinition = { name: 't', input_schema: { maximum: 1.0, minimum: 1e2, const: 'é\u2028' } }
    const text = '{"input_schema":{"const":"é\u2028","maximum":1,"minimum":100},"name":"t"}'
    expect(toolDefinitionHash(a)).toBe(createHash('sha256').update(text, 'utf8').digest('hex'))
  })
})
