import { validate, version } from 'uuid'
import { describe, expect, it } from 'vitest'
import { newId, newIds } from '../../src/db/ids.js'

describe('ids made together', () => {
  it('are UUIDv7, distinct, ascending in the order given, and of the current millisecond', () => {
    const before = Date.now()
    const ids = newIds(5000)
    const after = Date.now()
    expect(ids).toHaveLength(5000)
    expect(ids.every((id) => validate(id) && version(id) === 7)).toBe(true)
    expect(new Set(ids).size).toBe(5000)
    expect(ids.every((id, index) => index === 0 || ids[index - 1]! < id)).toBe(true)
    const msecs = parseInt(ids[0]!.replace(/-/g, '').slice(0, 12), 16)
    expect(msecs).toBeGreaterThanOrEqual(before)
    expect(msecs).toBeLessThanOrEqual(after)
    // The same layout as one id made alone: the time first, so both sort by when they were made.
    expect(newId().slice(0, 8) >= ids[0]!.slice(0, 8)).toBe(true)
  })

  it('two draws share no id', () => {
    const first = newIds(1000)
    const second = new Set(newIds(1000))
    expect(first.some((id) => second.has(id))).toBe(false)
    expect(newIds(0)).toEqual([])
  })
})
