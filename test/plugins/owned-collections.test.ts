import { describe, expect, it } from 'vitest'
import { readManifest } from '../../src/plugin-host/manifest.js'

/**
 * The manifest rules of owned collections (`owned`, `moderator`); what the routes do with them is
 * tested through the example plugin (test/plugins/example-plugin.test.ts).
 */

const NOTE = { type: 'object', properties: { title: { type: 'string' } }, additionalProperties: false }
const plugin = (collection: Record<string, unknown>) => ({ id: 'owned', name: 'Owned', version: '1.0.0', collections: { notes: collection } })
const problems = (collection: Record<string, unknown>) => {
  const read = readManifest(plugin(collection), 'owned')
  return 'problems' in read ? read.problems : []
}

describe('owned collections in a manifest', () => {
  it('reads owned and moderator; both default to off', () => {
    const read = readManifest(plugin({ schema: NOTE, owned: true, moderator: 'users.edit' }), 'owned')
    expect('manifest' in read && read.manifest.collections[0]).toMatchObject({ name: 'notes', owned: true, moderator: 'users.edit' })
    const plain = readManifest(plugin({ schema: NOTE }), 'owned')
    expect('manifest' in plain && plain.manifest.collections[0]).toMatchObject({ owned: false, moderator: null })
  })

  it('refuses a moderator that is not a permission, or without owned: true', () => {
    expect(problems({ schema: NOTE, owned: true, moderator: 'notes.moderate' })).toEqual(['collections.notes.moderator is not a known permission'])
    expect(problems({ schema: NOTE, moderator: 'users.edit' })).toEqual(['collections.notes.moderator needs owned: true'])
    expect(problems({ schema: NOTE, owned: 'yes' })).toContain('collections.notes.owned must be a boolean')
  })

  it('reserves owner_id in owned collections only', () => {
    const withOwner = { ...NOTE, properties: { ...NOTE.properties, owner_id: { type: 'string' } } }
    expect(problems({ schema: withOwner, owned: true })).toEqual(['collections.notes.schema must not declare owner_id: every item carries them'])
    expect(problems({ schema: withOwner })).toEqual([])
  })
})
